"""Subject ids are NFC-normalised before anything touches them; the fence rises with the request."""

from __future__ import annotations

import unicodedata

import pytest

from lethe.vault import errors
from lethe.vault.audit.certificate_format import keyed_subject_commitment
from lethe.vault.model import SearchQuery
from tests.conftest import agent, officer, write_cmd

NFC = unicodedata.normalize("NFC", "José Ñúñez")
NFD = unicodedata.normalize("NFD", "José Ñúñez")


def test_the_two_spellings_differ_as_bytes():
    assert NFC != NFD and NFC.encode() != NFD.encode()


def test_memories_written_in_nfd_are_forgotten_by_an_nfc_request(lethe):
    c = lethe
    item = c.memories.write(agent(), write_cmd("prefers window seats", subject=NFD)).item
    assert item.subject_id == NFC  # stored (inside the envelope) in its normal form
    job = c.erasure.request(officer(), NFC, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    job = c.erasure.get(officer(), job.id)
    tomb = next(s for s in job.steps if s.step == "tombstoned")
    assert tomb.evidence["memories_forgotten"] == 1
    with pytest.raises(errors.NotFound):
        c.memories.get(agent(), item.id)


def test_search_holds_and_reinstatement_use_the_normal_form(lethe):
    c = lethe
    c.memories.write(agent(), write_cmd("prefers window seats", subject=NFC))
    found = c.search.search(agent(), SearchQuery("window seats", "support", subject_id=NFD)).items
    assert [i.subject_id for i in found] == [NFC]
    c.erasure.place_hold(officer(), NFD, "litigation")
    with pytest.raises(errors.LegalHoldActive):
        c.erasure.request(officer(), NFC, "gdpr-art17-1a", None)


def test_a_certificate_commitment_matches_either_spelling(lethe):
    c = lethe
    c.memories.write(agent(), write_cmd("likes jazz", subject=NFC))
    job = c.erasure.request(officer(), NFD, "gdpr-art17-1a", None)
    for spelling in (NFC, NFD):
        assert keyed_subject_commitment(job.verification_code, "t1", spelling) == job.subject_commitment


def test_a_legacy_unnormalised_subject_is_covered_by_a_linked_request(lethe, monkeypatch):
    """Stores written before normalisation keyed subjects by the bytes they were sent in."""
    c = lethe
    legacy = c.pseudonyms.unnormalised_subject_ref
    with monkeypatch.context() as m:  # write as the earlier release did
        m.setattr("lethe.vault.memory.service.normal_subject_id", lambda s: s)
        m.setattr(c.pseudonyms, "subject_ref", legacy)
        old = c.memories.write(agent(), write_cmd("old memory", subject=NFD)).item
    assert old.subject_ref == legacy("t1", NFD) != c.pseudonyms.subject_ref("t1", NFD)
    new = c.memories.write(agent(), write_cmd("new memory", subject=NFD)).item
    primary = c.erasure.request(officer(), NFC, "gdpr-art17-1a", "case-9")
    c.erasure.run_pending()
    jobs = c.erasure.list(officer())
    assert len(jobs) == 2 and all(j.completed_at is not None for j in jobs)
    linked = next(j for j in jobs if j.id != primary.id)
    assert linked.reference == f"legacy spelling of request {primary.id}"
    for memory in (old, new):
        with pytest.raises(errors.NotFound):
            c.memories.get(agent(), memory.id)


def test_no_linked_request_when_no_legacy_data_exists(lethe):
    c = lethe
    c.memories.write(agent(), write_cmd("a memory", subject=NFC))
    c.erasure.request(officer(), NFD, "gdpr-art17-1a", None)
    assert len(c.erasure.list(officer())) == 1


def test_writes_are_refused_from_the_moment_an_erasure_is_accepted(lethe):
    """The fence rises in the transaction that records ``received``, before the job runs."""
    c = lethe
    c.memories.write(agent(), write_cmd("first", subject="fenced@example.com"))
    c.erasure.request(officer(), "fenced@example.com", "gdpr-art17-1a", None)  # not run yet
    with pytest.raises(errors.SubjectForgotten):
        c.memories.write(agent(), write_cmd("written after the request", subject="fenced@example.com"))
