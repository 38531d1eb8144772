"""Figure 1's log volume counts what commits append to the database's log, on both engines.

The counts explain why a governed write cannot approach a plain insert: each commit waits
for its log to reach the disk. They must count commits' log, not report a constant.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlalchemy as sa

from lethe.api.bench.baselines import plain_sqlite_engine
from lethe.api.bench.writes import _logged
from tests.conftest import PostgresDatabases

pytestmark = pytest.mark.alone  # it measures the machine: run without the parallel workers beside it

ROW_BYTES = 1500  # as hex, 3,000 characters: most of a 4 KiB page, and incompressible


def _notes(engine: sa.Engine) -> sa.Table:
    table = sa.Table(
        "notes", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True), sa.Column("body", sa.Text)
    )
    table.metadata.create_all(engine)
    return table


def _insert(engine: sa.Engine, table: sa.Table, commits: int) -> None:
    for _ in range(commits):
        with engine.begin() as conn:
            conn.execute(table.insert(), {"body": os.urandom(ROW_BYTES).hex()})


def _logged_by(engine: sa.Engine, table: sa.Table, commits: int) -> int:
    return _logged(engine, lambda: _insert(engine, table, commits))


def test_sqlite_wal_pages_grow_with_the_commits_counted(tmp_path: Path) -> None:
    engine = plain_sqlite_engine(tmp_path / "plain.sqlite3")
    try:
        table = _notes(engine)
        _insert(engine, table, 5)  # before the count: not counted
        none, ten, twenty = (_logged_by(engine, table, n) for n in (0, 10, 20))
    finally:
        engine.dispose()
    assert none == 0
    assert 10 <= ten <= 40  # a data page (and at times an index page) per commit
    assert twenty > ten * 1.5


def test_postgres_wal_bytes_grow_with_the_commits_counted(postgres: PostgresDatabases) -> None:
    url = postgres.create()
    engine = sa.create_engine(url)
    try:
        table = _notes(engine)
        ten, twenty = (_logged_by(engine, table, n) for n in (10, 20))
    finally:
        engine.dispose()
        postgres.drop(url)
    assert ten >= 10 * 2 * ROW_BYTES  # every row's bytes pass through the WAL
    assert twenty > ten * 1.5
