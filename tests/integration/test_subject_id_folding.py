"""Subject ids lose their default-ignorable code points: "alice\u200b-x" is "alice-x"."""

from __future__ import annotations

import unicodedata

import pytest

from lethe.vault import errors
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.custody.subject_aliases import rederive
from lethe.vault.memory.validation import fold_subject_id
from lethe.vault.model import SearchQuery
from tests.conftest import agent, officer, write_cmd

PLAIN = "alice-x"
INVISIBLE = (
    "alice\u200b-x",  # zero-width space
    "alice\u200d-x",  # zero-width joiner
    "alice\u200c-x",  # zero-width non-joiner
    "ali\u00adce-x",  # soft hyphen
    "alice-x\ufe0f",  # variation selector
    "\ufeffalice-x",  # byte order mark
    "alice-\U000e0078x",  # tag character
)


@pytest.mark.parametrize("spelling", INVISIBLE)
def test_each_invisible_spelling_folds_to_the_plain_id(spelling):
    assert spelling != PLAIN and fold_subject_id(spelling) == PLAIN


def test_folding_lets_a_split_accent_compose():
    assert fold_subject_id("Jose\u200b\u0301") == unicodedata.normalize("NFC", "José")


def test_visible_characters_are_kept():
    """Control: hyphens, spaces, case and non-Latin letters still tell ids apart."""
    for other in ("alice\u2010x", "alice x", "Alice-x", "alicex", "алиса-x"):
        assert fold_subject_id(other) != PLAIN


def test_one_subject_for_write_and_read(lethe):
    c = lethe
    item = c.memories.write(agent(), write_cmd("likes jazz", subject="alice\u200b-x")).item
    assert item.subject_id == PLAIN
    found = c.search.search(agent(), SearchQuery("jazz", "support", subject_id=PLAIN)).items
    assert [i.id for i in found] == [item.id]
    other = c.memories.write(agent(), write_cmd("likes jazz too", subject="alice-y")).item
    found = c.search.search(agent(), SearchQuery("jazz", "support", subject_id="alice\u2060-x")).items
    assert other.id not in [i.id for i in found]  # control: a different id stays separate


def test_an_id_of_only_invisible_characters_is_refused(lethe):
    with pytest.raises(errors.InvalidCommand):
        lethe.memories.write(agent(), write_cmd("nobody", subject="\u200b\u200d"))


def test_forgetting_the_plain_spelling_reaches_an_invisible_one(lethe):
    c = lethe
    item = c.memories.write(agent(), write_cmd("likes jazz", subject="alice\u200d-x")).item
    kept = c.memories.write(agent(), write_cmd("likes blues", subject="alice-y")).item
    c.erasure.request(officer(), PLAIN, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    with pytest.raises(errors.NotFound):
        c.memories.get(agent(), item.id)
    assert c.memories.get(agent(), kept.id).id == kept.id
    with pytest.raises(errors.SubjectForgotten):
        c.memories.write(agent(), write_cmd("after", subject="alice\u200b-x"))


def _write_as_before_folding(c, monkeypatch, content, subject):
    """Write as a release before 0028 did: NFC only, invisible characters kept."""
    with monkeypatch.context() as m:
        m.setattr("lethe.vault.memory.service.normal_subject_id", lambda s: unicodedata.normalize("NFC", s))
        return c.memories.write(agent(), write_cmd(content, subject=subject)).item


def test_a_memory_written_before_the_upgrade_is_forgotten_by_the_plain_spelling(lethe, monkeypatch):
    c = lethe
    old = _write_as_before_folding(c, monkeypatch, "old memory", "alice\u200b-x")
    kept = _write_as_before_folding(c, monkeypatch, "someone else", "alice-y")
    assert old.subject_ref != c.pseudonyms.subject_ref("t1", PLAIN)  # keyed apart, as before
    assert rederive(c.uow, c.keyring, c.pseudonyms) == 1  # the step `lethe migrate` runs
    assert rederive(c.uow, c.keyring, c.pseudonyms) == 0  # and again: nothing new
    new = c.memories.write(agent(), write_cmd("new memory", subject="alice\u200b-x")).item
    primary = c.erasure.request(officer(), PLAIN, "gdpr-art17-1a", "case-61")
    c.erasure.run_pending()
    jobs = c.erasure.list(officer())
    assert len(jobs) == 2 and all(j.completed_at is not None for j in jobs)
    linked = next(j for j in jobs if j.id != primary.id)
    assert linked.reference == f"legacy spelling of request {primary.id}"
    for memory in (old, new):
        with pytest.raises(errors.NotFound):
            c.memories.get(agent(), memory.id)
    assert c.memories.get(agent(), kept.id).id == kept.id  # control: another subject stays


def test_without_the_rederivation_the_old_memory_is_missed(lethe, monkeypatch):
    """Why the migration step exists: the folded request alone does not reach the old ref."""
    c = lethe
    old = _write_as_before_folding(c, monkeypatch, "old memory", "alice\u200b-x")
    c.erasure.request(officer(), PLAIN, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    assert c.memories.get(agent(), old.id).id == old.id


def test_a_subject_export_of_the_plain_spelling_includes_the_old_memory(lethe, monkeypatch):
    c = lethe
    old = _write_as_before_folding(c, monkeypatch, "old memory", "alice\u200b-x")
    rederive(c.uow, c.keyring, c.pseudonyms)
    export = c.subject_access.export(officer(), PLAIN)
    assert export.items == 1 and old.id in export.document.decode()


def test_the_certificate_confirms_the_subject_in_either_spelling(lethe):
    """The commitment is over the folded id; the verifier folds what it is given."""
    from tests.integration.test_certificate import forget, pem

    job, report = forget(lethe, subject="alice\u200b-x")
    code = job.verification_code
    for spelling in ("alice-x", "alice\u200b-x", "ali\u00adce-x"):
        assert verify_certificate(report.document, pem(lethe), subject_id=spelling, verification_code=code).ok
    other = verify_certificate(report.document, pem(lethe), subject_id="alice-y", verification_code=code)
    assert "subject_commitment" in other.failed  # control: another id is not confirmed
