"""Constants written into a statement's SQL (``store.constant``): quoted so that no value of
the code can end the literal early, and refused for anything that is not a plain string."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from lethe.vault.store.constant import constant

_T = sa.table("t", sa.column("v", sa.String))


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.dialect()])
def test_a_constant_is_in_the_sql_and_no_parameter(dialect) -> None:
    compiled = sa.select(_T.c.v).where(_T.c.v == constant("operator")).compile(dialect=dialect)
    assert "v = 'operator'" in str(compiled)
    assert compiled.params == {}


@pytest.mark.parametrize("value", ["operator", "it's", "''", "a'); DROP TABLE t; --", "\\", ""])
def test_a_constant_selects_exactly_its_value(value: str) -> None:
    engine = sa.create_engine("sqlite://")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (v TEXT)")
        conn.execute(sa.insert(_T), [{"v": value}, {"v": value + "x"}, {"v": "other"}])
        found = conn.execute(sa.select(_T.c.v).where(_T.c.v == constant(value))).scalars().all()
        assert found == [value]
        assert conn.execute(sa.select(sa.func.count()).select_from(_T)).scalar_one() == 3  # table intact
    engine.dispose()


@pytest.mark.parametrize("value", [1, None, b"operator", "a\x00b"])
def test_anything_but_a_plain_string_is_refused(value: object) -> None:
    with pytest.raises(TypeError):
        constant(value)  # type: ignore[arg-type]
