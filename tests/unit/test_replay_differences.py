"""The replay check compares its two sides in step while they agree, then by key: what it
reports must not depend on the order the rows come in."""

from __future__ import annotations

import random

import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from lethe.vault.store.replay import _by_key, _differences

_TABLE = sa.Table(
    "things",
    sa.MetaData(),
    sa.Column("tenant_id", sa.String, primary_key=True),
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("value", sa.String),
)

_rows = st.dictionaries(st.integers(0, 40), st.sampled_from(["a", "b", None]), max_size=30)


@given(live=_rows, replayed=_rows, shuffle=st.booleans(), seed=st.integers(0, 2**16))
def test_the_differences_are_the_same_in_step_as_by_key_whatever_the_order(
    live: dict[int, str | None], replayed: dict[int, str | None], shuffle: bool, seed: int
) -> None:
    left = [("t", k, v) for k, v in sorted(live.items())]
    right = [("t", k, v) for k, v in sorted(replayed.items())]
    if shuffle:
        random.Random(seed).shuffle(right)
    expected = _by_key(_TABLE, list(left), list(right))
    assert _differences(_TABLE, iter(left), iter(right)) == expected
    assert _differences(_TABLE, left, right) == expected  # lists as well as iterators


def test_rows_that_agree_in_step_until_one_side_ends_leave_the_rest_only_on_the_other() -> None:
    same = [("t", i, "a") for i in range(3)]
    assert _differences(_TABLE, iter([*same, ("t", 3, "b")]), iter(same)) == [
        "things ('t', 3): only in the live projection"
    ]
    assert _differences(_TABLE, iter(same), iter([*same, ("t", 3, "b")])) == [
        "things ('t', 3): only in the replay"
    ]
    assert _differences(_TABLE, iter(same), iter(same)) == []
