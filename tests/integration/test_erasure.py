"""Crypto-shredding claims, against the local KMS and a real OpenBao, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import datetime

import pytest
import sqlalchemy as sa

from lethe.keys.envelope import DecryptionFailed, decrypt_for_subject
from lethe.keys.protocol import KeyDestroyed
from lethe.vault import errors
from lethe.vault.custody.sealing import aad
from lethe.vault.erasure import leases
from lethe.vault.erasure.leases import Claim
from lethe.vault.erasure.model import KEY_PENDING
from lethe.vault.model import Provenance, SearchQuery, SourceType
from lethe.vault.store.tables import events, memories, subject_keys
from tests.conftest import agent, event_count, officer, reviewer, write_cmd

ALICE, BOB = "alice@example.com", "bob@example.com"


def forget(c, subject=ALICE, tenant="t1"):
    job = c.erasure.request(officer(tenant), subject, "gdpr-art17-1a", "ticket-1")
    c.erasure.run_pending()
    return c.erasure.get(officer(tenant), job.id)


def seed(c):
    alice = [
        c.memories.write(agent(), write_cmd(f"alice likes tea {i}", subject=ALICE)).item for i in range(3)
    ]
    bob = c.memories.write(agent(), write_cmd("bob likes tea", subject=BOB)).item
    other = c.memories.write(agent("t2"), write_cmd("alice likes tea in t2", subject=ALICE)).item
    return alice, bob, other


def key_rows(c, subject, tenant="t1"):
    ref = c.pseudonyms.subject_ref(tenant, subject)
    with c.uow.acting_for(tenant), c.uow.read() as conn:
        return conn.execute(
            sa.select(subject_keys).where(
                subject_keys.c.subject_ref == ref, subject_keys.c.tenant_id == tenant
            )
        ).all()


def test_forgotten_subject_is_unreadable_everywhere_and_its_key_is_gone(shredder):
    c = shredder
    alice, bob, other = seed(c)
    with c.uow.read() as conn:  # copies of the ciphertext taken before the forget, as a backup holds them
        dead = conn.execute(
            sa.select(events).where(
                events.c.memory_id.in_([i.id for i in alice]), events.c.ciphertext.is_not(None)
            )
        ).all()
    job = forget(c)
    assert job.status == c.erasure.final_status and job.completed_at is not None
    steps = ["received", "tombstoned", "derived_purged", "key_destroyed", "verified"]
    assert [s.step for s in job.steps][:5] == steps
    # The wrapped data key no longer unwraps.
    (key,) = key_rows(c, ALICE)
    assert key.state == "destroyed"
    with pytest.raises(KeyDestroyed):
        c.kms.unwrap_data_key(key.key_name, key.wrapped_dek)
    # No read or search returns the subject.
    for item in alice:
        with pytest.raises(errors.NotFound):
            c.memories.get(agent(), item.id)
    assert c.search.search(agent(), SearchQuery("tea", "support", subject_id=ALICE)).items == []
    assert [i.id for i in c.search.search(agent(), SearchQuery("tea", "support")).items] == [bob.id]
    # Every copy of the ciphertext opens under no key the system holds.
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        live_keys = conn.execute(sa.select(subject_keys).where(subject_keys.c.state == "active")).all()
    assert len(dead) == 3
    deks = [c.kms.unwrap_data_key(k.key_name, k.wrapped_dek) for k in live_keys]
    assert len(deks) == 2  # bob's and tenant t2's alice
    for row in dead:
        for dek in deks:
            with pytest.raises(DecryptionFailed):
                decrypt_for_subject(
                    dek, row.ciphertext, aad(row.tenant_id, row.subject_ref, row.memory_id, 1)
                )
    # Other subjects and tenants are untouched.
    assert c.memories.get(agent(), bob.id).content == "bob likes tea"
    assert c.memories.get(agent("t2"), other.id).content == "alice likes tea in t2"
    # The evidence says what the KMS did, separately for usability and material.
    receipt = next(s for s in job.steps if s.step == "key_destroyed").evidence["receipts"][0]
    assert receipt["key_unusable"] is True and receipt["backend"] == c.kms.backend
    verified = next(s for s in job.steps if s.step == "verified").evidence
    assert verified["key_probes"][0]["destroyed"] and verified["retrievable_memories"] == 0


def test_erasure_fence_refuses_writes_until_reinstatement_starts_a_new_generation(shredder):
    c = shredder
    old = c.memories.write(agent(), write_cmd("old secret", subject=ALICE)).item
    forget(c)
    with pytest.raises(errors.SubjectForgotten):
        c.memories.write(agent(), write_cmd("new secret", subject=ALICE))
    r = c.erasure.reinstate(officer(), ALICE, "subject returned as a customer")
    assert r.generation == 2
    new = c.memories.write(agent(), write_cmd("new secret", subject=ALICE)).item
    assert c.memories.get(agent(), new.id).content == "new secret"
    with pytest.raises(errors.NotFound):
        c.memories.get(agent(), old.id)
    assert sorted((k.generation, k.state) for k in key_rows(c, ALICE)) == [(1, "destroyed"), (2, "active")]
    with pytest.raises(errors.VersionConflict):
        c.erasure.reinstate(officer(), ALICE, "again")


def test_a_node_with_the_subjects_key_cached_is_fenced_then_writes_under_the_reinstated_key(lethe, settings):
    """A write serves its key from the process's cache without a read; the write's own
    transaction checks it. Another node forgets, then reinstates the subject."""
    from lethe.api.bootstrap import build

    a = lethe
    a.memories.write(agent(), write_cmd("old secret", subject=ALICE))  # a caches generation 1
    b = build(settings)
    try:
        forget(b)
        before = event_count(a)
        with pytest.raises(errors.SubjectForgotten):
            a.memories.write(agent(), write_cmd("written with the cached key", subject=ALICE))
        assert event_count(a) == before  # refused under the write lock: nothing appended
        b.erasure.reinstate(officer(), ALICE, "subject returned as a customer")
        new = a.memories.write(agent(), write_cmd("new secret", subject=ALICE)).item
        assert b.memories.get(agent(), new.id).content == "new secret"
        with a.uow.maintenance("test: inspect every tenant's rows"), a.uow.read() as conn:
            row = conn.execute(sa.select(memories).where(memories.c.id == new.id)).one()
        assert row.key_generation == 2  # not the stale generation a still had cached
    finally:
        b.close()


def test_a_bulk_import_after_another_node_reinstated_the_subject_uses_the_new_key(lethe, settings):
    """The bulk path does not take the cached key: it reads the subject's key row, as before."""
    from lethe.api.bootstrap import build

    a = lethe
    a.memories.write(agent(), write_cmd("old secret", subject=ALICE))  # a caches generation 1
    b = build(settings)
    try:
        forget(b)
        b.erasure.reinstate(officer(), ALICE, "subject returned as a customer")
        assert a.memories.import_batch(agent(), [write_cmd("imported", subject=ALICE)]) == 1
        with a.uow.maintenance("test: inspect every tenant's rows"), a.uow.read() as conn:
            gens = (
                conn.execute(sa.select(memories.c.key_generation).where(memories.c.status != "forgotten"))
                .scalars()
                .all()
            )
        assert gens == [2]
    finally:
        b.close()


