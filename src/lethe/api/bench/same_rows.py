"""Figure 1's second baseline: the rows a governed write adds, written plainly.

Figure 1's plain insert writes one row of one table. A governed write adds rows to seven:
its event, its memory, its idempotency key, its scope's change token (an upsert), its
blind-index row, one search posting per distinct term and its sealed vector. This baseline
inserts those same rows, read back from Lethe's store as they were stored, into plain copies
of the seven tables (same columns, keys and indexes), one transaction per write, through
SQLAlchemy Core at the same durability. Set against it, a write's ratio is what governance
costs (validation, policy, idempotency and fence checks, sealing, embedding, canonical
JSON, the Merkle leaf) on top of the storage it needs; figure 1's ratio is both together.

The same rows can also go in at the driver (``write_all_at_driver``): each table's insert
compiled once and sent with the DBAPI cursor's ``executemany`` (on PostgreSQL all of them in
one pipeline), with no SQLAlchemy work per statement. That is about as fast as these rows
can be stored at this durability from Python: its rate over the plain insert's is about the
highest ratio a Python implementation of these tables could reach, and a write's ratio to it
is what Lethe's own code costs on top of that storage.

On SQLite the copies live in the baseline's own file; on PostgreSQL in a schema (``plain``,
or another for a second set of copies) of the same database, so their indexes keep their
names without meeting Lethe's.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from lethe.vault.store.db import upsert_insert
from lethe.vault.store.driver_cursor import pipelined
from lethe.vault.store.driver_rows import driver_insert
from lethe.vault.store.tables import (
    events,
    idempotency_keys,
    memories,
    memory_vectors,
    scope_changes,
    search_index,
    search_postings,
)

SCHEMA = "plain"  # of the copies on PostgreSQL
_BY_MEMORY = (events, memories, idempotency_keys, search_index, search_postings, memory_vectors)
WRITTEN = (*_BY_MEMORY, scope_changes)  # every table a governed write adds a row to

Rows = list[tuple[sa.Table, list[dict[str, Any]]]]  # one write's rows, table by table


class SameRows:
    """Plain copies of the tables a write adds rows to, and the plain writes of those rows."""

    def __init__(self, engine: sa.Engine, schema: str = SCHEMA) -> None:
        self.engine = engine
        in_schema = None if engine.dialect.name == "sqlite" else schema
        md = sa.MetaData()
        # None is documented (the target MetaData's schema) but missing from SQLAlchemy's annotation.
        self.copies = {t.name: t.to_metadata(md, schema=in_schema) for t in WRITTEN}  # type: ignore[arg-type]
        if in_schema:
            with engine.begin() as conn:
                conn.execute(sa.schema.CreateSchema(in_schema, if_not_exists=True))
        md.create_all(engine)
        scopes = self.copies[scope_changes.name]
        insert = upsert_insert(scopes, engine.dialect.name)
        self._upsert = insert.on_conflict_do_update(
            index_elements=["tenant_id", "agent_id", "purpose"], set_={"token": insert.excluded.token}
        )

    def write(self, rows: Rows) -> float:
        """One write's rows in one transaction; its seconds."""
        t = time.perf_counter()
        with self.engine.begin() as conn:
            for table, values in rows:
                stmt = self._upsert if table is scope_changes else self.copies[table.name].insert()
                conn.execute(stmt, values)
        return time.perf_counter() - t

    def write_all(self, per_write: Iterable[Rows]) -> list[float]:
        """Each write's rows in a transaction of its own; the seconds of each."""
        return [self.write(rows) for rows in per_write]

    def write_all_at_driver(self, per_write: Iterable[Rows]) -> list[float]:
        """As ``write_all``, through one DBAPI connection with no SQLAlchemy per statement:
        per write, one ``executemany`` per table (in one pipeline where the driver has one, as
        Lethe's own inserts) and the commit."""
        dialect = self.engine.dialect
        upsert = self._upsert.compile(dialect=dialect)
        names = tuple(upsert.positiontup) if upsert.positional else tuple(upsert.params)
        pooled = self.engine.raw_connection()
        driver = pooled.driver_connection
        assert driver is not None, "a connection just checked out has its driver connection"
        together = driver.pipeline if pipelined(dialect) else contextlib.nullcontext
        seconds = []
        cursor = driver.cursor()
        try:
            for rows in per_write:
                t = time.perf_counter()
                with together():
                    for table, values in rows:
                        if table is scope_changes:
                            by_name = [{n: v[n] for n in names} for v in values]
                            params = [tuple(p.values()) for p in by_name] if upsert.positional else by_name
                            cursor.executemany(upsert.string, params)
                        else:
                            cursor.executemany(*driver_insert(self.copies[table.name], dialect, values))
                driver.commit()
                seconds.append(time.perf_counter() - t)
        finally:
            cursor.close()
            pooled.close()  # back to the pool, which rolls back whatever a failure left open
        return seconds


def rows_written(conn: sa.Connection, tenant_id: str, memory_ids: list[str]) -> list[Rows]:
    """The rows each of these memories' writes added, as stored, in the order Lethe writes
    them; a write's scope token is its scope's row (the upsert leaves its last value)."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {m: {} for m in memory_ids}
    for table in _BY_MEMORY:
        where = table.c.memory_id if table is not memories else table.c.id
        stmt = sa.select(table).where(table.c.tenant_id == tenant_id, where.in_(memory_ids))
        for row in conn.execute(stmt):
            m = row._mapping
            key = m["id"] if table is memories else m["memory_id"]
            found[key].setdefault(table.name, []).append(dict(m))
    scopes = {
        (r.agent_id, r.purpose): dict(r._mapping)
        for r in conn.execute(sa.select(scope_changes).where(scope_changes.c.tenant_id == tenant_id))
    }
    out = []
    for memory_id in memory_ids:
        by_table = found[memory_id]
        (memory,) = by_table[memories.name]
        scope = scopes[(memory["agent_id"], memory["purpose"])]
        rows: Rows = [(t, by_table.get(t.name, [])) for t in (events, memories, idempotency_keys)]
        rows += [(scope_changes, [scope])]
        rows += [(t, by_table.get(t.name, [])) for t in (search_index, search_postings, memory_vectors)]
        out.append([(t, v) for t, v in rows if v])  # a store without vectors, say, has none
    return out
