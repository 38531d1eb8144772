"""Compaction makes dead ciphertext absent; backups cannot bring a forgotten subject back."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
from datetime import timedelta

import pytest
import sqlalchemy as sa
from freezegun import freeze_time

from lethe.keys.filescan import find_in_files
from lethe.vault import errors
from lethe.vault.erasure.backup import create_backup, restore_backup
from lethe.vault.erasure.compaction_disk import reclaim_space, slices_of, sqlite_files
from lethe.vault.erasure.compaction_repository import ErasedScope
from lethe.vault.erasure.forgetting import tombstone_subject
from lethe.vault.merkle import leaf_hash
from lethe.vault.store.events import canonical_row
from lethe.vault.store.tables import events, memories
from tests.conftest import agent, logical_forget, officer, write_cmd, write_lock_held

ALICE, BOB = "alice@example.com", "bob@example.com"
VACUUMS = (
    "SELECT coalesce(sum(vacuum_count), 0) FROM pg_stat_user_tables WHERE relname IN ('events', 'memories')"
)


def ciphertexts_of(c, memory_ids):
    with c.uow.read() as conn:
        return (
            conn.execute(
                sa.select(events.c.ciphertext).where(
                    events.c.memory_id.in_(memory_ids), events.c.ciphertext.is_not(None)
                )
            )
            .scalars()
            .all()
        )


def leaves_verify(c) -> bool:
    with c.uow.read() as conn:
        return all(leaf_hash(canonical_row(r)) == r.leaf_hash for r in conn.execute(sa.select(events)))


def slices_on_disk(c, slices: list[bytes]) -> int:
    """How many slices the store's files hold, scanned by a child process (never read live files here)."""
    hits = find_in_files(sqlite_files(c.uow.engine), slices)
    return len({i for found in hits.values() for i in found})


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_after_forget_and_compaction_no_slice_of_the_subjects_ciphertext_is_on_disk(lethe):
    c = lethe
    alice = [
        c.memories.write(agent(), write_cmd(f"alice secret {i} " + "x" * 200, subject=ALICE)).item.id
        for i in range(20)
    ]
    bob = c.memories.write(agent(), write_cmd("bob secret", subject=BOB)).item
    dead = ciphertexts_of(c, alice)
    assert len(dead) == 20
    slices = [s for ct in dead for s in slices_of(ct)]
    assert slices_on_disk(c, slices) == len(slices)  # the scan can fail: before, they are there
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    job = c.erasure.get(officer(), job.id)
    compacted = next(s for s in job.steps if s.step == "compacted").evidence
    assert compacted["events_rewritten"] == 20 and compacted["scan"]["slices_found"] == 0
    assert compacted["scan"]["slices"] == 60
    assert slices_on_disk(c, slices) == 0
    assert c.memories.get(agent(), bob.id).content == "bob secret"
    assert leaves_verify(c)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_forget_shreds_the_bytes_in_place_without_vacuuming_the_whole_store(lethe):
    c = lethe
    ids = [c.memories.write(agent(), write_cmd(f"carol {i}", subject=ALICE)).item.id for i in range(10)]
    for i in range(300):  # other subjects' data: what a VACUUM would have rewritten
        c.memories.write(agent(), write_cmd(f"filler {i} " + "y" * 300, subject=f"s{i % 7}"))
    slices = [s for ct in ciphertexts_of(c, ids) for s in slices_of(ct)]
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    compacted = next(s for s in c.erasure.get(officer(), job.id).steps if s.step == "compacted").evidence
    assert compacted["reclaim"]["vacuum"] is False and compacted["reclaim"]["secure_delete"] is True
    assert "vacuum_after_scan_found" not in compacted["reclaim"]
    assert compacted["scan"]["slices_found"] == 0
    assert slices_on_disk(c, slices) == 0  # an independent scan agrees


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_scheduled_compaction_shreds_in_place_and_never_vacuums_the_whole_store(lethe, monkeypatch):
    """A VACUUM holds every writer of every process for its whole rewrite (97 s on a
    1M-memory store): the hourly run must not, and does not need to."""
    from lethe.api.http.background import scheduled_compaction
    from lethe.vault.erasure import compaction

    c = lethe
    ids = [c.memories.write(agent(), write_cmd(f"dora {i}", subject=ALICE)).item.id for i in range(10)]
    for i in range(300):  # other subjects' data: what a VACUUM would have rewritten
        c.memories.write(agent(), write_cmd(f"filler {i} " + "y" * 300, subject=f"s{i % 7}"))
    slices = [s for ct in ciphertexts_of(c, ids) for s in slices_of(ct)]
    logical_forget(c, ALICE)
    vacuums: list[bool] = []
    reclaim = compaction.reclaim_space
    monkeypatch.setattr(
        compaction,
        "reclaim_space",
        lambda engine, vacuum=True: vacuums.append(vacuum) or reclaim(engine, vacuum),
    )
    assert scheduled_compaction(c) == 10
    assert vacuums == [False]
    assert slices_on_disk(c, slices) == 0  # secure_delete and the checkpoint left none


