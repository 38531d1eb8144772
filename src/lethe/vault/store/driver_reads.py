"""Hot reads at the driver: a select compiled once per dialect, run on the connection's cursor.

SQLAlchemy's execution of a compiled and cached select (its execution context, result
metadata, psycopg's column descriptions, its event dispatch) cost about 100 µs of CPU a
statement on the 2-core bench machine, as much again as the driver's own execute and
fetch; an agent's search sends three or four such statements and its authentication one.
``rows`` sends the same SQL with the same values: the statement is compiled once, each
bound value goes through the bind processor of its type for the dialect, the driver runs
it on the connection's own cursor (its transaction, its snapshot), and each column goes
through its type's result processor, as ``Connection.execute`` would do. Rows come back
as named tuples (``store.records``), read by name or position.

Statement listeners see each statement and driver errors come back as SQLAlchemy's
(``store.driver_cursor``). A statement the plan cannot carry (a list rendered anew at each
execution, as SQLite's ``one_of``; parameter names the SQL spells escaped) runs through
``Connection.execute``, with the same rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.store import driver_cursor
from lethe.vault.store.records import record_class, records

_Processor = Callable[[Any], Any]


class _Plan:
    """One select compiled for one dialect: its SQL, how its parameters are bound, and how
    its columns are read (the result processors, set at its first run at the driver, from
    the driver's column types)."""

    def __init__(
        self, compiled: Any, binds: dict[str, _Processor], stmt: sa.Select, keys: tuple[str, ...]
    ) -> None:
        self.compiled = compiled
        self.sql = compiled.string
        self.positions = tuple(compiled.positiontup) if compiled.positional else None
        self.binds = list(binds.items())
        self.dialect = compiled.dialect
        self.types = [c.type.dialect_impl(self.dialect) for c in stmt.selected_columns]
        self.make = record_class(keys)._make
        self.results: list[tuple[int, _Processor]] | None = None

    def parameters(self, params: Mapping[str, Any]) -> Any:
        values = self.compiled.construct_params(params)
        for name, proc in self.binds:
            values[name] = proc(values[name])
        return values if self.positions is None else tuple(values[n] for n in self.positions)

    def result_processors(self, description: Any) -> list[tuple[int, _Processor]]:
        if self.results is None:  # threads may race to set it, with the same list
            found = []
            for i, (impl, described) in enumerate(zip(self.types, description, strict=True)):
                proc = impl.result_processor(self.dialect, described[1])
                if proc is not None:
                    found.append((i, proc))
            self.results = found
        return self.results


# By statement object (a select hashes by identity) and dialect: each statement is built once.
_PLANS: dict[tuple[sa.Select, str, str], _Plan | None] = {}
_LOCK = threading.Lock()


def rows(conn: Connection, stmt: sa.Select, params: Mapping[str, Any]) -> list[Any]:
    """Every row of ``stmt`` with ``params``, as named tuples (module doc). ``stmt`` must be
    built once (a module constant or a cached builder's: its plan is kept by identity),
    and its columns must have distinct names (``store.records``). Its first execution runs
    through SQLAlchemy, whose row keys become the plan's field names."""
    key = (stmt, conn.dialect.name, conn.dialect.paramstyle)
    try:
        plan = _PLANS[key]
    except KeyError:
        result = conn.execute(stmt, params)
        found = records(result)
        sendable = driver_cursor.compiled_for_driver(stmt, conn.dialect)
        made = None if sendable is None else _Plan(*sendable, stmt, tuple(result.keys()))
        with _LOCK:
            _PLANS.setdefault(key, made)
        return found
    if plan is None:
        return records(conn.execute(stmt, params))
    return _run(conn, plan, params)


def _run(conn: Connection, plan: _Plan, params: Mapping[str, Any]) -> list[Any]:
    fetched, description = driver_cursor.fetch(conn, plan.sql, plan.parameters(params), plan.results is None)
    processors = plan.results if description is None else plan.result_processors(description)
    make = plan.make
    if not processors:
        return [make(r) for r in fetched]
    out = []
    for r in fetched:
        values = list(r)
        for i, proc in processors:
            values[i] = proc(values[i])
        out.append(make(values))
    return out


def first(conn: Connection, stmt: sa.Select, params: Mapping[str, Any]) -> Any | None:
    """The first row of ``rows`` (None if there is none)."""
    found = rows(conn, stmt, params)
    return found[0] if found else None
