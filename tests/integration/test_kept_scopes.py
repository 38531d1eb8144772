"""A search keeps an agent's scope in memory and still sees every change to it at once.

The kept scope (``memory.ranked_scope``) is served only while the scope's change token
(``store.scope_changes``) is the one the search reads in its own transaction: every event
that changes a memory of the scope writes a new one. Each test searches first (the scope
is kept), changes the scope in one of the ways the log knows, and searches again. SQLite
and PostgreSQL.
"""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from lethe.vault.clock import utcnow
from lethe.vault.model import Provenance, SearchQuery, SourceType
from lethe.vault.store.tables import scope_changes
from tests.conftest import agent, officer, reviewer, write_cmd

TEA = "Alice prefers green tea in the morning"
VIOLIN = "Alice plays the violin in a band"


def found(c, query: str, **kw) -> list[str]:  # type: ignore[no-untyped-def]
    r = c.search.search(agent(**kw), SearchQuery(query=query, purpose="support"))
    return [i.content for i in r.items]


def token(c, agent_id: str = "a1", tenant: str = "t1") -> str:  # type: ignore[no-untyped-def]
    with c.uow.acting_for(tenant), c.uow.read() as conn:
        return conn.execute(
            sa.select(scope_changes.c.token).where(
                scope_changes.c.tenant_id == tenant,
                scope_changes.c.agent_id == agent_id,
                scope_changes.c.purpose == "support",
            )
        ).scalar_one()


def test_a_write_changes_its_own_scopes_token_and_no_other(lethe):
    lethe.memories.write(agent(), write_cmd(TEA))
    lethe.memories.write(agent(agent_id="a2"), write_cmd(VIOLIN))
    mine, theirs = token(lethe), token(lethe, "a2")
    lethe.memories.write(agent(), write_cmd("Alice drives a red Volvo"))
    assert token(lethe) != mine and token(lethe, "a2") == theirs


def test_a_promoted_memory_is_found_by_the_next_search_of_a_kept_scope(lethe):
    lethe.memories.write(agent(), write_cmd(TEA))
    web = Provenance(SourceType.WEB_PAGE, "https://example.org/alice", url="https://example.org/alice")
    held = lethe.memories.write(agent(), write_cmd(VIOLIN, provenance=web)).item
    assert VIOLIN not in found(lethe, "violin band")  # quarantined
    lethe.review.promote(reviewer(), held.id, held.version)
    assert VIOLIN in found(lethe, "violin band")


def test_a_retracted_memory_leaves_the_next_search_of_a_kept_scope(lethe):
    lethe.memories.write(agent(), write_cmd(TEA, provenance=Provenance(SourceType.USER_STATEMENT, "s/1")))
    assert TEA in found(lethe, "green tea")
    lethe.retractions.retract(officer(), source_ref="s/1", reason="wrong")
    assert TEA not in found(lethe, "green tea")


def test_a_superseded_memory_gives_way_in_the_next_search_of_a_kept_scope(lethe):
    old = lethe.memories.write(agent(), write_cmd(TEA)).item
    assert found(lethe, "tea morning") == [TEA]
    lethe.memories.write(agent(), write_cmd("Alice prefers black tea in the morning", supersedes_id=old.id))
    assert found(lethe, "tea morning") == ["Alice prefers black tea in the morning"]


def test_a_forgotten_subject_leaves_the_next_search_of_a_kept_scope_and_others_stay(lethe):
    lethe.memories.write(agent(), write_cmd(TEA))
    lethe.memories.write(agent(), write_cmd("Bob prefers green tea too", subject="bob@example.com"))
    assert len(found(lethe, "green tea")) == 2
    lethe.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "T-1")
    lethe.erasure.run_pending()
    assert found(lethe, "green tea") == ["Bob prefers green tea too"]


def test_a_memory_past_its_expiry_leaves_a_kept_scope_before_any_sweep(lethe, monkeypatch):
    from lethe.vault.memory import ranked_scope

    lethe.memories.write(agent(), write_cmd(TEA, ttl_seconds=86_400))
    lethe.memories.write(agent(), write_cmd("Alice likes green tea with honey"))
    assert len(found(lethe, "green tea")) == 2
    reads = []
    real_read = ranked_scope._read
    monkeypatch.setattr(ranked_scope, "_read", lambda *a: reads.append(1) or real_read(*a))
    later = utcnow() + timedelta(days=2)  # no sweep has run: the row is still active
    monkeypatch.setattr(lethe.search, "clock", lambda: later)
    assert found(lethe, "green tea") == ["Alice likes green tea with honey"] and reads == []


