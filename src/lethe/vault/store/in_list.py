"""``one_of(column, name)``: the column is one of a list bound as parameter ``name``.

SQLAlchemy renders a plain ``IN`` of a list parameter anew at each execution, one
placeholder per value (its post-compile step, about 75 µs of CPU a statement here), and
PostgreSQL gets a new statement text for each list length. On PostgreSQL the list is one
array parameter instead, ``column = ANY(CAST(:name AS type[]))``: one text, rendered once.
The array travels as its text form, which the server parses; psycopg's own list adaptation
cost the client more CPU than the text. Measured on a bench scope of 1,000 memories, 8
paired rounds of 1,000 searches in one process: 1,396 µs of CPU a search against 1,487
(-6 %). SQLite has no arrays and keeps the expanding ``IN``. Callers pass a list of
strings either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal


class OneOf(sa.ColumnElement[bool]):
    """``column IN :name`` (a list), rendered per dialect; see the module docstring."""

    inherit_cache = True
    type = sa.Boolean()
    _is_implicitly_boolean = True  # a comparison: no ``= 1`` where booleans are integers (SQLite)
    _traverse_internals = [
        ("column", InternalTraversal.dp_clauseelement),
        ("name", InternalTraversal.dp_string),
    ]

    def __init__(self, column: sa.ColumnElement[Any], name: str) -> None:
        self.column = column
        self.name = name

    @property
    def _from_objects(self) -> list[Any]:  # the column's table, for FROM and correlation
        return self.column._from_objects


def one_of(column: sa.ColumnElement[Any], name: str) -> OneOf:
    return OneOf(column, name)


class ArrayText(sa.types.TypeDecorator[Sequence[str]]):
    """A list of strings bound as PostgreSQL's array text: every element quoted, ``"`` and
    ``\\`` escaped, so no value can end an element or the array early."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Sequence[str] | None, dialect: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise TypeError("one_of takes a list of strings")
        return "{" + ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in value) + "}"


@compiles(OneOf)
def _expanding_in(element: OneOf, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.column.in_(sa.bindparam(element.name, expanding=True)), **kw)


@compiles(OneOf, "postgresql")
def _any_of_array(element: OneOf, compiler: SQLCompiler, **kw: Any) -> str:
    array = sa.cast(sa.bindparam(element.name, type_=ArrayText()), ARRAY(element.column.type))
    return compiler.process(element.column == sa.any_(array), **kw)
