"""The stored certificates' SQL: first and final certificates by id or job, the canonical
bytes of the events a certificate embeds, and the backups taken before a forget.

Plain functions over a ``Connection`` with the mapper beside them, in the style of
``erasure.repository``.

Exceptions: none of its own (a database failure surfaces as ``StoreUnavailable``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.store.events import canonical_row
from lethe.vault.store.tables import backups, erasure_final_reports, erasure_reports, events


@dataclass(frozen=True)
class ErasureReport:
    """A stored certificate: ``document`` is its canonical JSON, byte for byte as signed."""

    id: str
    job_id: str
    tenant_id: str
    issued_at: str
    document: bytes

    def parsed(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.document)  # Lethe's own canonical JSON: an object
        return doc

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.document).hexdigest()


def _report(row: Any) -> ErasureReport:
    return ErasureReport(row.id, row.job_id, row.tenant_id, row.issued_at, row.document.encode("utf-8"))


def load(conn: Connection, report_id: str) -> ErasureReport | None:
    """A first or final certificate by its id."""
    row = conn.execute(sa.select(erasure_reports).where(erasure_reports.c.id == report_id)).first()
    if row is None:
        t = erasure_final_reports
        row = conn.execute(sa.select(t).where(t.c.id == report_id)).first()
    return _report(row) if row is not None else None


def first_of_job(conn: Connection, job_id: str) -> ErasureReport | None:
    row = conn.execute(sa.select(erasure_reports).where(erasure_reports.c.job_id == job_id)).first()
    return _report(row) if row is not None else None


def final_of_job(conn: Connection, job_id: str) -> ErasureReport | None:
    t = erasure_final_reports
    row = conn.execute(sa.select(t).where(t.c.job_id == job_id)).first()
    return _report(row) if row is not None else None


def insert_first(conn: Connection, report: ErasureReport) -> None:
    conn.execute(
        erasure_reports.insert().values(
            id=report.id,
            job_id=report.job_id,
            tenant_id=report.tenant_id,
            issued_at=report.issued_at,
            document=report.document.decode("utf-8"),
        )
    )


def insert_final(conn: Connection, report: ErasureReport, previous_report_id: str) -> None:
    conn.execute(
        erasure_final_reports.insert().values(
            id=report.id,
            job_id=report.job_id,
            previous_report_id=previous_report_id,
            tenant_id=report.tenant_id,
            issued_at=report.issued_at,
            document=report.document.decode("utf-8"),
        )
    )


def canonical_events(conn: Connection, seqs: Sequence[int]) -> dict[int, bytes]:
    """The canonical bytes of those of the events ``seqs`` the log holds, recomputed from their rows."""
    rows = conn.execute(sa.select(events).where(events.c.seq.in_(list(seqs)))).all()
    return {r.seq: canonical_row(r) for r in rows}


def backups_before(conn: Connection, forget_seq: int | None) -> list[dict[str, Any]]:
    """Backups whose log ends before the forget event: they still hold the subject's
    ciphertext (encrypted under the destroyed key)."""
    if forget_seq is None:
        return []
    rows = conn.execute(
        sa.select(backups.c.id, backups.c.created_at, backups.c.tree_size)
        .where(backups.c.tree_size < forget_seq)
        .order_by(backups.c.created_at, backups.c.id)
    ).all()
    return [
        {
            "id": r.id,
            "created_at": r.created_at,
            "tree_size": r.tree_size,
            "subject_content": "ciphertext under the destroyed key; unreadable",
        }
        for r in rows
    ]
