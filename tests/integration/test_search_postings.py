"""Search reads an inverted index (issue 16, item 1), on SQLite and PostgreSQL.

A query's lexical score comes from ``search_postings`` (one row per keyed term hash of a
memory) by index seeks, never from a substring scan of term lists; postings follow the
memory out of the index (retraction, erasure, rebuild); migration 0011 writes them for a
store that had none, and 0018 leaves them one B-tree, their primary key, by which a
memory's postings are dropped too; a query of a thousand terms is refused before any SQL runs.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic import command

from lethe.vault import errors
from lethe.vault.memory.search import MAX_QUERY_TERMS
from lethe.vault.model import SearchQuery
from lethe.vault.store import schema
from lethe.vault.store.schema import upgrade
from lethe.vault.store.tables import search_index, search_postings
from tests.conftest import agent, officer, write_cmd


def ids(c, query: str, **kw) -> list[str]:  # type: ignore[no-untyped-def]
    return [i.id for i in c.search.search(agent(), SearchQuery(query=query, purpose="support", **kw)).items]


def lexical(c, query: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    found = c.search.search(agent(), SearchQuery(query=query, purpose="support"))
    return {i.id: i.score["lexical"] for i in found.items}


def postings(c, memory_id: str | None = None, words: bool = True) -> int:  # type: ignore[no-untyped-def]
    """Postings of one memory or of all; ``words``: of words only, not the posting of each
    memory's source ref (``Pseudonymizer.source_hash``: "s" and 32 hex digits)."""
    q = sa.select(sa.func.count()).select_from(search_postings)
    if words:
        q = q.where(sa.func.length(search_postings.c.term_hash) == 16)
    if memory_id is not None:
        q = q.where(search_postings.c.memory_id == memory_id)
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        return conn.execute(q).scalar_one()


def statements_of(c, fn) -> list[str]:  # type: ignore[no-untyped-def]
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        seen.append(statement)

    sa.event.listen(c.uow.tenant_engine, "before_cursor_execute", record)
    try:
        fn()
    finally:
        sa.event.remove(c.uow.tenant_engine, "before_cursor_execute", record)
    return seen


def test_a_memory_has_one_posting_per_distinct_term(lethe):
    item = lethe.memories.write(agent(), write_cmd("tea tea green tea, Green TEA")).item
    assert postings(lethe, item.id) == 2  # "tea", "green"
    with (
        lethe.uow.maintenance("test: inspect every tenant's rows"),
        lethe.uow.read() as conn,
    ):  # and one of its source ref, keyed, for retraction by source
        rest = conn.execute(
            sa.select(search_postings.c.term_hash).where(
                search_postings.c.memory_id == item.id, sa.func.length(search_postings.c.term_hash) != 16
            )
        ).scalars()
        assert list(rest) == [lethe.pseudonyms.source_hash("t1", "session-1/turn-1")]


def test_search_ranks_by_the_share_of_query_terms_with_a_posting(lethe):
    both = lethe.memories.write(agent(), write_cmd("alice drinks green tea")).item
    one = lethe.memories.write(agent(), write_cmd("alice drinks black coffee")).item
    none = lethe.memories.write(agent(), write_cmd("bob walks the dog")).item
    found = lethe.search.search(agent(), SearchQuery(query="green tea", purpose="support"))
    scores = {i.id: i.score["lexical"] for i in found.items}
    assert scores[both.id] == 1.0 and scores[none.id] == 0.0 and scores[one.id] == 0.0
    assert ids(lethe, "coffee")[0] == one.id


def test_search_reads_postings_and_never_scans_term_text(lethe):
    lethe.memories.write(agent(), write_cmd("alice drinks green tea"))
    sql = statements_of(lethe, lambda: ids(lethe, "green tea"))
    ranking = [s for s in sql if "search_postings" in s]
    assert ranking, sql
    assert not any("LIKE" in s.upper() or "terms" in s for s in sql), sql


def test_on_sqlite_the_postings_are_reached_by_index_seeks(lethe, backend):
    if backend != "sqlite":
        pytest.skip("the plan of a tiny PostgreSQL table is a sequential scan by choice")
    for i in range(20):
        lethe.memories.write(agent(), write_cmd(f"note {i} about green tea"))
    sql = statements_of(lethe, lambda: ids(lethe, "green tea"))
    ranking = next(s for s in sql if "search_postings" in s)
    terms = sorted(lethe.search.pseudonyms.term_hashes("t1", "green tea"))
    raw = lethe.uow.engine.raw_connection()
    try:
        params = _params_for(ranking, terms)
        plan = [r[-1] for r in raw.execute("EXPLAIN QUERY PLAN " + ranking, params).fetchall()]
    finally:
        raw.close()
    on_postings = [p for p in plan if "search_postings" in p]
    # Seeks by term: the primary key (tenant_id, term_hash), never the tenant's whole range
    # of the per-memory index (which a GROUP BY memory_id tempts the planner into).
    assert on_postings and all(p.startswith("SEARCH") and "term_hash=?" in p for p in on_postings), plan


def _params_for(statement: str, terms: list[str]) -> list[object]:
    """Positional values for the recorded ranking statement: plausible, for the planner only."""
    n = statement.count("?")
    values: list[object] = ["t1", "a1", "support", "active", "2000-01-01 00:00:00.000000"]
    return (values + terms + [0] * n)[:n]