def test_summaries_built_from_a_forgotten_memory_are_tombstoned_too(lethe):
    c = lethe
    a = c.memories.write(agent(), write_cmd("alice drinks tea", subject=ALICE)).item
    b = c.memories.write(agent(), write_cmd("bob drinks tea", subject=BOB)).item
    summary_cmd = write_cmd(
        "household drinks tea",
        subject=BOB,
        provenance=Provenance(SourceType.SUMMARY, "summariser", (a.id, b.id)),
    )
    summary = c.memories.write(agent(), summary_cmd).item
    summary = c.review.promote(reviewer(), summary.id, summary.version).item  # live: citable
    meta = c.memories.write(
        agent(),
        write_cmd(
            "summary of summaries",
            subject="carol",
            provenance=Provenance(SourceType.SUMMARY, "summariser", (summary.id,)),
        ),
    ).item
    unrelated = c.memories.write(
        agent(),
        write_cmd(
            "bob summary", subject=BOB, provenance=Provenance(SourceType.SUMMARY, "summariser", (b.id,))
        ),
    ).item
    job = forget(c)
    purge = next(s for s in job.steps if s.step == "derived_purged").evidence
    assert purge["derived_tombstoned"] == 2 and set(purge["derived_ids"]) == {summary.id, meta.id}
    assert purge["index_entries_after"] == 0
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        status = dict(conn.execute(sa.text("SELECT id, status FROM memories")).all())
    assert status[summary.id] == status[meta.id] == "forgotten"
    assert status[unrelated.id] == "quarantined" and status[b.id] == "active"


