"""Erasure deadlines on real SQLite and PostgreSQL: calendar months, extensions, a stopped clock.

Time is frozen with freezegun at month ends and leap days; the claims are about what the
service stores and lists, so each is checked through a fresh load of the job.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from freezegun import freeze_time

from lethe.keys.protocol import KmsUnavailable
from lethe.vault import errors
from lethe.vault.erasure.model import KEY_PENDING
from lethe.vault.memory import repository as repo
from lethe.vault.model import Caller, Role
from lethe.vault.store.tables import events
from tests.conftest import agent, officer, write_cmd

ALICE, BOB = "alice@example.com", "bob@example.com"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def file(c, subject=ALICE, tenant="t1", **kw):
    return c.erasure.request(officer(tenant), subject, "gdpr-art17-1a", "DSR-1", **kw)


def held_content(c, memory_id: str, tenant: str = "t1") -> str | None:
    """The memory as the store holds it, opened with its key: not an agent's read (fenced)."""
    with c.uow.acting_for(tenant), c.uow.read() as conn:
        row = repo.by_ids(conn, tenant, [memory_id])[memory_id]
        item = repo.open_item(conn, c.keyring, row)
    return None if item is None else item.content


def test_a_request_is_due_one_calendar_month_after_receipt_across_month_ends_and_leap_years(lethe):
    cases = {
        "2026-01-31T10:00:00": "2026-02-28T10:00:00",
        "2028-01-31T10:00:00": "2028-02-29T10:00:00",
        "2028-02-29T10:00:00": "2028-03-29T10:00:00",
        "2026-12-31T23:00:00": "2027-01-31T23:00:00",
        "2026-08-31T06:00:00": "2026-09-30T06:00:00",
    }
    for i, (received, due) in enumerate(cases.items()):
        with freeze_time(received + "Z"):
            job = file(lethe, subject=f"s{i}")
        with freeze_time(received + "Z"):
            loaded = lethe.erasure.get(officer(), job.id)
        assert (job.due_at, loaded.due_at) == (at(due), at(due)), received
        assert loaded.days_left == (at(due) - at(received)).days


def test_extensions_add_calendar_months_from_receipt_up_to_two_in_total(lethe):
    with freeze_time("2028-01-31T10:00:00Z"):
        job = file(lethe)
    with freeze_time("2028-02-10T09:00:00Z"):
        told = at("2028-02-10T08:00:00")
        once = lethe.deadlines.extend(officer(), job.id, 1, "complex request across systems", told)
        assert once.due_at == at("2028-03-31T10:00:00") and once.extension_months == 1
        twice = lethe.deadlines.extend(officer(), job.id, 1, "still collecting", told)
        assert twice.due_at == at("2028-04-30T10:00:00") == twice.extended_until
        assert [(e.number, e.months, e.reason) for e in twice.extensions] == [
            (1, 1, "complex request across systems"),
            (2, 1, "still collecting"),
        ]
        assert twice.extensions[0].subject_notified_at == told
        with pytest.raises(errors.DeadlineRefused, match="2 months in total"):
            lethe.deadlines.extend(officer(), job.id, 1, "a third month", told)
    assert lethe.erasure.get(officer(), job.id).due_at == at("2028-04-30T10:00:00")


def test_a_second_extension_beyond_two_months_and_a_three_month_extension_are_refused(lethe):
    with freeze_time("2026-03-31T12:00:00Z"):
        job, other = file(lethe), file(lethe, subject=BOB)
        now = at("2026-03-31T12:00:00")
        with pytest.raises(errors.InvalidCommand):
            lethe.deadlines.extend(officer(), other.id, 3, "three months at once", now)
        first = lethe.deadlines.extend(officer(), job.id, 2, "backlog", now)
        assert first.due_at == at("2026-06-30T12:00:00")
        with pytest.raises(errors.DeadlineRefused):
            lethe.deadlines.extend(officer(), job.id, 1, "one more", now)
    assert lethe.erasure.get(officer(), other.id).extension_months == 0


def test_the_subject_must_be_told_of_an_extension_within_the_first_month(lethe):
    with freeze_time("2026-01-31T10:00:00Z"):
        job = file(lethe)
    with freeze_time("2026-03-05T10:00:00Z"):
        with pytest.raises(errors.DeadlineRefused, match="within one month"):
            lethe.deadlines.extend(officer(), job.id, 1, "late", at("2026-03-01T10:00:00"))
        with pytest.raises(errors.InvalidCommand, match="before the request"):
            lethe.deadlines.extend(officer(), job.id, 1, "early", at("2026-01-30T10:00:00"))
        with pytest.raises(errors.InvalidCommand, match="future"):
            lethe.deadlines.extend(officer(), job.id, 1, "tomorrow", at("2026-03-06T10:00:00"))
        told_in_time = lethe.deadlines.extend(officer(), job.id, 1, "told on time", at("2026-02-27T10:00:00"))
    assert told_in_time.due_at == at("2026-03-31T10:00:00")


