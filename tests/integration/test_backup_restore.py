"""Restoring a backup never brings back what an erasure removed, derived memories included."""

from __future__ import annotations

import pytest

from lethe.vault import errors
from lethe.vault.erasure.backup import create_backup, restore_backup
from lethe.vault.model import Provenance, SearchQuery, SourceType
from tests.conftest import agent, officer, reviewer, write_cmd

ALICE, BOB = "alice@example.com", "bob@example.com"


def test_a_restore_does_not_bring_back_a_summary_purged_by_a_later_forget(lethe, tmp_path):
    c = lethe
    tea = c.memories.write(agent(), write_cmd("alice drinks green tea", subject=ALICE)).item
    summary_cmd = write_cmd(
        "the household drinks green tea",
        subject=BOB,
        provenance=Provenance(SourceType.SUMMARY, "summariser", (tea.id,)),
    )
    summary = c.memories.write(agent(), summary_cmd).item
    summary = c.review.promote(reviewer(), summary.id, summary.version).item
    query = SearchQuery("household green tea", "support", subject_id=BOB)
    assert [i.id for i in c.search.search(agent(), query).items] == [summary.id]

    manifest = create_backup(c.uow, tmp_path / "backups", log=c.log)
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    purge = next(s for s in c.erasure.get(officer(), job.id).steps if s.step == "derived_purged")
    assert purge.evidence["derived_ids"] == [summary.id]

    report = restore_backup(c.uow, c.keyring, manifest, log=c.log)
    assert report.reforgotten == 1 and report.derived_retombstoned == 1
    with pytest.raises(errors.NotFound):
        c.memories.get(agent(), summary.id)
    with pytest.raises(errors.NotFound):
        c.memories.get(agent(), tea.id)
    assert c.search.search(agent(), query).items == []


def test_a_restore_keeps_unrelated_summaries(lethe, tmp_path):
    c = lethe
    bob_fact = c.memories.write(agent(), write_cmd("bob rides a bike", subject=BOB)).item
    c.memories.write(agent(), write_cmd("alice drinks tea", subject=ALICE))
    summary_cmd = write_cmd(
        "bob cycles", subject=BOB, provenance=Provenance(SourceType.SUMMARY, "summariser", (bob_fact.id,))
    )
    summary = c.memories.write(agent(), summary_cmd).item
    summary = c.review.promote(reviewer(), summary.id, summary.version).item
    manifest = create_backup(c.uow, tmp_path / "backups", log=c.log)
    c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    report = restore_backup(c.uow, c.keyring, manifest, log=c.log)
    assert report.derived_retombstoned == 0
    assert c.memories.get(agent(), summary.id).content == "bob cycles"
