"""A memory's origin (provenance ``source_ref``, ``turn``, ``tool``, ``url``, ``document_ref``)
is sealed under its subject's key: shown decrypted to the agent, reviewers and the subject's
export, rebuilt by replay, found by its source through a keyed hash only, and gone with the
subject's key (never in clear in an event, a row, an index or a log)."""

from __future__ import annotations

import hashlib
import json
import logging

import pytest
import sqlalchemy as sa

from lethe.keys.filescan import find_in_files
from lethe.vault.erasure.compaction_disk import sqlite_files
from lethe.vault.memory.reindex import IndexCheck
from lethe.vault.memory.review import QueueQuery
from lethe.vault.model import Provenance, SearchQuery, SourceType
from lethe.vault.store import replay
from lethe.vault.store.tables import events, metadata, search_postings
from tests.conftest import agent, officer, reviewer, write_cmd

ALICE, BOB = "alice@example.com", "bob@example.com"
# Canaries: what a profile URL or a document title naming the person looks like.
SOURCE_CANARY = "canary-src-5d1e-alice-profile"
URL_CANARY = "https://social.example/in/canary-url-9b2c-alice"
CANARIES = (SOURCE_CANARY, URL_CANARY, "canary-turn-77aa", "canary-tool-31fe", "canary-doc-c0de")


def full_origin(source_type: SourceType = SourceType.WEB_PAGE) -> Provenance:
    return Provenance(
        source_type,
        SOURCE_CANARY,
        turn="canary-turn-77aa",
        tool="canary-tool-31fe",
        url=URL_CANARY,
        document_ref="canary-doc-c0de",
    )


def written_events(c) -> list:  # type: ignore[no-untyped-def]
    with c.uow.read() as conn:
        return conn.execute(sa.select(events).where(events.c.type == "memory.written")).all()


def every_row_as_text(c) -> str:  # type: ignore[no-untyped-def]
    """Every row of every table of the store, as text (a logical scan: the backend's own files
    need not be readable here)."""
    out = []
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        for table in metadata.sorted_tables:
            for row in conn.execute(sa.select(table)):
                for value in row:
                    out.append(value.decode("latin-1") if isinstance(value, bytes) else str(value))
    return "\n".join(out)


def test_the_origin_round_trips_to_the_agent_the_reviewer_the_export_and_through_replay(lethe):
    c = lethe
    page = c.memories.write(
        agent(), write_cmd("Alice works at Example Corp", subject=ALICE, provenance=full_origin())
    )
    assert page.item.provenance == full_origin() and page.item.status == "quarantined"
    said = c.memories.write(
        agent(),
        write_cmd("Alice prefers tea", subject=ALICE, provenance=full_origin(SourceType.USER_STATEMENT)),
    ).item
    assert c.memories.get(agent(), said.id).provenance == full_origin(SourceType.USER_STATEMENT)
    found = c.search.search(agent(), SearchQuery("tea", "support")).items
    assert [i.provenance for i in found] == [full_origin(SourceType.USER_STATEMENT)]
    [queued] = c.review.queue(reviewer(), QueueQuery()).items
    assert queued.id == page.item.id and queued.provenance == full_origin()
    assert c.review.get(reviewer(), page.item.id).provenance == full_origin()
    exported = json.loads(c.subject_access.export(officer(), ALICE).document)
    assert sorted(i["provenance"]["url"] for i in exported["items"]) == [URL_CANARY, URL_CANARY]
    assert {i["provenance"]["document_ref"] for i in exported["items"]} == {"canary-doc-c0de"}

    assert replay.check(c.uow.engine, index=IndexCheck(c.keyring, c.pseudonyms)).differences == []
    replay.rebuild(c.uow.engine)
    assert c.memories.get(agent(), said.id).provenance == full_origin(SourceType.USER_STATEMENT)
    assert c.review.get(reviewer(), page.item.id).provenance == full_origin()


def test_the_write_event_commits_to_the_origin_by_a_keyed_digest_and_holds_none_of_it(lethe):
    c = lethe
    item = c.memories.write(
        agent(), write_cmd("Alice works at Example Corp", subject=ALICE, provenance=full_origin())
    )
    [event] = written_events(c)
    payload = json.loads(event.payload)
    for canary in CANARIES:
        assert canary not in event.payload
    assert payload["provenance"]["source_type"] == "web_page" and "source_ref" not in payload["provenance"]
    digest = payload["provenance"]["origin_hmac"]
    origin = json.dumps(full_origin().origin(), sort_keys=True, separators=(",", ":")).encode()
    assert len(digest) == 64 and digest != hashlib.sha256(origin).hexdigest()  # keyed, not guessable
    # Another subject's identical origin commits to another digest: the key is the subject's.
    c.memories.write(agent(), write_cmd("Bob works at Example Corp", subject=BOB, provenance=full_origin()))
    other = json.loads(written_events(c)[-1].payload)["provenance"]["origin_hmac"]
    assert other != digest
    assert item.item.provenance.url == URL_CANARY  # it is sealed, not dropped


