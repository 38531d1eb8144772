"""Hot selects run at the driver (``store.driver_reads``) give the rows ``Connection.execute``
gives, are seen by statement listeners, and fail as SQLAlchemy's statements do: an outage
is a 503 and the broken connection is replaced. On SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from lethe.vault.access import token_repository, tokens
from lethe.vault.errors import StoreUnavailable
from lethe.vault.memory import ranked_scope, scope_statements
from lethe.vault.memory import repository as repo
from lethe.vault.model import Role, SearchQuery
from lethe.vault.store import db, driver_reads
from tests.conftest import agent, write_cmd
from tests.integration.test_postgres_round_trips import backend_pid, terminate


def _same_rows(conn: sa.Connection, stmt: sa.Select, params: dict) -> list:
    """``driver_reads.rows`` and ``Connection.execute`` on one statement, checked equal. The
    first run of a statement goes through SQLAlchemy and plans it; the second is compared."""
    driver_reads.rows(conn, stmt, params)
    ours = driver_reads.rows(conn, stmt, params)
    theirs = conn.execute(stmt, params).all()
    assert [tuple(r) for r in ours] == [tuple(r) for r in theirs]
    assert all(
        type(a) is type(b) for r, s in zip(ours, theirs, strict=True) for a, b in zip(r, s, strict=True)
    )
    assert [r._fields for r in ours[:1]] == [tuple(r._fields) for r in theirs[:1]]
    return ours


def test_a_tokens_row_read_at_the_driver_is_the_row_sqlalchemy_reads(lethe) -> None:
    token, info = lethe.tokens.create(Role.AGENT, "t1", agent_id="a1", purposes=["support"], description="d")
    lethe.tokens.revoke(info.id)  # a second timestamp, and a NULL (expires_at) beside it
    with (
        lethe.uow.maintenance("test: the token row as the owner sees it, past the wall"),
        lethe.uow.read() as conn,
    ):
        (row,) = _same_rows(conn, token_repository._BY_HASH, {"digest": tokens.hash_token(token)})
    assert row.id == info.id and row.revoked_at is not None and row.expires_at is None
    with (
        lethe.uow.maintenance("test: the token row as the owner sees it, past the wall"),
        lethe.uow.read() as conn,
    ):
        assert driver_reads.first(conn, token_repository._BY_HASH, {"digest": "0" * 64}) is None


def test_a_searchs_statements_read_at_the_driver_give_the_rows_sqlalchemy_gives(lethe) -> None:
    items = [lethe.memories.write(agent(), write_cmd(f"Alice likes green tea {i}")).item for i in range(3)]
    _, info = lethe.tokens.create(Role.AGENT, "t1", agent_id="a1", purposes=["support"])
    query = SearchQuery("green tea", "support")
    assert len(lethe.search.search(agent(), query).items) == 3
    terms = sorted(lethe.pseudonyms.term_hashes("t1", "green tea"))
    request = ranked_scope.Request(agent(), "support", "green tea", terms, items[0].created_at, None, ())
    with lethe.uow.acting_for("t1"), lethe.uow.read() as conn:
        rows = _same_rows(
            conn, repo._BY_IDS_WITH_KEYS, {"tenant_id": "t1", "memory_ids": [i.id for i in items]}
        )
        assert {r.id for r in rows} == {i.id for i in items} and all(r.wrapped_dek for r in rows)
        postings = scope_statements.postings_statement(conn.dialect.name)
        hits = _same_rows(conn, postings, {"tenant": "t1", "query_hashes": terms})
        assert sorted(t for t, _ in hits) == terms  # a row a term, each with the three memories
        assert all(sorted(ids.split(",")) == sorted(i.id for i in items) for _, ids in hits)
        params = {**scope_statements.bound_params(request), "query_hashes": terms}
        stmt = scope_statements._token_and_operator_statement(conn.dialect.name, False, False, False)
        (anchor,) = _same_rows(conn, stmt, params)
        assert anchor.scope_token and anchor.id is None  # the token, and no operator memory
        # The same statement reading a recalled token's revocation: 1 while unrevoked, else NULL.
        confirming = scope_statements._token_and_operator_statement(conn.dialect.name, False, False, True)
        (live,) = _same_rows(conn, confirming, {**params, "token_id": info.id})
        (gone,) = _same_rows(conn, confirming, {**params, "token_id": "no-such-token"})
        assert live.token_live == 1 and gone.token_live is None
        assert live.scope_token == gone.scope_token == anchor.scope_token


def test_a_list_rendered_per_execution_runs_through_sqlalchemy_with_the_same_rows(lethe) -> None:
    """SQLite's ``one_of`` is an expanding IN: no plan, the same named tuples."""
    written = lethe.memories.write(agent(), write_cmd("Alice likes green tea")).item
    params = {"tenant_id": "t1", "memory_ids": [written.id]}
    with lethe.uow.acting_for("t1"), lethe.uow.read() as conn:
        (row,) = _same_rows(conn, repo._BY_IDS_WITH_KEYS, params)
        planned = driver_reads._PLANS[(repo._BY_IDS_WITH_KEYS, conn.dialect.name, conn.dialect.paramstyle)]
    assert (planned is not None) == (lethe.uow.engine.dialect.name == "postgresql")
    assert row.id == written.id


def test_statement_listeners_see_each_read_at_the_driver(lethe) -> None:
    token, _ = lethe.tokens.create(Role.AGENT, "t1", agent_id="a1", purposes=["support"], description="d")
    lethe.tokens.authenticate(token)  # its first run plans the statement
    seen: list[str] = []

    def record(_conn, _cursor, statement, *_args) -> None:  # type: ignore[no-untyped-def]
        seen.append(statement)

    sa.event.listen(lethe.uow.tenant_engine, "before_cursor_execute", record)
    try:
        lethe.tokens.authenticate(token)
    finally:
        sa.event.remove(lethe.uow.tenant_engine, "before_cursor_execute", record)
    # One read of the token: of its table, or behind PostgreSQL's wall of the owner's function.
    table = "lethe_token_by_hash(" if lethe.uow.row_security else "FROM api_tokens"
    assert [s for s in seen if table in s] and len([s for s in seen if "token" in s]) == 1, seen


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_connection_lost_under_a_read_at_the_driver_is_a_503_and_is_replaced(lethe, monkeypatch) -> None:
    token, _ = lethe.tokens.create(Role.AGENT, "t1", agent_id="a1", purposes=["support"], description="d")
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)  # no ping before use: the read meets the break
    first = backend_pid(lethe.uow)
    terminate(lethe.uow.engine, first)
    with pytest.raises(StoreUnavailable):
        lethe.tokens.authenticate(token)
    assert backend_pid(lethe.uow) != first
    assert lethe.tokens.authenticate(token).tenant_id == "t1"
