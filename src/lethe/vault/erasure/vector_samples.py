"""The sealed vectors an erasure removed, held in this process until its byte scan.

A subject's sealed vectors leave the store with its index entries, at the tombstone (and
a derived summary's at ``derived_purged``), long before the ``compacted`` step scans the
files: by then no row says what bytes to look for, and no row may (a stored copy would be
the very bytes the scan must not find). So the steps that delete them hand the sealed
bytes to this bounded in-memory holder, keyed by erasure job, and the compaction step
takes them for its byte scan. A process that restarts in between has none: the step
then says the vectors were not byte-scanned, as it does for ciphertext it could not sample.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_JOBS = 64  # jobs whose samples are held at once; the oldest are dropped first
MAX_PER_JOB = 256  # sealed vectors held per job (the scan samples at most 64 anyway)

_held: OrderedDict[str, list[bytes]] = OrderedDict()
_lock = threading.Lock()


def hold(job_id: str, sealed: list[bytes]) -> None:
    """Add ``sealed`` to the job's samples (bounded)."""
    with _lock:
        got = _held.setdefault(job_id, [])
        got.extend(sealed[: max(0, MAX_PER_JOB - len(got))])
        _held.move_to_end(job_id)
        while len(_held) > MAX_JOBS:
            _held.popitem(last=False)


def take(job_id: str) -> list[bytes] | None:
    """The job's samples, forgotten here as they are handed over; None if none were held."""
    with _lock:
        return _held.pop(job_id, None)
