"""Summaries are checked: what a summary may cite, what it inherits, and when it must go.

A ``summary`` names the memories it was built from in ``provenance.sources``. The writer's
word is not taken for them: ``inherit`` reads every cited id in one statement, inside the
write's transaction after its lock (a retraction or a forget committing meanwhile cannot
slip between the check and the write), and each must be a memory of the caller's tenant
that the writer may read (``memory.visibility.may_read``: its own, or an operator memory,
in a purpose its credential covers), of the summary's own purpose (a summary is retrieved
in its purpose: it must not carry another purpose's content into it), and live: active
and unexpired. A quarantined input is not live: no agent reads it before a reviewer
releases it, so none may build on it either. Anything else -- an unknown id, another
tenant's, another agent's, another purpose's, a quarantined, superseded, expired,
retracted or forgotten memory, a string that is no memory id -- is one ``UnknownSource``
(422) naming its position, with the same words whatever the reason: the answer tells
nothing of what exists outside the writer's view.

What a summary inherits from its inputs (``Inherited``):
- its ``origins``: the ids it cites and all they cite (their ``sources`` and ``origins``),
  with their source types; never a ``source_ref``, which can name a person;
- its trust: never above the lowest of its inputs' (``model.lowest_trust``), at the write
  and when a reviewer promotes it (``promoted_trust``);
- its expiry: never later than the earliest of its inputs'.

When an input leaves retrieval, so do the summaries built on it, transitively
(``memory.derived``): a retraction retracts them (``memory.retraction``); an expiry or a
supersession *expires* them (``expire_derived``; the ``memory.expired`` event names the
cause). Expired rather than quarantined for review: a summary restates its inputs, and
once one is corrected or past its retention the summary states what its writer withdrew
or what may no longer be kept; a reviewer could not make it right by promoting it again,
and the agent writes a new summary of the live memories instead.

Exceptions: ``UnknownSource`` (422) from ``inherit`` as above; ``InvalidCommand`` (422)
when a summary's inputs reach more than ``MAX_ORIGINS`` memories.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import from_db, iso
from lethe.vault.errors import InvalidCommand, UnknownSource
from lethe.vault.memory.derived import derived_from
from lethe.vault.memory.visibility import OPERATOR, may_read
from lethe.vault.model import Caller, Origins, Status, Trust, lowest_trust
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.in_list import one_of
from lethe.vault.store.projection import MEMORY_EXPIRED, apply_many
from lethe.vault.store.tables import memories

MAX_ORIGINS = 10_000  # memory ids a summary's origins may hold, all the way down
UNKNOWN = "unknown or not live memory"
INPUT_SUPERSEDED, INPUT_EXPIRED = "input_superseded", "input_expired"  # the causes of ``expire_derived``
# A summary in one of these has left retrieval already: the cascades walk through it, never change it.
_NOT_LIVE = frozenset(s.value for s in Status) - {Status.ACTIVE.value, Status.QUARANTINED.value}

# The cited memories, in one statement: what ``may_read`` reads, and what a summary inherits.
_INPUTS = sa.select(
    memories.c.id,
    memories.c.tenant_id,
    memories.c.agent_id,
    memories.c.purpose,
    memories.c.authority,
    memories.c.status,
    memories.c.expires_at,
    memories.c.trust,
    memories.c.provenance,
).where(memories.c.tenant_id == sa.bindparam("tenant_id"), one_of(memories.c.id, "memory_ids"))


@dataclass(frozen=True)
class Inherited:
    """What a summary takes from the memories it cites."""

    origins: Origins
    expires_at: datetime  # the earliest of the inputs' expiries (aware, UTC)


def _is_memory_id(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def inherit(
    conn: Connection, caller: Caller, purpose: str, sources: Sequence[str], now: datetime
) -> Inherited:
    """Check a summary's cited ids (module doc) and return what it inherits from them."""
    wanted = [s for s in dict.fromkeys(sources) if _is_memory_id(s)]
    rows = {}
    if wanted:
        rows = {r.id: r for r in conn.execute(_INPUTS, {"tenant_id": caller.tenant_id, "memory_ids": wanted})}
    bad = [i for i, s in enumerate(sources) if not _citable(rows.get(s), caller, purpose, now)]
    if bad:
        more = f" ({len(bad) - 1} more after it)" if len(bad) > 1 else ""
        raise UnknownSource(f"provenance.sources[{bad[0]}]: {UNKNOWN}{more}")
    ids: set[str] = set()
    types: set[str] = set()
    trusts: list[Trust] = []
    for r in (rows[s] for s in dict.fromkeys(sources)):
        p = json.loads(r.provenance)
        ids.add(r.id)
        ids.update(s for s in p.get("sources") or () if _is_memory_id(s))  # never a source ref
        types.add(p["source_type"])
        trusts.append(Trust(r.trust))
        if "origins" in p:
            o = Origins.from_dict(p["origins"])
            ids.update(o.memory_ids)
            types.update(o.source_types)
            trusts.append(o.trust)
    if len(ids) > MAX_ORIGINS:
        raise InvalidCommand(f"a summary's inputs reach more than {MAX_ORIGINS} memories")
    origins = Origins(tuple(sorted(ids)), tuple(sorted(types)), lowest_trust(*trusts))
    return Inherited(origins, from_db(min(r.expires_at for r in rows.values())))


