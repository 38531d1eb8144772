"""The erasure job as a state machine, over an in-memory SQLite, a FakeKms and a FakeClock.

What is pinned here: steps run in order and only once; a step that cannot finish keeps
the job where it was and records why; a KMS outage parks it in
``key_destruction_pending``; a legal hold blocks it before anything is destroyed; and
the job completes exactly when the final step is recorded. The integration suites
prove the same claims against real SQLite, PostgreSQL and OpenBao.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.audit.step_names import CORE_STEP_ORDER, Step
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.erasure.deadlines import add_months
from lethe.vault.erasure.model import (
    BLOCKED,
    KEY_PENDING,
    ErasureJob,
)
from lethe.vault.erasure.pipeline import Pipeline, core_steps
from lethe.vault.erasure.service import ErasureService
from lethe.vault.erasure.steps import StepContext, StepFailed, StepSpec
from lethe.vault.errors import LegalHoldActive, NotFound
from lethe.vault.memory.service import MemoryService
from lethe.vault.model import Caller, Provenance, Role, SourceType, WriteCommand
from lethe.vault.store.db import UnitOfWork, make_engine
from lethe.vault.store.events import SqlEventLog
from lethe.vault.store.tables import erasure_jobs, metadata
from tests.unit.fakes import FakeClock, FakeKms

OFFICER = Caller("t1", Role.PRIVACY_OFFICER, None, frozenset(), principal="officer-1")
AGENT = Caller("t1", Role.AGENT, "a1", frozenset({"support"}), principal="tok-a1")

CORE_STEPS = CORE_STEP_ORDER[1:]  # tombstoned -> verified


class FakeStep:
    """An extra step after the core ones: fails while ``failures`` remain, and notes each run."""

    def __init__(self, name: str, failures: int = 0) -> None:
        self.name, self.failures, self.runs = name, failures, 0

    def __call__(self, ctx: StepContext, conn: Connection | None) -> dict[str, Any]:
        self.runs += 1
        if self.failures:
            self.failures -= 1
            raise StepFailed(f"{self.name} cannot finish yet")
        return {"step_names": list(ctx.step_names), "status_seen": ctx.job.status}

    def spec(self) -> StepSpec:
        return StepSpec(Step(self.name), self, transactional=False)


@dataclass
class World:
    kms: FakeKms
    clock: FakeClock
    memories: MemoryService
    uow: UnitOfWork

    def erasure(self, *extra: FakeStep) -> ErasureService:
        keyring = self.memories.keyring
        pseudonyms = self.memories.pseudonyms
        return ErasureService(
            self.uow,
            self.kms,
            keyring,
            pseudonyms,
            Pipeline((*core_steps(), *(s.spec() for s in extra))),
            clock=self.clock,
            log=self.memories.log,
        )

    def remember(self, content: str = "alice prefers tea") -> None:
        provenance = Provenance(SourceType.USER_STATEMENT, "session-1/turn-1")
        cmd = WriteCommand("alice", "support", "preference", content, provenance, idempotency_key=content)
        self.memories.write(AGENT, cmd)

    def attempts(self, job_id: str) -> int:
        with self.uow.read() as conn:
            q = sa.select(erasure_jobs.c.attempts).where(erasure_jobs.c.id == job_id)
            return conn.execute(q).scalar_one()


@pytest.fixture
def world() -> Iterator[World]:
    engine = make_engine("sqlite://")
    metadata.create_all(engine)
    uow, kms, clock = UnitOfWork(engine), FakeKms(), FakeClock()
    memories = MemoryService(
        uow, SubjectKeyring(kms, uow), Pseudonymizer(b"p" * 32), clock=clock, log=SqlEventLog()
    )
    yield World(kms, clock, memories, uow)
    engine.dispose()


def names(job: ErasureJob) -> list[str]:
    return [s.step for s in job.steps]


def test_the_core_steps_then_the_extra_ones_run_in_order_and_the_last_completes_the_job(world: World):
    world.remember()
    report = FakeStep("reported")
    erasure = world.erasure(FakeStep("compacted"), report)
    job = erasure.request(OFFICER, "alice", "gdpr-art17-1a", None)
    assert (job.status, names(job), job.completed_at) == (Step.RECEIVED, [Step.RECEIVED], None)
    world.clock.advance(5)
    assert erasure.run_pending() == 1
    done = erasure.get(OFFICER, job.id)
    assert names(done) == [Step.RECEIVED, *CORE_STEPS, "compacted", "reported"]
    assert done.status == erasure.final_status == "reported"
    assert done.completed_at == world.clock.now and done.last_error is None
    assert [s.event_seq for s in done.steps] == sorted(s.event_seq for s in done.steps)
    seen = done.steps[-1].evidence
    assert seen["status_seen"] == "compacted"  # each step sees the job as the previous one left it
    assert seen["step_names"] == [*CORE_STEPS, "compacted", "reported"]


def test_a_step_that_cannot_finish_keeps_the_status_records_why_and_stops_the_steps_after_it(world: World):
    world.remember()
    flaky, after = FakeStep("compacted", failures=2), FakeStep("reported")
    erasure = world.erasure(flaky, after)
    job = erasure.request(OFFICER, "alice", "gdpr-art17-1a", None)
    for attempt in (1, 2):
        assert erasure.advance(job.id) is False
        parked = erasure.get(OFFICER, job.id)
        assert parked.status == Step.VERIFIED and parked.completed_at is None
        assert parked.last_error == "compacted cannot finish yet"
        assert names(parked) == [Step.RECEIVED, *CORE_STEPS]
        assert world.attempts(job.id) == attempt
        assert after.runs == 0
    assert erasure.advance(job.id) is True
    done = erasure.get(OFFICER, job.id)
    assert done.last_error is None and done.completed_at is not None
    assert (flaky.runs, after.runs) == (3, 1)  # no step ran twice once recorded


def test_a_kms_outage_parks_the_job_in_key_destruction_pending_until_the_kms_is_back(world: World):
    world.remember()
    erasure = world.erasure()
    job = erasure.request(OFFICER, "alice", "gdpr-art17-1a", None)
    world.kms.down = True
    assert erasure.run_pending() == 0
    parked = erasure.get(OFFICER, job.id)
    assert parked.status == KEY_PENDING and "KMS unavailable" in (parked.last_error or "")
    assert names(parked) == [Step.RECEIVED, "tombstoned", "derived_purged"]
    assert world.kms.destroyed == set()
    world.kms.down = False
    assert erasure.run_pending() == 1
    done = erasure.get(OFFICER, job.id)
    assert done.status == Step.VERIFIED and done.completed_at is not None
    receipt = next(s for s in done.steps if s.step == Step.KEY_DESTROYED).evidence["receipts"][0]
    assert len(world.kms.destroyed) == 1 and receipt["key_unusable"] is True
    # The receipt names the key under the request's own reference, not the KMS name, which
    # embeds the stable subject_ref (docs/verifying-erasure.md, "What a certificate can be linked to").
    (kms_name,) = world.kms.destroyed
    assert receipt["key_ref"] != kms_name and receipt["key_ref"].endswith("-g1")
    assert done.subject_ref[:40] in kms_name and done.subject_ref[:16] not in receipt["key_ref"]


def test_a_hold_placed_after_the_request_blocks_the_job_before_anything_is_destroyed(world: World):
    world.remember()
    erasure = world.erasure()
    job = erasure.request(OFFICER, "alice", "gdpr-art17-1a", None)
    hold = erasure.place_hold(OFFICER, "alice", "litigation 2026-17")
    assert erasure.run_pending() == 0
    blocked = erasure.get(OFFICER, job.id)
    assert blocked.status == BLOCKED and hold.id in (blocked.last_error or "")
    assert names(blocked) == [Step.RECEIVED] and world.kms.destroyed == set()
    assert erasure.run_pending() == 0  # a blocked job is not picked up again
    erasure.lift_hold(OFFICER, hold.id)
    assert erasure.get(OFFICER, job.id).status == Step.RECEIVED
    assert erasure.run_pending() == 1
    assert erasure.get(OFFICER, job.id).completed_at is not None


def test_the_runner_reads_the_hold_check_and_the_waiting_status_from_the_step_not_its_name(world: World):
    """A pipeline that moves the hold check to ``compacted`` and gives it a waiting status:
    the runner follows the declaration (it used to test ``tombstoned``/``key_destroyed``)."""
    world.remember()
    core = tuple(replace(s, checks_holds=False, waiting_status=None) for s in core_steps())
    flaky = FakeStep("compacted", failures=1)
    spec = replace(flaky.spec(), checks_holds=True, waiting_status="compaction_pending")
    erasure = ErasureService(
        world.uow,
        world.kms,
        world.memories.keyring,
        world.memories.pseudonyms,
        Pipeline((*core, spec)),
        clock=world.clock,
        log=world.memories.log,
    )
    job = erasure.request(OFFICER, "alice", "gdpr-art17-1a", None)
    erasure.place_hold(OFFICER, "alice", "litigation 2026-17")
    assert erasure.advance(job.id) is False
    held = erasure.get(OFFICER, job.id)
    assert held.status == BLOCKED and names(held) == [Step.RECEIVED, *CORE_STEPS]
    assert flaky.runs == 0
    (hold,) = erasure.holds(OFFICER, active=True)
    erasure.lift_hold(OFFICER, hold.id)
    assert erasure.advance(job.id) is False
    assert erasure.get(OFFICER, job.id).status == "compaction_pending"
    assert erasure.advance(job.id) is True


def test_a_pipeline_refuses_steps_out_of_the_declared_order() -> None:
    tomb, purge, *_ = core_steps()
    with pytest.raises(ValueError, match="order"):
        Pipeline((purge, tomb))
    with pytest.raises(ValueError, match="order"):
        Pipeline((tomb, tomb))


def test_a_request_under_an_active_hold_is_refused_and_files_nothing(world: World):
    erasure = world.erasure()
    hold = erasure.place_hold(OFFICER, "alice", "litigation 2026-17")
    with pytest.raises(LegalHoldActive, match=hold.id):
        erasure.request(OFFICER, "alice", "gdpr-art17-1a", None)
    assert erasure.list(OFFICER) == []
    with pytest.raises(NotFound):
        erasure.lift_hold(Caller("t2", Role.PRIVACY_OFFICER, principal="other"), hold.id)


def test_a_job_is_overdue_once_its_deadline_passes_unfinished(world: World):
    erasure = world.erasure()
    job = erasure.request(OFFICER, "alice", "gdpr-art17-1a", None)
    assert job.due_at == add_months(world.clock.now, 1) and not job.overdue
    world.clock.advance((job.due_at - world.clock.now).total_seconds() + 1)
    assert erasure.get(OFFICER, job.id).overdue
    assert [j.id for j in erasure.list(OFFICER, overdue=True)] == [job.id]