def test_legal_hold_blocks_the_forget_until_it_is_lifted(lethe):
    c = lethe
    c.memories.write(agent(), write_cmd(subject=ALICE))
    hold = c.erasure.place_hold(officer(), ALICE, "litigation hold, case 42")
    before = event_count(c)
    with pytest.raises(errors.LegalHoldActive) as info:
        c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    assert hold.id in info.value.detail and info.value.status == 409
    assert event_count(c) == before
    # A hold placed after the request blocks the job before anything is destroyed.
    c.erasure.lift_hold(officer(), hold.id)
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    hold2 = c.erasure.place_hold(officer(), ALICE, "regulator inquiry")
    c.erasure.run_pending()
    blocked = c.erasure.get(officer(), job.id)
    assert blocked.status == "blocked" and hold2.id in blocked.last_error
    assert key_rows(c, ALICE)[0].state == "active"
    c.erasure.lift_hold(officer(), hold2.id)
    c.erasure.run_pending()
    assert c.erasure.get(officer(), job.id).status == c.erasure.final_status
    with pytest.raises(errors.NotFound):
        c.erasure.lift_hold(officer("t2"), hold2.id)


def test_jobs_are_due_one_calendar_month_later_and_overdue_ones_are_listed(lethe):
    from freezegun import freeze_time

    c = lethe
    with freeze_time("2026-01-01T00:00:00Z"):
        c.erasure.place_hold(officer(), ALICE, "hold")
        job = c.erasure.request(officer(), BOB, "gdpr-art17-1a", None)
        assert job.due_at.isoformat() == "2026-02-01T00:00:00+00:00" and job.days_left == 31
        hold = c.erasure.place_hold(officer(), BOB, "late hold")
        c.erasure.run_pending()
        assert c.erasure.list(officer(), overdue=True) == []
    with freeze_time("2026-02-05T00:00:00Z"):
        overdue = c.erasure.list(officer(), overdue=True)
        assert [j.id for j in overdue] == [job.id] and overdue[0].overdue
        c.erasure.lift_hold(officer(), hold.id)
        c.erasure.run_pending()
        assert c.erasure.list(officer(), overdue=True) == []
    assert c.erasure.list(officer("t2")) == []
    with pytest.raises(errors.OutOfScope):
        c.erasure.request(agent(), ALICE, "gdpr-art17-1a", None)


@pytest.mark.openbao
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("kms_kind", ["vault"], indirect=True)
def test_kms_outage_parks_the_job_until_openbao_is_back(shredder, openbao):
    c = shredder
    c.memories.write(agent(), write_cmd(subject=ALICE))
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    openbao.pause()
    try:
        c.erasure.run_pending()
        parked = c.erasure.get(officer(), job.id)
        assert parked.status == KEY_PENDING and "KMS unavailable" in parked.last_error
        assert [s.step for s in parked.steps] == ["received", "tombstoned", "derived_purged"]
        # Tombstoning already took the subject out of retrieval while the key waits.
        assert c.search.search(agent(), SearchQuery("tea", "support", subject_id=ALICE)).items == []
        c.erasure.run_pending()
        assert c.erasure.get(officer(), job.id).status == KEY_PENDING
    finally:
        openbao.resume()
    c.erasure.run_pending()
    done = c.erasure.get(officer(), job.id)
    assert done.status == c.erasure.final_status and done.last_error is None


