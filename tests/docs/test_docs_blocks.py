"""The README's and ``docs/*.md``'s shell and Python blocks run, as a reader would run them,
against one real ``lethe serve`` on a fresh store (SQLite + local KMS): a doc that goes
stale fails here.

The reader's setting: ``lethe`` on ``PATH`` (the README's ``export PATH="$PWD/.venv/bin:$PATH"``),
``LETHE_DATA_DIR`` naming the server's store (the CLI runs on the server), and the two values
the README asks the reader to fill in, ``http://127.0.0.1:8080`` (the server's address; here a
free port) and ``lethe_...`` or ``$(cat lethe-data/admin-token)`` (the admin token the first
start wrote); a ``<report-id>`` is
the certificate the README's auditor block fetched (``$REPORT``). The README runs first;
every other doc starts where the README left the reader (its variables, its files), in one
working directory. Blocks of one doc run in order and share their variables: each shell block
runs in ``bash`` with ``set -euo pipefail`` and every assignment exported, and what it leaves
in the environment is the next block's environment (a Python block runs in this virtualenv's
interpreter with that environment). ``curl`` fails on an HTTP error status (``--fail-with-body``),
so a route or body that no longer exists fails its block. Opt-outs are markers in the docs
(``tests/docs/blocks.py``); the test prints how many blocks ran and how many opted out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.api.test_serve import Server, start_server
from tests.docs.blocks import Block, MarkerError, blocks, is_excerpt

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK_TIMEOUT = 90
PRELUDE = """set -a
curl() {  # fails on an HTTP error status, and shows the problem's body on stderr too
  local body status=0
  body=$(command curl --fail-with-body --show-error "$@") || status=$?
  printf '%s\n' "$body"
  if [ "$status" -ne 0 ]; then printf '%s\n' "$body" >&2; fi
  return "$status"
}
trap 'env -0 > "$LETHE_DOCS_STATE"' EXIT
set -euo pipefail
"""
# The erasure runner waits between rounds longer than the docs take, so a request filed over
# HTTP stays `received` while the README extends, pauses and resumes it (by default the runner
# starts it within a second, and a request can be paused only before its erasure begins).
SERVER_ENV = {"LETHE_ERASURE_INTERVAL_SECONDS": "3600"}
# Counted apart from the extractor, so a block it fails to see is a failure, not a silent pass.
RUNNABLE_FENCE = re.compile(
    r"^ {0,3}(?:`{3,}|~{3,}) *(?:sh|bash|shell|console|python|py)(?:[ \t].*)?$", re.M | re.I
)
NOT_CARRIED = {"PWD", "OLDPWD", "SHLVL", "_", "LETHE_DOCS_STATE", "SHELLOPTS", "BASHOPTS"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    srv = start_server(tmp_path_factory.mktemp("docs-server"), SERVER_ENV)
    admin = srv.first_admin_token()  # the 0600 file the first start wrote (README: lethe-data/admin-token)
    assert admin.startswith("lethe_"), "the first start writes the admin token to its file"
    yield srv, admin
    srv.stop()


def reader_text(block: Block, url: str, admin: str) -> str:
    """The block as the reader runs it: their server's address and admin token filled in."""
    code = block.commands() if block.lang == "shell" else block.code
    fill_in = {
        "http://127.0.0.1:8080": url,
        "$(cat lethe-data/admin-token)": admin,  # the reader's data dir is not the test server's
        "lethe_...": admin,
        "<report-id>": "$REPORT",
    }
    for placeholder, value in fill_in.items():
        code = code.replace(placeholder, value)
    return code