def test_pause_and_resume_shift_the_due_date_by_the_time_the_clock_stood_still(lethe):
    with freeze_time("2026-01-31T10:00:00Z"):
        job = file(lethe)
    with freeze_time("2026-02-03T10:00:00Z"):
        paused = lethe.deadlines.pause(officer(), job.id)
        assert paused.paused and paused.paused_at == at("2026-02-03T10:00:00") and paused.days_left == 25
    with freeze_time("2026-03-20T10:00:00Z"):  # long past the original due date
        waiting = lethe.erasure.get(officer(), job.id)
        assert waiting.days_left == 25 and not waiting.overdue
        assert lethe.erasure.list(officer(), overdue=True) == []
    with freeze_time("2026-02-10T16:30:00Z"):
        resumed = lethe.deadlines.resume(officer(), job.id, identity_verification_ref="IDV-77")
    stood = timedelta(days=7, hours=6, minutes=30)
    assert resumed.due_at == at("2026-02-28T10:00:00") + stood == at("2026-03-07T16:30:00")
    assert not resumed.paused and resumed.paused_seconds == int(stood.total_seconds())
    assert resumed.identity_verification_ref == "IDV-77"
    with freeze_time("2026-03-07T16:31:00Z"):
        assert [j.id for j in lethe.erasure.list(officer(), overdue=True)] == [job.id]
        late = lethe.erasure.get(officer(), job.id)
        assert late.overdue and late.days_left == -1


def test_a_paused_request_is_not_erased_until_it_is_resumed(lethe):
    written = lethe.memories.write(agent(), write_cmd(subject=ALICE)).item
    job = file(lethe)
    lethe.deadlines.pause(officer(), job.id)
    lethe.erasure.run_pending()
    assert lethe.erasure.advance(job.id) is False
    held = lethe.erasure.get(officer(), job.id)
    assert held.status == "received" and [s.step for s in held.steps] == ["received"]
    assert held_content(lethe, written.id) == written.content  # nothing destroyed
    with pytest.raises(errors.NotFound):  # but agents read it no more (the read fence)
        lethe.memories.get(agent(), written.id)
    with pytest.raises(errors.SubjectForgotten):  # the fence stays up meanwhile
        lethe.memories.write(agent(), write_cmd("new", subject=ALICE))
    lethe.deadlines.resume(officer(), job.id)
    lethe.erasure.run_pending()
    assert lethe.erasure.get(officer(), job.id).completed_at is not None


def test_a_pause_that_commits_while_a_runner_holds_the_job_stops_it_before_anything_is_destroyed(lethe):
    written = lethe.memories.write(agent(), write_cmd(subject=ALICE)).item
    job = file(lethe)
    checked = lethe.erasure._hold_check

    def pause_in_between(j):  # the runner has loaded the job and checked holds; now a pause commits
        ok = checked(j)
        lethe.deadlines.pause(officer(), job.id)
        return ok

    lethe.erasure._hold_check = pause_in_between
    assert lethe.erasure.advance(job.id) is False
    lethe.erasure._hold_check = checked
    assert [s.step for s in lethe.erasure.get(officer(), job.id).steps] == ["received"]
    assert held_content(lethe, written.id) == written.content


def test_a_request_cannot_be_paused_once_its_erasure_has_begun_or_is_done(lethe, monkeypatch):
    lethe.memories.write(agent(), write_cmd(subject=ALICE))
    job = file(lethe)

    def unavailable(*args, **kwargs):
        raise KmsUnavailable("down")

    monkeypatch.setattr(lethe.kms, "destroy_key", unavailable)
    lethe.erasure.run_pending()
    assert lethe.erasure.get(officer(), job.id).status == KEY_PENDING
    with pytest.raises(errors.DeadlineRefused, match="has begun"):
        lethe.deadlines.pause(officer(), job.id)
    monkeypatch.undo()
    lethe.erasure.run_pending()
    for command in (
        lambda: lethe.deadlines.pause(officer(), job.id),
        lambda: lethe.deadlines.extend(officer(), job.id, 1, "late", datetime.now(UTC)),
    ):
        with pytest.raises(errors.DeadlineRefused, match="completed"):
            command()
    with pytest.raises(errors.DeadlineRefused, match="not paused"):
        lethe.deadlines.resume(officer(), file(lethe, subject=BOB).id)


def test_deadline_commands_are_for_the_tenants_privacy_officers_and_leave_audit_events(lethe):
    job = file(lethe, identity_verification_ref="case 12/IDV")
    assert job.identity_verification_ref == "case 12/IDV"
    auditor = Caller("t1", Role.AUDITOR, principal="auditor-1")
    with pytest.raises(errors.OutOfScope):
        lethe.deadlines.pause(auditor, job.id)
    with pytest.raises(errors.NotFound):
        lethe.deadlines.pause(officer("t2"), job.id)
    lethe.deadlines.extend(officer(), job.id, 1, "secret reason text", datetime.now(UTC))
    lethe.deadlines.pause(officer(), job.id)
    lethe.deadlines.resume(officer(), job.id)
    with lethe.uow.read() as conn:
        q = sa.select(events.c.type, events.c.payload).where(events.c.type.like("erasure.%"))
        rows = conn.execute(q.order_by(events.c.seq)).all()
    kinds = ["erasure.received", "erasure.fenced", "erasure.extended", "erasure.paused", "erasure.resumed"]
    assert [r.type for r in rows] == kinds
    assert all("secret reason" not in r.payload and ALICE not in r.payload for r in rows)


@pytest.mark.parametrize("ref", ["x" * 201, "line one\nline two", "tab\there"])
def test_an_identity_verification_ref_is_one_bounded_line(lethe, ref):
    with pytest.raises(errors.InvalidCommand):
        file(lethe, identity_verification_ref=ref)
