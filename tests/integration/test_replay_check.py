"""Replay at the driver: it stores what SQLAlchemy stores, and its check still names every
difference, on real SQLite and real PostgreSQL."""

from __future__ import annotations

import gc
from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.dialects import postgresql, sqlite

from lethe.vault.clock import db_time, iso
from lethe.vault.store import replay
from lethe.vault.store.driver_rows import insert_rows, raw_rows, time_as_stored
from lethe.vault.store.tables import forgotten_subjects, idempotency_keys, memories
from tests.conftest import agent, write_cmd

_SHAPE = sa.MetaData()
by_orm, by_driver = (
    sa.Table(
        name,
        _SHAPE,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("maybe_at", sa.DateTime),
        sa.Column("blob", sa.LargeBinary),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("note", sa.Text),
    )
    for name in ("rows_by_orm", "rows_by_driver")
)
ROWS = [
    {
        "id": 1,
        "at": datetime(2026, 12, 3, 18, 50, 15, 123456),
        "maybe_at": None,
        "blob": b"\x00\xff" * 20,
        "score": 0.9,
        "note": "tea",
    },
    {
        "id": 2,
        "at": datetime(2026, 1, 2, 3, 4, 5),
        "maybe_at": datetime(2027, 1, 1),
        "blob": None,
        "score": 1.0,
        "note": None,
    },
]


def test_a_driver_insert_stores_exactly_what_sqlalchemy_stores(lethe):
    _SHAPE.create_all(lethe.uow.engine)
    with lethe.uow.write() as conn:
        conn.execute(by_orm.insert(), ROWS)
        insert_rows(conn, by_driver, ROWS)
    with lethe.uow.read() as conn:
        typed = [conn.execute(sa.select(t).order_by(t.c.id)).all() for t in (by_orm, by_driver)]
        raw = [sorted(raw_rows(conn, t)) for t in (by_orm, by_driver)]
    assert typed[0] == typed[1] and [tuple(r._mapping.values()) for r in typed[0]] == [
        tuple(r.values()) for r in ROWS
    ]
    assert raw[0] == raw[1]  # byte for byte as the driver stores them, timestamps' text included


def test_a_driver_insert_refuses_a_row_missing_a_column(lethe):
    _SHAPE.create_all(lethe.uow.engine)
    with pytest.raises(KeyError), lethe.uow.write() as conn:
        insert_rows(conn, by_driver, [{"id": 3, "at": datetime(2026, 1, 1), "score": 0.5}])
    with lethe.uow.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(by_driver)).scalar_one() == 0


def test_the_check_names_every_kind_of_difference(lethe):
    items = [lethe.memories.write(agent(), write_cmd(f"tea number {i}")).item for i in range(3)]
    assert replay.check(lethe.uow.engine).identical
    with lethe.uow.maintenance("test: alter rows as their owner"), lethe.uow.write() as conn:
        # A microsecond later: a raw compare of SQLite's timestamp text must still see it.
        row = conn.execute(sa.select(memories.c.updated_at).where(memories.c.id == items[0].id)).scalar_one()
        conn.execute(
            memories.update()
            .where(memories.c.id == items[0].id)
            .values(updated_at=row.replace(microsecond=(row.microsecond + 1) % 1_000_000))
        )
        conn.execute(idempotency_keys.delete().where(idempotency_keys.c.memory_id == items[1].id))
        conn.execute(
            forgotten_subjects.insert().values(
                tenant_id="t1", subject_ref="nobody", forgotten_at="2026-12-03T00:00:00.000000Z", generation=1
            )
        )
    report = replay.check(lethe.uow.engine)
    assert report.events == 3
    assert report.differences == [
        f"memories ('t1', '{items[0].id}'): columns differ: updated_at",
        f"idempotency_keys ('t1', 'a1', '{items[1].idempotency_key}'): only in the replay",
        "forgotten_subjects ('t1', 'nobody'): only in the live projection",
    ]


def test_the_check_leaves_the_cycle_collector_as_it_found_it(lethe):
    lethe.memories.write(agent(), write_cmd())
    assert gc.isenabled()
    assert replay.check(lethe.uow.engine).identical
    assert gc.isenabled()
    gc.disable()
    try:
        assert replay.check(lethe.uow.engine).identical
        assert not gc.isenabled()
    finally:
        gc.enable()


_OFFSETS = st.builds(timezone, st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23)))


@given(st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30), timezones=_OFFSETS))
def test_a_timestamp_taken_from_an_events_text_is_what_sqlalchemy_stores_on_sqlite(at: datetime) -> None:
    """Replay on SQLite slices ``clock.iso``'s text into the column's text, skipping the
    datetime; any other form of the text (an offset, no fraction) goes the long way."""
    as_stored = time_as_stored(sqlite.dialect())
    assert as_stored is not None
    processor = sa.DateTime().dialect_impl(sqlite.dialect()).bind_processor(sqlite.dialect())
    for text in (iso(at), at.isoformat(), at.replace(microsecond=0).isoformat()):
        assert as_stored(text) == processor(db_time(text)), text
    assert time_as_stored(postgresql.dialect()) is None  # the driver takes the datetime itself