def test_a_write_racing_the_forget_is_shredded_or_refused(lethe):
    c = lethe
    c.memories.write(agent(), write_cmd("first", subject=ALICE))
    accepted, refused, stop = [], [], threading.Event()

    def writer():
        i = 0
        while not stop.is_set() and i < 400:
            i += 1
            try:
                accepted.append(c.memories.write(agent(), write_cmd(f"racing {i}", subject=ALICE)).item.id)
            except errors.SubjectForgotten:
                refused.append(i)

    t = threading.Thread(target=writer)
    t.start()
    while len(accepted) < 5:
        pass
    job = forget(c)
    stop.set()
    t.join()
    assert job.status == c.erasure.final_status
    for memory_id in accepted:
        with pytest.raises(errors.NotFound):
            c.memories.get(agent(), memory_id)
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        readable = conn.execute(
            sa.text("SELECT count(*) FROM memories WHERE ciphertext IS NOT NULL")
        ).scalar_one()
    assert readable == 0
    assert refused or len(accepted) == 400


def test_a_read_racing_the_forget_cannot_leave_the_old_key_in_the_cache(lethe):
    c = lethe
    item = c.memories.write(agent(), write_cmd("cached secret", subject=ALICE)).item
    (key,) = key_rows(c, ALICE)
    cache_key = ("t1", key.subject_ref, key.generation)
    c.keyring.cache._data.clear()  # force the read to unwrap through the KMS
    in_unwrap, release = threading.Event(), threading.Event()
    real_unwrap = c.kms.unwrap_data_key

    def slow_unwrap(name, wrapped):
        dek = real_unwrap(name, wrapped)
        in_unwrap.set()
        release.wait(10)
        return dek

    c.kms.unwrap_data_key = slow_unwrap
    result = {}
    reader = threading.Thread(target=lambda: result.update(item=c.memories.get(agent(), item.id)))
    reader.start()
    assert in_unwrap.wait(10)
    c.kms.unwrap_data_key = real_unwrap
    job = forget(c)  # completes while the read holds the old key in flight
    release.set()
    reader.join()
    assert job.status == c.erasure.final_status
    assert c.keyring.cache.get(cache_key) is None
    assert result["item"].content == "cached secret"  # the read began before the forget


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_subject_with_10000_memories_is_forgotten(lethe):
    import time

    c = lethe
    for i in range(10_000):
        c.memories.write(agent(), write_cmd(f"note {i} about tea", subject=ALICE, kind="fact"))
    bob = c.memories.write(agent(), write_cmd("bob tea", subject=BOB)).item
    started = time.perf_counter()
    job = forget(c)
    elapsed = time.perf_counter() - started
    print(f"\nforget of a 10,000-memory subject: {elapsed:.3f} s")
    assert job.status == c.erasure.final_status
    tomb = next(s for s in job.steps if s.step == "tombstoned").evidence
    assert tomb["memories_forgotten"] == 10_000 and tomb["index_entries_after"] == 0
    assert [i.id for i in c.search.search(agent(), SearchQuery("tea", "support", limit=100)).items] == [
        bob.id
    ]


def test_erasure_requests_with_unstorable_text_are_rejected_before_anything_is_written(lethe):
    before = event_count(lethe)
    for subject, basis in (("alice\x00", "gdpr-art17-1a"), ("alice", ""), ("", "gdpr-art17-1a")):
        with pytest.raises(errors.InvalidCommand):
            lethe.erasure.request(officer(), subject, basis, None)
    with pytest.raises(errors.InvalidCommand):
        lethe.erasure.place_hold(officer(), "alice", "reason\x00")
    assert event_count(lethe) == before


