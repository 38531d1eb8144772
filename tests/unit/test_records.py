"""Rows as named tuples (``store.records``) and enum members by value (``memory.repository``):
the hot reads' mapping must give exactly what SQLAlchemy's rows and the enums gave."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from lethe.vault.memory.repository import _member, to_item
from lethe.vault.model import Authority, Kind, Status, Trust
from lethe.vault.store.records import records

_META = sa.MetaData()
_T = sa.Table("t", _META, sa.Column("id", sa.String, primary_key=True), sa.Column("n", sa.Integer))


@pytest.fixture
def conn():
    engine = sa.create_engine("sqlite://")
    _META.create_all(engine)
    with engine.begin() as c:
        c.execute(_T.insert(), [{"id": "a", "n": 1}, {"id": "b", "n": None}])
        yield c
    engine.dispose()


def test_records_hold_the_rows_values_under_their_column_names(conn) -> None:
    stmt = sa.select(_T.c.id, _T.c.n, (_T.c.n + 1).label("next")).order_by(_T.c.id)
    rows = conn.execute(stmt).all()
    got = records(conn.execute(stmt))
    assert [tuple(r) for r in got] == [tuple(r) for r in rows]
    assert [(r.id, r.n, r.next) for r in got] == [(r.id, r.n, r.next) for r in rows]
    assert got[0]._fields == ("id", "n", "next")


def test_one_class_per_set_of_columns(conn) -> None:
    first = records(conn.execute(sa.select(_T)))
    again = records(conn.execute(sa.select(_T).where(_T.c.id == "b")))
    other = records(conn.execute(sa.select(_T.c.n)))
    assert type(first[0]) is type(again[0])
    assert type(other[0]) is not type(first[0])


def test_no_rows_no_records(conn) -> None:
    assert records(conn.execute(sa.select(_T).where(_T.c.id == "none"))) == []


@pytest.mark.parametrize("enum", [Kind, Authority, Trust, Status])
def test_a_member_by_its_stored_value_is_the_enums_own(enum) -> None:
    for member in enum:
        assert _member(enum, member.value) is member
        assert _member(enum, member) is member  # a member passes through the enum's own path
    with pytest.raises(ValueError):
        _member(enum, "no-such-value")


def test_an_item_maps_from_a_record_as_from_a_row(conn) -> None:
    """The same columns read through a record and through SQLAlchemy's row give equal items."""
    columns = {
        "id": "m1",
        "tenant_id": "t",
        "agent_id": "a",
        "subject_ref": "s",
        "purpose": "p",
        "kind": "fact",
        "content_hmac": "h",
        "provenance": '{"source_type": "user_statement", "source_ref": "r", "sources": ["x"]}',
        "authority": "agent",
        "trust": "untrusted",
        "confidence": 0.5,
        "created_at": datetime(2026, 1, 2, 3, 4, 5, 6),
        "expires_at": datetime(2027, 1, 2, 3, 4, 5),
        "version": 2,
        "status": "active",
        "supersedes_id": None,
        "idempotency_key": "k",
    }
    stmt = sa.select(*(sa.literal(v).label(k) for k, v in columns.items()))
    row = conn.execute(stmt).one()
    (record,) = records(conn.execute(stmt))
    from_row = to_item(row, "subject", "content", score={"total": 1.0})
    assert to_item(record, "subject", "content", score={"total": 1.0}) == from_row
    assert from_row.kind is Kind.FACT and from_row.status is Status.ACTIVE
    assert to_item(SimpleNamespace(**row._mapping), "subject", "content", score={"total": 1.0}) == from_row
