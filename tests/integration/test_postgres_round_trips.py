"""PostgreSQL reads cost no transaction round trips, a write none of its own for ``BEGIN``
and one for all its inserts,
a search of a kept scope two (its token with the operator memories, then its results), and
the pool pings only idle connections, yet a connection that died while idle is still
replaced before anyone uses it (vault/store/db.py). On a real PostgreSQL server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import psycopg
import pytest
import sqlalchemy as sa
from psycopg.pq import TransactionStatus

from lethe.vault.clock import utcnow
from lethe.vault.errors import StoreUnavailable
from lethe.vault.memory import ranked_scope, scope_statements
from lethe.vault.model import Caller, Provenance, Role, SearchQuery, SourceType
from lethe.vault.store import db
from lethe.vault.store.pipeline import inserts_sent_together
from lethe.vault.store.tables import scope_changes
from tests.conftest import agent, write_cmd

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


def backend_pid(uow: db.UnitOfWork) -> int:
    with uow.read() as conn:
        return conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()


def terminate(engine: sa.Engine, pid: int) -> None:
    """Kill one server session from another, as a PostgreSQL restart kills them all."""
    admin = sa.create_engine(engine.url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        assert conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar_one()
    admin.dispose()


def test_a_read_opens_no_transaction_on_the_server(lethe) -> None:
    with lethe.uow.read() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM memories")).scalar_one() == 0
        # Inside a BEGIN the driver would report INTRANS until the ROLLBACK's round trip.
        assert conn.connection.driver_connection.info.transaction_status == TransactionStatus.IDLE
    with lethe.uow.write() as conn:  # writes keep their transaction (and its advisory lock)
        conn.execute(sa.text("SELECT 1"))
        assert conn.connection.driver_connection.info.transaction_status == TransactionStatus.INTRANS


def test_a_connection_that_died_while_idle_is_replaced_before_use(lethe, monkeypatch) -> None:
    uow = lethe.uow
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.05)
    first = backend_pid(uow)
    terminate(uow.engine, first)
    time.sleep(0.1)
    assert backend_pid(uow) != first  # no error: the ping found it dead and the pool reconnected


def test_a_connection_reused_at_once_is_not_pinged_so_a_break_costs_one_503(lethe, monkeypatch) -> None:
    uow = lethe.uow
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    first = backend_pid(uow)
    terminate(uow.engine, first)
    with pytest.raises(StoreUnavailable):  # the request that meets the break: 503, never a 500
        backend_pid(uow)
    assert backend_pid(uow) != first  # and the pool has replaced it for the next one


@contextmanager
def wire(engine: sa.Engine, path: Path) -> Iterator[list[str]]:
    """What crosses the wire while inside: libpq's trace of every connection checked out,
    each checkout into a file of its own (``path.000``, ``path.001``, ...: libpq buffers each
    connection's trace, so connections sharing one file could interleave out of order),
    stopped at check-in before the files close; and the statements SQLAlchemy sent."""
    statements: list[str] = []
    files: list[IO[str]] = []

    def sent(_conn, _cursor, statement, *_args) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement)

    def trace(dbapi_conn, *_args) -> None:  # type: ignore[no-untyped-def]
        files.append(open(f"{path}.{len(files):03d}", "w"))  # noqa: SIM115 (closed below)
        dbapi_conn.pgconn.trace(files[-1].fileno())

    def untrace(dbapi_conn, *_args) -> None:  # type: ignore[no-untyped-def]
        dbapi_conn.pgconn.untrace()

    hooks = [("checkout", trace), ("checkin", untrace), ("before_cursor_execute", sent)]
    for name, fn in hooks:
        sa.event.listen(engine, name, fn)
    try:
        yield statements
    finally:
        for name, fn in hooks:
            sa.event.remove(engine, name, fn)
        for f in files:
            f.close()


def round_trips(path: Path) -> list[str]:
    """The client's messages that wait for the server (a simple query, or a Sync), checkout
    after checkout in the order they were checked out."""
    lines = [line for f in sorted(path.parent.glob(f"{path.name}.*")) for line in f.read_text().splitlines()]
    sent = [line.split("\t") for line in lines if "\tF\t" in line]
    return [m[4].strip() if m[3] == "Query" else "Sync" for m in sent if m[3] in ("Query", "Sync")]


def test_a_write_sends_begin_with_its_lock_its_inserts_together_and_reads_nothing_back(lethe, tmp_path):
    lethe.memories.write(agent(), write_cmd("Alice likes tea"))  # the subject's key is made once
    with wire(lethe.uow.tenant_engine, tmp_path / "trace") as statements:
        lethe.memories.write(agent(), write_cmd("Alice likes green tea"))
    trips = round_trips(tmp_path / "trace")
    begin = db._locked_begin(None, "t1")  # with the tenant's setting, behind the wall (the default)
    assert trips[0] == f'"{begin}"' and trips[-1] == '"COMMIT"'
    assert not [t for t in trips[1:] if "BEGIN" in t]
    checks, *inserts = statements[1:]
    assert all(s.startswith("INSERT") for s in inserts) and len(inserts) == 7  # event, memory, ... vector
    # Under its lock, one statement reads the idempotency key, the subject's keys and fence, the
    # log's size; then the seven inserts go together, in one round trip (store.pipeline); the commit.
    assert all(t in checks for t in ("FROM idempotency_keys", "FROM subject_keys", "FROM events"))
    assert trips == [trips[0], "Sync", "Sync", '"COMMIT"'], trips
    # The answer is mapped from the event it wrote: nothing of ``memories`` is read.
    assert "FROM memories" not in checks


def test_over_a_libpq_without_pipeline_mode_a_write_sends_its_inserts_one_at_a_time(
    lethe, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(psycopg.Pipeline, "is_supported", classmethod(lambda cls: False))
    lethe.memories.write(agent(), write_cmd("Alice likes tea"))
    with wire(lethe.uow.tenant_engine, tmp_path / "trace") as statements:
        item = lethe.memories.write(agent(), write_cmd("Alice likes green tea")).item
    # At least one round trip a statement (psycopg's executemany then sends one a row), and the commit.
    assert len(round_trips(tmp_path / "trace")) >= len(statements) + 1 == 10
    assert lethe.memories.get(agent(), item.id).content == "Alice likes green tea"


def _token_row(tenant: str) -> sa.Insert:
    return scope_changes.insert().values(tenant_id=tenant, agent_id="a", purpose="p", token="x")


def test_a_read_among_inserts_sent_together_is_refused_not_answered_with_no_rows(lethe) -> None:
    with lethe.uow.acting_for("t"), lethe.uow.write() as conn:
        conn.execute(_token_row("t"))
        with pytest.raises(sa.exc.InvalidRequestError, match="only inserts"), inserts_sent_together(conn):
            # Its result would not have arrived when SQLAlchemy looks: it would read nothing.
            conn.execute(sa.select(scope_changes.c.token)).first()
        conn.execute(sa.text("SELECT 1"))  # the guard is lifted with the block


def test_a_connection_lost_under_inserts_sent_together_is_a_503_and_is_replaced(lethe) -> None:
    uow = lethe.uow
    pid = backend_pid(uow)
    with pytest.raises(StoreUnavailable), uow.acting_for("t"), uow.write() as conn:
        assert conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() == pid  # the pooled one
        with inserts_sent_together(conn):
            conn.execute(_token_row("t"))
            terminate(uow.engine, pid)
            conn.execute(_token_row("u"))
    assert backend_pid(uow) != pid  # the pool dropped it: the next request is served
    with uow.maintenance("test: inspect every tenant's rows"), uow.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(scope_changes)).scalar_one() == 0


def test_a_warm_search_reads_its_scope_token_with_the_operator_rows_and_nothing_else(lethe, tmp_path) -> None:
    lethe.memories.write(agent(), write_cmd("Alice likes green tea"))
    for colour in ("red", "blue", "white"):  # a scope of one row would keep no result (384 bytes a row)
        lethe.memories.write(agent(), write_cmd(f"Alice rides a {colour} bicycle"))
    query = SearchQuery("green tea", "support", limit=1)
    for _ in range(2):  # keeps the scope and its rows of these terms; its result, opened twice
        lethe.search.search(agent(), query)
    with wire(lethe.uow.tenant_engine, tmp_path / "trace") as statements:
        assert len(lethe.search.search(agent(), query).items) == 1
    trips = round_trips(tmp_path / "trace")
    assert len(trips) == len(statements) == 1, statements
    # The token, and the operator memories of the purpose that match a term (their postings counted);
    # the result was opened by the first search and is kept with the scope (``memory.kept_results``).
    assert all(t in statements[0] for t in ("FROM scope_changes", "FROM memories", "search_postings"))


def test_a_warm_search_reads_the_results_no_search_opened_before_in_a_second_statement(
    lethe, tmp_path
) -> None:
    lethe.memories.write(agent(), write_cmd("Alice likes green tea"))
    lethe.memories.write(agent(), write_cmd("Alice likes black tea"))
    for colour in ("red", "blue", "white", "grey", "yellow", "black"):
        lethe.memories.write(agent(), write_cmd(f"Alice rides a {colour} bicycle"))
    for _ in range(2):  # keeps one result
        lethe.search.search(agent(), SearchQuery("green tea", "support", limit=1))
    with wire(lethe.uow.tenant_engine, tmp_path / "trace") as statements:
        assert len(lethe.search.search(agent(), SearchQuery("green tea", "support", limit=2)).items) == 2
    assert len(round_trips(tmp_path / "trace")) == len(statements) == 2, statements
    assert "FROM memories" in statements[1] and "subject_keys" in statements[1], statements


def test_a_write_that_times_out_on_the_lock_is_a_503_and_leaves_its_connection_usable(lethe) -> None:
    uow = lethe.uow
    with uow.write() as holder:  # another writer holds the append lock
        holder.execute(sa.text("SELECT 1"))
        start = time.monotonic()
        with pytest.raises(StoreUnavailable), uow.write(lock_wait_ms=100):
            pass
        assert time.monotonic() - start < 5  # bounded by the lock timeout, not the holder
    # The timed-out transaction was rolled back on its connection: every pooled connection
    # writes again, in autocommit at the driver, with its BEGIN sent by the write.
    for _ in range(db.POOL_SIZE + 1):
        with uow.write() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one() >= 0
            driver = conn.connection.driver_connection
            assert driver.autocommit and driver.info.transaction_status == TransactionStatus.INTRANS
    with uow.read() as conn:
        assert conn.connection.driver_connection.info.transaction_status == TransactionStatus.IDLE


def test_a_searchs_operator_statement_is_planned_once_per_connection_not_per_search(lethe) -> None:
    """PostgreSQL keeps a prepared statement's generic plan only where it is not estimated dearer
    than one planned for the values at hand. With ``authority = 'operator'`` in the SQL, not
    bound (``store.constant``), the generic plan knows the statement asks for the few operator
    memories; bound, every search planned it anew (0.44 ms of server time to run 0.07)."""
    for i in range(40):
        lethe.memories.write(agent(), write_cmd(f"Alice likes green tea, note {i}", key=f"note-{i}"))
    prov = Provenance(SourceType.OPERATOR_CONFIG, "deploy/config.yaml")
    operator = Caller("t1", Role.OPERATOR, None, frozenset(), principal="op-token")
    rule = write_cmd("Green tea is served at noon", "org:acme", provenance=prov, kind="fact")
    lethe.memories.write(operator, rule)
    with lethe.uow.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("ANALYZE")  # statistics as a live store has them: operator rows are few
    terms = sorted(lethe.search.pseudonyms.term_hashes("t1", "green tea"))
    request = ranked_scope.Request(agent(), "support", "green tea", terms, utcnow(), None, ())
    with (
        lethe.uow.acting_for("t1"),
        lethe.uow.read() as conn,
    ):  # one connection: prepared statements are per session
        for _ in range(20):
            token, rows = scope_statements.token_and_operator_rows(conn, request)
            assert token is not None and len(rows) == 1
        (plans,) = conn.execute(
            sa.text(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                " WHERE statement LIKE '%FROM scope_changes%' AND statement LIKE '%search_postings%'"
            )
        ).all()
    # psycopg prepares a statement at its 5th execution; PostgreSQL tries 5 custom plans, then
    # keeps the generic one if it is not dearer.
    assert plans.custom_plans <= 5 and plans.generic_plans >= 10, plans


def test_writes_sharing_a_transaction_send_their_savepoints_with_their_own_statements(
    lethe, tmp_path
) -> None:
    """In a group commit each write has a savepoint. ``SAVEPOINT`` goes out with the write's
    checks and ``RELEASE`` with the next write's (the ``COMMIT`` releases the last): two round
    trips a write, the checks and the inserts, where the savepoint's own made it four."""
    for i in range(2):  # the subject's key, and the checks' statement planned (its first run)
        lethe.memories.write(agent(), write_cmd(f"Alice likes tea, note {i}"))
    done: list[Any] = []

    def writer(i: int) -> None:
        done.append(lethe.memories.write(agent(), write_cmd(f"Alice likes green tea, cup {i}")).item)

    with wire(lethe.uow.tenant_engine, tmp_path / "trace") as statements:
        # Holds the lock while both writers queue (they are one batch), as t1 like them.
        with lethe.uow.acting_for("t1"), lethe.uow.write():
            threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 10
            while len(lethe.uow._group._queued) < 2 and time.monotonic() < deadline:
                time.sleep(0.005)
        for t in threads:
            t.join(timeout=30)
    assert len(done) == 2
    begin = f'"{db._locked_begin(None, "t1")}"'
    # The holder's empty transaction, then the batch: its BEGIN, two round trips a write, its COMMIT.
    assert round_trips(tmp_path / "trace") == [begin, '"COMMIT"', begin, *["Sync"] * 4, '"COMMIT"']
    assert [s for s in statements if "SAVEPOINT" in s] == [
        "SAVEPOINT lethe_write",
        "RELEASE SAVEPOINT lethe_write",
        "SAVEPOINT lethe_write",
    ]
    assert {lethe.memories.get(agent(), m.id).content for m in done} == {
        "Alice likes green tea, cup 0",
        "Alice likes green tea, cup 1",
    }
