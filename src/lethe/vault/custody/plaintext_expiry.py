"""Plaintext a process holds leaves its memory on time, even in a process that serves nothing.

The data-key cache (``keyring.DekCache``) and the opened-vector cache with its kept scopes
and their results (``custody.opened_vectors``, ``memory.kept_results``) refuse an entry past
its TTL; on their own they would drop it only when next touched. A node that stops serving
a subject, or serves nothing, would then keep that subject's data keys, vectors and opened
contents in memory until the caches' size bound pushed them out: for ever, in an idle
process. So every such cache registers here, and one daemon thread per process drops every
expired entry each ``SWEEP_SECONDS``. Nothing stays longer than its TTL and one sweep: the bound an
erasure certificate states for the plaintext other processes held (``keys.key_copies``).

"Dropped" means unreferenced and freed. CPython does not overwrite freed memory, so the
bytes may stay in the process's heap until it is reused, as in any process that does not
lock and wipe its pages; the docs say so (``docs/erasure-semantics.md``).

Exceptions: none escape the thread; a failed sweep is logged by its type and retried.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from typing import Protocol

SWEEP_SECONDS = 1.0  # how often expired plaintext is dropped: the bound is the TTL plus this

log = logging.getLogger("lethe.custody")


class Expiring(Protocol):
    """A cache of plaintext that can drop its expired entries."""

    def drop_expired(self) -> int:
        """Drop every entry past its TTL; how many were dropped."""
        ...


_caches: weakref.WeakSet[Expiring] = weakref.WeakSet()  # a cache that is gone needs no sweep
_lock = threading.Lock()
_running_in: int | None = None  # the process whose sweeper thread runs


def _after_fork_in_child() -> None:
    """A fork copies the caches but not the thread, and the lock as it was (held, maybe, by
    a thread the child does not have): the child gets a lock of its own and, if it holds
    caches, its own sweeper (else ``watch`` starts one, seeing another process's id)."""
    global _lock
    _lock = threading.Lock()
    if _caches:
        _start()


os.register_at_fork(after_in_child=_after_fork_in_child)


def watch(cache: Expiring) -> None:
    """Sweep ``cache`` from now on, as long as it lives (starts the thread on first use)."""
    with _lock:
        _caches.add(cache)
        if _running_in != os.getpid():
            _start()


def _start() -> None:
    global _running_in
    _running_in = os.getpid()
    threading.Thread(target=_sweep_forever, name="lethe-plaintext-expiry", daemon=True).start()


def sweep() -> int:
    """Drop the expired entries of every watched cache now; how many were dropped."""
    with _lock:
        caches = list(_caches)
    return sum(cache.drop_expired() for cache in caches)


def _sweep_forever() -> None:
    while True:
        time.sleep(SWEEP_SECONDS)
        try:
            sweep()
        except Exception as exc:  # the type only, as the server's background work logs
            log.warning("plaintext sweep failed", extra={"error": type(exc).__name__})
