"""The machine a run measured: CPU, cores, RAM, versions and the data directory's filesystem.

The absolute numbers of a run only describe this machine, so the report opens with it.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
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
    }
