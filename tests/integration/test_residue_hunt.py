"""The residue hunt: other subjects' memories naming the forgotten person (SQLite and PostgreSQL).

An officer files a forget of Ana with identifiers of her ("Ana García", her e-mail, her
phone). Another subject's memory "Ana García's card ends 4471" is found through the keyed
term index and retracted (``retract``) or queued for a reviewer (``review``), and the
certificate's counts say so; memories that do not name her (one with "García" but not
"Ana", one with "Ana" but not "García") are untouched. The identifiers are kept only as the
index's keyed term hashes, for the life of the request, and never appear in clear in the
database (rows; SQLite file and WAL), the events, the certificate or the logs.
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from html import unescape
from pathlib import Path

import pytest
import sqlalchemy as sa

from lethe.api.bootstrap import Container
from lethe.api.report_formats import ReportFormat, render_report
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.erasure import residue
from lethe.vault.erasure.steps import StepFailed
from lethe.vault.errors import InvalidCommand
from lethe.vault.memory.review import QueueQuery
from lethe.vault.model import SearchQuery, SourceType, Status
from lethe.vault.oversight.certificate import sign_certificate
from lethe.vault.store import replay
from lethe.vault.store.tables import erasure_identifiers, metadata
from tests.conftest import agent, officer, reviewer, write_cmd
from tests.integration.test_result_classes import pdf_text

ANA = "ana.garcia@example.com"
IDENTIFIERS = ["Ana García", "ana.garcia@example.com", "+34 600 123 456"]
# what must never be stored or logged in clear (NFC and lower-cased spellings included)
CLEAR = ["Ana García", "ana garcía", "García", "garcía", "ana.garcia", "600 123 456", "600123456"]
REFERENCE = "DSR-RESIDUE-77"  # stored in clear: the scans' positive control

INSPECT = "test: inspect every tenant's rows"  # behind PostgreSQL's tenant wall otherwise


def seed(c: Container) -> dict[str, str]:
    """Ana's own memory, another subject's that names her, and two that do not."""
    ids = {}
    for name, subject, content in (
        ("own", ANA, "Prefers e-mail contact in the mornings"),
        ("names_her", "customer-42", "Ana García's card ends 4471, asked for a refund"),
        ("surname_only", "customer-43", "Bob García bought a bike last spring"),
        ("first_name_only", "customer-44", "Ana Lopez called about her parcel"),
    ):
        ids[name] = c.memories.write(agent(), write_cmd(content, subject=subject)).item.id
    return ids


def forget(c: Container, action: str, identifiers: list[str] = IDENTIFIERS) -> str:
    job = c.erasure.request(
        officer(), ANA, "gdpr-art17-1a", REFERENCE, identifiers=identifiers, residue_action=action
    )
    c.erasure.run_pending()
    return job.id


def status(c: Container, memory_id: str) -> Status:
    with c.uow.maintenance(INSPECT), c.uow.read() as conn:
        row = conn.execute(sa.text("SELECT status FROM memories WHERE id = :id"), {"id": memory_id}).one()
    return Status(row.status)


def found_by_search(c: Container, query: str) -> set[str]:
    return {i.id for i in c.search.search(agent(), SearchQuery(query, "support")).items}


def certificate(c: Container, job_id: str) -> tuple[dict, bytes]:
    job = c.erasure.get(officer(), job_id)
    assert job.report_id is not None, job.last_error
    report = c.reports.load(job.report_id)
    return report.parsed(), report.document


def identifier_rows(c: Container, job_id: str) -> list[str]:
    t = erasure_identifiers
    with c.uow.maintenance(INSPECT), c.uow.read() as conn:
        return list(conn.execute(sa.select(t.c.term_hashes).where(t.c.job_id == job_id)).scalars())


def test_retract_chosen_retracts_the_memory_naming_her_and_the_certificate_counts_it(
    lethe: Container,
) -> None:
    ids = seed(lethe)
    assert ids["names_her"] in found_by_search(lethe, "card refund")  # before: retrievable
    job_id = forget(lethe, residue.RETRACT)

    assert status(lethe, ids["names_her"]) is Status.RETRACTED
    assert ids["names_her"] not in found_by_search(lethe, "card refund")
    # controls: a memory with only her surname, or only her first name, does not name her
    assert status(lethe, ids["surname_only"]) is Status.ACTIVE
    assert status(lethe, ids["first_name_only"]) is Status.ACTIVE
    assert ids["surname_only"] in found_by_search(lethe, "bike")
    assert ids["first_name_only"] in found_by_search(lethe, "parcel")

    doc, raw = certificate(lethe, job_id)
    counts = doc["residue"]
    assert (counts["residue"], counts["found"], counts["retracted"], counts["kept"]) == ("retract", 1, 1, [])
    assert counts["pending_review"] == 0 and counts["identifiers"] == 3
    hunted = next(s for s in doc["steps"] if s["name"] == "residue_hunted")
    assert hunted["evidence"]["memory_ids"] == [ids["names_her"]]
    checked = verify_certificate(raw, lethe.audit.public_key().pem.encode())
    assert checked.ok, checked.summary()
    assert next(c for c in checked.checks if c.name == "residue").ok
    # the retraction is the ordinary one: its ledger entry names the request, not her
    with lethe.uow.maintenance(INSPECT), lethe.uow.read() as conn:
        reasons = list(conn.execute(sa.text("SELECT reason FROM retractions")).scalars())
    assert reasons == [f"residue of erasure request {job_id}"]
    assert identifier_rows(lethe, job_id) == []  # the request ended: its identifiers went with it


def test_review_chosen_queues_the_memory_and_the_certificate_shows_it_pending(lethe: Container) -> None:
    ids = seed(lethe)
    job_id = forget(lethe, residue.REVIEW)

    assert status(lethe, ids["names_her"]) is Status.QUARANTINED  # out of retrieval, awaiting a person
    assert ids["names_her"] not in found_by_search(lethe, "card refund")
    assert status(lethe, ids["surname_only"]) is Status.ACTIVE  # control
    queue = lethe.review.queue(reviewer(), QueueQuery())
    assert [i.id for i in queue.items] == [ids["names_her"]]

    doc, raw = certificate(lethe, job_id)
    counts = doc["residue"]
    assert (counts["found"], counts["queued_for_review"], counts["pending_review"]) == (1, 1, 1)
    assert (counts["retracted"], counts["kept"]) == (0, [])
    assert verify_certificate(raw, lethe.audit.public_key().pem.encode()).ok


@contextmanager
def certificate_held_back(c: Container) -> Iterator[None]:
    """The certificate step waits (as if the runner had not reached it) until the block ends."""
    i = next(i for i, s in enumerate(c.erasure.steps) if s.name == "reported")
    original = c.erasure.steps[i]

    def later(_ctx: object, _conn: object) -> dict:
        raise StepFailed("held back by the test until a reviewer decides")

    c.erasure.steps[i] = replace(original, run=later)
    try:
        yield
    finally:
        c.erasure.steps[i] = original


def test_a_reviewer_keeps_a_queued_memory_only_with_a_reason_and_the_certificate_states_it(
    lethe: Container,
) -> None:
    ids = seed(lethe)
    with certificate_held_back(lethe):
        job_id = forget(lethe, residue.REVIEW)
    version = lethe.review.get(reviewer(), ids["names_her"]).version

    with pytest.raises(InvalidCommand, match="needs a reason"):  # refused: keeping it needs a reason
        lethe.review.promote(reviewer(), ids["names_her"], version)
    assert status(lethe, ids["names_her"]) is Status.QUARANTINED
    # control: an ordinary quarantined memory is still promoted without one
    other = lethe.memories.write(
        agent(), write_cmd("Prefers tea", subject="customer-45", source=SourceType.WEB_PAGE)
    ).item
    assert other.status == Status.QUARANTINED
    assert lethe.review.promote(reviewer(), other.id, other.version).item.status == Status.ACTIVE

    why = "Ticket 881: the card note is the customer's own record, needed for the chargeback"
    lethe.review.promote(reviewer(), ids["names_her"], version, reason=why)
    assert status(lethe, ids["names_her"]) is Status.ACTIVE

    lethe.erasure.run_pending()
    doc, raw = certificate(lethe, job_id)
    counts = doc["residue"]
    assert counts["kept"] == [{"memory_id": ids["names_her"], "reason": why}]
    assert (counts["found"], counts["retracted"], counts["pending_review"]) == (1, 0, 0)
    assert verify_certificate(raw, lethe.audit.public_key().pem.encode()).ok


def test_a_replay_of_the_log_rebuilds_the_queued_and_retracted_memories_as_they_are(lethe: Container) -> None:
    ids = seed(lethe)
    forget(lethe, residue.REVIEW)
    lethe.erasure.request(
        officer(), "customer-44", "voluntary", None, identifiers=["Bob"], residue_action="retract"
    )
    lethe.erasure.run_pending()
    assert status(lethe, ids["names_her"]) is Status.QUARANTINED  # control: both outcomes are present
    assert status(lethe, ids["surname_only"]) is Status.RETRACTED
    assert replay.check(lethe.uow.engine).differences == []


def test_the_hunt_uses_the_keyed_index_terms_and_they_live_only_as_long_as_the_request(
    lethe: Container,
) -> None:
    seed(lethe)
    with certificate_held_back(lethe):
        job_id = forget(lethe, residue.REVIEW)
        held = identifier_rows(lethe, job_id)
    # the index's own keyed term hashes, so the lookup matches what the index posts
    expected = {" ".join(sorted(lethe.pseudonyms.term_hashes("t1", i))) for i in IDENTIFIERS}
    assert set(held) == expected
    assert all(len(h) == 16 and int(h, 16) >= 0 for row in held for h in row.split())
    lethe.erasure.run_pending()
    assert lethe.erasure.get(officer(), job_id).completed_at is not None
    assert identifier_rows(lethe, job_id) == []


def _rows_text(c: Container) -> str:
    """Every row of every table, as text (the logical scan, on both backends)."""
    out = []
    with c.uow.maintenance(INSPECT), c.uow.read() as conn:
        for table in metadata.sorted_tables:
            for row in conn.execute(sa.select(table)).all():
                out.append(" ".join(v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in row))
    return "\n".join(out)


def _files_bytes(settings_dir: Path) -> bytes:
    """The SQLite database and WAL bytes, read by another process (never a plain open of a live
    SQLite file in the process holding connections to it)."""
    blobs = b""
    for path in sorted(settings_dir.glob("lethe.sqlite3*")):
        blobs += subprocess.run(["cat", str(path)], check=True, capture_output=True).stdout
    return blobs


@pytest.mark.parametrize("action", [residue.RETRACT, residue.REVIEW])
def test_the_identifiers_never_appear_in_clear_in_the_store_events_certificate_or_logs(
    lethe: Container, action: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seed(lethe)
    with certificate_held_back(lethe):
        job_id = forget(lethe, action)
        live_rows = _rows_text(lethe)  # while the request lives and holds its identifiers
    lethe.erasure.run_pending()
    _doc, raw = certificate(lethe, job_id)
    rows = live_rows + _rows_text(lethe)
    files = _files_bytes(lethe.settings.data_dir) if lethe.settings.database_url is None else b""
    logs = "\n".join(r.getMessage() + " " + json.dumps(r.__dict__, default=str) for r in caplog.records)

    assert REFERENCE in rows and REFERENCE.encode() in raw  # controls: the scans see clear text
    if lethe.settings.database_url is None:  # SQLite: the file and WAL bytes were read
        assert REFERENCE.encode() in files
    assert caplog.records  # the runner logged its steps
    for text in CLEAR:
        for form in (text, text.lower()):
            assert form not in rows, form
            assert form.encode() not in files, form
            assert form.encode() not in raw, form
            assert form not in logs, form


def test_validation_refuses_too_many_empty_and_too_long_identifiers(lethe: Container) -> None:
    def file(identifiers: list[str], action: str | None = "retract") -> None:
        lethe.erasure.request(
            officer(),
            "someone@example.com",
            "gdpr-art17-1a",
            None,
            identifiers=identifiers,
            residue_action=action,
        )

    secret = "Zoë Q. Secretname"
    cases = {
        "at most 20": [f"{secret} {n}" for n in range(21)],
        r"identifiers\[1\] is empty": [secret, "   "],
        r"identifiers\[0\] is longer than 200": [secret + "x" * 200],
        "no word of two or more": ["a"],
    }
    for message, identifiers in cases.items():
        with pytest.raises(InvalidCommand, match=message) as refused:
            file(identifiers)
        assert "Secretname" not in str(refused.value)  # the message names the position only
    with pytest.raises(InvalidCommand, match="residue must be one of"):
        file([secret], "delete")
    with pytest.raises(InvalidCommand, match="residue needs identifiers"):
        file([], "retract")
    assert lethe.erasure.list(officer()) == []  # nothing was filed by any refusal
    # positive control: 20 identifiers of 200 characters are accepted
    file([f"{n:03d} " + "y" * 196 for n in range(20)])
    assert len(lethe.erasure.list(officer())) == 1


def test_a_filing_without_identifiers_has_no_hunt_and_no_residue_counts(lethe: Container) -> None:
    ids = seed(lethe)
    job = lethe.erasure.request(officer(), ANA, "gdpr-art17-1a", REFERENCE)
    lethe.erasure.run_pending()
    doc, raw = certificate(lethe, job.id)
    assert "residue" not in doc and all(s["name"] != "residue_hunted" for s in doc["steps"])
    assert status(lethe, ids["names_her"]) is Status.ACTIVE  # nothing hunted without identifiers
    assert verify_certificate(raw, lethe.audit.public_key().pem.encode()).ok


def test_counts_that_contradict_the_hunts_evidence_fail_the_verifiers_residue_check(lethe: Container) -> None:
    seed(lethe)
    job_id = forget(lethe, residue.REVIEW)
    doc, raw = certificate(lethe, job_id)
    pem = lethe.audit.public_key().pem.encode()
    assert verify_certificate(raw, pem).ok  # control: as issued, it verifies
    # a finding dropped; a pending memory counted as retracted with no decision behind it;
    # the counts removed while the hunt's step stays
    claims_done = {**doc["residue"], "pending_review": 0, "retracted": 1}
    hidden = {k: v for k, v in doc.items() if k != "residue"}
    for forged in (
        {**doc, "residue": {**doc["residue"], "found": 0}},
        {**doc, "residue": claims_done},
        hidden,
    ):
        resigned = sign_certificate(forged, lethe.reports.signer, lethe.audit.origin)
        checked = verify_certificate(resigned, pem)
        assert checked.failed == ["residue"], checked.summary()


def test_the_html_and_pdf_certificate_state_the_counts_in_words_pending_as_pending(lethe: Container) -> None:
    seed(lethe)
    job_id = forget(lethe, residue.REVIEW)
    report = lethe.reports.load(lethe.erasure.get(officer(), job_id).report_id or "")
    pem = lethe.audit.public_key().pem.encode()
    html = unescape(" ".join(render_report(report, pem, ReportFormat.HTML).decode().split()))
    pdf = pdf_text(render_report(report, pem, ReportFormat.PDF))
    said = "1 found: 0 retracted, 0 kept with a reviewer's reason, 1 awaiting a reviewer's decision"
    assert "memories naming them" in html and said in html
    assert said in pdf
    assert "Looked up in" in html  # the step's evidence as labelled rows
    for text in CLEAR:
        assert text not in html and text not in pdf
