"""Gathering what the store holds about one subject, as plain JSON values for the export: a
read model (it reads the memories and their derivations, and writes nothing).

``collect`` reads, in one read transaction, every memory of the subject in the tenant
(every agent, purpose and status), opens the readable ones with the subject's keys, and
finds the memories derived from them: ``cited_by`` on each item lists the memories whose
``provenance.sources`` name it, and summaries recorded under *another* subject that were
built (transitively, as ``erasure.forgetting.purge_derived`` counts them) from this
subject's memories are listed in ``derived_elsewhere`` by id and metadata only: their
content is another person's data too (Art. 15(4)).

Forgotten memories are not opened (their keys are destroyed) and appear only as a count.

Exceptions: none of its own; ``StoreUnavailable`` (503) from the unit of work or the KMS.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import from_db, iso
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.sealing import Opened, open_rows
from lethe.vault.memory import repository as memory_repo
from lethe.vault.model import GONE, SourceType, Status
from lethe.vault.store.tables import memories


@dataclass(frozen=True)
class Holdings:
    """What the store holds about a subject, ready to be exported."""

    items: list[dict[str, Any]]  # oldest first, content decrypted
    forgotten: int
    retracted: int  # removed as wrong or poisoned: counted, never exported (no ciphertext is kept)
    unreadable: int  # not forgotten, yet its content would not open (counted, never guessed at)
    derived_elsewhere: list[dict[str, Any]]


def collect(conn: Connection, keyring: SubjectKeyring, tenant_id: str, refs: Iterable[str]) -> Holdings:
    """Everything of the subject (under any of ``refs``: its spellings) in ``tenant_id``."""
    rows = conn.execute(
        sa.select(memories)
        .where(memories.c.tenant_id == tenant_id, memories.c.subject_ref.in_(sorted(set(refs))))
        .order_by(memories.c.created_at, memories.c.id)
    ).all()
    live = [r for r in rows if r.status not in GONE]
    opened = open_rows(conn, keyring, live)
    citing = _citations(conn, tenant_id)
    own = {r.id for r in live}
    items = [
        _item(r, opened[(r.tenant_id, r.id)], sorted(citing.get(r.id, ())))
        for r in live
        if (r.tenant_id, r.id) in opened
    ]
    return Holdings(
        items=items,
        forgotten=sum(1 for r in rows if r.status == Status.FORGOTTEN),
        retracted=sum(1 for r in rows if r.status == Status.RETRACTED),
        unreadable=len(live) - len(items),
        derived_elsewhere=_derived_elsewhere(conn, tenant_id, own, citing),
    )


def _item(row: Any, opened: Opened, cited_by: list[str]) -> dict[str, Any]:
    """One memory as the export shows it: content and provenance (its sealed origin too) opened."""
    content = opened.content
    provenance = memory_repo.provenance_of(row.provenance, opened.origin)
    return {
        "id": row.id,
        "agent_id": row.agent_id,
        "purpose": row.purpose,
        "kind": row.kind,
        "status": row.status,
        "content": content,
        "provenance": provenance.as_dict(),
        "authority": row.authority,
        "trust": row.trust,
        "confidence": row.confidence,
        "created_at": iso(from_db(row.created_at)),
        "updated_at": iso(from_db(row.updated_at)),
        "expires_at": iso(from_db(row.expires_at)),
        "version": row.version,
        "supersedes_id": row.supersedes_id,
        "superseded_by": row.superseded_by,
        "cited_by": cited_by,
    }


def _citations(conn: Connection, tenant_id: str) -> dict[str, set[str]]:
    """memory id -> ids of the tenant's unforgotten summaries whose sources name it."""
    citing: dict[str, set[str]] = defaultdict(set)
    for s in memory_repo.summaries(conn, tenant_id):
        if s.status in GONE:
            continue
        p = json.loads(s.provenance)
        if p.get("source_type") == SourceType.SUMMARY:
            for source in p.get("sources") or ():
                citing[source].add(s.id)
    return citing


def _derived_elsewhere(
    conn: Connection, tenant_id: str, own: set[str], citing: dict[str, set[str]]
) -> list[dict[str, Any]]:
    """Summaries of other subjects built, transitively, from the subject's memories: metadata only."""
    reached: set[str] = set()
    frontier = set(own)
    while frontier:
        nxt = {c for m in frontier for c in citing.get(m, ())} - reached - own
        reached |= nxt
        frontier = nxt
    if not reached:
        return []
    found = memory_repo.by_ids(conn, tenant_id, sorted(reached))
    return [
        {
            "id": r.id,
            "agent_id": r.agent_id,
            "purpose": r.purpose,
            "kind": r.kind,
            "status": r.status,
            "created_at": iso(from_db(r.created_at)),
            "cites": sorted(m for m, c in citing.items() if r.id in c and (m in own or m in reached)),
            "content": "withheld: recorded under another data subject (GDPR Art. 15(4))",
        }
        for r in sorted(found.values(), key=lambda r: (r.created_at, r.id))
    ]
