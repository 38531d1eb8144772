"""A job that reads the whole store runs once per interval, whichever worker or node runs it.

Every worker of every node wakes for the expiry sweep and the scheduled compaction; the
one that takes the job's turn in the database runs it (``store.turns``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from lethe.vault.clock import utcnow
from lethe.vault.store.turns import SLACK, take_turn
from tests.children import released_together

MINUTE = timedelta(minutes=1)


def test_a_turn_taken_is_free_again_only_when_the_interval_has_passed(lethe):
    now = utcnow()
    assert take_turn(lethe.uow, "expiry_sweep", MINUTE, now)  # nobody took it yet
    assert not take_turn(lethe.uow, "expiry_sweep", MINUTE, now)
    assert not take_turn(lethe.uow, "expiry_sweep", MINUTE, now + MINUTE * (0.99 - SLACK))
    assert take_turn(lethe.uow, "compaction", MINUTE, now)  # each job has its own turn
    assert take_turn(lethe.uow, "expiry_sweep", MINUTE, now + MINUTE)
    assert not take_turn(lethe.uow, "expiry_sweep", MINUTE, now + MINUTE * 1.5)  # from the last taken


def _taker(barrier, queue, settings_dict: dict, at: str) -> None:  # runs in a fresh process
    from lethe.api.bootstrap import build
    from lethe.api.settings import Settings

    c = build(Settings(**settings_dict))
    try:
        barrier.wait(timeout=30)
        queue.put(take_turn(c.uow, "compaction", MINUTE, datetime.fromisoformat(at)))
    finally:
        c.close()


def test_processes_waking_together_get_one_turn_between_them(lethe, settings):
    sd = {"data_dir": str(settings.data_dir), "database_url": settings.database_url}
    at = utcnow().isoformat()
    taken = released_together(_taker, [(sd, at)] * 4)
    assert sorted(taken) == [False, False, False, True]
