"""The HTTP figure's plumbing: wrk counts only expected answers, --previous maps a checkout, and
a server's memory is read from its largest process."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lethe.api.bench import wrk
from lethe.api.bench.context import BenchError
from lethe.api.bench.http_load import _release_path, _schema_head
from lethe.api.bench.rss import peak_rss_mb, peak_rss_tree_mb


class _Handler(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, str]] = []
    bodies: list[str] = []

    def do_GET(self) -> None:
        _Handler.seen.append((self.command, self.path, self.headers.get("Authorization", "")))
        code = 404 if self.path.startswith("/missing") else 500
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        _Handler.bodies.append(body)
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.skipif(not wrk.available(), reason="wrk is not installed (Debian package wrk)")
def test_wrk_counts_expected_answers_as_served_and_every_other_status_as_an_error(tmp_path: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        requests = [
            {"method": "GET", "path": "/missing/1", "body": None},
            {"method": "GET", "path": "/broken", "body": None},
        ]
        r = wrk.run(tmp_path, server.server_port, ["tok-a", "tok-b"], requests, 2, 1, 0)
    finally:
        server.shutdown()
    assert r["requests"] > 0 and r["errors"] > 0
    assert abs(r["requests"] - r["errors"]) <= 4  # the two requests alternate
    tokens = {auth for _, _, auth in _Handler.seen}
    assert tokens == {"Bearer tok-a", "Bearer tok-b"}


def test_a_previous_release_is_mapped_from_its_folders_and_a_non_checkout_is_refused(tmp_path: Path):
    checkout = tmp_path / "prev"
    for folder in ("vault", "keys", "api"):
        (checkout / folder).mkdir(parents=True)
    root = _release_path(tmp_path / "mapped", checkout)
    assert (root / "lethe" / "api").resolve() == (checkout / "api").resolve()
    assert not (root / "lethe" / "client").exists()
    with pytest.raises(BenchError, match="no api/ folder"):
        _release_path(tmp_path / "other", tmp_path / "empty")


def test_a_previous_release_in_the_src_layout_is_mapped_from_src_lethe(tmp_path: Path):
    checkout = tmp_path / "prev"
    for folder in ("vault", "keys", "api"):
        (checkout / "src" / "lethe" / folder).mkdir(parents=True)
    root = _release_path(tmp_path / "mapped", checkout)
    assert (root / "lethe" / "api").resolve() == (checkout / "src" / "lethe" / "api").resolve()


@pytest.mark.skipif(not wrk.available(), reason="wrk is not installed (Debian package wrk)")
def test_wrk_sends_every_write_with_a_fresh_idempotency_key_and_counts_its_201s(tmp_path: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Handler.bodies.clear()
    body = json.dumps({"content": "tea", "idempotency_key": wrk.UNIQUE})
    try:
        requests = [{"method": "POST", "path": "/v1/memories", "body": body, "expected": 201}]
        r = wrk.run(tmp_path, server.server_port, ["tok"], requests, 2, 1, 1)
    finally:
        server.shutdown()
    assert r["requests"] > 0 and r["errors"] == 0
    keys = [b.split('"idempotency_key": "')[1].split('"')[0] for b in _Handler.bodies]
    assert len(keys) == len(set(keys)) > r["requests"]  # the warm-up's too: never one key twice
    assert wrk.UNIQUE not in "".join(keys)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's /proc")
def test_a_servers_memory_is_its_largest_process_not_its_supervisors() -> None:
    """``lethe serve --workers N`` is a small supervisor and N full servers: figure 7 reads them all."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT_OF_A_BIG_CHILD], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "ready"
        supervisor = peak_rss_mb(parent.pid)
        assert supervisor is not None and supervisor < 60
        tree = peak_rss_tree_mb(parent.pid)
        assert tree is not None and tree >= 80  # the child's 96 MiB, not the parent's
    finally:
        parent.kill()
        parent.wait(10)


_PARENT_OF_A_BIG_CHILD = """
import subprocess, sys
child = subprocess.Popen(
    [sys.executable, "-c", "b = bytearray(96 << 20); print('ok', flush=True); import time; time.sleep(60)"],
    stdout=subprocess.PIPE, text=True,
)
child.stdout.readline()
print("ready", flush=True)
child.wait()
"""


@pytest.mark.parametrize("layout", ["", "src/lethe"])
def test_the_previous_releases_schema_is_the_revision_nothing_follows(tmp_path: Path, layout: str) -> None:
    versions = tmp_path / layout / "vault" / "store" / "migrations" / "versions"
    versions.mkdir(parents=True)
    for rev, down in (("0001", None), ("0002", "0001"), ("0003", "0002")):
        parent = "None" if down is None else f'"{down}"'
        text = f'"""x\n\nRevision ID: {rev}\n"""\nrevision = "{rev}"\ndown_revision = {parent}\n'
        (versions / f"{rev}_x.py").write_text(text)
    assert _schema_head(tmp_path) == "0003"
    (versions / "0004_y.py").write_text('revision = "0004"\ndown_revision = "0002"\n')  # a fork
    with pytest.raises(BenchError):
        _schema_head(tmp_path)
