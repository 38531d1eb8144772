"""The memory core's claims, proven against real SQLite and real PostgreSQL (same suite)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa
from freezegun import freeze_time

from lethe.vault import errors
from lethe.vault.clock import utcnow
from lethe.vault.erasure.forgetting import tombstone_subject
from lethe.vault.memory import ranking
from lethe.vault.model import Provenance, SearchQuery, SourceType, Status, WriteCommand
from lethe.vault.store import replay
from lethe.vault.store.tables import memories
from tests.conftest import agent, event_count, reviewer, write_cmd


def search(c, caller=None, query="tea coffee", **kw):
    return c.search.search(caller or agent(), SearchQuery(query=query, purpose="support", **kw))


def test_untrusted_write_is_quarantined_until_a_reviewer_promotes_it(lethe):
    trusted = lethe.memories.write(agent(), write_cmd("Alice likes green tea")).item
    untrusted = lethe.memories.write(
        agent(), write_cmd("Alice drinks tea daily", source=SourceType.WEB_PAGE)
    ).item
    assert trusted.status is Status.ACTIVE
    assert untrusted.status is Status.QUARANTINED and untrusted.trust.value == "untrusted"
    assert [i.id for i in search(lethe, query="tea").items] == [trusted.id]
    with pytest.raises(errors.NotFound):
        lethe.memories.get(agent(), untrusted.id)

    promoted = lethe.review.promote(reviewer(), untrusted.id, expected_version=untrusted.version).item
    assert promoted.status is Status.ACTIVE and promoted.trust.value == "verified"
    assert {i.id for i in search(lethe, query="tea").items} == {trusted.id, untrusted.id}
    assert lethe.memories.get(agent(), untrusted.id).content == "Alice drinks tea daily"


def test_a_write_returns_the_memory_exactly_as_a_read_of_it_gives_it(lethe):
    # A create returns the row it inserted without reading it back: it must be that row.
    created = lethe.memories.write(
        agent(), write_cmd("Alice likes green tea", expires_at=utcnow() + timedelta(days=3), confidence=0.3)
    ).item
    assert lethe.memories.get(agent(), created.id) == created
    updated = lethe.memories.write(
        agent(), write_cmd("Alice likes black tea", id=created.id, expected_version=1)
    ).item
    assert lethe.memories.get(agent(), created.id) == updated and updated.created_at == created.created_at
    assert updated.expires_at == created.expires_at  # an update never keeps a memory longer
    # A whole-number confidence, a correction and a memory with its own id: still the row.
    own_id = str(uuid.uuid4())
    corrected = lethe.memories.write(
        agent(), write_cmd("Alice likes oolong", supersedes_id=created.id, confidence=1, id=own_id)
    ).item
    read = lethe.memories.get(agent(), corrected.id)
    assert read == corrected and type(read.confidence) is type(corrected.confidence) is float
    assert (corrected.id, corrected.supersedes_id, corrected.version) == (own_id, created.id, 1)
    # A retry answers with the row as stored, not as the write built it: the two agree.
    retry = write_cmd("Alice likes white tea", key="k-same")
    first = lethe.memories.write(agent(), retry)
    again = lethe.memories.write(agent(), retry)
    assert first.created and not again.created and again.item == first.item


def test_an_agent_cannot_promote_and_a_reviewer_needs_the_current_version(lethe):
    item = lethe.memories.write(agent(), write_cmd(source=SourceType.TOOL_RESULT)).item
    with pytest.raises(errors.OutOfScope):
        lethe.review.promote(agent(), item.id, item.version)
    with pytest.raises(errors.VersionConflict):
        lethe.review.promote(reviewer(), item.id, item.version + 1)
    with pytest.raises(errors.NotFound):
        lethe.review.promote(reviewer("other-tenant"), item.id, item.version)


def test_stale_expected_version_cannot_overwrite_the_current_item(lethe):
    item = lethe.memories.write(agent(), write_cmd("v1 content")).item
    v2 = lethe.memories.write(agent(), write_cmd("v2 content", id=item.id, expected_version=1)).item
    assert v2.version == 2
    before = event_count(lethe)
    with pytest.raises(errors.VersionConflict):
        lethe.memories.write(agent(), write_cmd("stale content", id=item.id, expected_version=1))
    with pytest.raises(errors.VersionConflict):
        lethe.memories.write(agent(), write_cmd("must not exist", id=item.id, expected_version=0))
    assert event_count(lethe) == before
    assert lethe.memories.get(agent(), item.id).content == "v2 content"


def test_correction_supersedes_the_earlier_item_and_history_remains(lethe):
    old = lethe.memories.write(agent(), write_cmd("Alice prefers tea")).item
    new = lethe.memories.write(agent(), write_cmd("Alice prefers coffee now", supersedes_id=old.id)).item
    assert [i.id for i in search(lethe, query="Alice prefers").items] == [new.id]
    history = lethe.memories.get(agent(), old.id)
    assert history.status is Status.SUPERSEDED and history.content == "Alice prefers tea"
    assert new.supersedes_id == old.id
    with pytest.raises(errors.VersionConflict):  # no longer active
        lethe.memories.write(agent(), write_cmd("third", supersedes_id=old.id))
    with pytest.raises(errors.NotFound):  # another agent's memory
        lethe.memories.write(agent(agent_id="a2"), write_cmd("x", supersedes_id=new.id))


def test_forgetting_a_subject_removes_all_and_only_its_memories(lethe):
    alice = [lethe.memories.write(agent(), write_cmd(f"alice tea note {i}")).item for i in range(3)]
    bob = lethe.memories.write(agent(), write_cmd("bob tea note", subject="bob@example.com")).item
    ref = lethe.pseudonyms.subject_ref("t1", "alice@example.com")
    with lethe.uow.acting_for("t1"), lethe.uow.write() as conn:
        ev = tombstone_subject(conn, lethe.log, lethe.keyring, "t1", ref)
    assert ev.memories_forgotten == 3 and ev.index_entries_after == 0
    assert [i.id for i in search(lethe, query="tea note").items] == [bob.id]
    assert search(lethe, query="tea note", subject_id="alice@example.com").items == []
    for item in alice:
        with pytest.raises(errors.NotFound):
            lethe.memories.get(agent(), item.id)
    assert lethe.memories.get(agent(), bob.id).content == "bob tea note"
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        left = (
            conn.execute(sa.select(memories.c.ciphertext).where(memories.c.subject_ref == ref))
            .scalars()
            .all()
        )
    assert left == [None, None, None]
    with pytest.raises(errors.SubjectForgotten):
        lethe.memories.write(agent(), write_cmd("alice again"))


def test_expired_and_over_budget_items_are_not_returned(lethe):
    with freeze_time("2026-01-01T00:00:00Z"):
        short = lethe.memories.write(
            agent(), write_cmd("tea short lived", kind="working_note", ttl_seconds=3600)
        ).item
        long = lethe.memories.write(agent(), write_cmd("tea long lived", kind="fact")).item
        big = lethe.memories.write(agent(), write_cmd("tea " + "x" * 400, kind="fact", confidence=0.1)).item
        assert {i.id for i in search(lethe, query="tea").items} == {short.id, long.id, big.id}
    with freeze_time("2026-01-01T02:00:00Z"):
        result = search(lethe, query="tea", token_budget=20)
        assert [i.id for i in result.items] == [long.id]
        assert result.skipped_over_budget == 1 and result.used_tokens <= 20
        with pytest.raises(errors.NotFound):
            lethe.memories.get(agent(), short.id)
        before = event_count(lethe)
        assert lethe.memories.sweep_expired() == 1
        assert event_count(lethe) == before + 1
        assert lethe.memories.sweep_expired() == 0
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        status = conn.execute(sa.select(memories.c.status).where(memories.c.id == short.id)).scalar_one()
    assert status == "expired"


def test_a_fresh_engine_replays_to_the_identical_state(lethe, settings):
    a = lethe.memories.write(agent(), write_cmd("tea one")).item
    q = lethe.memories.write(agent(), write_cmd("tea two", source=SourceType.TOOL_RESULT)).item
    lethe.review.promote(reviewer(), q.id, q.version)
    lethe.memories.write(agent(), write_cmd("tea three", supersedes_id=a.id))
    lethe.memories.write(agent(), write_cmd("bob", subject="bob@example.com"))
    with lethe.uow.acting_for("t1"), lethe.uow.write() as conn:
        bob = lethe.pseudonyms.subject_ref("t1", "bob@example.com")
        tombstone_subject(conn, lethe.log, lethe.keyring, "t1", bob)
    from lethe.api.bootstrap import build

    fresh = build(settings)
    try:
        report = replay.check(fresh.uow.engine)
        assert report.events == event_count(lethe) and report.identical, report.differences
        # The check can fail: a tampered projection is reported.
        with fresh.uow.maintenance("test: alter rows as their owner"), fresh.uow.write() as conn:
            conn.execute(memories.update().where(memories.c.id == q.id).values(confidence=0.01))
        assert not replay.check(fresh.uow.engine).identical
        replay.rebuild(fresh.uow.engine)
        assert replay.check(fresh.uow.engine).identical
    finally:
        fresh.close()


def test_retried_idempotent_write_returns_the_first_result_and_creates_nothing(lethe):
    cmd = write_cmd(key="retry-1")
    first = lethe.memories.write(agent(), cmd)
    before = event_count(lethe)
    again = lethe.memories.write(agent(), cmd)
    assert first.created and not again.created and again.item.id == first.item.id
    assert event_count(lethe) == before
    with pytest.raises(errors.IdempotencyConflict):
        lethe.memories.write(agent(), dataclasses.replace(cmd, content="a different body"))
    assert event_count(lethe) == before


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"ttl_seconds": 10 * 86400, "kind": "working_note"}, errors.InvalidTtl),
        ({"ttl_seconds": -5}, errors.InvalidTtl),
        ({"expires_at": utcnow() - timedelta(days=1)}, errors.InvalidTtl),
        ({"provenance": None}, errors.MissingProvenance),
        ({"provenance": Provenance(SourceType.USER_STATEMENT, "")}, errors.MissingProvenance),
        ({"provenance": Provenance(SourceType.SUMMARY, "s1")}, errors.MissingProvenance),
        ({"kind": "gossip"}, errors.UnknownKind),
        ({"content": "tea\x00"}, errors.InvalidCommand),
        ({"subject_id": "alice\x00"}, errors.InvalidCommand),
        ({"content": "x" * (16 * 1024 + 1)}, errors.ContentTooLarge),
        ({"confidence": 1.5}, errors.InvalidConfidence),
        ({"confidence": float("nan")}, errors.InvalidConfidence),
        ({"purpose": "Not A Purpose!"}, errors.InvalidPurpose),
        ({"purpose": "billing"}, errors.OutOfScope),
        ({"provenance": Provenance(SourceType.OPERATOR_CONFIG, "cfg")}, errors.PolicyRefused),
    ],
)
def test_every_rejected_command_raises_a_specific_error_and_writes_nothing(lethe, change, error):
    lethe.memories.write(agent(), write_cmd("baseline"))
    before = event_count(lethe)
    base = write_cmd("tea")
    cmd = WriteCommand(**{**dataclasses.asdict(base), "provenance": base.provenance, **change})
    with pytest.raises(error) as info:
        lethe.memories.write(agent(), cmd)
    assert info.value.detail and "tea" not in info.value.detail
    assert event_count(lethe) == before


def test_ranking_blends_overlap_standing_confidence_and_recency_and_shows_its_parts(lethe):
    with freeze_time("2026-01-01T00:00:00Z"):
        old_match = lethe.memories.write(agent(), write_cmd("green tea in the morning", confidence=0.5)).item
    with freeze_time("2026-01-31T00:00:00Z"):
        partial = lethe.memories.write(agent(), write_cmd("green smoothie", confidence=0.5)).item
        none = lethe.memories.write(agent(), write_cmd("coffee at noon", confidence=1.0)).item
        result = search(lethe, query="green tea")
    assert [i.id for i in result.items] == [old_match.id, partial.id, none.id]
    scores = {i.id: i.score for i in result.items}
    assert scores[old_match.id]["lexical"] == 1.0 and scores[partial.id]["lexical"] == 0.5
    assert scores[none.id]["lexical"] == 0.0 and scores[none.id]["confidence"] == 1.0
    assert scores[old_match.id]["recency"] == pytest.approx(0.5, abs=1e-3)  # one half-life old
    assert scores[partial.id]["recency"] == pytest.approx(1.0, abs=1e-3)
    for s in scores.values():
        assert (s["authority"], s["trust"]) == (0.75, 0.75)  # user statements: authority user, trusted
        relevance = ranking.relevance(s["lexical"], s.get("semantic"))  # lexical, or the hybrid blend
        assert s["total"] == pytest.approx(
            0.45 * relevance
            + 0.35 * s["authority"]
            + 0.05 * s["trust"]
            + 0.075 * s["confidence"]
            + 0.075 * s["recency"],
            abs=1e-5,
        )
