"""The residue hunt: other subjects' memories that mention the person being forgotten.

Crypto-shredding reaches what is filed under the subject's id; another subject's memory
that says "Ana García's card ends 4471" is not. So an officer may attach identifiers of
the subject to an erasure request (names, e-mail addresses, phone and account numbers)
and choose what happens to other subjects' memories that mention them: ``retract`` them
(``memory.retraction``'s cascade and events) or queue them for a reviewer (``review``:
back to quarantine, where a reviewer keeps one with a reason or rejects it).

The identifiers are never stored: each becomes the set of keyed term hashes the search
index posts for its words (``Pseudonymizer.term_hashes``, the same tokeniser, so lookups
match), kept in ``erasure_identifiers`` for the life of the request and deleted when it
completes. They enter no event, certificate or log line. The hunt reads only the
tenant's postings (no plaintext scan, nothing of another subject is decrypted): a memory
mentions an identifier when every one of its terms is posted on it (exact terms, any
order; an identifier the index could not post, or a memory written in another spelling,
is not found). Only active and quarantined memories are indexed, so only they are found.

Exceptions: ``InvalidCommand`` (422) from ``prepare``: too many identifiers, an empty or
too long one, one without a word the index holds, or an unknown ``residue`` choice; the
message names the position, never the identifier.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import iso
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.errors import InvalidCommand
from lethe.vault.memory import repository as memory_repo
from lethe.vault.memory.derived import derived_from
from lethe.vault.memory.retraction import LedgerEntry, Plan, record
from lethe.vault.model import GONE, Status
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.projection import MEMORY_PROMOTED, MEMORY_QUEUED, MEMORY_RETRACTED, apply_many
from lethe.vault.store.tables import erasure_identifiers, events, retractions, search_postings

RETRACT, REVIEW = "retract", "review"
ACTIONS = (RETRACT, REVIEW)
MAX_IDENTIFIERS = 20
MAX_IDENTIFIER_CHARS = 200
CAUSE = "erasure_residue"  # the cause a queued memory's event names
LOOKUP = "keyed term index"
_FOUND = (Status.ACTIVE.value, Status.QUARANTINED.value)  # what the index holds


@dataclass(frozen=True)
class Identifiers:
    """What a request keeps of the identifiers attached to it: their term hashes only."""

    residue: str
    term_sets: tuple[tuple[str, ...], ...]


def prepare(
    pseudonyms: Pseudonymizer, tenant_id: str, identifiers: Sequence[str] | None, residue: str | None
) -> Identifiers | None:
    """The identifiers' keyed term sets (duplicates merged), or None when none were attached.

    ``residue`` defaults to ``review`` (a person decides) when identifiers are given; a
    choice without identifiers is refused, as it would silently do nothing.
    """
    given = list(identifiers or [])
    if not given:
        if residue is not None:
            raise InvalidCommand("residue needs identifiers: attach the subject's names, e-mails or numbers")
        return None
    if residue is None:
        residue = REVIEW
    if residue not in ACTIONS:
        raise InvalidCommand(f"residue must be one of: {', '.join(ACTIONS)}")
    if len(given) > MAX_IDENTIFIERS:
        raise InvalidCommand(f"at most {MAX_IDENTIFIERS} identifiers may be attached to a request")
    sets: list[tuple[str, ...]] = []
    for i, value in enumerate(given):
        if not isinstance(value, str) or not value.strip():
            raise InvalidCommand(f"identifiers[{i}] is empty")
        if len(value) > MAX_IDENTIFIER_CHARS:
            raise InvalidCommand(f"identifiers[{i}] is longer than {MAX_IDENTIFIER_CHARS} characters")
        if "\x00" in value:
            raise InvalidCommand(f"identifiers[{i}] must not contain NUL characters")
        terms = tuple(sorted(pseudonyms.term_hashes(tenant_id, value)))
        if not terms:
            raise InvalidCommand(
                f"identifiers[{i}] holds no word of two or more letters or digits (the index holds none)"
            )
        if terms not in sets:
            sets.append(terms)
    return Identifiers(residue, tuple(sets))


def store(conn: Connection, job_id: str, tenant_id: str, attached: Identifiers | None) -> None:
    """Keep a request's identifiers (their term hashes; nothing when none were attached)."""
    if attached is None:
        return
    conn.execute(
        erasure_identifiers.insert(),
        [
            {
                "job_id": job_id,
                "position": i,
                "tenant_id": tenant_id,
                "term_hashes": " ".join(terms),
                "residue": attached.residue,
            }
            for i, terms in enumerate(attached.term_sets)
        ],
    )


def load(conn: Connection, job_id: str) -> Identifiers | None:
    t = erasure_identifiers
    rows = conn.execute(sa.select(t).where(t.c.job_id == job_id).order_by(t.c.position)).all()
    if not rows:
        return None
    return Identifiers(rows[0].residue, tuple(tuple(r.term_hashes.split()) for r in rows))


def forget(conn: Connection, job_id: str) -> int:
    """Delete a request's identifiers (its end); returns how many there were."""
    t = erasure_identifiers
    return conn.execute(t.delete().where(t.c.job_id == job_id)).rowcount or 0


def attached_count(conn: Connection, job_id: str) -> tuple[int, str | None]:
    """How many identifiers a request holds now, and the residue choice (for its page)."""
    found = load(conn, job_id)
    return (0, None) if found is None else (len(found.term_sets), found.residue)