def _first_scan_finds(found: dict, what: str) -> dict:  # type: ignore[type-arg]
    if what == "vectors":
        return {**found, "vector_scan": {**found["vector_scan"], "slices_found": 1}}
    return {**found, "slices_found": 1}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("what", ["ciphertext", "vectors"])
def test_a_forget_vacuums_when_the_scan_still_finds_a_slice_after_the_checkpoint(lethe, monkeypatch, what):
    from lethe.vault.erasure import compaction

    c = lethe
    for i in range(5):
        c.memories.write(agent(), write_cmd(f"dave secret {i}", subject=ALICE))
    real_scan, scans = compaction.scan_store, []

    def scan_finding_a_slice_the_first_time(engine, ciphertexts, *a, **kw):  # type: ignore[no-untyped-def]
        found = real_scan(engine, ciphertexts, *a, **kw)
        scans.append(found)
        return _first_scan_finds(found, what) if len(scans) == 1 else found

    monkeypatch.setattr(compaction, "scan_store", scan_finding_a_slice_the_first_time)
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    compacted = next(s for s in c.erasure.get(officer(), job.id).steps if s.step == "compacted").evidence
    assert len(scans) == 2  # found, then after VACUUM: the ciphertext and the sealed vectors in one pass each
    assert compacted["reclaim"]["vacuum"] is True and compacted["reclaim"]["vacuum_after_scan_found"] is True
    assert compacted["scan"]["slices_found"] == 0
    assert compacted["vector_scan"]["slices_found"] == 0 and compacted["vector_scan"]["sealed_vectors"] == 5
    assert compacted["vector_scan"]["vacuum_after_scan_found"] is True


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_on_postgres_no_row_holds_the_ciphertext_after_compaction_and_vacuum_ran(lethe):
    c = lethe
    alice = [c.memories.write(agent(), write_cmd(f"alice {i}", subject=ALICE)).item.id for i in range(5)]
    dead = ciphertexts_of(c, alice)
    with c.uow.read() as conn:
        before = conn.execute(sa.text(VACUUMS)).scalar_one()
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    job = c.erasure.get(officer(), job.id)
    evidence = next(s for s in job.steps if s.step == "compacted").evidence
    assert evidence["reclaim"]["vacuum"] is True and evidence["scan"]["rows_still_holding_them"] == 0
    with c.uow.read() as conn:
        holding = conn.execute(
            sa.select(sa.func.count()).select_from(events).where(events.c.ciphertext.in_(dead))
        ).scalar_one()
        after = conn.execute(sa.text(VACUUMS)).scalar_one()
        last = conn.execute(
            sa.text("SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = 'events'")
        ).scalar_one()
    assert holding == 0
    assert after >= before + 2 and last is not None
    assert leaves_verify(c)


KILLER = textwrap.dedent("""
    import os, signal, sys
    from lethe.api.bootstrap import build
    from lethe.api.settings import Settings
    c = build(Settings(data_dir=sys.argv[1], database_url=sys.argv[2] or None))
    c.compactor.batch_size = 50
    def progress(done, total):
        if done >= int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)
    c.compactor.compact(progress=progress)
""")