def test_retraction_and_erasure_take_the_postings_with_the_memory(lethe):
    tea = lethe.memories.write(agent(), write_cmd("alice drinks green tea")).item
    bob = lethe.memories.write(agent(), write_cmd("bob likes coffee", subject="bob@example.com")).item
    lethe.retractions.retract(officer(), memory_id=bob.id, reason="wrong")
    assert postings(lethe, bob.id, words=False) == 0 and postings(lethe, tea.id) == 4
    lethe.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "T-1")
    lethe.erasure.run_pending()
    assert postings(lethe, words=False) == 0


def test_a_rebuild_writes_the_same_postings(lethe):
    for text in ("alice drinks green tea", "bob likes coffee", "carol reads books"):
        lethe.memories.write(agent(), write_cmd(text))
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        before = set(conn.execute(sa.select(search_postings)).all())
    lethe.reindex.rebuild()
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        after = set(conn.execute(sa.select(search_postings)).all())
    assert before == after and len(after) == 10 + 3  # each memory's source ref too


def test_migration_0011_writes_postings_for_a_store_indexed_before_it(lethe):
    tea = lethe.memories.write(agent(), write_cmd("alice drinks green tea")).item
    engine = lethe.uow.engine
    with engine.begin() as conn:  # back to the schema before 0011: the index had no postings
        cfg = schema._config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0010")
        assert "search_postings" not in sa.inspect(conn).get_table_names()
        assert conn.execute(sa.select(sa.func.count()).select_from(search_index)).scalar_one() == 1
    upgrade(engine)
    assert postings(lethe, tea.id) == 4
    assert ids(lethe, "green tea")[0] == tea.id


@pytest.mark.parametrize("n", [MAX_QUERY_TERMS + 1, 1000])
def test_a_query_of_too_many_terms_is_refused_naming_the_limit_before_any_sql(lethe, n):
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [a + b + c for a in letters for b in letters for c in letters][:n]
    query = " ".join(words)
    assert len(query) < 4096  # within the length bound: the term count alone refuses it
    sql = []

    def run() -> None:
        with pytest.raises(errors.InvalidCommand, match=str(MAX_QUERY_TERMS)):
            ids(lethe, query)

    sql = statements_of(lethe, run)
    assert sql == []


def test_the_postings_are_one_b_tree_their_primary_key(lethe, backend):
    # Migration 0018: no second index by memory; on SQLite no rowid table beside the key.
    with lethe.uow.read() as conn:
        if backend == "sqlite":
            sql = conn.exec_driver_sql(
                "SELECT type, name, sql FROM sqlite_schema WHERE tbl_name = 'search_postings'"
            ).all()
            assert [(t, n) for t, n, _ in sql] == [("table", "search_postings")], sql
            assert sql[0][2].rstrip().upper().endswith("WITHOUT ROWID"), sql
        else:
            names = (
                conn.exec_driver_sql("SELECT indexname FROM pg_indexes WHERE tablename = 'search_postings'")
                .scalars()
                .all()
            )
            assert names == ["search_postings_pkey"], names


def test_an_update_replaces_the_memorys_postings_with_those_of_its_new_terms(lethe):
    first = lethe.memories.write(agent(), write_cmd("alice drinks green tea")).item
    other = lethe.memories.write(agent(), write_cmd("alice drinks black coffee")).item
    lethe.memories.write(agent(), write_cmd("alice reads books", id=first.id, expected_version=1))
    assert postings(lethe, first.id) == 3 and postings(lethe, other.id) == 4
    assert lexical(lethe, "green tea") == {first.id: 0.0, other.id: 0.0}
    assert lexical(lethe, "books coffee") == {first.id: 0.5, other.id: 0.5}


def test_forgetting_a_subject_drops_its_postings_and_no_one_elses(lethe):
    for text in ("alice drinks green tea", "alice likes black tea", "alice walks"):
        lethe.memories.write(agent(), write_cmd(text))
    bob = lethe.memories.write(agent(), write_cmd("bob drinks green tea", subject="bob@example.com")).item
    lethe.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "T-1")
    lethe.erasure.run_pending()
    assert postings(lethe) == postings(lethe, bob.id) == 4
    assert lexical(lethe, "green tea") == {bob.id: 1.0}


def test_migration_0018_keeps_every_posting_and_search_reads_them(lethe, backend):
    for text in ("alice drinks green tea", "bob likes coffee", "carol reads books"):
        lethe.memories.write(agent(), write_cmd(text))
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        before = set(conn.execute(sa.select(search_postings)).all())
    engine = lethe.uow.engine
    with engine.begin() as conn:  # back to the schema before 0018: a second index, by memory
        cfg = schema._config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0017")
        indexes = {i["name"] for i in sa.inspect(conn).get_indexes("search_postings")}
        assert "ix_search_postings_memory" in indexes
    upgrade(engine)
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        after = set(conn.execute(sa.select(search_postings)).all())
        assert sa.inspect(conn).get_indexes("search_postings") == []
    assert after == before and len(after) == 10 + 3  # each memory's source ref too
    assert sorted(lexical(lethe, "green tea").values()) == [0.0, 0.0, 1.0]
