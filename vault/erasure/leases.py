"""Job leases: one runner at a time advances an erasure job.

A server's runner, a CLI ``lethe forget`` and other nodes may all try to advance the
same job. Steps are recorded once either way, but the steps outside a transaction (key
destruction, compaction) must not run twice at once, so a runner claims the job first
and renews the claim before every step. A claim lapses after ``LEASE``, or at once when
the process that held it on this host is gone.

Exceptions: none of its own; ``StoreUnavailable`` (503) from the unit of work.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime, timedelta

from lethe.vault.clock import from_db
from lethe.vault.erasure import repository as repo
from lethe.vault.store.db import UnitOfWork

LEASE = timedelta(minutes=10)  # a runner's claim on a job, renewed before every step


def new_runner_id() -> str:
    """``host:pid:nonce``: unique per runner, and tells whether its process is still alive here."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def claim(uow: UnitOfWork, job_id: str, runner_id: str, now: datetime) -> bool:
    """Take or renew the job's lease: free, ours, expired, or left by a dead process here."""
    with uow.write() as conn:
        owner = repo.lease_of(conn, job_id)
        if owner is None:
            return False
        free = (
            owner.lease_owner in (None, runner_id)
            or owner.lease_until is None
            or from_db(owner.lease_until) < now
            or died_here(owner.lease_owner)
        )
        if not free:
            return False
        return repo.take_lease(conn, job_id, runner_id, now + LEASE)


def release(uow: UnitOfWork, job_id: str, runner_id: str) -> None:
    with uow.write() as conn:
        repo.release_lease(conn, job_id, runner_id)


def died_here(owner: str) -> bool:
    """A lease owner ``host:pid:nonce`` on this host whose process is gone (crashed, killed)."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname()[:60] or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
