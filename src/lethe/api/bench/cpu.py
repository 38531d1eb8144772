"""CPU time of a process tree, read from ``/proc``: what a server spent on each request.

Requests/s says how much a machine served; CPU per request says what each one cost the
processes that served it, which is what an optimisation changes. Figures 6 and 6d read it
around their measured loads: the ``lethe serve`` processes, and in 6d the PostgreSQL
server too. A tree's time is its own and its live children's user and system time, plus
what children that already exited left in its ``cutime``/``cstime``; so a process that
comes and goes inside the window (a PostgreSQL backend) is still counted. Standard library
only; None where ``/proc`` is not there or the process is gone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lethe.api.bench.subprocesses import descendants

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def tree_cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of ``pid``, its live children and its reaped ones."""
    own = _stat_times(pid)
    if own is None:
        return None
    return own + sum(t for t in map(_stat_times, descendants(pid)) if t is not None)


def per_request_us(seconds: float | None, requests: int) -> float | None:
    """CPU microseconds a request, rounded; None without a reading or a request."""
    if seconds is None or requests <= 0:
        return None
    return round(seconds / requests * 1e6, 1)


@contextmanager
def spent(readers: dict[str, Callable[[], float | None]]) -> Iterator[dict[str, float | None]]:
    """CPU seconds each reader's processes spent inside the block (None where one failed)."""
    before = {name: read() for name, read in readers.items()}
    out: dict[str, float | None] = {}
    try:
        yield out
    finally:
        for name, read in readers.items():
            after, start = read(), before[name]
            out[name] = None if after is None or start is None else round(after - start, 3)


def _stat_times(pid: int) -> float | None:
    """utime + stime + cutime + cstime of one process (its own and its reaped children's), in seconds."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command (which may hold spaces and parentheses) start at field 3.
    fields = stat.rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / _TICKS  # utime, stime, cutime, cstime
