"""Real processes on one data dir: a ``lethe serve``, CLI commands beside it, and the checks.

The test process never opens a live SQLite file of the data dir itself (not even to read
it): on POSIX, closing any descriptor of a file drops every lock the process holds on it,
which is the very bug these tests are about. SQLite files are read in a separate
``python -c`` process through SQLite, read-only; PostgreSQL is queried over the network.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from threading import Lock
from typing import Any

import httpx
import sqlalchemy as sa

from tests.api.test_serve import Server, lethe_command, start_server

CLI_TIMEOUT = 300  # seconds; CLI commands beside a busy server may wait for locks
HTTP_TIMEOUT = 120
ERASURE_TIMEOUT = 180
AGENT = ("--role", "agent", "--agent", "a1", "--purpose", "support")  # `lethe token create` options
FORGET_ACCEPTED = (0, 3)  # 3: the job was accepted but could not finish yet; the runner resumes it


def serve(log_dir: Path, data_dir: Path, extra_env: dict[str, str] | None = None) -> Server:
    """``lethe serve`` on ``data_dir``, its output in ``log_dir`` (one folder per run of the server)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        try:
            return start_server(log_dir, {**(extra_env or {}), "LETHE_DATA_DIR": str(data_dir)})
        except AssertionError as exc:  # the free port was taken before the server bound it: retry
            if "address already in use" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``lethe ARGS`` with the server's environment (same data dir, same database)."""
    return subprocess.run(
        [*lethe_command(), *args], env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False
    )


def forget_args(tenant: str, subject: str, reference: str) -> tuple[str, ...]:
    """``lethe forget`` arguments for a GDPR Art. 17(1)(a) request."""
    basis = ("--basis", "gdpr-art17-1a")
    return ("forget", "--tenant", tenant, "--subject", subject, *basis, "--reference", reference)


def cli_failure(r: subprocess.CompletedProcess[str], accept: Iterable[int] = (0,)) -> str | None:
    """None if the command exited as accepted, else a message with its output."""
    if r.returncode in tuple(accept):
        return None
    return f"`lethe {' '.join(r.args[len(lethe_command()) :])}` exited {r.returncode}:\n{r.stderr}{r.stdout}"


class HttpLog:
    """Every HTTP response of a test run, so one check covers all of them."""

    def __init__(self) -> None:
        self.responses: list[tuple[str, str, int]] = []
        self._lock = Lock()

    def client(self, url: str, token: str) -> httpx.Client:
        return httpx.Client(
            base_url=url,
            timeout=HTTP_TIMEOUT,
            headers={"Authorization": f"Bearer {token}"},
            event_hooks={"response": [self._record]},
        )

    def _record(self, response: httpx.Response) -> None:
        with self._lock:
            self.responses.append((response.request.method, response.request.url.path, response.status_code))

    def server_errors(self) -> dict[str, int]:
        """How many times each request drew a 5xx, e.g. ``{"GET /v1/erasure-requests -> 500": 2}``."""
        with self._lock:
            return dict(Counter(f"{m} {p} -> {s}" for m, p, s in self.responses if s >= 500))


def memory_body(subject: str, content: str) -> dict[str, Any]:
    return {
        "subject_id": subject,
        "purpose": "support",
        "kind": "preference",
        "content": content,
        "provenance": {"source_type": "user_statement", "source_ref": "torture/turn-1"},
        "confidence": 0.9,
        "expected_version": 0,
        "idempotency_key": uuid.uuid4().hex,
    }


def write(agent: httpx.Client, subject: str, content: str) -> httpx.Response:
    return agent.post("/v1/memories", json=memory_body(subject, content))


def acknowledged_id(r: httpx.Response) -> str | None:
    """The memory id if the server acknowledged the write (201, or 200 for a retry)."""
    return r.json()["id"] if r.status_code in (200, 201) else None


def request_erasure(officer: httpx.Client, subject: str) -> str:
    body = {"subject_id": subject, "legal_basis": "gdpr-art17-1a", "reference": f"DSR-{uuid.uuid4().hex[:8]}"}
    r = officer.post("/v1/erasure-requests", json=body)
    assert r.status_code == 202, r.text
    return r.json()["id"]


def wait_until_reported(
    officer: httpx.Client, job_id: str, timeout: float = ERASURE_TIMEOUT
) -> dict[str, Any]:
    """Poll an erasure request until it is ``reported``; else the last state seen (or the error)."""
    deadline = time.monotonic() + timeout
    while True:
        r = officer.get(f"/v1/erasure-requests/{job_id}")
        if r.status_code != 200:
            return {"status": f"HTTP {r.status_code}", "body": r.text}
        job = r.json()
        if job["status"] == "reported" or time.monotonic() > deadline:
            return job
        time.sleep(0.25)


