"""The attributed-memory KPIs (issue 12, item 6). SQLite and PostgreSQL.

A store with known history (ages, an incomplete attribution, expiries on time and late,
a retraction with a cascade, a completed erasure and an overdue one) gives exactly the
figures it should, per tenant (another tenant's history is not counted) and store-wide,
for auditors only, and none of them carries content.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from freezegun import freeze_time

from lethe.vault import errors
from lethe.vault.clock import from_db, parse_iso
from lethe.vault.model import Caller, Provenance, Role, SourceType
from lethe.vault.oversight.kpis import EXPIRY_GRACE, REMOVAL_STEPS, percentile
from lethe.vault.store.tables import erasure_jobs, erasure_steps
from tests.conftest import agent, officer, reviewer, write_cmd

T0 = datetime(2026, 3, 1, tzinfo=UTC)
POISON = "https://evil.example/kpi"


def auditor(tenant: str = "t1") -> Caller:
    return Caller(tenant, Role.AUDITOR, None, frozenset(), principal="auditor-1")


def at(moment: datetime):  # type: ignore[no-untyped-def]
    return freeze_time(moment.isoformat())


def sweep_at(c, moment: datetime) -> int:  # type: ignore[no-untyped-def]
    c.memories.clock = lambda: moment
    try:
        return c.memories.sweep_expired()
    finally:
        from lethe.vault.clock import utcnow

        c.memories.clock = utcnow


def history(c) -> dict:  # type: ignore[no-untyped-def]
    """Tenant t1's history; returns what the test needs to know about it."""
    w = c.memories.write
    with at(T0):
        old = w(agent(), write_cmd("alice likes tea", subject="alice")).item
        w(agent(), write_cmd("note one", kind="working_note", ttl_seconds=3600))
        w(agent(), write_cmd("note two", kind="working_note", ttl_seconds=7200))
        never_swept = w(agent(), write_cmd("note three", kind="working_note", ttl_seconds=86400)).item
    with at(T0 + timedelta(days=10)):
        mid = w(agent(), write_cmd("bob likes coffee", subject="bob")).item
    with at(T0 + timedelta(days=20)):
        new = w(agent(), write_cmd("carol likes cocoa", subject="carol")).item
        p1 = w(
            agent(),
            write_cmd("poisoned a", subject="dan", provenance=Provenance(SourceType.TOOL_RESULT, POISON)),
        )
        p2 = w(
            agent(),
            write_cmd("poisoned b", subject="dan", provenance=Provenance(SourceType.TOOL_RESULT, POISON)),
        )
        c.review.promote(reviewer(), p1.item.id, 1)
        prov = Provenance(SourceType.SUMMARY, "summariser", (p1.item.id,))
        summary = w(agent(), write_cmd("summary of a", subject="dan", provenance=prov)).item
        c.review.promote(reviewer(), summary.id, 1)
        c.retractions.retract(officer(), source_ref=POISON, reason="compromised page")
    assert sweep_at(c, T0 + timedelta(minutes=61)) == 1  # note one: a minute after its expiry
    assert sweep_at(c, T0 + timedelta(hours=2) + EXPIRY_GRACE + timedelta(minutes=5)) == 1  # note two: late
    # note three is never swept: still live past its expiry and the grace at the KPIs' "now"
    return {"old": old, "mid": mid, "new": new, "never_swept": never_swept, "p2": p2.item}


