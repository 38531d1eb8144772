"""The expiry sweep looks for expired memories without holding the write lock.

A server sweeps every 30 s in every worker of every node, and the scan reads every memory
(no index leads with the expiry). Under the write lock, every writer of every process
waited for it, even when it found nothing: about 60 ms per 100,000 memories on SQLite.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import sqlalchemy as sa
from freezegun import freeze_time

from lethe.vault.clock import utcnow
from lethe.vault.memory import service
from lethe.vault.store.tables import events
from tests.conftest import agent, write_cmd, write_lock_held


def test_a_sweep_that_finds_nothing_does_not_wait_for_the_write_lock(lethe):
    c = lethe
    c.memories.write(agent(), write_cmd("tea lasts", kind="fact"))
    with write_lock_held(c.uow) as holder:
        swept: list[int] = []
        sweeper = threading.Thread(target=lambda: swept.append(c.memories.sweep_expired()), daemon=True)
        sweeper.start()
        sweeper.join(10)
        assert swept == [0]  # done while the other writer still holds the lock
        assert holder.is_alive()


def test_a_memory_another_sweeper_expired_meanwhile_gets_one_expired_event(lethe, monkeypatch):
    c = lethe
    with freeze_time(utcnow() - timedelta(hours=2)):
        notes = [
            c.memories.write(agent(), write_cmd(f"tea note {i}", kind="working_note", ttl_seconds=60))
            for i in range(3)
        ]
    scan = service.repo.live_past_expiry
    others: list[int] = []

    def scan_while_another_sweeper_runs(conn, now, limit, among=None):  # type: ignore[no-untyped-def]
        found = scan(conn, now, limit, among)
        if among is None and not others:  # between this sweep's scan and its write
            others.append(-1)  # (the other sweeper's own scan comes through here too)
            others[0] = c.memories.sweep_expired()
        return found

    monkeypatch.setattr(service.repo, "live_past_expiry", scan_while_another_sweeper_runs)
    assert c.memories.sweep_expired() == 0  # found three, but the other sweeper had expired them
    assert others == [3]
    with c.uow.read() as conn:
        expired = (
            conn.execute(sa.select(events.c.memory_id).where(events.c.type == "memory.expired"))
            .scalars()
            .all()
        )
    assert sorted(expired) == sorted(n.item.id for n in notes)  # one event each