# -- SQLite files, read from another process ----------------------------------------------

_SQLITE_READER = r"""
import json, pathlib, sqlite3, sys
job = json.loads(sys.stdin.read())
out = {}
for path in job["files"]:
    try:
        db = sqlite3.connect(pathlib.Path(path).as_uri() + "?mode=ro", uri=True, timeout=120)
        try:
            out[path] = [list(row) for row in db.execute(job["sql"], job["params"])]
        finally:
            db.close()
    except sqlite3.Error as exc:
        out[path] = [["error: " + str(exc)]]
print(json.dumps(out))
"""


def sqlite_query(files: Iterable[Path], sql: str, params: dict[str, Any] | None = None) -> dict[str, list]:
    """Run one read-only query on each SQLite file, in a separate Python process."""
    job = {"files": [str(f) for f in files], "sql": sql, "params": params or {}}
    r = subprocess.run(
        [sys.executable, "-c", _SQLITE_READER],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def sqlite_files(data_dir: Path) -> list[Path]:
    """Every SQLite database of the data dir: the store (if SQLite), the keystore, backups."""
    return sorted(data_dir.rglob("*.sqlite3"))


def integrity_problems(data_dir: Path) -> dict[str, list]:
    """``PRAGMA integrity_check`` of every SQLite file that does not answer ``ok``."""
    results = sqlite_query(sqlite_files(data_dir), "PRAGMA integrity_check")
    return {Path(f).relative_to(data_dir).as_posix(): rows for f, rows in results.items() if rows != [["ok"]]}


def keystore_path(data_dir: Path) -> Path:
    return data_dir / "keys" / "keystore.sqlite3"


def keystore_key_names(data_dir: Path) -> set[str]:
    """Names of the keys the local KMS still holds."""
    (rows,) = sqlite_query([keystore_path(data_dir)], "SELECT name FROM subject_keys").values()
    assert not (rows and str(rows[0][0]).startswith("error: ")), f"the keystore cannot be read: {rows}"
    return {r[0] for r in rows}


_KEYS_BY_MEMORY = (
    "SELECT m.id, k.key_name, k.state FROM memories m JOIN subject_keys k"
    " ON k.tenant_id = m.tenant_id AND k.subject_ref = m.subject_ref"
)


def subject_keys_by_memory(env: dict[str, str]) -> dict[str, dict[str, str]]:
    """Data DB: memory id -> {key name: state} of every key generation of the memory's subject."""
    if url := env.get("LETHE_DATABASE_URL"):
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                rows = [tuple(r) for r in conn.execute(sa.text(_KEYS_BY_MEMORY))]
        finally:
            engine.dispose()
    else:
        (rows,) = sqlite_query([Path(env["LETHE_DATA_DIR"]) / "lethe.sqlite3"], _KEYS_BY_MEMORY).values()
        assert not (rows and str(rows[0][0]).startswith("error: ")), f"the data DB cannot be read: {rows}"
    keys: dict[str, dict[str, str]] = {}
    for memory_id, key_name, state in rows:
        keys.setdefault(memory_id, {})[key_name] = state
    return keys


def keys_of(keys_by_memory: dict[str, dict[str, str]], memory_ids: Iterable[str]) -> dict[str, str]:
    """{key name: state} of the subject(s) of ``memory_ids``."""
    return {name: state for m in memory_ids for name, state in keys_by_memory.get(m, {}).items()}


class Claims:
    """The claims a test proves. All are checked, so one failing run shows every symptom."""

    def __init__(self) -> None:
        self.broken: list[str] = []
        self.passed = 0
        self._lock = Lock()

    def check(self, holds: bool, claim: str, evidence: object = "") -> bool:
        with self._lock:
            if holds:
                self.passed += 1
            else:
                self.broken.append(f"{claim}\n    evidence: {evidence}")
        return holds

    def cli(self, r: subprocess.CompletedProcess[str], accept: Iterable[int] = (0,)) -> bool:
        failure = cli_failure(r, accept)
        return self.check(failure is None, "a CLI command beside the server succeeds", failure)

    def assert_all_hold(self, context: str = "") -> None:
        broken = "\n- ".join(self.broken)
        assert not self.broken, (
            f"{context}{': ' if context else ''}{len(self.broken)} claim(s) broken:\n- {broken}"
        )