def _citable(row: Any, caller: Caller, purpose: str, now: datetime) -> bool:
    return (
        row is not None
        and row.status == Status.ACTIVE.value
        and row.purpose == purpose
        and may_read(caller, row, now)
    )


def promoted_trust(provenance: str) -> Trust:
    """A promotion's trust: ``verified``, but a summary's never above its inputs' lowest."""
    origins = json.loads(provenance).get("origins")
    return Trust.VERIFIED if origins is None else lowest_trust(Trust.VERIFIED, Trust(origins["trust"]))


def derived_live(conn: Connection, inputs: Iterable[Any]) -> dict[tuple[str, str], Any]:
    """The live summaries built on ``inputs`` (rows with tenant_id, id, agent_id, purpose,
    authority), transitively, keyed by (tenant id, id); each input's scope is walked alone
    (``derived_from``): an agent's memory is cited in its own scope only, an operator memory
    by any agent of its purpose."""
    scopes: dict[tuple[str, str, str | None], set[str]] = defaultdict(set)
    for r in inputs:
        scopes[(r.tenant_id, r.purpose, None if r.authority == OPERATOR else r.agent_id)].add(r.id)
    found: dict[tuple[str, str], Any] = {}
    for (tenant_id, purpose, agent_id), ids in scopes.items():
        for s in derived_from(conn, tenant_id, ids, skip=_NOT_LIVE, purpose=purpose, agent_id=agent_id):
            found[(tenant_id, s.id)] = s
    return found


def expiry_events(tenant_id: str, summaries: Iterable[Any], cause: str, now: datetime) -> list[Event]:
    """One ``memory.expired`` event per summary (rows with id, version, subject_ref), naming why."""
    return [
        Event(
            MEMORY_EXPIRED,
            tenant_id,
            {"version": s.version + 1, "cause": cause},
            s.id,
            s.subject_ref,
            occurred_at=iso(now),
        )
        for s in summaries
    ]


def expire_derived(conn: Connection, log: EventLog, superseded: Any, now: datetime) -> int:
    """Inside a correction's transaction: expire the live summaries built on the memory it
    supersedes (a ``memories`` row), transitively; how many."""
    # What cites it was written after it: a correction of a recent memory reads what was
    # written since (under the write lock), not its whole scope.
    derived = {
        s.id: s
        for s in derived_from(
            conn, superseded.tenant_id, {superseded.id}, skip=_NOT_LIVE, after_seq=superseded.created_seq
        )
    }
    batch = expiry_events(
        superseded.tenant_id, sorted(derived.values(), key=lambda s: s.id), INPUT_SUPERSEDED, now
    )
    if batch:
        apply_many(conn, log.append_many(conn, batch))
    return len(batch)


def expire_still_live(
    conn: Connection, log: EventLog, derived: dict[tuple[str, str], Any], now: datetime
) -> int:
    """Under the sweep's write lock: expire the summaries ``derived_live`` found built on
    expired memories, those still live (read again by key: another sweeper, a retraction may
    have been first); how many."""
    if not derived:
        return 0
    q = sa.select(memories.c.tenant_id, memories.c.id, memories.c.version, memories.c.subject_ref).where(
        sa.tuple_(memories.c.tenant_id, memories.c.id).in_(list(derived)),
        memories.c.status.in_((Status.ACTIVE.value, Status.QUARANTINED.value)),
    )
    live = sorted(conn.execute(q).all(), key=lambda r: (r.tenant_id, r.id))
    batch = [e for r in live for e in expiry_events(r.tenant_id, [r], INPUT_EXPIRED, now)]
    if batch:
        apply_many(conn, log.append_many(conn, batch))
    return len(batch)
