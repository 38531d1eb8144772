"""Figure 1's second baseline writes exactly the rows governed writes added, on both engines.

Its ratio claims to separate governance from storage: that holds only if the baseline
writes every row of every table a write touched, no more and no fewer, through SQLAlchemy
and at the driver alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from lethe.api.bench.baselines import plain_sqlite_engine
from lethe.api.bench.same_rows import WRITTEN, SameRows, rows_written
from lethe.api.bootstrap import Container
from tests.conftest import agent, write_cmd

pytestmark = pytest.mark.alone  # it measures the machine: run without the parallel workers beside it

TENANT = "t1"


def _stored(conn: sa.Connection, table: sa.Table, memory_ids: list[str]) -> list[tuple]:
    """The rows of ``table`` that belong to these memories (scope tokens: the tenant's)."""
    stmt = sa.select(table).where(table.c.tenant_id == TENANT)
    if "memory_id" in table.c:
        stmt = stmt.where(table.c.memory_id.in_(memory_ids))
    elif "id" in table.c:
        stmt = stmt.where(table.c.id.in_(memory_ids))
    return sorted(tuple(r) for r in conn.execute(stmt))


@pytest.mark.parametrize("at_driver", [False, True], ids=["sqlalchemy", "driver"])
def test_the_same_rows_baseline_writes_every_row_a_governed_write_added(
    lethe: Container, backend: str, tmp_path: Path, at_driver: bool
) -> None:
    caller = agent(TENANT)
    ids = [
        lethe.memories.write(
            caller, write_cmd(f"alice likes tea and biscuits, note {i}", f"subject-{i % 2}")
        ).item.id
        for i in range(4)
    ]
    with lethe.uow.acting_for(TENANT), lethe.uow.read() as conn:
        per_write = rows_written(conn, TENANT, ids)
        expected = {t.name: _stored(conn, t, ids) for t in WRITTEN}
    assert len(per_write) == 4
    assert all(expected[t.name] for t in WRITTEN)  # a write adds a row to every one of them
    assert len(expected["search_postings"]) > 4  # several terms a memory

    # As the bench holds them: PostgreSQL, a schema of the same database; SQLite, a file of their own.
    engine = lethe.uow.engine if backend == "postgres" else plain_sqlite_engine(tmp_path / "plain.sqlite3")
    try:
        same = SameRows(engine)
        seconds = same.write_all_at_driver(per_write) if at_driver else same.write_all(per_write)
        with engine.connect() as conn:
            copied = {t.name: _stored(conn, same.copies[t.name], ids) for t in WRITTEN}
    finally:
        if backend != "postgres":
            engine.dispose()
    assert len(seconds) == 4 and all(s > 0 for s in seconds)
    assert copied == expected
