"""Records that outlive a restore: requests, certificates, holds, and the fork they leave.

Restoring a backup older than three erasures keeps all three requests and certificates
listed and verifying, keeps the legal holds placed since, re-applies the erasures to the
snapshot, and records where the audit log forked. Over real SQLite and PostgreSQL; the
restore runs in-process and through the installed ``lethe`` CLI, and reading happens in
a fresh container, as after a real restore.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings
from lethe.vault import errors
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.erasure.backup import create_backup, restore_backup
from tests.conftest import agent, officer, write_cmd
from tests.integration.test_certificate import run_lethe

SUBJECTS = ("alice@example.com", "bob@example.com", "carol@example.com")
HELD = "dave@example.com"


def three_erasures_after_a_backup(
    c: Container, tmp_path: Path
) -> tuple[Path, dict[str, tuple[str, str]], str]:
    """A backup, then three completed erasures and a hold; returns the manifest,
    {request id: (subject, verification code)} and the hold id."""
    for s in (*SUBJECTS, HELD):
        c.memories.write(agent(), write_cmd(f"{s} likes tea", subject=s))
    manifest = create_backup(c.uow, tmp_path / "backups", log=c.log)
    filed = {}
    for s in SUBJECTS:
        job = c.erasure.request(officer(), s, "gdpr-art17-1a", f"DSR-{s[:5]}")
        filed[job.id] = (s, job.verification_code or "")
    c.erasure.run_pending()
    hold = c.erasure.place_hold(officer(), HELD, "litigation", "CASE-7")
    return manifest, filed, hold.id


def test_after_restoring_a_backup_older_than_three_erasures_all_three_are_listed_and_verify(
    lethe: Container, settings: Settings, tmp_path: Path
) -> None:
    manifest, filed, hold_id = three_erasures_after_a_backup(lethe, tmp_path)
    before = {j.id: j for j in lethe.erasure.list(officer())}
    documents = {j.report_id: lethe.reports.load(j.report_id or "").document for j in before.values()}
    report = restore_backup(lethe.uow, lethe.keyring, manifest, log=lethe.log)
    lethe.close()
    assert sorted(report.reapplied_requests) == sorted(filed) and report.fork_id is not None
    assert report.records_kept["erasure_jobs"] == 3 and report.records_kept["erasure_reports"] == 3

    c = build(settings)  # as after a real restore: a new process
    try:
        pem = c.audit.public_key().pem.encode()
        listed = {j.id: j for j in c.erasure.list(officer())}
        assert set(listed) == set(filed)
        for job_id, (subject, code) in filed.items():
            job = listed[job_id]
            assert job.completed_at is not None and job.status == c.erasure.final_status
            assert [s.step for s in job.steps] == [s.step for s in before[job_id].steps]
            cert = c.reports.get(officer(), job.report_id or "")
            assert cert.document == documents[job.report_id]
            result = verify_certificate(cert.document, pem, subject_id=subject, verification_code=code)
            assert result.ok, result.summary()
            assert c.search.search(agent(), _query(subject)).items == []  # re-applied to the snapshot
        holds = c.erasure.holds(officer(), active=True)
        assert [h.id for h in holds] == [hold_id]
        with pytest.raises(errors.LegalHoldActive):
            c.erasure.request(officer(), HELD, "gdpr-art17-1a", None)

        (fork,) = c.forks.list(officer())
        assert fork.backup_id == report.backup_id and fork.fork_tree_size == manifest_size(manifest)
        assert fork.abandoned_tree_size > fork.fork_tree_size
        assert sorted(r.request_id for r in fork.reapplied) == sorted(filed)
        for doc in documents.values():  # every certificate is anchored to the abandoned branch
            assert json.loads(doc)["checkpoint"]["note"] in fork.abandoned_checkpoints
        assert c.forks.list(officer("t2"))[0].reapplied == []  # another tenant's erasures stay hidden
        # the new branch goes on: it verifies, signs, and runs new erasures to verified certificates
        assert c.audit.verify_log().ok
        c.audit.checkpoint()
        c.memories.write(agent(), write_cmd("erin likes tea", subject="erin@example.com"))
        job = c.erasure.request(officer(), "erin@example.com", "gdpr-art17-1a", None)
        c.erasure.run_pending()
        new = c.reports.load(c.erasure.get(officer(), job.id).report_id or "")
        assert verify_certificate(
            new.document, pem, subject_id="erin@example.com", verification_code=job.verification_code
        ).ok
    finally:
        c.close()


def test_a_second_restore_keeps_the_first_fork_and_the_requests(
    lethe: Container, settings: Settings, tmp_path: Path
) -> None:
    manifest, filed, _ = three_erasures_after_a_backup(lethe, tmp_path)
    restore_backup(lethe.uow, lethe.keyring, manifest, log=lethe.log)
    restore_backup(lethe.uow, lethe.keyring, manifest, log=lethe.log)
    lethe.close()
    c = build(settings)
    try:
        assert {j.id for j in c.erasure.list(officer())} == set(filed)
        assert len(c.forks.all()) == 2
    finally:
        c.close()


def test_lethe_restore_and_lethe_audit_forks_show_the_fork_and_the_reapplied_erasures(
    lethe: Container, settings: Settings, tmp_path: Path
) -> None:
    manifest, filed, _ = three_erasures_after_a_backup(lethe, tmp_path)
    lethe.close()
    restored = run_lethe(settings, "backup", "restore", str(manifest))
    assert restored.returncode == 0, restored.stdout + restored.stderr
    out = json.loads(restored.stdout)
    assert sorted(out["reapplied_requests"]) == sorted(filed) and out["records_kept"]["erasure_jobs"] == 3
    forks = run_lethe(settings, "audit", "forks", "--json")
    assert forks.returncode == 0, forks.stderr
    (fork,) = json.loads(forks.stdout)["items"]
    assert fork["id"] == out["fork_id"] and sorted(r["request_id"] for r in fork["reapplied"]) == sorted(
        filed
    )
    table = run_lethe(settings, "audit", "forks")
    assert table.returncode == 0 and out["backup_id"] in table.stdout
    listed = run_lethe(settings, "erasure", "list", "--tenant", "t1", "--json")
    assert {j["id"] for j in json.loads(listed.stdout)["items"]} == set(filed)


def manifest_size(manifest: Path) -> int:
    return int(json.loads(manifest.read_text())["tree_size"])


def _query(subject: str):  # type: ignore[no-untyped-def]
    from lethe.vault.model import SearchQuery

    return SearchQuery(f"{subject} likes tea", "support", subject_id=subject)


def test_a_request_still_running_at_the_restore_is_done_again_on_the_new_branch_and_certified(
    lethe: Container, settings: Settings, tmp_path: Path
) -> None:
    lethe.memories.write(agent(), write_cmd("alice likes tea", subject=SUBJECTS[0]))
    manifest = create_backup(lethe.uow, tmp_path / "backups", log=lethe.log)
    filed = lethe.erasure.request(officer(), SUBJECTS[0], "gdpr-art17-1a", "DSR-9")  # not run yet
    report = restore_backup(lethe.uow, lethe.keyring, manifest, log=lethe.log)
    lethe.close()
    assert report.requests_restarted == [filed.id]
    c = build(settings)
    try:
        with pytest.raises(errors.SubjectForgotten):  # the erasure fence is up again
            c.memories.write(agent(), write_cmd("alice likes coffee", subject=SUBJECTS[0]))
        c.erasure.run_pending()
        job = c.erasure.get(officer(), filed.id)
        assert job.completed_at is not None, job.last_error
        assert job.received_at == filed.received_at and job.due_at == filed.due_at
        cert = c.reports.load(job.report_id or "").document
        pem = c.audit.public_key().pem.encode()
        result = verify_certificate(
            cert, pem, subject_id=SUBJECTS[0], verification_code=filed.verification_code
        )
        assert result.ok, result.summary()
        assert json.loads(cert)["steps"][0]["leaf_index"] >= manifest_size(manifest)  # on the new branch
    finally:
        c.close()