def test_replay_gives_every_scope_the_token_of_its_newest_change(lethe):
    from lethe.vault.store import replay

    lethe.memories.write(agent(), write_cmd(TEA))
    lethe.memories.write(agent(agent_id="a2"), write_cmd(VIOLIN))
    before = (token(lethe), token(lethe, "a2"))
    assert replay.check(lethe.uow.engine).differences == []
    replay.rebuild(lethe.uow.engine)
    assert token(lethe) not in before  # a rebuilt projection: no process keeps a scope read before it


def test_a_reindex_changes_every_scopes_token(lethe):
    lethe.memories.write(agent(), write_cmd(TEA))
    lethe.memories.write(agent(agent_id="a2"), write_cmd(VIOLIN))
    before = (token(lethe), token(lethe, "a2"))
    lethe.reindex.rebuild()
    assert token(lethe) != before[0] and token(lethe, "a2") != before[1]


def test_a_key_marked_destroyed_changes_every_scope_token_of_its_tenant_and_no_other(lethe):
    from lethe.vault.store.tables import subject_keys

    lethe.memories.write(agent(), write_cmd(TEA))
    lethe.memories.write(agent(agent_id="a2"), write_cmd("Bob plays chess", subject="bob@example.com"))
    lethe.memories.write(agent(tenant="t2"), write_cmd(VIOLIN))
    of_t1 = sa.select(subject_keys.c.key_name).where(subject_keys.c.tenant_id == "t1")
    with lethe.uow.acting_for("t1"), lethe.uow.read() as conn:
        alices = conn.execute(of_t1.order_by(subject_keys.c.created_at)).scalars().first()
    before = (token(lethe), token(lethe, "a2"), token(lethe, tenant="t2"))
    with (
        lethe.uow.maintenance("erasure runner"),
        lethe.uow.write() as conn,
    ):  # as an erasure's key step or a restore records it
        lethe.keyring.mark_destroyed(conn, [alices], utcnow())
    assert token(lethe) != before[0] and token(lethe, "a2") != before[1]
    assert token(lethe, tenant="t2") == before[2]


def test_a_kept_scope_reads_the_postings_of_a_term_once_and_again_after_a_change(lethe):
    lethe.memories.write(agent(), write_cmd(TEA))
    statements: list[str] = []

    def seen(conn, cursor, statement, *rest):  # type: ignore[no-untyped-def]
        if statement.lstrip().startswith("SELECT search_postings.term_hash"):
            statements.append(statement)

    sa.event.listen(lethe.uow.tenant_engine, "before_cursor_execute", seen)
    try:
        assert found(lethe, "green tea") == [TEA]
        assert len(statements) == 1
        assert found(lethe, "tea green") == [TEA]  # the same terms: kept with the scope
        assert len(statements) == 1
        assert found(lethe, "green morning") == [TEA]  # one new term: read alone
        assert len(statements) == 2
        lethe.memories.write(agent(), write_cmd("Alice also drinks green smoothies"))
        assert sorted(found(lethe, "green tea")) == sorted([TEA, "Alice also drinks green smoothies"])
        assert len(statements) == 3  # a changed scope is read again, its terms with it
    finally:
        sa.event.remove(lethe.uow.tenant_engine, "before_cursor_execute", seen)


def test_a_kept_scope_keeps_the_rows_of_a_bounded_number_of_terms_whatever_the_queries(lethe):
    from lethe.vault.memory import ranked_scope
    from lethe.vault.memory.search import MAX_RANKED_IN_MEMORY

    lethe.memories.write(agent(), write_cmd(TEA))
    for q in range(3):  # 120 distinct terms no memory holds, and two that one does
        found(lethe, " ".join(f"zz{q}x{i}" for i in range(40)) + " green tea")
    scope_id = ("t1", "a1", "support", lethe.search.vectors.model, MAX_RANKED_IN_MEMORY)
    kept = lethe.keyring.opened.kept_scope(scope_id, token(lethe))
    assert isinstance(kept, ranked_scope.Scope) and len(kept) == 1
    bound = ranked_scope.KEPT_TERMS + ranked_scope.KEPT_TERMS_PER_ROW * len(kept)
    assert len(kept.term_rows) == bound  # 68 of the 122 terms met, the first ones
    assert kept.term_rows_size[0] == 2  # green and tea: one row each
    assert found(lethe, "green tea") == [TEA]  # still ranked alike


