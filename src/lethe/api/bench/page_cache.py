"""The page cache under the bench's stores: filled before the searches, and how much of it held.

Both run in a child process: the bench holds SQLite connections to these files, and a process
that opens and closes a live database file drops its own locks on it (keys/filescan.py).

Figure 3's cold searches read pages the opened-vector cache cannot hold, so their latency
depends on whether the kernel still caches the store's files. The stores are read once
before the searches (``warm``); ``resident_share`` says what share of their pages the page
cache held at a given moment (Linux ``mincore``), so a report can tell a slow search from a
store the kernel dropped (a virtual machine may reclaim cached pages with memory free).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

_FILES = "*.sqlite3*"  # a store's database, its WAL and shared memory

_READ_FILES = f"""
import sys, pathlib
for d in sys.argv[1:]:
    for p in sorted(pathlib.Path(d).glob({_FILES!r})):
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass
"""

# Maps each file read-only (no page is touched, so none is brought in) and asks the kernel which
# of its pages are in memory: ``mincore`` sets the low bit of one byte per resident page.
_COUNT_RESIDENT = f"""
import ctypes, json, mmap, os, pathlib, sys
from ctypes import c_int, c_long, c_size_t, c_void_p
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = c_void_p
libc.mmap.argtypes = [c_void_p, c_size_t, c_int, c_int, c_int, c_long]
libc.mincore.argtypes = [c_void_p, c_size_t, c_void_p]
libc.munmap.argtypes = [c_void_p, c_size_t]
page = mmap.PAGESIZE
resident = total = 0
for d in sys.argv[1:]:
    for p in sorted(pathlib.Path(d).glob({_FILES!r})):
        size = p.stat().st_size
        if not size:
            continue
        fd = os.open(p, os.O_RDONLY)
        try:
            addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr in (None, c_void_p(-1).value):
                raise OSError(ctypes.get_errno(), "mmap")
            pages = (size + page - 1) // page
            vec = (ctypes.c_ubyte * pages)()
            try:
                if libc.mincore(c_void_p(addr), size, vec) != 0:
                    raise OSError(ctypes.get_errno(), "mincore")
            finally:
                libc.munmap(c_void_p(addr), size)
        finally:
            os.close(fd)
        resident += sum(b & 1 for b in bytes(vec))
        total += pages
print(json.dumps({{"resident": resident, "total": total}}))
"""


def warm(data_dirs: list[Path]) -> float:
    """Read the stores' database files once, so the figures that follow meet the page cache a
    server that has run for a while holds; the seconds it took. Freshly written pages need not
    stay cached (on this VM they did not: cold, a 1M-item store's searches had a p95 of 400 ms,
    not 30 ms)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-c", _READ_FILES, *map(str, data_dirs)], check=True, timeout=1800)
    return round(time.perf_counter() - start, 2)


def resident_share(data_dirs: list[Path]) -> float | None:
    """The share of the stores' file pages in the page cache now, 0 to 1; None where the kernel
    cannot say (no ``mincore``: not Linux or a BSD) or there are no pages."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _COUNT_RESIDENT, *map(str, data_dirs)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        counts = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if not counts or not counts["total"]:
        return None
    share: float = round(counts["resident"] / counts["total"], 4)  # the child's JSON numbers
    return share
