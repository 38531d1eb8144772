"""The CPU a figure charges to a server: its own time, its children's, and what children
that exited left behind, read from /proc around a load."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from lethe.api.bench.cpu import per_request_us, spent, tree_cpu_seconds

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")

# A parent that starts a child burning ``burn`` seconds of CPU, waits for it (so the child's
# time moves into the parent's cutime), then sleeps until it is killed.
BURN = "import time\\nend = time.process_time() + %(burn)s\\nwhile time.process_time() < end: pass"
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "%(child)s"])
if %(wait)s:
    child.wait()
print("started", flush=True)
time.sleep(60)
"""


def _parent(burn: float, wait: bool) -> subprocess.Popen[str]:
    script = PARENT % {"child": BURN % {"burn": burn}, "wait": wait}
    proc = subprocess.Popen(  # its own process group, so a test can end the child with it
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    return proc


def test_a_tree_counts_the_cpu_of_children_that_already_exited():
    before_any = time.process_time()
    proc = _parent(0.4, wait=True)
    try:
        total = tree_cpu_seconds(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert total is not None and total >= 0.35  # the child's 0.4 s, now in the parent's cutime
    assert time.process_time() - before_any < 0.35  # not this process's own time


def test_spent_charges_a_live_child_for_what_it_burned_inside_the_block():
    # The child burns for longer than the block lasts; the block ends once the tree has burned
    # half a second inside it (polled, not a fixed sleep: a loaded machine gives the child less
    # than a core), so the figure must be that half second, not the CPU burned before the block.
    proc = _parent(30.0, wait=False)
    try:
        with spent({"tree": lambda: tree_cpu_seconds(proc.pid), "gone": lambda: None}) as out:
            start = tree_cpu_seconds(proc.pid)
            assert start is not None
            deadline = time.monotonic() + 60
            burned = 0.0
            while burned < 0.5 and time.monotonic() < deadline:
                time.sleep(0.05)
                burned = (tree_cpu_seconds(proc.pid) or start) - start
        assert out["gone"] is None
        assert burned >= 0.5, "the child never got half a second of CPU in a minute"
        assert out["tree"] is not None and 0.45 <= out["tree"] <= burned + 0.3
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the burning child too, not only its parent
        proc.wait()


def test_a_process_that_is_gone_has_no_reading():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert tree_cpu_seconds(proc.pid) is None


def test_cpu_per_request_is_microseconds_and_blank_without_requests_or_a_reading():
    assert per_request_us(0.5, 250) == 2000.0
    assert per_request_us(0.5, 0) is None
    assert per_request_us(None, 10) is None