def hunt(conn: Connection, tenant_id: str, subject_ref: str, term_sets: Sequence[Sequence[str]]) -> list[Any]:
    """Other subjects' indexed memories on which every term of some identifier is posted."""
    p = search_postings
    ids: set[str] = set()
    for terms in term_sets:
        q = (
            sa.select(p.c.memory_id)
            .where(p.c.tenant_id == tenant_id, p.c.term_hash.in_(list(terms)))
            .group_by(p.c.memory_id)
            .having(sa.func.count() == len(terms))
        )
        ids.update(conn.execute(q).scalars())
    rows = memory_repo.by_ids(conn, tenant_id, sorted(ids)).values()
    return sorted(
        (r for r in rows if r.subject_ref != subject_ref and r.status in _FOUND), key=lambda r: r.id
    )


def act(
    conn: Connection,
    log: EventLog,
    job: Any,
    attached: Identifiers,
    now: datetime,
) -> dict[str, Any]:
    """Hunt and retract or queue what was found, in the caller's transaction; the step's evidence."""
    rows = hunt(conn, job.tenant_id, job.subject_ref, attached.term_sets)
    evidence: dict[str, Any] = {
        "lookup": LOOKUP,
        "identifiers": len(attached.term_sets),
        "residue": attached.residue,
        "found": len(rows),
        "memory_ids": [r.id for r in rows],
        "retracted": 0,
        "derived_retracted": 0,
        "queued_for_review": 0,
    }
    if not rows:
        return evidence
    if attached.residue == RETRACT:
        plan = Plan(list(rows), derived_from(conn, job.tenant_id, {r.id for r in rows}, skip=GONE))
        entry = LedgerEntry(
            id=str(uuid.uuid4()),
            tenant_id=job.tenant_id,
            requested_by=job.requested_by,
            reason=f"residue of erasure request {job.id}",
            memory_id=None,
            source_ref=None,
            memory_ids=tuple(r.id for r in plan.targets),
            derived_ids=tuple(r.id for r in plan.derived),
            retracted_at=iso(now),
        )
        record(conn, log, entry, plan, now)
        return {
            **evidence,
            "retracted": len(plan.targets),
            "derived_retracted": len(plan.derived),
            "retraction_id": entry.id,
        }
    at = iso(now)
    batch = [
        Event(
            MEMORY_QUEUED,
            job.tenant_id,
            {"version": r.version + 1, "cause": CAUSE, "request_id": job.id},
            r.id,
            r.subject_ref,
            occurred_at=at,
        )
        for r in rows
    ]
    apply_many(conn, log.append_many(conn, batch))
    return {**evidence, "queued_for_review": len(rows)}


def outcomes(conn: Connection, tenant_id: str, evidence: dict[str, Any], since_seq: int) -> dict[str, Any]:
    """What became of the memories the hunt found, as of now: the certificate's ``residue``.

    ``retract``: all were retracted by the hunt. ``review``: each queued memory is pending
    (still in quarantine), kept (a reviewer promoted it, with their reason), retracted (a
    reviewer rejected it, with their reason), or expired in the queue undecided. Decisions
    are read from the events after the hunt's (``since_seq``)."""
    ids = [i for i in evidence.get("memory_ids", []) if isinstance(i, str)]
    summary: dict[str, Any] = {
        "lookup": LOOKUP,
        "residue": evidence.get("residue"),
        "identifiers": evidence.get("identifiers"),
        "found": evidence.get("found"),
        "retracted": evidence.get("retracted", 0),
        "derived_retracted": evidence.get("derived_retracted", 0),
        "queued_for_review": evidence.get("queued_for_review", 0),
        "kept": [],
        "rejected": [],
        "pending_review": 0,
        "expired_in_review": 0,
    }
    if evidence.get("residue") != REVIEW:
        return summary
    rows = memory_repo.by_ids(conn, tenant_id, ids)
    for memory_id in ids:
        row = rows.get(memory_id)
        if row is not None and row.status == Status.QUARANTINED:
            summary["pending_review"] += 1
            continue
        decision = _decision(conn, tenant_id, memory_id, since_seq)
        if decision is None:
            summary["expired_in_review"] += 1
        else:
            summary[decision[0]].append({"memory_id": memory_id, "reason": decision[1]})
    summary["retracted"] = len(summary["rejected"])  # by reviewers, each with their reason
    return summary


def _decision(conn: Connection, tenant_id: str, memory_id: str, since_seq: int) -> tuple[str, str] | None:
    """A reviewer's decision on a queued memory after the hunt: (kept|rejected, reason)."""
    e = events
    row = conn.execute(
        sa.select(e.c.type, e.c.payload)
        .where(
            e.c.memory_id == memory_id,
            e.c.tenant_id == tenant_id,
            e.c.seq > since_seq,
            e.c.type.in_((MEMORY_PROMOTED, MEMORY_RETRACTED)),
        )
        .order_by(e.c.seq)
        .limit(1)
    ).first()
    if row is None:
        return None
    payload = json.loads(row.payload)
    if row.type == MEMORY_PROMOTED:
        return "kept", str(payload.get("reason") or "")
    t = retractions
    reason = conn.execute(sa.select(t.c.reason).where(t.c.id == payload.get("retraction_id"))).scalar()
    return "rejected", str(reason or "")
