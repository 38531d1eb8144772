"""A scope ranked in memory comes out best first, equal scores by memory id (as SQL orders them)."""

from __future__ import annotations

import numpy as np

from lethe.vault.memory.ranked_scope import _best_first


def test_rows_come_best_first_and_equal_totals_by_memory_id():
    ids = ["m-c", "m-a", "m-d", "m-b", "m-e"]
    total = np.array([0.5, 0.9, 0.5, 0.5, 0.1])
    assert [ids[i] for i in _best_first(total, ids.__getitem__)] == ["m-a", "m-b", "m-c", "m-d", "m-e"]


def test_only_the_rows_read_are_ordered():
    sorted_runs = []

    def memory_id(i: int) -> str:
        sorted_runs.append(i)
        return f"m-{i:04d}"

    total = np.zeros(1000)
    total[7] = 1.0
    first = _best_first(total, memory_id)
    assert next(first) == 7 and sorted_runs == []  # the best row needs no sort by id
    assert next(first) == 0 and len(sorted_runs) == 999  # the run of equal totals, by id
