"""The review queue and the decisions on it (issue 12, item 1), on real SQLite and PostgreSQL.

Reviewers list their tenant's quarantine (filters, cursor pages), read each item decrypted
with its provenance, and promote or reject it; a decision sent again under its idempotency
key returns the first result, even after the memory moved on.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import sqlalchemy as sa
from freezegun import freeze_time

from lethe.vault import errors
from lethe.vault.memory.review import QueueQuery
from lethe.vault.memory.service import MemoryService
from lethe.vault.model import Authority, Caller, Provenance, Role, SearchQuery, SourceType, Status, Trust
from lethe.vault.policy import DEFAULT_POLICY, Standing
from lethe.vault.store import replay
from lethe.vault.store.tables import memories
from tests.conftest import agent, event_count, page_url, reviewer, write_cmd

WEB, TOOL = SourceType.WEB_PAGE, SourceType.TOOL_RESULT


def quarantine(c, content="tea from the web", who=None, source=WEB, ref="https://example.org/a", **kw):  # type: ignore[no-untyped-def]
    """A quarantined memory written by ``who`` (agent a1 by default)."""
    cmd = write_cmd(content, provenance=Provenance(source, ref, url=page_url(source)), **kw)
    item = c.memories.write(who or agent(), cmd).item
    assert item.status is Status.QUARANTINED
    return item


def queue_ids(c, caller=None, **kw) -> list[str]:  # type: ignore[no-untyped-def]
    return [i.id for i in c.review.queue(caller or reviewer(), QueueQuery(**kw)).items]


def test_the_queue_lists_the_tenants_quarantine_decrypted_with_provenance(lethe):
    q = quarantine(lethe, "Alice works at Example Corp", kind="fact")
    lethe.memories.write(agent(), write_cmd("Alice prefers tea"))  # active: not in the queue
    quarantine(lethe, "another tenant's page", who=agent("t2"))
    [item] = lethe.review.queue(reviewer(), QueueQuery()).items
    assert item.id == q.id and item.content == "Alice works at Example Corp"
    assert item.subject_id == "alice@example.com" and item.status is Status.QUARANTINED
    assert item.provenance == Provenance(WEB, "https://example.org/a", url=page_url(WEB))
    assert item.agent_id == "a1" and item.authority is Authority.EXTERNAL
    assert lethe.review.get(reviewer(), q.id).content == "Alice works at Example Corp"
    assert queue_ids(lethe, reviewer("t2")) != [q.id]


def test_a_reviewer_reads_only_quarantined_items_of_its_tenant(lethe):
    q = quarantine(lethe)
    active = lethe.memories.write(agent(), write_cmd("Alice prefers tea")).item
    for caller, memory in ((reviewer("t2"), q.id), (reviewer(), active.id), (reviewer(), "no-such-id")):
        with pytest.raises(errors.NotFound):
            lethe.review.get(caller, memory)
    with pytest.raises(errors.OutOfScope):
        lethe.review.get(agent(), q.id)
    with pytest.raises(errors.OutOfScope):
        lethe.review.queue(agent(), QueueQuery())


def test_the_queue_filters_by_agent_purpose_source_type_and_age(lethe):
    a2 = agent(agent_id="a2", purposes=("support", "billing"))
    with freeze_time("2026-01-01T00:00:00Z"):
        old = quarantine(lethe, "old page")
    with freeze_time("2026-01-03T00:00:00Z"):
        web = quarantine(lethe, "a web page")
        tool = quarantine(lethe, "a tool run", source=TOOL, ref="tool:crm/run-7")
        other_agent = quarantine(lethe, "the other agent's page", who=a2)
        billing = quarantine(lethe, "a billing page", who=a2, purpose="billing")
        inference = quarantine(lethe, "a guess", source=SourceType.AGENT_INFERENCE, ref="session-1/turn-3")
        everything = [old.id, web.id, tool.id, other_agent.id, billing.id, inference.id]
        assert queue_ids(lethe) == everything  # oldest first
        assert queue_ids(lethe, agent_id="a2") == [other_agent.id, billing.id]
        assert queue_ids(lethe, purpose="billing") == [billing.id]
        assert queue_ids(lethe, agent_id="a1", purpose="support", source_type=WEB) == [old.id, web.id]
        assert queue_ids(lethe, source_type=TOOL) == [tool.id]
        assert queue_ids(lethe, source_type=SourceType.SUMMARY) == []
        assert queue_ids(lethe, older_than=timedelta(days=1)) == [old.id]
        assert queue_ids(lethe, older_than=timedelta(0)) == everything
        assert queue_ids(lethe, agent_id="nobody") == []
        with pytest.raises(errors.InvalidCommand):
            queue_ids(lethe, older_than=timedelta(days=-1))
        with pytest.raises(errors.InvalidCommand):
            queue_ids(lethe, limit=0)
        with pytest.raises(errors.InvalidCommand):
            queue_ids(lethe, limit=101)


@freeze_time("2026-01-01T00:00:00Z")  # every item created "at once": the clock alone cannot order them
def test_the_queue_pages_without_repeating_or_missing_an_item_while_new_items_arrive(lethe):
    written = [quarantine(lethe, f"page {i}").id for i in range(7)]
    seen: list[str] = []
    cursor, pages = None, 0
    while True:
        page = lethe.review.queue(reviewer(), QueueQuery(cursor=cursor, limit=3))
        seen += [i.id for i in page.items]
        pages += 1
        if pages <= 3:  # new items arrive between pages, and one of the listed ones is decided
            written += [quarantine(lethe, f"late page {pages}-{j}").id for j in range(2)]
        if pages == 2:
            first = lethe.review.get(reviewer(), seen[0])
            lethe.review.promote(reviewer(), first.id, first.version)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(seen) == len(set(seen))  # no item twice
    assert seen == written  # none missed, in creation order
    assert pages == 5


def test_a_cursor_that_is_not_one_of_ours_is_a_422(lethe):
    quarantine(lethe)
    other = quarantine(lethe, who=agent("t2"))
    page = lethe.review.queue(reviewer("t2"), QueueQuery(limit=1))
    assert page.next_cursor is None and [i.id for i in page.items] == [other.id]
    for cursor in ("not-base64!", "cnExOg", "Zm9vOmJhcg", "cnExOnVua25vd24"):
        with pytest.raises(errors.InvalidCommand):
            lethe.review.queue(reviewer(), QueueQuery(cursor=cursor))


def test_only_a_quarantined_memory_can_be_promoted(lethe):
    active = lethe.memories.write(agent(), write_cmd("Alice prefers tea")).item
    superseded = quarantine(lethe, "superseded page")
    superseded = lethe.review.promote(reviewer(), superseded.id, superseded.version).item
    lethe.memories.write(agent(), write_cmd("the correction", supersedes_id=superseded.id))
    superseded = lethe.memories.get(agent(), superseded.id)
    rejected = quarantine(lethe, "rejected page")
    rejected = lethe.review.reject(reviewer(), rejected.id, rejected.version, "wrong").item
    with freeze_time("2026-01-01T00:00:00Z"):
        expired = quarantine(lethe, "short-lived page", kind="working_note", ttl_seconds=60)
    lethe.memories.sweep_expired()
    before = event_count(lethe)
    for item, version in ((active, 1), (superseded, 3), (rejected, 2), (expired, 2)):
        with pytest.raises(errors.VersionConflict, match="only a quarantined memory can be promoted"):
            lethe.review.promote(reviewer(), item.id, version)
    assert event_count(lethe) == before
    q = quarantine(lethe)
    promoted = lethe.review.promote(reviewer(), q.id, q.version).item
    assert promoted.status is Status.ACTIVE and promoted.trust is Trust.VERIFIED
    assert promoted.version == q.version + 1 and promoted.content == q.content
    with pytest.raises(errors.VersionConflict, match="only a quarantined memory"):  # not twice
        lethe.review.promote(reviewer(), q.id, promoted.version)


def test_only_a_quarantined_memory_can_be_rejected(lethe):
    active = lethe.memories.write(agent(), write_cmd("Alice prefers tea")).item
    with pytest.raises(errors.VersionConflict, match="only a quarantined memory can be rejected"):
        lethe.review.reject(reviewer(), active.id, active.version, "wrong")
    assert lethe.memories.get(agent(), active.id).status is Status.ACTIVE


def test_a_reviewer_needs_the_current_version_and_the_tenants_memory(lethe):
    q = quarantine(lethe)
    with pytest.raises(errors.VersionConflict):
        lethe.review.promote(reviewer(), q.id, q.version + 1)
    with pytest.raises(errors.VersionConflict):
        lethe.review.reject(reviewer(), q.id, q.version + 1, "wrong")
    with pytest.raises(errors.NotFound):
        lethe.review.promote(reviewer("t2"), q.id, q.version)
    with pytest.raises(errors.NotFound):
        lethe.review.reject(reviewer("t2"), q.id, q.version, "wrong")


def test_rejecting_retracts_the_memory_and_the_summaries_citing_it(lethe):
    page = quarantine(lethe, "Alice is a spy", kind="fact")
    other = lethe.memories.write(agent(), write_cmd("Alice likes tea")).item
    spy = Provenance(SourceType.SUMMARY, "summariser", (page.id,))
    with pytest.raises(errors.UnknownSource):  # a summary cites live memories only (memory.summaries)
        lethe.memories.write(agent(), write_cmd("Alice, tea-loving spy", provenance=spy))
    # One written before that check (an older release) may cite the quarantined memory.
    summary = lethe.memories.write(
        agent(),
        write_cmd(
            "Alice, tea-loving spy", provenance=Provenance(SourceType.SUMMARY, "summariser", (other.id,))
        ),
    ).item
    with lethe.uow.maintenance("test: alter rows as their owner"), lethe.uow.write() as conn:
        conn.execute(
            memories.update()
            .where(memories.c.id == summary.id)
            .values(provenance=json.dumps(spy.as_dict(), sort_keys=True))
        )
    summary = lethe.review.promote(reviewer(), summary.id, summary.version).item
    unrelated = lethe.memories.write(
        agent(),
        write_cmd("Alice, tea lover", provenance=Provenance(SourceType.SUMMARY, "summariser", (other.id,))),
    ).item
    rejected = lethe.review.reject(reviewer(), page.id, page.version, "the page is a known hoax").item
    assert rejected.status is Status.RETRACTED and rejected.version == page.version + 1
    assert rejected.content is None and rejected.subject_id is None
    for gone in (page.id, summary.id):
        with pytest.raises(errors.NotFound):
            lethe.memories.get(agent(), gone)
    assert queue_ids(lethe) == [unrelated.id]
    hits = lethe.search.search(agent(), SearchQuery("Alice tea spy", "support")).items
    assert [h.id for h in hits] == [other.id]
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        [entry] = conn.exec_driver_sql("SELECT memory_id, memory_ids, derived_ids, reason FROM retractions")
    assert entry[0] == page.id and entry[2] == f'["{summary.id}"]' and entry[3] == "the page is a known hoax"


def test_a_retried_promote_returns_the_first_result_even_after_the_memory_moved_on(lethe):
    q = quarantine(lethe, "Alice works at Example Corp", kind="fact")
    first = lethe.review.promote(reviewer(), q.id, q.version, "promote-1")
    assert first.first
    before = event_count(lethe)
    again = lethe.review.promote(reviewer(), q.id, q.version, "promote-1")
    assert not again.first and again.item == first.item and event_count(lethe) == before
    # The memory moves on: updated in place by its agent, then superseded.
    updated = lethe.memories.write(
        agent(),
        write_cmd("Alice works at Example Inc", id=q.id, expected_version=first.item.version, kind="fact"),
    ).item
    lethe.memories.write(agent(), write_cmd("Alice left Example Inc", supersedes_id=updated.id, kind="fact"))
    assert lethe.memories.get(agent(), q.id).status is Status.SUPERSEDED
    later = lethe.review.promote(reviewer(), q.id, q.version, "promote-1")
    assert later.item == first.item  # the same body: version, status, trust, content as then
    assert later.item.content == "Alice works at Example Corp"


def test_a_retried_reject_returns_the_first_result(lethe):
    q = quarantine(lethe)
    first = lethe.review.reject(reviewer(), q.id, q.version, "hoax", "reject-1")
    before = event_count(lethe)
    again = lethe.review.reject(reviewer(), q.id, q.version, "hoax", "reject-1")
    assert not again.first and again.item == first.item and event_count(lethe) == before


def test_a_retried_promote_of_a_memory_since_retracted_returns_no_content(lethe):
    q = quarantine(lethe, "Alice is a spy")
    first = lethe.review.promote(reviewer(), q.id, q.version, "promote-2").item
    lethe.retractions.retract(reviewer(), memory_id=q.id, reason="hoax after all")
    later = lethe.review.promote(reviewer(), q.id, q.version, "promote-2").item
    assert later.content is None and later.subject_id is None
    assert later.version == first.version and later.status is Status.ACTIVE  # the first result, minus content


def test_the_same_key_for_another_request_is_an_idempotency_conflict(lethe):
    q1, q2 = quarantine(lethe, "page one"), quarantine(lethe, "page two")
    lethe.review.promote(reviewer(), q1.id, q1.version, "key-1")
    before = event_count(lethe)
    for call in (
        lambda: lethe.review.promote(reviewer(), q2.id, q2.version, "key-1"),  # another memory
        lambda: lethe.review.promote(reviewer(), q1.id, q1.version + 1, "key-1"),  # another version
        lambda: lethe.review.reject(reviewer(), q1.id, q1.version, "no", "key-1"),  # another action
    ):
        with pytest.raises(errors.IdempotencyConflict):
            call()
    assert event_count(lethe) == before
    q3 = quarantine(lethe, "page three")
    lethe.review.reject(reviewer(), q3.id, q3.version, "one reason", "key-3")
    with pytest.raises(errors.IdempotencyConflict):
        lethe.review.reject(reviewer(), q3.id, q3.version, "another reason", "key-3")


def test_keys_belong_to_their_reviewer_and_tenant(lethe):
    q = quarantine(lethe)
    lethe.review.promote(reviewer(), q.id, q.version, "shared-key")
    other = Caller("t1", Role.REVIEWER, None, frozenset(), principal="reviewer-2")
    q2 = quarantine(lethe, "another page")
    assert lethe.review.promote(other, q2.id, q2.version, "shared-key").first


def test_no_role_that_can_write_can_review(lethe):
    writers = {role for role, _ in DEFAULT_POLICY}
    assert Role.REVIEWER not in writers
    q = quarantine(lethe)
    for role in writers:
        caller = Caller(
            "t1", role, "a1" if role is Role.AGENT else None, frozenset({"support"}), principal="w"
        )
        with pytest.raises(errors.OutOfScope):
            lethe.review.promote(caller, q.id, q.version)
        with pytest.raises(errors.OutOfScope):
            lethe.review.reject(caller, q.id, q.version, "mine")


def test_a_reviewer_cannot_review_what_it_wrote_even_if_a_policy_let_it_write(lethe):
    policy = {
        **DEFAULT_POLICY,
        (Role.REVIEWER, WEB): Standing(Authority.EXTERNAL, Trust.UNTRUSTED, Status.QUARANTINED),
    }
    lax = MemoryService(lethe.uow, lethe.keyring, lethe.pseudonyms, policy=policy, log=lethe.log)
    me = Caller("t1", Role.REVIEWER, None, frozenset(), principal="reviewer-1")
    mine = lax.write(
        me, write_cmd("my own find", provenance=Provenance(WEB, "https://example.org", url=page_url(WEB)))
    ).item
    assert mine.agent_id == "reviewer:reviewer-1"
    with pytest.raises(errors.OutOfScope):
        lethe.review.promote(me, mine.id, mine.version)
    with pytest.raises(errors.OutOfScope):
        lethe.review.reject(me, mine.id, mine.version, "mine")
    # A reviewer token that carries an agent id cannot review that agent's writes either.
    as_a1 = Caller("t1", Role.REVIEWER, "a1", frozenset(), principal="reviewer-3")
    q = quarantine(lethe)
    with pytest.raises(errors.OutOfScope):
        lethe.review.promote(as_a1, q.id, q.version)
    assert lethe.review.promote(reviewer(), q.id, q.version).item.status is Status.ACTIVE


def test_replay_reproduces_review_decisions_and_retractions(lethe):
    q1, q2, q3 = (quarantine(lethe, f"page {i}") for i in range(3))
    lethe.review.promote(reviewer(), q1.id, q1.version, "p1")
    lethe.review.reject(reviewer(), q2.id, q2.version, "hoax", "r2")
    lethe.review.promote(reviewer(), q3.id, q3.version)
    lethe.retractions.retract(
        reviewer(), source_ref="https://example.org/a", reason="the site was compromised"
    )
    report = replay.check(lethe.uow.engine)
    assert report.identical, report.differences
    with (
        lethe.uow.maintenance("test: alter rows as their owner"),
        lethe.uow.write() as conn,
    ):  # the check can fail: a tampered decision is reported
        conn.exec_driver_sql("UPDATE review_decisions SET action = 'promote' WHERE key = 'r2'")
    assert any("review_decisions" in d for d in replay.check(lethe.uow.engine).differences)


def test_the_0005_migration_gives_existing_memories_their_creation_order(lethe):
    from alembic import command

    from lethe.vault.store import schema

    first = quarantine(lethe, "first page")
    lethe.memories.write(agent(), write_cmd("an update", id=first.id, expected_version=1, source=WEB))
    second = quarantine(lethe, "second page")
    engine = lethe.uow.engine
    cfg = schema._config()
    with engine.begin() as conn:  # back to the store the release before wrote: no created_seq
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0004")
    assert "created_seq" not in {c["name"] for c in sa.inspect(engine).get_columns("memories")}
    schema.upgrade(engine)
    assert schema.schema_state(engine).up_to_date
    assert queue_ids(lethe) == [first.id, second.id]  # by creation, not by the later update
    assert replay.check(engine).identical