def test_killing_compaction_mid_run_and_rerunning_ends_in_the_uninterrupted_state(lethe, settings):
    c = lethe
    ids = [c.memories.write(agent(), write_cmd(f"alice {i}", subject=ALICE)).item.id for i in range(300)]
    keep = c.memories.write(agent(), write_cmd("bob keeps", subject=BOB)).item
    logical_forget(c, ALICE)
    with c.uow.read() as conn:
        expected_null = set(
            conn.execute(sa.select(events.c.seq).where(events.c.memory_id.in_(ids))).scalars()
        )
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(settings.data_dir), settings.database_url or "", "120"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    with c.uow.read() as conn:
        partial = conn.execute(
            sa.select(sa.func.count())
            .select_from(events)
            .where(events.c.seq.in_(expected_null), events.c.ciphertext.is_(None))
        ).scalar_one()
    assert 0 < partial < len(expected_null)  # it really died half-way
    result = c.compactor.compact()
    assert result.events_rewritten == len(expected_null) - partial
    with c.uow.read() as conn:
        nulls = set(
            conn.execute(
                sa.select(events.c.seq).where(
                    events.c.ciphertext.is_(None), events.c.type == "memory.written"
                )
            ).scalars()
        )
    assert nulls == expected_null
    assert c.compactor.compact().events_rewritten == 0
    assert c.memories.get(agent(), keep.id).content == "bob keeps"
    assert leaves_verify(c)


def test_retention_keeps_recent_dead_versions_and_never_touches_active_items(lethe):
    c = lethe
    c.compactor.retention = timedelta(days=30)
    with freeze_time("2026-01-01T00:00:00Z"):
        old = c.memories.write(agent(), write_cmd("old preference", kind="fact")).item
        c.memories.write(agent(), write_cmd("corrected preference", kind="fact", supersedes_id=old.id))
        short = c.memories.write(agent(), write_cmd("short note", kind="working_note", ttl_seconds=60)).item
        upd = c.memories.write(agent(), write_cmd("v1 of a fact", kind="fact")).item
        c.memories.write(agent(), write_cmd("v2 of a fact", kind="fact", id=upd.id, expected_version=1))
    with freeze_time("2026-01-01T01:00:00Z"):
        c.memories.sweep_expired()
        recent_old = c.memories.write(agent(), write_cmd("recent preference", kind="fact")).item
        c.memories.write(agent(), write_cmd("recent fix", kind="fact", supersedes_id=recent_old.id))
    with freeze_time("2026-01-20T00:00:00Z"):
        assert c.compactor.compact(reclaim=False).events_rewritten == 0  # all younger than 30 days
    with freeze_time("2026-02-15T00:00:00Z"):
        recent = c.memories.write(agent(), write_cmd("newer", kind="fact")).item
        c.memories.write(agent(), write_cmd("newer fix", kind="fact", supersedes_id=recent.id))
        result = c.compactor.compact(reclaim=False)
    assert result.events_rewritten == 4  # old, short, v1 of upd, recent_old
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        rows = {r.id: r for r in conn.execute(sa.select(memories))}
        v1_left = (
            conn.execute(
                sa.select(events.c.ciphertext)
                .where(events.c.memory_id == upd.id, events.c.type == "memory.written")
                .order_by(events.c.seq)
            )
            .scalars()
            .all()
        )
    assert rows[old.id].ciphertext is None and rows[short.id].ciphertext is None
    assert rows[recent.id].ciphertext is not None  # superseded, but inside the window
    assert v1_left[0] is None and v1_left[1] is not None
    for r in rows.values():
        if r.status == "active":
            assert r.ciphertext is not None
    with freeze_time("2026-02-15T00:00:00Z"):
        assert c.memories.get(agent(), upd.id).content == "v2 of a fact"
    assert leaves_verify(c)


def test_backup_then_forget_then_restore_keeps_the_subject_forgotten(lethe, tmp_path):
    c = lethe
    carol = c.memories.write(agent(), write_cmd("carol secret", subject="carol")).item
    logical_forget(c, "carol")  # forgotten before the backup
    alice = c.memories.write(agent(), write_cmd("alice secret", subject=ALICE)).item
    bob = c.memories.write(agent(), write_cmd("bob secret", subject=BOB)).item
    manifest = create_backup(c.uow, tmp_path / "backups", log=c.log)
    backup_files = b"".join(p.read_bytes() for p in manifest.parent.iterdir())
    key_dir = c.settings.key_dir
    for key_file in key_dir.iterdir():  # no key material in the backup
        if key_file.is_file() and key_file.stat().st_size:
            assert key_file.read_bytes()[:32] not in backup_files
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    assert c.erasure.get(officer(), job.id).completed_at is not None
    report = restore_backup(c.uow, c.keyring, manifest, log=c.log)
    assert report.reforgotten == 1 and report.keys_found_destroyed == 1
    for item in (alice, carol):
        with pytest.raises(errors.NotFound):
            c.memories.get(agent(), item.id)
    with pytest.raises(errors.SubjectForgotten):
        c.memories.write(agent(), write_cmd("alice again", subject=ALICE))
    assert c.memories.get(agent(), bob.id).content == "bob secret"
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        readable = conn.execute(
            sa.select(sa.func.count())
            .select_from(memories)
            .where(
                memories.c.ciphertext.is_not(None),
                memories.c.subject_ref != c.pseudonyms.subject_ref("t1", BOB),
            )
        ).scalar_one()
    assert readable == 0


