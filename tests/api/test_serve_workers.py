"""How many processes ``lethe serve`` runs: one per usable core unless told, and a worker
that is slow to answer uvicorn's supervisor (as a starting worker on a loaded machine is)
is waited for rather than killed and started again."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.api.test_serve import _listening, start_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's socket table"),
]


def _workers(supervisor: int) -> set[int]:
    """The supervisor's children that serve HTTP (uvloop loaded), not its resource tracker."""
    children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
    return {int(pid) for pid in children if "/uvloop/loop." in Path(f"/proc/{pid}/maps").read_text()}


def _wait_for_sockets(port: int, n: int) -> int:
    deadline = time.monotonic() + 60  # the last worker may still be starting
    while _listening(port) < n and time.monotonic() < deadline:
        time.sleep(0.2)
    return _listening(port)


def test_serve_without_flags_runs_one_worker_per_core_it_may_use(tmp_path: Path) -> None:
    cores = len(os.sched_getaffinity(0))
    srv = start_server(tmp_path, {}, workers=None)
    port = int(srv.url.rsplit(":", 1)[1])
    try:
        assert _wait_for_sockets(port, cores) == cores  # a listening socket per worker
    finally:
        srv.stop()
    assert srv.proc.returncode == 0


def test_lethe_workers_sets_the_count_and_the_flag_wins_over_it(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "setting", {"LETHE_WORKERS": "3"}, workers=None)
    port = int(srv.url.rsplit(":", 1)[1])
    try:
        assert _wait_for_sockets(port, 3) == 3
    finally:
        srv.stop()
    srv = start_server(tmp_path / "flag", {"LETHE_WORKERS": "3"}, workers=1)
    port = int(srv.url.rsplit(":", 1)[1])
    try:
        assert _listening(port) == 1 and not _workers(srv.proc.pid)  # one process serves itself
    finally:
        srv.stop()


def test_a_worker_silent_for_longer_than_uvicorns_five_seconds_is_not_replaced(tmp_path: Path) -> None:
    """A stopped worker answers no ping, as a worker still importing on a loaded machine does
    not; uvicorn's default check killed it after 5 s and started another."""
    srv = start_server(tmp_path, {}, workers=2)
    port = int(srv.url.rsplit(":", 1)[1])
    try:
        assert _wait_for_sockets(port, 2) == 2
        before = _workers(srv.proc.pid)
        assert len(before) == 2
        silent = min(before)
        os.kill(silent, signal.SIGSTOP)
        try:
            time.sleep(8)  # past uvicorn's 5 s, and its next check every 0.5 s
        finally:
            with contextlib.suppress(ProcessLookupError):  # gone if the supervisor killed it
                os.kill(silent, signal.SIGCONT)
        with httpx.Client(base_url=srv.url, timeout=10) as client:
            assert all(client.get("/healthz").status_code == 200 for _ in range(10))
        assert _workers(srv.proc.pid) == before  # the same two processes: none killed
    finally:
        srv.stop()
    assert srv.proc.returncode == 0
