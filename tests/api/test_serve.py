"""A real ``lethe serve`` process on a free loopback port: the seed scenario, and log hygiene.

Tokens are minted with ``lethe token create --json`` against the same data dir, as an
operator would. The hygiene test drives a full request cycle with canary content, a
canary subject id and a real token, then reads every line the server printed.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from lethe.api.first_admin import ADMIN_TOKEN_FILE
from tests.children import lethe_command, lethe_env

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    env: dict[str, str]
    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A ``lethe`` command on this server's store, in a process of its own."""
        return subprocess.run(
            [*lethe_command(), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def mint(self, *args: str) -> dict[str, str]:
        r = self.cli("token", "create", *args, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def lines(self) -> list[str]:
        return self.out.read_text().splitlines() + self.err.read_text().splitlines()

    def first_admin_token(self) -> str:
        """The admin token the first start minted, from its 0600 file in the data dir (it is
        never printed: ``api.first_admin``)."""
        return (Path(self.env["LETHE_DATA_DIR"]) / ADMIN_TOKEN_FILE).read_text().strip()


def start_server(tmp_path: Path, extra_env: dict[str, str], workers: int | None = 1) -> Server:
    """``lethe serve`` on a fresh store; ``workers`` None: no ``--workers`` (the default count)."""
    env = lethe_env(tmp_path / "data", **extra_env)
    if not (tmp_path / "data").exists():  # `lethe serve` opens only an initialised store
        init = subprocess.run(
            [*lethe_command(), "init"], env=env, capture_output=True, text=True, check=False
        )
        assert init.returncode == 0, init.stderr
    port = free_port()
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    args = ["--host", "127.0.0.1", "--port", str(port)]
    if workers is not None:
        args += ["--workers", str(workers)]
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(
            [*lethe_command(), "serve", *args],
            env=env,
            stdout=o,
            stderr=e,
        )
    srv = Server(f"http://127.0.0.1:{port}", env, proc, out, err)
    deadline = time.monotonic() + 180  # only a failure waits this long (a loaded machine starts slowly)
    while True:
        assert proc.poll() is None, f"lethe serve exited: {err.read_text()}"
        try:
            if httpx.get(f"{srv.url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "lethe serve did not become healthy"
        time.sleep(0.2)
    return srv


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = start_server(tmp_path, {})
    yield srv
    srv.stop()


@pytest.fixture(params=["sqlite+local", "postgres+local", "sqlite+openbao"])
def any_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """The same real server on each store and KMS the product supports."""
    env: dict[str, str] = {}
    store, kms = request.param.split("+")
    pg_url = None
    if store == "postgres":
        pg = request.getfixturevalue("postgres")
        pg_url = pg.create()
        env["LETHE_DATABASE_URL"] = pg_url
    if kms == "openbao":
        bao = request.getfixturevalue("openbao")
        env.update(LETHE_KMS="vault", LETHE_VAULT_ADDR=bao.addr, LETHE_VAULT_TOKEN=bao.token)
    srv = start_server(tmp_path, env)
    yield srv
    srv.stop()
    if pg_url is not None:
        pg.drop(pg_url)


def memory(
    content: str, source: str = "user_statement", subject: str = "alice@example.com"
) -> dict[str, object]:
    return {
        "subject_id": subject,
        "purpose": "support",
        "kind": "preference",
        "content": content,
        "provenance": {
            "source_type": source,
            "source_ref": "session-1/turn-1",
            **({"url": "https://example.org/page"} if source == "web_page" else {}),
        },
        "confidence": 0.9,
        "idempotency_key": uuid.uuid4().hex,
    }


def test_seed_scenario_against_a_real_server(any_server: Server) -> None:
    server = any_server
    agent = server.mint("--tenant", "t1", "--role", "agent", "--agent", "a1", "--purpose", "support")
    reviewer = server.mint("--tenant", "t1", "--role", "reviewer")
    a = {"Authorization": f"Bearer {agent['token']}"}
    rv = {"Authorization": f"Bearer {reviewer['token']}"}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/healthz").status_code == 200
        assert http.get("/readyz").status_code == 200
        trusted = http.post("/v1/memories", json=memory("Alice likes green tea"), headers=a)
        assert trusted.status_code == 201 and trusted.json()["status"] == "active"
        untrusted = http.post("/v1/memories", json=memory("Alice drinks tea daily", "web_page"), headers=a)
        assert untrusted.status_code == 201 and untrusted.json()["status"] == "quarantined"
        search = {"query": "tea", "purpose": "support"}
        assert len(http.post("/v1/memories/search", json=search, headers=a).json()["items"]) == 1
        item = untrusted.json()
        r = http.post(
            f"/v1/memories/{item['id']}/promote", json={"expected_version": item["version"]}, headers=rv
        )
        assert r.status_code == 200 and r.json()["trust"] == "verified"
        assert len(http.post("/v1/memories/search", json=search, headers=a).json()["items"]) == 2
        assert "lethe_promotions_total 1.0" in http.get("/metrics").text
        # A privacy officer forgets the subject; the background runner completes the job.
        officer = server.mint("--tenant", "t1", "--role", "privacy_officer")
        po = {"Authorization": f"Bearer {officer['token']}"}
        r = http.post(
            "/v1/erasure-requests",
            json={"subject_id": "alice@example.com", "legal_basis": "gdpr-art17-1a"},
            headers=po,
        )
        assert r.status_code == 202
        job_url = f"/v1/erasure-requests/{r.json()['id']}"
        deadline = time.monotonic() + 60
        # The report is stored (and named on the job) just before the step that records it.
        while (job := http.get(job_url, headers=po).json())["status"] != "reported":
            assert time.monotonic() < deadline, job
            time.sleep(0.3)
        assert job["report_id"] is not None
        assert http.post("/v1/memories/search", json=search, headers=a).json()["items"] == []
        assert http.get(f"/v1/memories/{item['id']}", headers=a).status_code == 404
        assert http.get("/healthz").status_code == 200

    # The first run wrote an admin token to a 0600 file and printed where, not the token; it works.
    stdout = server.out.read_text()
    assert f"OpenAPI docs: {server.url}/docs" in stdout
    assert f"console: {server.url}/console" in stdout and f"{server.url}/verify" in stdout
    admin = server.first_admin_token()
    assert f"written to {Path(server.env['LETHE_DATA_DIR']) / ADMIN_TOKEN_FILE}" in stdout
    assert admin.startswith("lethe_") and all(admin not in line for line in server.lines())
    r = httpx.post(
        f"{server.url}/v1/admin/tokens",
        json={"role": "auditor"},
        headers={"Authorization": f"Bearer {admin}"},
        timeout=30,
    )
    assert r.status_code == 201 and r.json()["tenant_id"] == "default"


def test_no_content_subject_or_token_reaches_the_logs(server: Server) -> None:
    content = f"CANARY-CONTENT-{uuid.uuid4().hex}"
    subject = f"canary-subject-{uuid.uuid4().hex}@example.com"
    agent = server.mint("--tenant", "t1", "--role", "agent", "--agent", "a1", "--purpose", "support")
    officer = server.mint("--tenant", "t1", "--role", "privacy_officer")
    token = agent["token"]
    a = {"Authorization": f"Bearer {token}"}
    po = {"Authorization": f"Bearer {officer['token']}"}
    canaries = [content, subject, token, token[6:], officer["token"]]

    with httpx.Client(base_url=server.url, timeout=30) as http:
        body = memory(content, subject=subject)
        key = {"Idempotency-Key": str(body.pop("idempotency_key"))}
        item = http.post("/v1/memories", json=body, headers={**a, **key}).json()
        assert http.post("/v1/memories", json=body, headers={**a, **key}).status_code == 200
        assert (
            http.get(f"/v1/memories/{item['id']}?subject={subject}&token={token}", headers=a).status_code
            == 200
        )
        r = http.post(
            "/v1/memories/search",
            json={"query": content, "purpose": "support", "subject_id": subject},
            headers=a,
        )
        assert r.status_code == 200 and r.json()["items"][0]["content"] == content
        # Refusals whose bodies carry the canaries.
        assert (
            http.post("/v1/memories", content=f'{{"content": "{content}"'.encode(), headers=a).status_code
            == 422
        )
        assert http.post("/v1/memories", json={**body, "confidence": content}, headers=a).status_code == 422
        assert http.post("/v1/memories", json={**body, "kind": subject}, headers=a).status_code == 422
        assert http.get(f"/v1/{subject}/{content}", headers=a).status_code == 404
        bad = {"Authorization": f"Bearer {token[:-4]}ZZZZ"}
        assert http.get(f"/v1/memories/{item['id']}", headers=bad).status_code == 401

        def chunks() -> Iterator[bytes]:
            for _ in range(20):
                yield (content * 400).encode()[:8192]

        assert http.post("/v1/memories", content=chunks(), headers=a).status_code == 413
        # The privacy officer's side: a hold and an erasure request for the canary subject.
        r = http.post("/v1/legal-holds", json={"subject_id": subject, "reason": "litigation"}, headers=po)
        assert r.status_code == 201
        assert http.delete(f"/v1/legal-holds/{r.json()['id']}", headers=po).status_code == 204
        r = http.post(
            "/v1/erasure-requests", json={"subject_id": subject, "legal_basis": "gdpr-art17-1a"}, headers=po
        )
        assert r.status_code == 202
        job = r.json()["id"]
        deadline = time.monotonic() + 30
        while http.get(f"/v1/erasure-requests/{job}", headers=po).json()["completed_at"] is None:
            assert time.monotonic() < deadline
            time.sleep(0.3)
        assert http.get(f"/v1/memories/{item['id']}", headers=a).status_code == 404

    server.stop()
    lines = server.lines()
    leaks = [line for line in lines for c in canaries if c in line]
    assert leaks == []
    # Not vacuous: the access lines are there, structured, with templates and token ids.
    access = [json.loads(line) for line in lines if line.startswith("{") and '"lethe.access"' in line]
    routes = {(e["method"], e["route"], e["status"]) for e in access}
    assert ("GET", "/v1/memories/{memory_id}", 200) in routes
    assert ("POST", "/v1/memories", 413) in {(m, r or "/v1/memories", s) for m, r, s in routes}
    assert ("GET", None, 404) in routes
    assert {e["token_id"] for e in access if e["token_id"]} >= {agent["id"], officer["id"]}
    assert all(e["request_id"] and isinstance(e["duration_ms"], float) for e in access)


@pytest.mark.openbao
def test_readyz_follows_openbao_and_cached_reads_never_500(tmp_path: Path, openbao) -> None:  # type: ignore[no-untyped-def]
    srv = start_server(
        tmp_path,
        {
            "LETHE_KMS": "vault",
            "LETHE_VAULT_ADDR": openbao.addr,
            "LETHE_VAULT_TOKEN": openbao.token,
            "LETHE_KMS_TIMEOUT_SECONDS": "1",
        },
    )
    try:
        agent = srv.mint("--tenant", "t1", "--role", "agent", "--agent", "a1", "--purpose", "support")
        a = {"Authorization": f"Bearer {agent['token']}"}
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            item = http.post("/v1/memories", json=memory("cached before the outage"), headers=a).json()
            assert http.get("/readyz").status_code == 200
            openbao.pause()
            try:
                down = http.get("/readyz")
                assert down.status_code == 503
                assert down.headers["content-type"].startswith("application/problem+json")
                cached = http.get(f"/v1/memories/{item['id']}", headers=a)
                assert cached.status_code == 200 and cached.json()["content"] == "cached before the outage"
                new_subject = http.post(
                    "/v1/memories", json=memory("x", subject="bob@example.com"), headers=a
                )
                assert new_subject.status_code == 503
                assert new_subject.headers["content-type"].startswith("application/problem+json")
            finally:
                openbao.resume()
            assert http.get("/readyz").status_code == 200
            again = http.post("/v1/memories", json=memory("x", subject="bob@example.com"), headers=a)
            assert again.status_code == 201
    finally:
        srv.stop()


def _listening(port: int) -> int:
    """TCP sockets listening on the loopback port, from /proc/net/tcp (state 0A)."""
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(1 for line in lines if line.split()[1] == f"0100007F:{port:04X}" and line.split()[3] == "0A")


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's socket table")
def test_workers_listen_on_a_socket_each_and_a_taken_port_is_refused(tmp_path: Path) -> None:
    srv = start_server(tmp_path, {}, workers=2)
    port = int(srv.url.rsplit(":", 1)[1])
    try:
        deadline = time.monotonic() + 30  # the second worker may still be starting
        while _listening(port) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _listening(port) == 2  # one per worker: the kernel spreads connections
        again = subprocess.run(
            [*lethe_command(), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2"],
            env=srv.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert again.returncode == 2, again.stderr
        assert "cannot listen on 127.0.0.1" in again.stderr
        with httpx.Client(base_url=srv.url, timeout=10) as client:  # keep-alive, both workers
            assert all(client.get("/healthz").status_code == 200 for _ in range(20))
        # The supervisor's children: the two workers and multiprocessing's resource tracker.
        children = Path(f"/proc/{srv.proc.pid}/task/{srv.proc.pid}/children").read_text().split()
        assert sum(_serves_on_uvloop_and_httptools(int(pid)) for pid in children) == 2
    finally:
        srv.stop()
    assert srv.proc.returncode == 0
    assert _listening(port) == 0  # SIGTERM stopped the workers too


def _serves_on_uvloop_and_httptools(pid: int) -> bool:
    """Whether the process has uvloop's loop and httptools' parser loaded (its memory maps)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return "/uvloop/loop." in maps and "/httptools/parser/parser." in maps


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads Linux's memory maps")
def test_a_server_runs_on_uvloop_and_httptools(server: Server) -> None:
    """``lethe serve`` asks uvicorn for both by name, where "auto" would fall back to asyncio
    and h11 without a word when either is missing (the HTTP figures are measured on them)."""
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
    assert _serves_on_uvloop_and_httptools(server.proc.pid)
