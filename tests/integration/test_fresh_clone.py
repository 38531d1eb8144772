"""A new user's first minutes, from a fresh clone, following only the README and docs/agents.md.

The repository (this checkout's HEAD) is cloned into a temporary folder; the README's first
command, ``bash scripts/run.sh``, runs there (its arguments go to ``lethe serve``: here a
free port), which creates the virtualenv, installs Lethe with semantic recall and serves.
Then, as the README says: the admin token is read from ``lethe-data/admin-token``, an agent
token is minted over HTTP, "Prefers green tea in the morning" is written, and "what does
she like to drink" finds it in the top 3 with ``"recall": "hybrid"``. Last, as
docs/agents.md says, the client is installed into a fresh virtualenv from the running
server's wheel URL and ``docs/examples/client_quickstart.py`` runs against the server.

Nothing is skipped: pip installs every package, from the machine's configured indexes and
cache (the environment's ``PIP_*`` settings are passed on), so the run takes minutes.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBJECT = "customer-2002"  # not the quickstart's subject: its search must see only its own
INSTALL_TIMEOUT = 900  # seconds for run.sh's virtualenv and install on a cold machine

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def user_env() -> dict[str, str]:
    """A new user's shell: none of this test run's Lethe settings or virtualenv."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LETHE_") and k != "VIRTUAL_ENV"}
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != bin_dir)
    return env


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    target = tmp_path / "lethe"
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(target)], check=True, timeout=300)
    return target


@pytest.fixture
def served(clone: Path) -> Iterator[tuple[str, Path]]:
    """``bash scripts/run.sh --port N`` in the clone, until ``/readyz`` answers 200."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = (clone.parent / "run.log").open("w")
    proc = subprocess.Popen(
        ["bash", "scripts/run.sh", "--port", str(port)],
        cwd=clone,
        env=user_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # run.sh execs lethe serve: its workers share the group
    )
    try:
        deadline = time.monotonic() + INSTALL_TIMEOUT
        while True:
            assert proc.poll() is None, (clone.parent / "run.log").read_text()[-4000:]
            assert time.monotonic() < deadline, "run.sh did not serve in time"
            try:
                if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(1)
        yield base, clone
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def test_a_fresh_clone_runs_recalls_by_meaning_and_installs_the_client_from_the_server(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    base, clone = served
    output = (clone.parent / "run.log").read_text()
    admin_file = clone / "lethe-data" / "admin-token"
    assert "lethe-data/admin-token" in output and oct(admin_file.stat().st_mode & 0o777) == "0o600"
    admin = admin_file.read_text().strip()
    assert admin not in output  # the output names the file, never the token
    assert "/console" in output and "/verify" in output and "/docs" in output
    assert "would be ignored" not in output and "Warning" not in output  # no packaging noise before it
    # README: `export PATH="$PWD/.venv/bin:$PATH"` puts `lethe` on the path, and its commands run
    readme = (clone / "README.md").read_text()
    (path_line,) = set(re.findall(r'export PATH="\$PWD/\.venv/bin:\$PATH"', readme))
    listed = subprocess.run(
        ["bash", "-c", f"{path_line} && lethe token list --tenant default"],
        cwd=clone,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0 and "admin" in listed.stdout, listed.stderr[-2000:]
    with httpx.Client(base_url=base, timeout=60) as http:
        minted = http.post(
            "/v1/admin/tokens",
            headers={"Authorization": f"Bearer {admin}"},
            json={"role": "agent", "agent_id": "support-bot", "purposes": ["support"]},
        )
        assert minted.status_code == 201, minted.text
        agent = {"Authorization": f"Bearer {minted.json()['token']}"}
        for i, content in enumerate(
            ["Prefers green tea in the morning", "Lives in Lisbon", "Has two cats", "Works night shifts"]
        ):
            wrote = http.post(
                "/v1/memories",
                headers=agent,
                json={
                    "subject_id": SUBJECT,
                    "purpose": "support",
                    "kind": "preference",
                    "content": content,
                    "provenance": {"source_type": "user_statement", "source_ref": f"session-9/turn-{i}"},
                    "idempotency_key": f"turn-{i}",
                    "confidence": 0.9,
                    "expected_version": 0,
                },
            )
            assert wrote.status_code == 201, wrote.text
        found = http.post(
            "/v1/memories/search",
            headers=agent,
            json={"query": "what does she like to drink", "purpose": "support", "subject_id": SUBJECT},
        )
        assert found.status_code == 200, found.text
        body = found.json()
        assert body["recall"] == "hybrid"
        assert "Prefers green tea in the morning" in [m["content"] for m in body["items"][:3]]

    # docs/agents.md: pip install "lethe-vault[client] @ $LETHE/wheels/<name>", in a fresh virtualenv
    agents_doc = (clone / "docs" / "agents.md").read_text()
    command = next(c for c in agents_doc.splitlines() if c.startswith('pip install "lethe-vault[client] @'))
    venv = tmp_path / "agent-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {**user_env(), "LETHE": base}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    installed = subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert installed.returncode == 0, installed.stderr[-4000:]
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import lethe.client; print(lethe.client.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert where.stdout.startswith(str(venv)), where.stdout  # the served wheel, not the clone
    quickstart = subprocess.run(
        [str(venv / "bin" / "python"), str(clone / "docs" / "examples" / "client_quickstart.py")],
        env={**env, "LETHE_URL": base, "LETHE_TOKEN": agent["Authorization"].removeprefix("Bearer ")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert quickstart.returncode == 0, quickstart.stderr[-4000:]
    lines = quickstart.stdout.splitlines()
    assert lines[0] == "active quarantined" and lines[1] == "['Prefers email over phone calls']"
    assert lines[2].startswith("403")
