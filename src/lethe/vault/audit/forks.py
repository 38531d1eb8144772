"""Forks of the audit log: where restoring an older backup made two histories.

The events logged after a backup are abandoned when it is restored, and the next events
take their sequence numbers: from the backup's tree size on, the log has two branches.
Hiding that would make every checkpoint signed on the abandoned branch look like a
rewrite; so each restore records its fork (``record_fork``): the prefix both branches
share, the abandoned branch's size and the checkpoints signed on it (each still verifies
under the log key, and certificates anchored to them still verify offline), and the
erasures re-applied on the new branch. The ``backup.restored`` event on the new branch
carries the same figures, so the new log commits to the fork too.

Exceptions: ``OutOfScope`` (403): a role that may not read forks; ``StoreUnavailable`` (503).
"""

from __future__ import annotations

import builtins
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.errors import OutOfScope
from lethe.vault.model import Caller, Role
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import audit_forks
from lethe.vault.store.tenancy import for_caller


@dataclass(frozen=True)
class ReappliedErasure:
    tenant_id: str
    request_id: str


@dataclass(frozen=True)
class AuditFork:
    id: str
    backup_id: str
    restored_at: str
    fork_tree_size: int  # events 1..fork_tree_size are common to both branches
    abandoned_tree_size: int
    abandoned_checkpoints: list[str]  # signed notes of the abandoned branch (size > fork_tree_size)
    reapplied: list[ReappliedErasure]
    event_seq: int  # the backup.restored event on the new branch


def record_fork(
    conn: Connection,
    *,
    backup_id: str,
    restored_at: str,
    fork_tree_size: int,
    abandoned_tree_size: int,
    abandoned_checkpoints: Sequence[str],
    reapplied: Sequence[ReappliedErasure],
    event_seq: int,
) -> AuditFork:
    fork = AuditFork(
        str(uuid.uuid4()),
        backup_id,
        restored_at,
        fork_tree_size,
        abandoned_tree_size,
        list(abandoned_checkpoints),
        list(reapplied),
        event_seq,
    )
    conn.execute(
        audit_forks.insert().values(
            id=fork.id,
            backup_id=backup_id,
            restored_at=restored_at,
            fork_tree_size=fork_tree_size,
            abandoned_tree_size=abandoned_tree_size,
            abandoned_checkpoints=json.dumps(fork.abandoned_checkpoints),
            reapplied=json.dumps([{"tenant_id": r.tenant_id, "request_id": r.request_id} for r in reapplied]),
            event_seq=event_seq,
        )
    )
    return fork


class AuditForks:
    """Reads the recorded forks; each caller sees only its own tenant's re-applied erasures."""

    def __init__(self, uow: UnitOfWork) -> None:
        self.uow = uow

    @for_caller
    def list(self, caller: Caller) -> list[AuditFork]:
        if caller.role not in (Role.AUDITOR, Role.PRIVACY_OFFICER):
            raise OutOfScope("this credential's role may not read the audit log's forks")
        return [
            AuditFork(
                f.id,
                f.backup_id,
                f.restored_at,
                f.fork_tree_size,
                f.abandoned_tree_size,
                f.abandoned_checkpoints,
                [r for r in f.reapplied if r.tenant_id == caller.tenant_id],
                f.event_seq,
            )
            for f in self.all()
        ]

    def all(self) -> builtins.list[AuditFork]:  # ``list`` is the method above
        """Every fork, oldest first (for the operator's CLI)."""
        with self.uow.read() as conn:
            rows = conn.execute(sa.select(audit_forks).order_by(audit_forks.c.restored_at)).all()
        return [
            AuditFork(
                r.id,
                r.backup_id,
                r.restored_at,
                r.fork_tree_size,
                r.abandoned_tree_size,
                json.loads(r.abandoned_checkpoints),
                [ReappliedErasure(**x) for x in json.loads(r.reapplied)],
                r.event_seq,
            )
            for r in rows
        ]