def test_retraction_by_source_finds_its_memories_through_the_keyed_hash_only(lethe):
    c = lethe
    ours = [
        c.memories.write(agent(), write_cmd(f"claim {i}", subject=s, provenance=full_origin())).item
        for i, s in enumerate((ALICE, BOB))
    ]
    other = Provenance(SourceType.WEB_PAGE, SOURCE_CANARY + "-2", url=URL_CANARY)
    kept = c.memories.write(agent(), write_cmd("another page", subject=ALICE, provenance=other)).item
    theirs = c.memories.write(agent("t2"), write_cmd("claim", subject=ALICE, provenance=full_origin())).item
    source_hash = c.pseudonyms.source_hash("t1", SOURCE_CANARY)
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        posted = conn.execute(
            sa.select(search_postings.c.memory_id).where(search_postings.c.term_hash == source_hash)
        ).scalars()
        assert sorted(posted) == sorted(i.id for i in ours)
    assert SOURCE_CANARY not in every_row_as_text(c)  # the value itself is in no row, index or event

    result = c.retractions.retract(reviewer(), source_ref=SOURCE_CANARY, reason="the site was compromised")

    assert result.memory_ids == sorted(i.id for i in ours)
    assert c.review.get(reviewer(), kept.id).id == kept.id  # a source sharing a prefix is untouched
    assert c.review.get(reviewer("t2"), theirs.id).id == theirs.id  # another tenant's: its own key


def test_a_memory_written_before_origins_were_sealed_is_still_retracted_by_its_clear_source(lethe):
    c = lethe
    old = c.memories.write(agent(), write_cmd("claim", subject=ALICE, provenance=full_origin())).item
    with (
        c.uow.maintenance("test: alter rows as their owner"),
        c.uow.write() as conn,
    ):  # as a row written before this change holds it, without the posting
        conn.execute(
            sa.text("UPDATE memories SET provenance = :p WHERE id = :id"),
            {
                "p": json.dumps({"source_ref": "legacy-ref", "source_type": "web_page", "sources": []}),
                "id": old.id,
            },
        )
        conn.execute(search_postings.delete().where(search_postings.c.memory_id == old.id))
    assert c.retractions.retract(
        reviewer(), source_ref="legacy-ref", reason="old", dry_run=True
    ).memory_ids == [old.id]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_after_a_forget_the_subjects_source_and_url_are_in_no_file_wal_or_log(lethe, caplog):
    caplog.set_level(logging.DEBUG)
    c = lethe
    for i in range(3):
        c.memories.write(agent(), write_cmd(f"Alice note {i}", subject=ALICE, provenance=full_origin()))
    bob = c.memories.write(agent(), write_cmd("Bob note", subject=BOB)).item
    files = sqlite_files(c.uow.engine)
    job = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    assert c.erasure.get(officer(), job.id).status == "reported"

    wanted = [t.encode() for t in CANARIES]
    hits = find_in_files(sqlite_files(c.uow.engine), wanted)
    assert {CANARIES[i] for found in hits.values() for i in found} == set()
    assert not any(t in caplog.text for t in CANARIES)
    assert c.memories.get(agent(), bob.id).content == "Bob note"
    # The scan is able to fail: the same canaries written in clear are found in the same files.
    with c.uow.write() as conn:
        conn.execute(sa.text("CREATE TABLE scratch (x TEXT)"))
        conn.execute(sa.text("INSERT INTO scratch VALUES (:a), (:b)"), {"a": SOURCE_CANARY, "b": URL_CANARY})
    hits = find_in_files(files, wanted)
    assert {CANARIES[i] for found in hits.values() for i in found} == {SOURCE_CANARY, URL_CANARY}


def test_after_a_forget_no_row_of_any_table_holds_the_subjects_source_or_url(lethe, caplog):
    caplog.set_level(logging.DEBUG)
    c = lethe
    c.memories.write(agent(), write_cmd("Alice note", subject=ALICE, provenance=full_origin()))
    c.memories.write(
        agent(), write_cmd("Alice said", subject=ALICE, provenance=full_origin(SourceType.USER_STATEMENT))
    )
    c.erasure.request(officer(), ALICE, "gdpr-art17-1a", None)
    c.erasure.run_pending()
    rows = every_row_as_text(c)
    assert not any(t in rows for t in CANARIES)
    assert not any(t in caplog.text for t in CANARIES)
    # Able to fail: the content's own words are found where this scan looks once stored in clear.
    with (
        c.uow.maintenance("test: a scratch table, which only the tables' owner may create"),
        c.uow.write() as conn,
    ):
        conn.execute(sa.text("CREATE TABLE scratch (x TEXT)"))
        conn.execute(sa.text("INSERT INTO scratch VALUES (:x)"), {"x": URL_CANARY})
    metadata_scratch = sa.Table("scratch", sa.MetaData(), sa.Column("x", sa.Text))
    with c.uow.read() as conn:
        assert URL_CANARY in [r.x for r in conn.execute(sa.select(metadata_scratch))]