def test_restore_without_the_live_store_uses_the_kms_as_the_ledger(lethe, tmp_path):
    c = lethe
    alice = c.memories.write(agent(), write_cmd("alice secret", subject=ALICE)).item
    manifest = create_backup(c.uow, tmp_path / "backups", log=c.log)
    c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    with (
        c.uow.maintenance("test: lose the live store's record of forgotten subjects"),
        c.uow.write() as conn,
    ):  # the live store is lost: nothing of it is left to consult
        conn.execute(sa.text("DELETE FROM forgotten_subjects"))
    report = restore_backup(c.uow, c.keyring, manifest, log=c.log)
    assert report.keys_found_destroyed == 1 and report.reforgotten == 1
    with pytest.raises(errors.NotFound):
        c.memories.get(agent(), alice.id)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_compaction_among_thousands_of_events_rewrites_exactly_the_forgotten_subjects(lethe):
    """Its rate is figure 5 of ``lethe bench``; here, what it rewrites: every event of the
    forgotten subjects and not one of anyone else's, nor of the same names in another tenant."""
    from lethe.vault.memory.bulk import bulk_load

    c = lethe
    bulk_load(c.memories, tenants=2, subjects_per_tenant=10, memories_per_subject=200)
    gone = {c.pseudonyms.subject_ref("bulk-t0", f"subject-{s}") for s in range(0, 10, 2)}
    with c.uow.acting_for("bulk-t0"), c.uow.write() as conn:
        for ref in gone:
            tombstone_subject(conn, c.log, c.keyring, "bulk-t0", ref)
    result = c.compactor.compact(reclaim=False)
    reclaim_space(c.uow.engine)
    assert result.events_rewritten == 5 * 200
    with c.uow.read() as conn:
        held = conn.execute(
            sa.select(events.c.tenant_id, events.c.subject_ref, sa.func.count())
            .where(events.c.ciphertext.is_not(None))
            .group_by(events.c.tenant_id, events.c.subject_ref)
        ).all()
    assert not [r for r in held if r.tenant_id == "bulk-t0" and r.subject_ref in gone]
    assert sum(r[2] for r in held) == 4000 - 5 * 200  # everyone else's ciphertext is untouched


