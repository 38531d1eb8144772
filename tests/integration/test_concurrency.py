"""Two real processes racing: the database decides, exactly one wins."""

from __future__ import annotations

import pytest

from tests.children import released_together
from tests.conftest import agent, event_count, write_cmd


def _racer(barrier, queue, settings_dict, cmd_kwargs):  # runs in a fresh process
    from lethe.api.bootstrap import build
    from lethe.api.settings import Settings
    from lethe.vault import errors
    from tests.conftest import agent as make_agent
    from tests.conftest import write_cmd as make_cmd

    c = build(Settings(**settings_dict))
    try:
        cmd = make_cmd(**cmd_kwargs)
        barrier.wait(timeout=30)
        try:
            outcome = c.memories.write(make_agent(), cmd)
            queue.put(("ok", outcome.item.id, outcome.item.version, outcome.created))
        except errors.VersionConflict as exc:
            queue.put(("conflict", type(exc).__name__, 0, False))
    finally:
        c.close()


def _race(settings, kwargs_a, kwargs_b):
    sd = {"data_dir": str(settings.data_dir), "database_url": settings.database_url}
    return released_together(_racer, [(sd, kw) for kw in (kwargs_a, kwargs_b)])


@pytest.mark.slow
def test_two_processes_racing_the_same_expected_version_exactly_one_wins(lethe, settings):
    item = lethe.memories.write(agent(), write_cmd("v1")).item
    before = event_count(lethe)
    results = _race(
        settings,
        {"content": "from process A", "id": item.id, "expected_version": 1, "key": "race-a"},
        {"content": "from process B", "id": item.id, "expected_version": 1, "key": "race-b"},
    )
    outcomes = sorted(r[0] for r in results)
    assert outcomes == ["conflict", "ok"]
    assert event_count(lethe) == before + 1
    current = lethe.memories.get(agent(), item.id)
    assert current.version == 2 and current.content.startswith("from process")


@pytest.mark.slow
def test_two_processes_retrying_one_idempotent_write_create_one_memory(lethe, settings):
    before = event_count(lethe)
    same = {"content": "written once", "key": "same-key"}
    results = _race(settings, same, same)
    assert [r[0] for r in results] == ["ok", "ok"]
    assert results[0][1] == results[1][1]
    assert sorted(r[3] for r in results) == [False, True]
    assert event_count(lethe) == before + 1
