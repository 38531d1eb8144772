"""SQL sent on the connection's own DBAPI cursor, with what SQLAlchemy's path would add.

``store.driver_reads`` (hot selects) and ``store.driver_rows`` (a write's inserts, replay)
send SQL compiled once straight to the driver, past SQLAlchemy's execution of a statement
(its execution context, result set-up and event dispatch: about 100 µs of CPU a statement
on the 2-core bench machine, as much as the driver's own work). Two things of that path
are kept here: listeners of ``before_cursor_execute`` see each statement
(``pipeline.guard``, the tests that count round trips), and a driver's exception is raised
as SQLAlchemy's exception of its kind, the connection invalidated if it was lost, so
``UnitOfWork`` tells an outage (503) from a bug the same way whichever path sent the
statement. ``store.pipeline`` translates the exceptions raised at a pipeline's sync alike.
The cursor is the connection's: the statement runs in its transaction, on its snapshot.

``defer`` holds a statement without parameters or rows (a group commit's ``SAVEPOINT`` and
``RELEASE``) until the connection's next statement, and on PostgreSQL sends it in the same
round trip (psycopg's pipeline mode): a write in a shared transaction went from four round
trips under the write lock to two. A statement SQLAlchemy sends first sends what is held, in
a round trip of its own; a transaction that ends drops it (a ``COMMIT`` releases every
savepoint; nothing ran after one not yet sent). Its error, if any, is the next statement's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

_HELD = "lethe_deferred"  # in the pooled connection's ``info``: statements sent with the next one
IN_PIPELINE = "lethe_inserts_pipelined"  # there while ``store.pipeline`` has a pipeline open


def defer(conn: Connection, sql: str) -> None:
    """Send ``sql`` (no parameters, no rows) with this connection's next statement (module doc)."""
    conn.connection.info.setdefault(_HELD, []).append(sql)


def take_back(conn: Connection, sql: str) -> bool:
    """Withdraw the last held ``sql`` if it was not sent yet (True), as a savepoint nothing ran in."""
    held = conn.connection.info.get(_HELD)
    if held and held[-1] == sql:
        held.pop()
        return True
    return False


def drop_held(conn: Connection) -> None:
    """Forget what is held: the transaction it belonged to has ended (an invalidated
    connection holds nothing: its check-in drops it)."""
    if not conn.invalidated:
        conn.connection.info.pop(_HELD, None)


def hold_statements(engine: sa.Engine) -> None:
    """What ``defer`` needs of an engine: a statement SQLAlchemy sends first sends what is
    held; a transaction that ends, or a connection returned to the pool, drops it."""

    @sa.event.listens_for(engine, "before_cursor_execute")
    def _first_the_held(
        conn: Connection, _cursor: Any, _sql: str, _params: Any, context: Any, _many: bool
    ) -> None:
        if context is not None:  # SQLAlchemy's own statement (ours pass none, and send it themselves)
            flush_held(conn)

    for name in ("commit", "rollback"):
        sa.event.listen(engine, name, drop_held)

    @sa.event.listens_for(engine, "checkin")
    def _returned(_dbapi_conn: Any, record: Any) -> None:
        record.info.pop(_HELD, None)


def flush_held(conn: Connection) -> None:
    """Send what is held now, in one round trip (before a statement SQLAlchemy sends itself)."""
    if conn.connection.info.get(_HELD):
        with _cursor(conn, "(held statements)") as cursor, _with_held(conn, cursor):
            pass


@contextmanager
def _cursor(conn: Connection, sql: str) -> Iterator[Any]:
    """The connection's own cursor, closed after the block; a driver error in the block
    (a pipeline's sync included) raised as SQLAlchemy's."""
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        yield cursor
    except conn.dialect.loaded_dbapi.Error as exc:
        raise as_sqlalchemy_error(conn, exc, sql) from exc
    finally:
        cursor.close()


@contextmanager
def _with_held(conn: Connection, cursor: Any) -> Iterator[None]:
    """The block's statements, preceded by what is held, in one round trip: queued in psycopg's
    pipeline, sent at its sync when the block ends (or in the pipeline already open:
    ``store.pipeline``). Without a pipeline mode each is its own round trip."""
    info = conn.connection.info
    held = info.pop(_HELD, None)
    if not held:
        yield
        return
    opened = pipelined(conn.dialect) and not info.get(IN_PIPELINE)
    with conn.connection.driver_connection.pipeline() if opened else nullcontext():  # type: ignore[union-attr]
        for sql in held:
            conn.dispatch.before_cursor_execute(conn, cursor, sql, None, None, False)
            cursor.execute(sql)
        yield


def pipelined(dialect: Any) -> bool:
    """Whether the driver has a pipeline mode: psycopg over libpq 14 or later. Not SQLite
    (no round trips to save), not an older libpq (one round trip each)."""
    return dialect.name == "postgresql" and dialect.loaded_dbapi.Pipeline.is_supported()  # type: ignore[no-any-return]


def fetch(conn: Connection, sql: str, params: Any, describe: bool) -> tuple[list[Any], Any]:
    """The rows of one statement as the driver returns them, and (if ``describe``) the
    cursor's description of its columns; what is held goes out with it."""
    with _cursor(conn, sql) as cursor:
        # Read once the pipeline's sync is answered: fetching inside it costs a round trip more.
        with _with_held(conn, cursor):
            conn.dispatch.before_cursor_execute(conn, cursor, sql, params, None, False)
            cursor.execute(sql, params)
        return cursor.fetchall(), cursor.description if describe else None


def execute_many(conn: Connection, sql: str, params: Sequence[Any]) -> None:
    """One statement run once per parameter set (an insert of rows); nothing read back."""
    many = len(params) > 1  # one row: a plain execute (psycopg's executemany opens a pipeline)
    with _cursor(conn, sql) as cursor, _with_held(conn, cursor):
        conn.dispatch.before_cursor_execute(conn, cursor, sql, params if many else params[0], None, many)
        if many:
            cursor.executemany(sql, params)
        else:
            cursor.execute(sql, params[0])


def compiled_for_driver(stmt: sa.Executable, dialect: Any) -> tuple[Any, dict[str, Any]] | None:
    """``stmt`` compiled once for ``dialect`` and the bind processor of each parameter that
    has one (by name), as ``Connection.execute`` would apply them; None if the SQL cannot be
    sent as compiled (a list rendered anew at each execution, parameter names it escapes)."""
    compiled = stmt.compile(dialect=dialect)
    if "POSTCOMPILE" in compiled.string or compiled.escaped_bind_names:
        return None
    processors = {
        name: proc
        for name, bind in compiled.binds.items()
        if (proc := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
    }
    return compiled, processors


def as_sqlalchemy_error(conn: Connection, exc: Exception, statement: str) -> sa.exc.DBAPIError:
    """The exception SQLAlchemy would have raised for ``exc`` (its class by the driver's)."""
    lost = conn.dialect.is_disconnect(exc, conn.connection.dbapi_connection, None)
    if lost:
        conn.invalidate(exc)
    return sa.exc.DBAPIError.instance(
        statement,
        None,
        exc,
        conn.dialect.loaded_dbapi.Error,
        connection_invalidated=lost,
        dialect=conn.dialect,
    )