def bicycles(c, n: int = 6) -> None:  # type: ignore[no-untyped-def]
    """Memories no test query matches: a kept scope keeps 384 bytes of results a row
    (``memory.kept_results``), so a scope of one or two keeps none."""
    for colour in ("red", "blue", "yellow", "white", "grey", "black")[:n]:
        c.memories.write(agent(), write_cmd(f"Alice rides a {colour} bicycle"))


def top(c, query: str, limit: int) -> list:  # type: ignore[no-untyped-def]
    return c.search.search(agent(), SearchQuery(query=query, purpose="support", limit=limit)).items


def opened_by_search(monkeypatch) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """The memory ids each search reads (and opens) its results of, one list a search."""
    from lethe.vault.memory import repository

    asked: list[list[str]] = []
    real = repository.by_ids_with_keys
    monkeypatch.setattr(
        repository, "by_ids_with_keys", lambda conn, t, ids: asked.append(list(ids)) or real(conn, t, ids)
    )
    return asked


def test_a_search_of_an_unchanged_scope_serves_the_results_it_opened_before_without_reading_them(
    lethe, monkeypatch
):
    tea = lethe.memories.write(agent(), write_cmd(TEA)).item
    bicycles(lethe)
    asked = opened_by_search(monkeypatch)
    first = top(lethe, "green tea coffee", 1)
    top(lethe, "green tea", 1)  # opened a second time: kept
    again = top(lethe, "tea", 1)
    assert asked == [[tea.id], [tea.id], []]  # the third search read no row and opened nothing
    assert [i.content for i in first] == [i.content for i in again] == [TEA] and again[
        0
    ].subject_id == "alice@example.com"
    assert first[0].score and again[0].score  # each search's own score
    assert first[0].score["lexical"] < again[0].score["lexical"] == 1.0
    assert again[0].version == first[0].version == tea.version


def test_an_operator_memory_in_the_results_is_read_and_opened_by_every_search(lethe, monkeypatch):
    from tests.integration.test_operator_memories import operator_fact

    mine = lethe.memories.write(agent(), write_cmd("refunds take a week to arrive")).item
    fact = operator_fact(lethe, "refunds are allowed within 30 days")
    bicycles(lethe)
    asked = opened_by_search(monkeypatch)
    for _ in range(3):
        items = top(lethe, "refunds", 2)
        assert {i.id for i in items} == {mine.id, fact.id}
    # Not covered by the agent's scope token: the operator's memory is read each time, its own
    # memory until it is kept (the second opening).
    assert [sorted(a) for a in asked[:2]] == [sorted([mine.id, fact.id])] * 2 and asked[2] == [fact.id]


def test_a_key_marked_destroyed_by_another_node_takes_a_kept_result_out_of_the_next_search(lethe):
    from lethe.vault.store.tables import subject_keys

    lethe.memories.write(agent(), write_cmd(TEA))
    lethe.memories.write(agent(), write_cmd("Bob prefers green tea too", subject="bob@example.com"))
    bicycles(lethe)
    both = [TEA, "Bob prefers green tea too"]
    for _ in range(2):
        assert sorted(i.content for i in top(lethe, "green tea", 2)) == both  # opened twice: kept
    assert sorted(i.content for i in top(lethe, "green tea", 2)) == both  # served from the kept scope
    first_key = sa.select(subject_keys.c.key_name).order_by(subject_keys.c.created_at)
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        alices = conn.execute(first_key).scalars().first()
    with (
        lethe.uow.maintenance("erasure runner"),
        lethe.uow.write() as conn,
    ):  # as another node's erasure records the KMS's destruction
        lethe.keyring.mark_destroyed(conn, [alices], utcnow())
    assert top(lethe, "green tea", 2)[0].content == "Bob prefers green tea too"
    assert TEA not in found(lethe, "green tea")


def test_a_memory_updated_in_place_is_served_at_its_new_version_by_the_next_search(lethe):
    tea = lethe.memories.write(agent(), write_cmd(TEA)).item
    bicycles(lethe)
    for _ in range(2):
        assert [i.content for i in top(lethe, "tea morning", 1)] == [TEA]  # opened twice: kept
    assert [i.content for i in top(lethe, "tea morning", 1)] == [TEA]  # served from the kept scope
    newer = "Alice prefers mint tea in the morning"
    lethe.memories.write(agent(), write_cmd(newer, id=tea.id, expected_version=tea.version))
    assert [i.content for i in top(lethe, "tea morning", 1)] == [newer]