def test_only_the_runner_holding_a_jobs_lease_advances_it(lethe, settings):
    """A server's runner and a CLI `forget` never run the same job's steps at once."""
    from lethe.api.bootstrap import build

    c = lethe
    c.memories.write(agent(), write_cmd("leased", subject=ALICE))
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    other = build(settings)
    try:
        assert other.erasure._claim(job.id) is Claim.TAKEN  # another runner is working on it
        assert c.erasure._claim(job.id) is Claim.HELD
        assert c.erasure.advance(job.id) is False
        assert [s.step for s in c.erasure.get(officer(), job.id).steps] == ["received"]
        other.erasure._release(job.id)
        assert c.erasure.advance(job.id) is True
        done = c.erasure.get(officer(), job.id).steps
        assert done[-1].step == c.erasure.final_status
        assert other.erasure.advance(job.id) is True  # finished: nothing to claim, nothing run
        assert c.erasure.get(officer(), job.id).steps == done
    finally:
        other.close()


def test_two_threads_of_one_process_never_run_a_jobs_step_at_once(lethe):
    """A server's runner and a caller on the same container share one runner id, so the
    lease alone would let both in: the second waits, then finds the job finished, runs no
    step and says it is complete."""
    from lethe.vault.erasure.steps import StepSpec

    c = lethe
    c.memories.write(agent(), write_cmd("raced", subject=ALICE))
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    i, spec = next((i, s) for i, s in enumerate(c.erasure.steps) if not s.transactional)
    inside, release, entered = threading.Event(), threading.Event(), []

    def slow(ctx, conn):
        entered.append(threading.get_ident())
        inside.set()
        release.wait(5)
        return spec.run(ctx, conn)

    c.erasure.steps[i] = StepSpec(spec.name, slow, transactional=False)
    results: list[bool] = []
    first = threading.Thread(target=lambda: results.append(c.erasure.advance(job.id)))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=lambda: results.append(c.erasure.advance(job.id)))
    second.start()
    second.join(1.0)  # without the lock it is inside the step by now
    release.set()
    first.join(30)
    second.join(30)
    assert len(entered) == 1
    assert results == [True, True]
    assert c.erasure.get(officer(), job.id).status == c.erasure.final_status


def test_a_lease_left_by_a_dead_process_on_this_host_is_taken_over(lethe):
    import socket
    import subprocess
    import sys

    c = lethe
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    owner = f"{socket.gethostname()[:60]}:{dead.stdout.strip()}:gone"
    with (
        c.uow.maintenance("test: another runner's lease on the job, as the erasure runner writes it"),
        c.uow.write() as conn,
    ):
        conn.execute(
            sa.text("UPDATE erasure_jobs SET lease_owner = :o, lease_until = :u WHERE id = :i"),
            {"o": owner, "u": datetime(2999, 1, 1), "i": job.id},
        )
    assert c.erasure.advance(job.id) is True


def test_a_claim_says_whether_the_lease_is_taken_held_finished_or_the_job_missing(lethe, settings):
    """A runner told HELD leaves the job to its holder; one told FINISHED reports it complete."""
    from datetime import timedelta

    from lethe.api.bootstrap import build
    from lethe.vault.clock import utcnow

    c = lethe
    c.memories.write(agent(), write_cmd("claimed", subject=ALICE))
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    other = build(settings)
    now = utcnow()
    try:
        assert leases.claim(c.uow, "no-such-job", c.erasure.runner_id, now) is Claim.MISSING
        assert leases.claim(c.uow, job.id, other.erasure.runner_id, now) is Claim.TAKEN
        assert leases.claim(c.uow, job.id, other.erasure.runner_id, now) is Claim.TAKEN  # renewed
        assert leases.claim(c.uow, job.id, c.erasure.runner_id, now) is Claim.HELD
        assert c.erasure.advance(job.id) is False  # held: no step run
        assert [s.step for s in c.erasure.get(officer(), job.id).steps] == ["received"]
        expired = now + leases.LEASE + timedelta(seconds=1)
        assert leases.claim(c.uow, job.id, c.erasure.runner_id, expired) is Claim.TAKEN
        leases.release(c.uow, job.id, c.erasure.runner_id)
        assert c.erasure.advance(job.id) is True
        assert leases.claim(c.uow, job.id, other.erasure.runner_id, now) is Claim.FINISHED
        assert other.erasure.advance(job.id) is True
    finally:
        other.close()
