"""The attributed-memory KPIs, a read model: figures about the store's governance, never
about its content.

Every figure is computed from metadata (statuses, times, provenance fields, the erasure
and retraction ledgers); nothing is decrypted, and no subject, content or source ref
leaves this module, only counts, shares and durations. One tenant's figures answer
``GET /v1/audit/kpis``; the store-wide ones (no tenant named) feed ``/metrics``.

- ``attribution_complete_share``: of the live memories (active or quarantined, not past
  their expiry), the share
  whose attribution is complete: a writer (agent id), a source type and a non-blank source
  ref (sealed with the content since origins are: the row's ``origin_hmac`` commits to it;
  validation refuses a blank one), an authority and a trust, and for a summary the memories
  it cites.
- ``median_age_seconds``: the median age of the live memories (now - created_at).
- ``expired_on_time_share``: of the memories whose expiry has passed (superseded and
  retracted or forgotten ones apart), the share expired within ``EXPIRY_GRACE`` of it:
  one still live past its expiry plus the grace, or expired late, is not on time.
- ``deletion_lag_p50/p95_seconds``: over completed erasures, from the request's receipt to
  the completion of the last step that removes a copy (``REMOVAL_STEPS``: tombstone,
  derived summaries, the key, the compacted ciphertext); verification and the report
  that follow remove nothing. Nearest-rank percentiles.
- retractions: the ledger's entries (``retraction.*`` events) and the memories and derived
  summaries they removed.
- open and overdue erasure requests (a stopped clock counts up to where it stopped).

Exceptions: ``OutOfScope`` (403) for a caller who is not an auditor; ``StoreUnavailable`` (503).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.audit.step_names import Step
from lethe.vault.clock import from_db, parse_iso, to_db, utcnow
from lethe.vault.errors import OutOfScope
from lethe.vault.model import Caller, Role, SourceType, Status
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.projection import MEMORY_EXPIRED
from lethe.vault.store.tables import erasure_jobs, erasure_steps, events, memories, retractions
from lethe.vault.store.tenancy import for_caller, maintenance_job

EXPIRY_GRACE = timedelta(hours=1)
REMOVAL_STEPS = tuple(
    s.value for s in (Step.TOMBSTONED, Step.DERIVED_PURGED, Step.KEY_DESTROYED, Step.COMPACTED)
)
_LIVE = (Status.ACTIVE.value, Status.QUARANTINED.value)
_NOT_DUE = (Status.SUPERSEDED.value, Status.RETRACTED.value, Status.FORGOTTEN.value)


@dataclass(frozen=True)
class Kpis:
    tenant_id: str | None  # None: the whole store
    computed_at: datetime
    live_memories: int
    attribution_complete: int
    attribution_complete_share: float | None  # None when there is nothing to measure
    median_age_seconds: float | None
    expiry_due: int
    expired_on_time: int
    expired_on_time_share: float | None
    erasures_completed: int
    deletion_lag_p50_seconds: float | None
    deletion_lag_p95_seconds: float | None
    retractions: int
    memories_retracted: int
    derived_retracted: int
    open_requests: int
    overdue_requests: int


class KpiService:
    """The KPIs of one tenant (auditors) or of the whole store (``/metrics``)."""

    def __init__(self, uow: UnitOfWork, clock: Callable[[], datetime] = utcnow) -> None:
        self.uow = uow
        self.clock = clock

    @for_caller
    def for_tenant(self, caller: Caller) -> Kpis:
        if caller.role is not Role.AUDITOR:
            raise OutOfScope("the KPIs are for auditors")
        return self._compute(caller.tenant_id)

    @maintenance_job("store-wide KPIs")
    def store_wide(self) -> Kpis:
        return self._compute(None)

    def _compute(self, tenant_id: str | None) -> Kpis:
        now = self.clock()
        with self.uow.read() as conn:
            live, complete, median = _memories(conn, tenant_id, now)
            due, on_time = _expiry(conn, tenant_id, now)
            lags = _deletion_lags(conn, tenant_id)
            count, retracted, derived = _retractions(conn, tenant_id)
            open_, overdue = _requests(conn, tenant_id, now)
        return Kpis(
            tenant_id=tenant_id,
            computed_at=now,
            live_memories=live,
            attribution_complete=complete,
            attribution_complete_share=_share(complete, live),
            median_age_seconds=median,
            expiry_due=due,
            expired_on_time=on_time,
            expired_on_time_share=_share(on_time, due),
            erasures_completed=len(lags),
            deletion_lag_p50_seconds=percentile(lags, 50),
            deletion_lag_p95_seconds=percentile(lags, 95),
            retractions=count,
            memories_retracted=retracted,
            derived_retracted=derived,
            open_requests=open_,
            overdue_requests=overdue,
        )


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (the smallest value with at least p% of values at or below it)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _scoped(table: sa.Table, tenant_id: str | None) -> list[sa.ColumnElement[bool]]:
    return [] if tenant_id is None else [table.c.tenant_id == tenant_id]


class AttributionColumns(Protocol):
    """The columns of a ``memories`` row that ``attributed`` reads (all NOT NULL)."""

    @property
    def agent_id(self) -> str: ...
    @property
    def authority(self) -> str: ...
    @property
    def trust(self) -> str: ...
    @property
    def provenance(self) -> str: ...


def attributed(row: AttributionColumns) -> bool:
    """Whether a memory's attribution is complete (see the module docstring)."""
    try:
        p = json.loads(row.provenance)
    except (TypeError, ValueError):
        return False
    # The source ref is sealed with the content: the row commits to it by ``origin_hmac`` (a
    # memory written before origins were sealed names it in clear).
    source_type, ref = p.get("source_type"), p.get("source_ref", p.get("origin_hmac"))
    if not row.agent_id or not row.authority or not row.trust:
        return False
    if source_type not in {s.value for s in SourceType} or not isinstance(ref, str) or not ref.strip():
        return False
    return source_type != SourceType.SUMMARY.value or bool(p.get("sources"))


