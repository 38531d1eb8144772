"""The audit log finds edited, deleted and reordered events, and never signs a rewritten history.

Over real SQLite and PostgreSQL. Tampering is done the way an attacker with database
access would: plain SQL on the ``events`` table, behind Lethe's back. ``lethe audit``
commands run as subprocesses (a fresh process, no cached tree).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from lethe.api.bootstrap import Container
from lethe.api.settings import Settings
from lethe.keys.signing import Ed25519Signer
from lethe.vault.audit.checkpoint import Checkpoint, parse_and_verify, sign_checkpoint
from lethe.vault.audit.log import AuditLog
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.canonical import canonical_json
from lethe.vault.errors import InvalidCommand, LogInconsistent
from lethe.vault.merkle import leaf_hash, verify_consistency, verify_inclusion
from lethe.vault.store.events import canonical_row
from lethe.vault.store.tables import checkpoints, events
from tests.children import lethe_env
from tests.conftest import agent, officer, write_cmd

LETHE = Path(sys.executable).parent / "lethe"
ALICE = "alice@example.com"


def run_lethe(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = lethe_env(settings.data_dir)
    if settings.database_url:
        env["LETHE_DATABASE_URL"] = settings.database_url
    return subprocess.run(
        [str(LETHE), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def seed(c: Container, n: int = 8) -> None:
    for i in range(n):
        c.memories.write(agent(), write_cmd(f"memory {i}", subject=f"s{i % 3}@example.com"))


def sql(c: Container, statement: str, **params: object) -> None:
    with c.uow.engine.begin() as conn:
        conn.execute(sa.text(statement), params)


def rewrite_payload(c: Container, seq: int, fix_leaf: bool) -> None:
    """Change one event's payload; with ``fix_leaf``, also recompute its stored leaf hash."""
    with c.uow.engine.begin() as conn:
        row = conn.execute(sa.select(events).where(events.c.seq == seq)).one()
        payload = json.loads(row.payload)
        payload["forged"] = True
        new_text = canonical_json(payload).decode()
        values: dict[str, object] = {"payload": new_text}
        if fix_leaf:
            forged = row._asdict() | {"payload": new_text}
            values["leaf_hash"] = leaf_hash(canonical_row(SimpleNamespace(**forged)))
        conn.execute(events.update().where(events.c.seq == seq).values(**values))


def fresh_audit(c: Container) -> AuditLog:
    """The audit log as a new process sees it (no cached subtrees)."""
    return AuditLog(c.uow, c.reports.signer, c.audit.origin)


def checkpoint_count(c: Container) -> int:
    with c.uow.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(checkpoints)).scalar_one()


# -- an untouched log ---------------------------------------------------------------------------


