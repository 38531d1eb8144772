"""Rows in or out of a table at the driver, for replay, bulk imports and the write path.

A replay moves every row of the projection twice (in, then out to compare), and SQLAlchemy's
per-row work (building each row's parameters, running each value's bind or result
processor) was about half of a replay check's time. Here a statement is compiled once per
table and dialect, only the columns whose type has a bind processor run it (SQLite's
``DateTime``, say), and the driver's ``executemany`` gets plain tuples. The values stored
are the ones ``Connection.execute`` would store: the same compiled statement, the same
processors. On SQLite a timestamp can go straight from the event's text to the column's
text (``time_as_stored``), skipping the datetime and its processor: a tenth of a check.

A governed write inserts its rows here too (its event, memory, idempotency key, index row,
postings and vector): SQLAlchemy's per-statement work (cache key, parameters, result setup)
was about a fifth of a write, and sending its compiled SQL straight to the driver made a
write ~10 % faster on SQLite and on PostgreSQL (bench figure 1, 300 writes, paired runs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection, Dialect

from lethe.vault.clock import db_time
from lethe.vault.store import driver_cursor

_Processor = Callable[[Any], Any]
_Compiled = tuple[str, tuple[str, ...], list[tuple[int, _Processor]], bool]
# By statement or table object (they hash by identity) and dialect: built once each.
_COMPILED: dict[tuple[Any, str, str], _Compiled] = {}


def _insert_of(table: sa.Table, dialect: Dialect) -> _Compiled:
    """The INSERT of every column of ``table`` for ``dialect`` (``_compiled_once``)."""
    return _compiled_once(table, dialect, table.insert)


def _compiled_once(key_object: Any, dialect: Dialect, build: Callable[[], sa.Executable]) -> _Compiled:
    """The statement ``build`` makes, compiled for ``dialect`` once per ``key_object``: its
    SQL, its parameters in order, the bind processors by position, and whether the driver
    takes tuples."""
    key = (key_object, dialect.name, dialect.paramstyle)
    if key not in _COMPILED:
        sendable = driver_cursor.compiled_for_driver(build(), dialect)
        if sendable is None:
            raise ValueError("a statement rendered at each execution cannot be sent at the driver")
        compiled, binds = sendable
        names = tuple(compiled.positiontup) if compiled.positional else tuple(compiled.binds)
        processors = [(i, binds[n]) for i, n in enumerate(names) if n in binds]
        _COMPILED[key] = (compiled.string, names, processors, compiled.positional)
    return _COMPILED[key]


def execute_rows(conn: Connection, stmt: sa.Executable, rows: Sequence[Mapping[str, Any]]) -> None:
    """``stmt`` run once per row of ``rows`` (each naming every parameter), nothing read
    back: its compiled SQL and its bind processors, as ``Connection.execute`` would send
    them. ``stmt`` must be built once (a module constant or a cached builder's)."""
    if rows:
        compiled = _compiled_once(stmt, conn.dialect, lambda: stmt)
        driver_cursor.execute_many(conn, *_driver_params(compiled, rows, ()))


def insert_rows(
    conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]], stored: Collection[str] = ()
) -> None:
    """Insert ``rows`` (each naming every column of ``table``) in one ``executemany``.
    ``stored``: columns whose values are already what the driver stores (their bind
    processors are skipped), as ``time_as_stored`` gives timestamps."""
    if not rows:
        return
    driver_cursor.execute_many(conn, *driver_insert(table, conn.dialect, rows, stored))


def driver_insert(
    table: sa.Table, dialect: Dialect, rows: Sequence[Mapping[str, Any]], stored: Collection[str] = ()
) -> tuple[str, list[Any]]:
    """The SQL and the driver's parameters (one per row) of ``insert_rows``, for a DBAPI
    cursor's ``executemany``; ``rows`` and ``stored`` as there."""
    return _driver_params(_insert_of(table, dialect), rows, stored)


def _driver_params(
    compiled: _Compiled, rows: Sequence[Mapping[str, Any]], stored: Collection[str]
) -> tuple[str, list[Any]]:
    sql, names, processors, positional = compiled
    columns = [[row[n] for row in rows] for n in names]  # column by column: one processor call each
    for i, proc in processors:
        if names[i] not in stored:
            columns[i] = list(map(proc, columns[i]))
    params: list[Any] = list(zip(*columns, strict=True))
    if not positional:  # named placeholders (psycopg's): one mapping per row
        params = [dict(zip(names, values, strict=True)) for values in params]
    return sql, params


def time_as_stored(dialect: Dialect) -> Callable[[str], Any] | None:
    """What a ``DateTime`` column stores for an event's ISO-8601 text, computed from the
    text, where that is cheaper than a datetime and its bind processor (SQLite: text);
    None where the driver takes the datetime (``clock.db_time``) itself."""
    return _sqlite_time if dialect.name == "sqlite" else None


_SQLITE = sqlite.dialect()
_SQLITE_DATETIME = sa.DateTime().dialect_impl(_SQLITE).bind_processor(_SQLITE)
_ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")  # as ``clock.iso`` writes


def _sqlite_time(text: str) -> str:
    """``clock.iso``'s fixed-width UTC form, ``2026-01-02T03:04:05.000006Z``, becomes SQLite's
    ``2026-01-02 03:04:05.000006`` by slicing; any other text goes the long way round."""
    if _ISO_UTC.fullmatch(text):
        return f"{text[:10]} {text[11:26]}"
    return _SQLITE_DATETIME(db_time(text))


def raw_rows(conn: Connection, query: sa.Table | sa.Select) -> Iterator[tuple[Any, ...]]:
    """The rows of ``query`` (a table: all its columns) as the driver returns them, with no
    result processing (SQLite's timestamps stay text): compare such rows only with rows of
    the same dialect. Its parameters must be literals (numbers, strings)."""
    stmt = sa.select(*query.columns) if isinstance(query, sa.Table) else query
    sql = stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}).string
    cursor = conn.connection.cursor()  # the connection's own: its transaction, its snapshot
    try:
        cursor.execute(sql)
        while rows := cursor.fetchmany(_FETCH):
            yield from rows
    finally:
        cursor.close()


_FETCH = 5000  # rows per fetch: bounded memory per batch, few round trips