def test_kpis_of_a_known_history(lethe):
    c = lethe
    h = history(c)
    now = T0 + timedelta(days=30)
    # Another tenant's history is not counted in t1's figures.
    with at(T0):
        c.memories.write(agent(tenant="t2"), write_cmd("other tenant", kind="working_note", ttl_seconds=60))
    # An incomplete attribution (a legacy row with a blank source ref) is found.
    with c.uow.maintenance("test: alter rows as their owner"), c.uow.write() as conn:
        conn.execute(
            sa.text("UPDATE memories SET provenance = :p WHERE id = :id"),
            {
                "p": json.dumps({"source_type": "user_statement", "source_ref": " ", "sources": []}),
                "id": h["mid"].id,
            },
        )
    c.kpis.clock = lambda: now
    k = c.kpis.for_tenant(auditor())
    assert k.live_memories == 3  # old, mid, new (notes expired or past expiry; poison retracted)
    assert (k.attribution_complete, k.attribution_complete_share) == (2, pytest.approx(2 / 3, abs=1e-6))
    assert k.median_age_seconds == timedelta(days=20).total_seconds()  # mid, written on day 10
    assert (k.expiry_due, k.expired_on_time) == (3, 1)  # one on time, one late, one never swept
    assert k.expired_on_time_share == pytest.approx(1 / 3, abs=1e-6)
    assert (k.retractions, k.memories_retracted, k.derived_retracted) == (1, 2, 1)
    assert (k.erasures_completed, k.open_requests, k.overdue_requests) == (0, 0, 0)
    assert k.deletion_lag_p50_seconds is None and k.attribution_complete_share is not None
    everyone = c.kpis.store_wide()
    assert everyone.tenant_id is None and everyone.expiry_due == k.expiry_due + 1


def test_deletion_lag_and_open_and_overdue_requests(lethe):
    c = lethe
    c.memories.write(agent(), write_cmd("alice likes tea", subject="alice@example.com"))
    done = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "DSR-1")
    c.erasure.run_pending()
    assert c.erasure.get(officer(), done.id).completed_at is not None
    held = c.erasure.request(officer(), "bob@example.com", "gdpr-art17-1a", "DSR-2")
    c.erasure.place_hold(officer(), "bob@example.com", "litigation")
    c.erasure.run_pending()
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        received = conn.execute(
            sa.select(erasure_jobs.c.received_at).where(erasure_jobs.c.id == done.id)
        ).scalar()
        q = sa.select(erasure_steps.c.step, erasure_steps.c.completed_at).where(
            erasure_steps.c.job_id == done.id
        )
        steps = dict(conn.execute(q).all())
    removal = [parse_iso(steps[s]) for s in REMOVAL_STEPS if s in steps]
    assert len(removal) == len(REMOVAL_STEPS)  # every removal step ran, compaction included
    expected = (max(removal) - from_db(received)).total_seconds()
    k = c.kpis.for_tenant(auditor())
    assert k.erasures_completed == 1
    assert k.deletion_lag_p50_seconds == k.deletion_lag_p95_seconds == pytest.approx(expected, abs=1e-6)
    assert (k.open_requests, k.overdue_requests) == (1, 0)
    c.kpis.clock = lambda: datetime.now(UTC) + timedelta(days=40)  # past the held request's due date
    later = c.kpis.for_tenant(auditor())
    assert (later.open_requests, later.overdue_requests) == (1, 1)
    assert held.id  # the held request is the open, overdue one
    assert c.kpis.for_tenant(auditor("t2")).open_requests == 0


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95)) == (50.0, 95.0)
    assert percentile([7.0], 95) == 7.0 and percentile([], 50) is None


@pytest.mark.parametrize("role", [Role.AGENT, Role.REVIEWER, Role.PRIVACY_OFFICER, Role.ADMIN, Role.OPERATOR])
def test_only_auditors_read_the_kpis(lethe, role):
    with pytest.raises(errors.OutOfScope):
        lethe.kpis.for_tenant(
            Caller("t1", role, "a1" if role is Role.AGENT else None, frozenset(), principal="x")
        )


def test_the_kpis_carry_no_content_or_subject(lethe):
    c = lethe
    c.memories.write(agent(), write_cmd("secret-content-xyz", subject="subject-abc@example.com"))
    c.retractions.retract(officer(), source_ref="session-1/turn-1", reason="wrong")
    dumped = json.dumps(asdict(c.kpis.for_tenant(auditor())), default=str)
    for secret in ("secret-content-xyz", "subject-abc", "session-1/turn-1"):
        assert secret not in dumped
