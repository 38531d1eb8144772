"""glibc's allocator settings for a server process, so its resident memory settles under load.

A server process runs requests on many threads (anyio's pool), and glibc gives threads
their own malloc arenas (up to 8 per core). Search allocates and frees a scope's sealed
vectors and matrices, about 1 MB each, per request; after the first such block is freed,
glibc raises its mmap threshold to that size, so later blocks come from the arenas, where
freed memory is fragmented across threads and stays resident. Measured under figure 6's
load (2 workers, 20k-item store, 16 connections, searches and writes): the largest worker
grew 203 -> 349 MiB in 6 minutes and still ~25 MiB a minute with glibc's defaults; with
two arenas and a fixed 128 KiB mmap threshold (so large blocks go back to the kernel when
freed), 182 -> 222 MiB, +5 MiB in the last 2.5 minutes; searches/s were not lower. (That
run set the two through glibc's environment variables, which ``mallopt`` is the runtime
form of.) Python's own heap did not grow (tracemalloc over 1,500 writes).

``tune()`` sets both through ``mallopt`` at process start (before the request threads
exist); an operator's own ``MALLOC_ARENA_MAX`` / ``MALLOC_MMAP_THRESHOLD_`` wins.

Even so, the heaps keep freed chunks between live ones, and glibc gives back only the
free memory at the top of a heap: under figure 7's soak (small scale, 2-core Xeon) 16-20
MB of a worker's heap was free but resident after 10 minutes (``mallinfo2``), and its
RSS rose by up to 12 MB between two samples 30 s apart.
``trim()`` is ``malloc_trim(0)``, which also returns the free pages inside the heaps; the
server runs it every ``LETHE_MALLOC_TRIM_INTERVAL_SECONDS`` (``api.http.background``). In
that soak one trim took 0.3-5 ms and gave back 1-12 MB; the largest worker's RSS after 10
minutes was 250.7 MiB without trims, 236.0 with one every 30 s and 220.8 with one every 10
s (the default); one run each, the searched scopes grown to 52,374, 50,225 and 46,394 rows
(the bound was 50,000). A model of a worker's churn (threads building and dropping scope-sized
lists and 1 KiB objects) rebuilt as many scopes a second with a trim every 10 s, or every
second, as with none.

On a C library other than glibc both do nothing.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>
M_ARENA_MAX = -8
ARENA_MAX = 2
MMAP_THRESHOLD = 128 * 1024  # glibc's initial value, kept fixed


def tune(libc: Any = None) -> dict[str, bool]:
    """Apply the settings the environment does not already give; which ones took effect."""
    if libc is None:
        libc = _glibc()
        if libc is None:
            return {}
    applied: dict[str, bool] = {}
    for env, param, value in (
        ("MALLOC_ARENA_MAX", M_ARENA_MAX, ARENA_MAX),
        ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    ):
        if env not in os.environ:
            applied[env] = libc.mallopt(ctypes.c_int(param), ctypes.c_int(value)) == 1
    return applied


def trim(libc: Any = None) -> int:
    """Return the heaps' free pages to the kernel (glibc's ``malloc_trim(0)``); a background
    job, it reports 0 (nothing to count or log). Takes the arenas' locks for a few ms."""
    libc = libc if libc is not None else _glibc()
    if libc is not None:
        libc.malloc_trim(ctypes.c_size_t(0))
    return 0


@functools.cache
def _glibc() -> Any:
    """The C library this process already runs on (no ``find_library`` subprocess), if glibc."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - present in glibc only
    except (OSError, AttributeError):
        return None
    return libc
