"""The machine a run measured: CPU, cores, RAM, versions, the data directory's filesystem,
and two costs that differ between machines of one kind (``calibration``).

The absolute numbers of a run only describe this machine, so the report opens with it.
"""

from __future__ import annotations

import os
import platform
import queue
import sqlite3
import subprocess
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import sqlalchemy

from lethe.api.bench.openbao import find_bao_binary


def _cpu_model() -> str:
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    with suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    return None


def _filesystem(path: Path) -> str:
    best, found = "", "unknown"
    with suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, mnt, fstype = line.split()[:3]
            if str(path.resolve()).startswith(mnt) and len(mnt) > len(best):
                best, found = mnt, f"{fstype} on {dev} (mounted at {mnt})"
    return found


def _openbao_version() -> str | None:
    bao = find_bao_binary()
    if not bao:
        return None
    with suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run([bao, "version"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
    return None


PYTHON_LOOP = 1_000_000  # additions of the pure-Python probe
ROUND_TRIPS = 5_000  # of the thread wake-up probe


def python_loop_ms(additions: int = PYTHON_LOOP, best_of: int = 5) -> float:
    """CPU milliseconds a pure-Python loop of 10^6 additions takes now (``additions`` of
    them run, best of ``best_of``, scaled): the interpreter's speed on this machine at
    this moment. On a shared virtual machine it drifts within a run, so every phase
    records it at its start and end (``RunContext.phase``)."""
    best = float("inf")
    for _ in range(best_of):
        start = time.process_time()
        total = 0
        for i in range(additions):
            total += i
        best = min(best, time.process_time() - start)
    return round(best * 1e3 * 1_000_000 / additions, 2)


def _wake_round_trip_us() -> dict[str, float]:
    """What one thread waking another and being woken back costs, best of 3 runs of
    ``ROUND_TRIPS``: CPU (of every thread of the process) and wall microseconds.

    A server request crosses threads at least twice (the event loop and its worker), and
    each database or Redis reply wakes the thread that waits for it. On a virtual machine,
    waking a thread whose core sleeps can cost far more than the switch itself (86 µs of
    CPU on an idle AMD EPYC machine of this kind, 33 µs on it with both cores busy), so the
    HTTP figures follow this probe more than the Python loop. It runs first, cores idle."""
    ping: queue.Queue[int | None] = queue.Queue()
    pong: queue.Queue[int] = queue.Queue()

    def echo() -> None:
        while (n := ping.get()) is not None:
            pong.put(n)

    worker = threading.Thread(target=echo, daemon=True)
    worker.start()
    cpu, wall = float("inf"), float("inf")
    try:
        for _ in range(3):
            c0, w0 = time.process_time(), time.perf_counter()
            for n in range(ROUND_TRIPS):
                ping.put(n)
                pong.get()
            cpu = min(cpu, time.process_time() - c0)
            wall = min(wall, time.perf_counter() - w0)
    finally:
        ping.put(None)
        worker.join()
    return {"cpu_us": round(cpu / ROUND_TRIPS * 1e6, 1), "wall_us": round(wall / ROUND_TRIPS * 1e6, 1)}


def calibration() -> dict[str, Any]:
    """The two probes, run before any figure (the run's own processes not yet started)."""
    return {"python_loop_ms": python_loop_ms(PYTHON_LOOP), "thread_wake_round_trip": _wake_round_trip_us()}


def machine_info(workdir: Path) -> dict[str, Any]:
    """The ``machine`` section of the results (``workdir``: where the stores live)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "ram_gib": _ram_gib(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": sqlalchemy.__version__,
        "os": platform.platform(),
        "openbao": _openbao_version(),
        "workdir_filesystem": _filesystem(workdir),
        "calibration": calibration(),
    }