def _memories(conn: Connection, tenant_id: str | None, now: datetime) -> tuple[int, int, float | None]:
    q = sa.select(
        memories.c.agent_id,
        memories.c.authority,
        memories.c.trust,
        memories.c.provenance,
        memories.c.created_at,
    ).where(memories.c.status.in_(_LIVE), memories.c.expires_at > to_db(now), *_scoped(memories, tenant_id))
    live = complete = 0
    ages = []
    for row in conn.execute(q):
        live += 1
        complete += attributed(row)
        ages.append(max(0.0, (now - from_db(row.created_at)).total_seconds()))
    ages.sort()
    median = None
    if ages:
        mid = len(ages) // 2
        median = ages[mid] if len(ages) % 2 else (ages[mid - 1] + ages[mid]) / 2
    return live, complete, median


def _expiry(conn: Connection, tenant_id: str | None, now: datetime) -> tuple[int, int]:
    """(memories due to have expired, those expired within the grace)."""
    due_rows = conn.execute(
        sa.select(memories.c.tenant_id, memories.c.id, memories.c.status, memories.c.expires_at).where(
            memories.c.expires_at <= to_db(now),
            memories.c.status.not_in(_NOT_DUE),
            *_scoped(memories, tenant_id),
        )
    ).all()
    expired_at = {
        (r.tenant_id, r.memory_id): parse_iso(r.occurred_at)
        for r in conn.execute(
            sa.select(events.c.tenant_id, events.c.memory_id, events.c.occurred_at).where(
                events.c.type == MEMORY_EXPIRED, *_scoped(events, tenant_id)
            )
        )
    }
    due = on_time = 0
    for r in due_rows:
        deadline = from_db(r.expires_at) + EXPIRY_GRACE
        if r.status in _LIVE and now <= deadline:
            continue  # not late yet: the sweep has until the grace runs out
        due += 1
        at = expired_at.get((r.tenant_id, r.id))
        on_time += r.status == Status.EXPIRED.value and at is not None and at <= deadline
    return due, on_time


def _deletion_lags(conn: Connection, tenant_id: str | None) -> list[float]:
    """Seconds from receipt to the last copy removed, per completed erasure."""
    rows = conn.execute(
        sa.select(erasure_jobs.c.id, erasure_jobs.c.received_at, erasure_steps.c.completed_at)
        .select_from(erasure_jobs.join(erasure_steps, erasure_steps.c.job_id == erasure_jobs.c.id))
        .where(
            erasure_jobs.c.completed_at.is_not(None),
            erasure_steps.c.step.in_(REMOVAL_STEPS),
            *_scoped(erasure_jobs, tenant_id),
        )
    )
    last: dict[str, tuple[datetime, datetime]] = {}
    for r in rows:
        done = parse_iso(r.completed_at)
        if r.id not in last or done > last[r.id][1]:
            last[r.id] = (from_db(r.received_at), done)
    return [max(0.0, (done - received).total_seconds()) for received, done in last.values()]


def _retractions(conn: Connection, tenant_id: str | None) -> tuple[int, int, int]:
    count = retracted = derived = 0
    q = sa.select(retractions.c.memory_ids, retractions.c.derived_ids).where(*_scoped(retractions, tenant_id))
    for r in conn.execute(q):
        count += 1
        retracted += len(json.loads(r.memory_ids))
        derived += len(json.loads(r.derived_ids))
    return count, retracted, derived


def _requests(conn: Connection, tenant_id: str | None, now: datetime) -> tuple[int, int]:
    j = erasure_jobs.c
    scope = [j.completed_at.is_(None), *_scoped(erasure_jobs, tenant_id)]
    overdue = sa.or_(
        sa.and_(j.paused_at.is_(None), j.due_at < to_db(now)),
        sa.and_(j.paused_at.is_not(None), j.due_at < j.paused_at),
    )
    open_ = conn.execute(sa.select(sa.func.count()).select_from(erasure_jobs).where(*scope)).scalar_one()
    late = conn.execute(
        sa.select(sa.func.count()).select_from(erasure_jobs).where(*scope, overdue)
    ).scalar_one()
    return open_, late
