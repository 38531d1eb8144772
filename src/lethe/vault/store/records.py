"""Result rows as named tuples, for the hot reads that map many columns of each row.

SQLAlchemy's ``Row`` answers ``row.name`` in its ``__getattr__``, after Python's own
lookup has failed: about 1.1 µs a column on a CI machine, against 80 ns for a named
tuple's field. A search opens and maps its ten results through some 30 attributes each,
a third of a millisecond a request there. A named tuple costs about 1 µs a row to build,
and its class is built once per set of column names (a statement's).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from sqlalchemy.engine import Result

_CLASSES: dict[tuple[str, ...], type[tuple[Any, ...]]] = {}


def records(result: Result[Any]) -> list[Any]:
    """Every row of ``result`` as a named tuple of its columns (read by name or position)."""
    cls = record_class(tuple(result.keys()))
    return [tuple.__new__(cls, row) for row in result]


def record_class(keys: tuple[str, ...]) -> type[tuple[Any, ...]]:
    """The named tuple class of rows with these column names (``ValueError`` if two are
    the same or one is not an identifier)."""
    cls = _CLASSES.get(keys)
    if cls is None:  # one class per statement's columns; threads may race to build it, harmlessly
        cls = _CLASSES.setdefault(keys, namedtuple("Record", keys))
    return cls
