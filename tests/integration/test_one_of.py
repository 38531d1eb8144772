"""``store.in_list.one_of``: a column in a list parameter, on real SQLite and PostgreSQL.

It finds exactly the listed values whatever they hold (quotes, backslashes, commas, braces
and spaces cannot end an element of PostgreSQL's array text early), an empty list finds
nothing, and on PostgreSQL every list length runs as one statement text with one parameter.
A search filtered by kinds, which binds its kinds so, finds those kinds only.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lethe.vault.model import SearchQuery
from lethe.vault.store.in_list import one_of
from tests.conftest import agent, write_cmd

STORED = ["a", "b", 'say "hi"', "back\\slash", "comma,inside", "{braces}", " spaced ", "NULL", "ünï", ""]
values = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)

scratch = sa.Table("one_of_scratch", sa.MetaData(), sa.Column("v", sa.String(64), primary_key=True))
STATEMENT = sa.select(scratch.c.v).where(one_of(scratch.c.v, "wanted"))


@pytest.fixture
def engine(lethe) -> Iterator[sa.Engine]:  # type: ignore[no-untyped-def]
    """The store's own engine, with a table of ``STORED`` beside Lethe's."""
    e = lethe.uow.engine
    scratch.create(e)
    with e.begin() as conn:
        conn.execute(scratch.insert(), [{"v": v} for v in STORED])
    yield e
    scratch.drop(e)


def found(engine: sa.Engine, wanted: list[str]) -> list[str]:
    with engine.connect() as conn:
        return sorted(conn.execute(STATEMENT, {"wanted": wanted}).scalars())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wanted=st.lists(st.one_of(st.sampled_from(STORED), values), max_size=8))
def test_one_of_finds_exactly_the_listed_values(engine, wanted) -> None:  # type: ignore[no-untyped-def]
    assert found(engine, wanted) == sorted(set(STORED) & set(wanted))


def test_an_empty_list_finds_nothing(engine) -> None:  # type: ignore[no-untyped-def]
    assert found(engine, []) == []


def test_a_value_that_looks_like_array_syntax_is_one_element(engine) -> None:  # type: ignore[no-untyped-def]
    assert found(engine, ['a","b']) == []  # not "a" and "b"
    assert found(engine, ["a}", "{b"]) == []


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_runs_every_list_length_as_one_statement_text(engine) -> None:  # type: ignore[no-untyped-def]
    sent: list[tuple[str, object]] = []

    def record(_conn, _cursor, statement, parameters, *_args) -> None:  # type: ignore[no-untyped-def]
        sent.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        for n in (1, 3, 9):
            assert found(engine, STORED[:n]) == sorted(STORED[:n])
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    assert len({statement for statement, _ in sent}) == 1
    assert "ANY" in sent[0][0]
    assert all(list(parameters) == ["wanted"] for _, parameters in sent)  # type: ignore[call-overload]


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_string_is_refused_where_a_list_is_meant(engine) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(sa.exc.StatementError, match="list of strings"):
        found(engine, "ab")  # type: ignore[arg-type]


def test_a_search_by_kinds_finds_those_kinds_only(lethe) -> None:  # type: ignore[no-untyped-def]
    fact = lethe.memories.write(agent(), write_cmd("alice drinks green tea", kind="fact")).item
    liking = lethe.memories.write(agent(), write_cmd("alice likes green tea", kind="preference")).item
    lethe.memories.write(agent(), write_cmd("alice ordered green tea", kind="working_note"))

    def found(*kinds: str) -> set[str]:
        q = SearchQuery(query="green tea", purpose="support", kinds=kinds)
        return {i.id for i in lethe.search.search(agent(), q).items}

    assert found("fact") == {fact.id}
    assert found("fact", "preference") == {fact.id, liking.id}
    assert len(found()) == 3