def test_an_untouched_log_passes_lethe_audit_verify(lethe: Container, settings: Settings) -> None:
    seed(lethe)
    lethe.audit.checkpoint()
    seed(lethe, 3)
    result = lethe.audit.verify_log()
    assert result.ok and result.tree_size == 11 and result.latest_checkpoint_size == 8
    r = run_lethe(settings, "audit", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "audit log OK: 11 events" in r.stdout


def test_every_event_has_an_inclusion_proof_against_a_signed_checkpoint(lethe: Container) -> None:
    seed(lethe, 13)
    note = lethe.audit.checkpoint()
    cp = parse_and_verify(note, lethe.audit.origin, lethe.audit.public_key().pem.encode())
    with lethe.uow.read() as conn:
        rows = conn.execute(sa.select(events).order_by(events.c.seq)).all()
    assert cp.size == len(rows) == 13
    for r in rows:
        proof = lethe.audit.inclusion_proof(r.seq - 1, cp.size)
        assert verify_inclusion(leaf_hash(canonical_row(r)), r.seq - 1, cp.size, proof, cp.root)
    with pytest.raises(InvalidCommand):
        lethe.audit.inclusion_proof(0, cp.size + 1)


# -- tampering with rows ---------------------------------------------------------------------------


def test_editing_one_event_row_fails_audit_verify_naming_its_index(
    lethe: Container, settings: Settings
) -> None:
    seed(lethe)
    lethe.audit.checkpoint()
    rewrite_payload(lethe, seq=4, fix_leaf=False)
    result = lethe.audit.verify_log()
    assert not result.ok and result.first_bad_index == 3
    r = run_lethe(settings, "audit", "verify")
    assert r.returncode == 1
    assert "first bad leaf index 3" in r.stdout, r.stdout


def test_deleting_one_event_row_fails_audit_verify_naming_its_index(
    lethe: Container, settings: Settings
) -> None:
    seed(lethe)
    lethe.audit.checkpoint()
    sql(lethe, "DELETE FROM events WHERE seq = 6")
    r = run_lethe(settings, "audit", "verify")
    assert r.returncode == 1 and "first bad leaf index 5" in r.stdout, r.stdout


def test_deleting_the_newest_events_fails_against_the_signed_checkpoint(
    lethe: Container, settings: Settings
) -> None:
    seed(lethe)
    lethe.audit.checkpoint()
    sql(lethe, "DELETE FROM events WHERE seq >= 7")  # the log stays dense, but shorter than signed
    r = run_lethe(settings, "audit", "verify")
    assert r.returncode == 1 and "first bad leaf index 6" in r.stdout, r.stdout
    with pytest.raises(LogInconsistent, match="checkpoint was signed at size 8"):
        fresh_audit(lethe).sign()


def test_reordering_two_event_rows_fails_audit_verify_naming_the_first(
    lethe: Container, settings: Settings
) -> None:
    seed(lethe)
    lethe.audit.checkpoint()
    sql(lethe, "UPDATE events SET seq = -1 WHERE seq = 3")
    sql(lethe, "UPDATE events SET seq = 3 WHERE seq = 7")
    sql(lethe, "UPDATE events SET seq = 7 WHERE seq = -1")
    r = run_lethe(settings, "audit", "verify")
    assert r.returncode == 1 and "first bad leaf index 2" in r.stdout, r.stdout


def test_editing_a_stored_leaf_hash_fails_audit_verify_naming_its_index(lethe: Container) -> None:
    seed(lethe)
    lethe.audit.checkpoint()
    with lethe.uow.engine.begin() as conn:
        conn.execute(events.update().where(events.c.seq == 2).values(leaf_hash=b"\x00" * 32))
    assert lethe.audit.verify_log().first_bad_index == 1


def test_a_tampered_event_after_the_last_checkpoint_is_found_and_not_signed(lethe: Container) -> None:
    seed(lethe)
    lethe.audit.checkpoint()
    seed(lethe, 4)
    rewrite_payload(lethe, seq=10, fix_leaf=False)
    assert lethe.audit.verify_log().first_bad_index == 9
    before = checkpoint_count(lethe)
    with pytest.raises(LogInconsistent, match="leaf index 9"):
        fresh_audit(lethe).sign()
    assert checkpoint_count(lethe) == before


# -- forged histories -----------------------------------------------------------------------------


def test_a_rewritten_history_with_recomputed_leaves_is_found_and_never_signed(
    lethe: Container, settings: Settings
) -> None:
    seed(lethe, 4)
    lethe.audit.checkpoint()  # size 4
    seed(lethe, 4)
    lethe.audit.checkpoint()  # size 8
    rewrite_payload(lethe, seq=6, fix_leaf=True)  # every row now matches its own leaf
    result = lethe.audit.verify_log()
    assert not result.ok and result.bad_range == (4, 8), result
    r = run_lethe(settings, "audit", "verify")
    assert r.returncode == 1 and "range [4, 8)" in r.stdout, r.stdout

    seed(lethe, 2)  # the log grows; signing the new head must still be refused
    before = checkpoint_count(lethe)
    with pytest.raises(LogInconsistent, match="not consistent with the checkpoint signed at size 8"):
        fresh_audit(lethe).sign()
    r = run_lethe(settings, "audit", "checkpoint")
    assert r.returncode == 1 and "not consistent" in r.stderr, r.stderr
    assert checkpoint_count(lethe) == before


def test_a_forged_checkpoint_row_is_refused_and_reported(lethe: Container) -> None:
    seed(lethe)
    lethe.audit.checkpoint()
    mallory = Ed25519Signer.generate()
    origin = lethe.audit.origin
    note = sign_checkpoint(Checkpoint(origin, 8, b"\x07" * 32), origin, mallory)
    sql(
        lethe,
        "UPDATE checkpoints SET note = :note, root = :root WHERE tree_size = 8",
        note=note,
        root=b"\x07" * 32,
    )
    result = lethe.audit.verify_log()
    assert not result.ok and "does not verify under this log's key" in result.problem
    seed(lethe, 1)
    with pytest.raises(LogInconsistent, match="does not verify"):
        fresh_audit(lethe).sign()


# -- older checkpoints and certificates -----------------------------------------------------------


def forget(c: Container):  # type: ignore[no-untyped-def]
    c.memories.write(agent(), write_cmd("alice likes tea", subject=ALICE))
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    job = c.erasure.get(officer(), job.id)
    assert job.report_id, job.last_error
    return c.reports.load(job.report_id)


def test_a_checkpoint_signed_earlier_and_one_signed_later_are_consistent(
    lethe: Container, settings: Settings, tmp_path: Path
) -> None:
    seed(lethe, 5)
    older = lethe.audit.checkpoint()
    seed(lethe, 6)
    report = forget(lethe)
    key = lethe.audit.public_key().pem.encode()
    result = verify_certificate(report.document, key, older_checkpoint=older)
    assert result.ok, result.summary()
    assert "extends the older checkpoint of size 5" in next(
        c.detail for c in result.checks if c.name == "older_checkpoint"
    )

    cp1 = parse_and_verify(older, lethe.audit.origin, key)
    later = parse_and_verify(lethe.audit.checkpoint(), lethe.audit.origin, key)
    proof = lethe.audit.consistency_proof(cp1.size, later.size)
    assert verify_consistency(cp1.size, later.size, cp1.root, later.root, proof)

    (tmp_path / "cert.json").write_bytes(report.document)
    (tmp_path / "key.pem").write_bytes(key)
    (tmp_path / "older.note").write_text(older)
    r = run_lethe(
        settings,
        "verify",
        str(tmp_path / "cert.json"),
        "--public-key",
        str(tmp_path / "key.pem"),
        "--checkpoint",
        str(tmp_path / "older.note"),
    )
    assert r.returncode == 0 and "older_checkpoint" in r.stdout, r.stdout


def test_an_older_checkpoint_of_another_size_needs_a_served_consistency_proof(lethe: Container) -> None:
    seed(lethe, 3)
    report = forget(lethe)
    key = lethe.audit.public_key().pem.encode()
    origin = lethe.audit.origin
    size = int(report.parsed()["checkpoint"]["note"].split("\n")[1])
    # A head at a size nobody stored a checkpoint for, signed by the log's key.
    older = sign_checkpoint(Checkpoint(origin, 2, lethe.audit.root(2)), origin, lethe.reports.signer)
    missing = verify_certificate(report.document, key, older_checkpoint=older)
    assert missing.failed == ["older_checkpoint"] and "--consistency-proof" in missing.first_failure.detail
    served = {
        "first": 2,
        "second": size,
        "proof": [base64.b64encode(h).decode() for h in lethe.audit.consistency_proof(2, size)],
    }
    assert verify_certificate(report.document, key, older_checkpoint=older, consistency_proof=served).ok


def test_a_forged_older_checkpoint_fails_the_consistency_check(
    lethe: Container, settings: Settings, tmp_path: Path
) -> None:
    seed(lethe, 5)
    lethe.audit.checkpoint()
    report = forget(lethe)
    key = lethe.audit.public_key().pem.encode()
    origin = lethe.audit.origin
    # A different history of size 5, even when signed with the log's own key (a fork) ...
    fork = sign_checkpoint(Checkpoint(origin, 5, b"\x01" * 32), origin, lethe.reports.signer)
    result = verify_certificate(report.document, key, older_checkpoint=fork)
    assert result.failed == ["older_checkpoint"] and "does not extend" in result.first_failure.detail
    # ... and a checkpoint signed by anyone else.
    stranger = sign_checkpoint(Checkpoint(origin, 5, lethe.audit.root(5)), origin, Ed25519Signer.generate())
    result = verify_certificate(report.document, key, older_checkpoint=stranger)
    assert result.failed == ["older_checkpoint"] and "pinned key" in result.first_failure.detail

    (tmp_path / "cert.json").write_bytes(report.document)
    (tmp_path / "key.pem").write_bytes(key)
    (tmp_path / "fork.note").write_text(fork)
    r = run_lethe(
        settings,
        "verify",
        str(tmp_path / "cert.json"),
        "--public-key",
        str(tmp_path / "key.pem"),
        "--checkpoint",
        str(tmp_path / "fork.note"),
    )
    assert r.returncode == 1 and "FAILED: older_checkpoint" in r.stdout, r.stdout


def test_a_certificate_issued_after_history_was_rewritten_is_refused(lethe: Container) -> None:
    seed(lethe, 4)
    lethe.audit.checkpoint()
    rewrite_payload(lethe, seq=2, fix_leaf=True)
    # A new process (no cached tree) runs the erasure: the reported step cannot sign.
    c = lethe
    c.audit = fresh_audit(c)
    from lethe.vault.erasure.pipeline import erasure_pipeline
    from lethe.vault.erasure.service import ErasureService
    from lethe.vault.oversight.certificate import ErasureReports, certificate_work

    reports = ErasureReports(c.audit, c.reports.signer)
    service = ErasureService(
        c.uow,
        c.kms,
        c.keyring,
        c.pseudonyms,
        erasure_pipeline(c.compactor, certify=certificate_work(c.audit, reports.signer, reports)),
        log=c.log,
    )
    job = service.request(officer(), ALICE, "gdpr-art17-1a", None)
    service.run_pending()
    job = service.get(officer(), job.id)
    assert job.completed_at is None and job.report_id is None
    assert job.status == service.steps[-2].name and "refused to sign" in job.last_error


def restarted(c: Container) -> AuditLog:
    """The log as a freshly started process sees it: no tree cached in memory."""
    return AuditLog(c.uow, c.audit._signer, c.audit.origin)


def test_a_restarted_log_reads_only_the_leaves_after_its_stored_chunk_roots(
    lethe: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lethe.vault.audit.leaves import SqlLeafSource

    seed(lethe, 600)  # two complete chunks of 256 leaves, and more
    lethe.audit.sign()
    seed(lethe, 5)
    read: list[tuple[int, int]] = []
    real = SqlLeafSource.leaf_hashes

    def counting(self, start: int, end: int):  # type: ignore[no-untyped-def]
        read.append((start, end))
        return real(self, start, end)

    monkeypatch.setattr(SqlLeafSource, "leaf_hashes", counting)
    log = restarted(lethe)
    head = log.sign()
    assert head.tree_size == log.size()
    assert read and min(start for start, _ in read) >= 512, read
    assert head.root == lethe.audit.root(head.tree_size)  # the same root as from every leaf
    proof = log.inclusion_proof(3, head.tree_size)
    assert verify_inclusion(lethe.audit.leaf_hash(3), 3, head.tree_size, proof, head.root)


def test_an_altered_stored_chunk_root_is_refused_at_signing_and_named_by_audit_verify(
    lethe: Container,
) -> None:
    seed(lethe, 300)
    lethe.audit.sign()
    seed(lethe, 3)
    sql(lethe, "UPDATE merkle_chunk_roots SET root = :r WHERE chunk_index = 0", r=b"\x07" * 32)
    with pytest.raises(LogInconsistent):
        restarted(lethe).sign()
    report = restarted(lethe).verify_log()
    assert not report.ok and report.bad_range == (0, 256) and "tree cache" in (report.problem or "")
