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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def fetch(conn: Connection, sql: str, params: Any, describe: bool) -> tuple[list[Any], Any]:
    """The rows of one statement as the driver returns them, and (if ``describe``) the
    cursor's description of its columns."""
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        conn.dispatch.before_cursor_execute(conn, cursor, sql, params, None, False)
        try:
            cursor.execute(sql, params)
            return cursor.fetchall(), cursor.description if describe else None
        except conn.dialect.loaded_dbapi.Error as exc:
            raise as_sqlalchemy_error(conn, exc, sql) from exc
    finally:
        cursor.close()


def execute_many(conn: Connection, sql: str, params: Sequence[Any]) -> None:
    """One statement run once per parameter set (an insert of rows); nothing read back."""
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    many = len(params) > 1  # one row: a plain execute (psycopg's executemany opens a pipeline)
    try:
        conn.dispatch.before_cursor_execute(conn, cursor, sql, params if many else params[0], None, many)
        try:
            if many:
                cursor.executemany(sql, params)
            else:
                cursor.execute(sql, params[0])
        except conn.dialect.loaded_dbapi.Error as exc:
            raise as_sqlalchemy_error(conn, exc, sql) from exc
    finally:
        cursor.close()


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
