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
from datetime import datetime, timedelta
from enum import Enum

from lethe.vault.clock import from_db
from lethe.vault.erasure import repository as repo
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tenancy import maintenance_job

LEASE = timedelta(minutes=10)  # a runner's claim on a job, renewed before every step


class Claim(Enum):
    """What a claim found: the caller runs the job's next step only when it is ``TAKEN``."""

    TAKEN = "taken"  # the lease is ours now, until ``LEASE`` from the claim
    HELD = "held"  # another live runner holds an unexpired lease
    FINISHED = "finished"  # the job is complete: there is nothing left to lease
    MISSING = "missing"  # no such job


@maintenance_job("erasure runner")
def claim(uow: UnitOfWork, job_id: str, runner_id: str, now: datetime) -> Claim:
    """Take or renew the job's lease if it is free, ours, expired, or left by a dead process
    here; otherwise say why not, from the same transaction's read (a caller that was told
    ``HELD`` leaves the job to its holder, one told ``FINISHED`` reports it complete)."""
    with uow.write() as conn:
        job = repo.lease_of(conn, job_id)
        if job is None:
            return Claim.MISSING
        if job.completed_at is not None:
            return Claim.FINISHED
        free = (
            job.lease_owner in (None, runner_id)
            or job.lease_until is None
            or from_db(job.lease_until) < now
            or died_here(job.lease_owner)
        )
        if not free:
            return Claim.HELD
        repo.take_lease(conn, job_id, runner_id, now + LEASE)
        return Claim.TAKEN


@maintenance_job("erasure runner")
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