def run(
    block: Block, code: str, env: dict[str, str], cwd: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run one block in ``cwd`` with ``env``; the result and the environment it leaves."""
    state = cwd / ".block-env"
    state.unlink(missing_ok=True)
    if block.lang == "shell":
        command = ["bash", "-c", PRELUDE + code]
    else:
        script = cwd / f"block_{block.doc.stem}_{block.line}.py"
        script.write_text(code)
        command = [sys.executable, str(script)]
    r = subprocess.run(
        command,
        env={**env, "LETHE_DOCS_STATE": str(state)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
        check=False,
    )
    if block.lang == "python" or not state.exists():
        return r, env
    pairs = (item.split("=", 1) for item in state.read_text().split("\0") if "=" in item)
    return r, {k: v for k, v in pairs if k not in NOT_CARRIED}


@dataclass
class Outcome:
    tally: dict[str, tuple[int, int, float]]  # per doc: blocks run, opted out, seconds
    failures: list[str]

    @property
    def ran(self) -> int:
        return sum(t[0] for t in self.tally.values())

    @property
    def opted_out(self) -> int:
        return sum(t[1] for t in self.tally.values())


def run_docs(docs: list[Path], srv: Server, admin: str, cwd: Path) -> Outcome:
    """Run every runnable block of ``docs`` in order (the first doc's final state is where
    every later doc starts); check excerpts; count what ran and what opted out."""
    venv_bin = str(Path(sys.executable).parent)
    reader = {**srv.env, "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(cwd)}
    after_first = reader
    outcome = Outcome({}, [])
    for n, doc in enumerate(docs):
        env, done, skipped, started = (reader if n == 0 else after_first), 0, 0, time.monotonic()
        for block in blocks(doc):
            if block.excerpt_of is not None and not is_excerpt(
                block.code, (ROOT / block.excerpt_of).read_text()
            ):
                outcome.failures.append(f"{block.where}: not an excerpt of {block.excerpt_of}")
            if block.not_run is not None or block.excerpt_of is not None:
                skipped += 1
                continue
            r, env = run(block, reader_text(block, srv.url, admin), env, cwd)
            done += 1
            if r.returncode != 0:
                outcome.failures.append(
                    f"{block.where} ({block.info}) exited {r.returncode}\n--- block\n{block.code}"
                    f"--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
                )
        if n == 0:
            after_first = env
        fenced = len(RUNNABLE_FENCE.findall(doc.read_text(encoding="utf-8")))
        if done + skipped != fenced:
            outcome.failures.append(f"{doc.name}: {fenced} runnable blocks, {done} ran, {skipped} opted out")
        outcome.tally[doc.name] = (done, skipped, time.monotonic() - started)
    return outcome


@pytest.mark.slow
def test_every_runnable_block_of_the_docs_runs(
    server: tuple[Server, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    outcome = run_docs(DOCS, *server, tmp_path)
    with capsys.disabled():
        seconds = time.monotonic() - started
        print(f"\ndocs blocks: {outcome.ran} ran, {outcome.opted_out} opted out, {seconds:.1f} s")
        for name, (done, skipped, spent) in outcome.tally.items():
            if done or skipped:
                print(f"  {name}: {done} ran, {skipped} opted out, {spent:.1f} s")
    assert outcome.ran > 0
    assert not outcome.failures, "\n\n".join(outcome.failures)


@pytest.mark.slow
def test_a_stale_block_fails_and_state_carries_between_blocks(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    good, stale = tmp_path / "good.md", tmp_path / "stale.md"
    good.write_text(
        "```sh\nexport LETHE=http://127.0.0.1:8080\nN=$(curl -s $LETHE/v1/admin/tokens"
        ' -H "Authorization: Bearer lethe_..." | jq ".items | length")\n```\n\n'
        '```sh\ntest "$N" -ge 1\n```\n\n```python\nimport os\nassert int(os.environ["N"]) >= 1\n```\n'
        "\n<!-- not-run: a sample -->\n```sh\nexit 1\n```\n"
    )
    stale.write_text("```sh\ncurl -s $LETHE/v1/no-such-route\n```\n\n```python\nraise SystemExit(3)\n```\n")
    (tmp_path / "wd").mkdir()
    outcome = run_docs([good, stale], *server, tmp_path / "wd")
    assert outcome.tally["good.md"][:2] == (3, 1)
    assert [f.split("\n")[0] for f in outcome.failures] == [
        "stale.md:1 (sh) exited 22",
        "stale.md:5 (python) exited 3",
    ]


def test_a_marker_must_say_why(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("<!-- not-run: starts a server -->\n```sh\nlethe serve\n```\n")
    (only,) = blocks(doc)
    assert only.not_run == "starts a server"
    doc.write_text("<!-- not-run: -->\n```sh\nlethe serve\n```\n")
    with pytest.raises(MarkerError, match="needs a reason"):
        blocks(doc)


def test_only_shell_and_python_blocks_are_runnable(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("```json\n{}\n```\n\n```\nGET /x\n```\n\n```bash\necho 1\n```\n\n```py\nprint(1)\n```\n")
    assert [(b.lang, b.line) for b in blocks(doc)] == [("shell", 9), ("python", 13)]
    doc.write_text("<!-- not-run: a sample -->\n```json\n{}\n```\n")
    with pytest.raises(MarkerError, match="json"):
        blocks(doc)


def test_a_console_block_runs_its_prompted_lines(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("```console\n$ echo one \\\n  two\none two\n$ echo three\nthree\n```\n")
    (only,) = blocks(doc)
    assert only.commands() == "echo one \\\n  two\necho three\n"


def test_an_excerpt_must_match_its_source_statement_for_statement() -> None:
    source = "def f(x):\n    y = x + 1\n    return y * 2\n"
    assert is_excerpt("y = x + 1\nreturn  y*2\n", source)
    assert not is_excerpt("y = x + 2\nreturn y * 2\n", source)
    assert not is_excerpt("return y * 2\ny = x + 1\n", source)