def run_until(c, job_id: str, last_step: str) -> None:
    """Run the job's steps up to and including ``last_step`` (as a runner interrupted after it)."""
    job = c.erasure._load(job_id)
    names = tuple(s.name for s in c.erasure.steps if s.applies_to(c.uow, job))
    for spec in c.erasure.steps:
        c.erasure._run_step(c.erasure._load(job_id), spec, names)
        if spec.name == last_step:
            return


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_scheduled_compaction_leaves_a_running_erasure_its_evidence(lethe):
    c = lethe
    for i in range(3):
        c.memories.write(agent(), write_cmd(f"alice note {i} " + "y" * 100, subject=ALICE))
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    run_until(c, job.id, "verified")
    assert c.compactor.compact().events_rewritten == 0  # the hourly run skips the running erasure
    c.erasure.advance(job.id)
    evidence = next(s for s in c.erasure.get(officer(), job.id).steps if s.step == "compacted").evidence
    assert evidence["scan"]["performed"] is True and evidence["scan"]["ciphertexts_scanned"] == 3
    assert evidence["scan"]["slices_found"] == 0
    assert evidence["row_check"] == {"events_that_held_ciphertext": 3, "events_still_holding_ciphertext": 0}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_an_interrupted_compaction_is_stated_as_an_unperformed_scan_not_passed_off(lethe):
    """A crash after compacting but before recording the step leaves nothing to sample."""
    c = lethe
    for i in range(3):
        c.memories.write(agent(), write_cmd(f"alice note {i}", subject=ALICE))
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    run_until(c, job.id, "verified")
    ref = c.pseudonyms.subject_ref("t1", ALICE)
    c.compactor.compact(only_forgotten=True, scope=ErasedScope("t1", ref))  # the interrupted attempt
    c.erasure.advance(job.id)
    job = c.erasure.get(officer(), job.id)
    assert job.status == "reported"
    evidence = next(s for s in job.steps if s.step == "compacted").evidence
    assert evidence["scan"]["performed"] is False and "already been removed" in evidence["scan"]["reason"]
    assert "slices_found" not in evidence["scan"]
    assert evidence["row_check"] == {"events_that_held_ciphertext": 3, "events_still_holding_ciphertext": 0}
    certificate = c.reports.load(job.report_id).parsed()
    step = next(s for s in certificate["steps"] if s["name"] == "compacted")
    assert step["evidence"]["scan"]["performed"] is False


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_ciphertext_compacted_between_the_two_reads_is_left_out_not_sampled_as_none(lethe):
    """On PostgreSQL each statement of a read sees the latest commits: another runner's
    compaction may null a ciphertext after its event was selected as dead."""
    c = lethe
    for i in range(3):
        c.memories.write(agent(), write_cmd(f"alice note {i}", subject=ALICE))
    logical_forget(c, ALICE)
    ref = c.pseudonyms.subject_ref("t1", ALICE)
    fired = []

    def compact_one_meanwhile(conn, cursor, statement, parameters, context, executemany):
        if not fired and statement.lstrip().startswith("SELECT events.seq"):
            fired.append(statement)
            with c.uow.engine.begin() as other:
                other.execute(
                    sa.text(
                        "UPDATE events SET ciphertext = NULL WHERE seq = "
                        "(SELECT min(seq) FROM events WHERE ciphertext IS NOT NULL AND subject_ref = :r)"
                    ),
                    {"r": ref},
                )

    sa.event.listen(c.uow.engine, "after_cursor_execute", compact_one_meanwhile)
    try:
        present = c.compactor.dead_ciphertexts(scope=ErasedScope("t1", ref))
    finally:
        sa.event.remove(c.uow.engine, "after_cursor_execute", compact_one_meanwhile)
    assert fired
    assert len(present) == 2 and all(isinstance(b, bytes) for b in present)


def test_a_compaction_that_finds_nothing_does_not_wait_for_the_write_lock(lethe):
    """Every worker of every node compacts hourly, and finding dead ciphertext reads every
    memory: under the write lock, every writer of every process waited for that scan."""
    c = lethe
    c.memories.write(agent(), write_cmd("tea lasts", kind="fact"))
    with write_lock_held(c.uow) as holder:
        done: list[tuple[int, int]] = []

        def compact() -> None:
            r = c.compactor.compact(vacuum=False)
            done.append((r.events_rewritten, r.projection_rows_rewritten))

        compactor = threading.Thread(target=compact, daemon=True)
        compactor.start()
        compactor.join(10)
        assert done == [(0, 0)]  # done while the other writer still holds the lock
        assert holder.is_alive()


def test_dead_memories_found_in_a_read_are_rewritten_in_batches_by_key(lethe):
    c = lethe
    c.compactor.retention = timedelta(days=30)
    c.compactor.batch_size = 2
    with freeze_time("2026-01-01T00:00:00Z"):
        old = [c.memories.write(agent(), write_cmd(f"preference {i}", kind="fact")).item for i in range(5)]
        new = [
            c.memories.write(agent(), write_cmd(f"corrected {i}", kind="fact", supersedes_id=o.id)).item
            for i, o in enumerate(old)
        ]
    with freeze_time("2026-02-15T00:00:00Z"):
        result = c.compactor.compact(reclaim=False)
        assert (result.events_rewritten, result.projection_rows_rewritten) == (5, 5)
        assert c.compactor.compact(reclaim=False).projection_rows_rewritten == 0
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        held = dict(conn.execute(sa.select(memories.c.id, memories.c.ciphertext.is_not(None))).all())
    assert held == {**{o.id: False for o in old}, **{n.id: True for n in new}}
