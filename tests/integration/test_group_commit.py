"""Concurrent writes of a process share one transaction, and each keeps its own outcome.

Each test holds the write lock in the test's thread while writer threads queue behind it,
so that they are one batch when it is let go (``store.group_commit``). SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, OperationalError

from lethe.vault.errors import StoreUnavailable, VersionConflict
from lethe.vault.store import replay
from lethe.vault.store.pipeline import inserts_sent_together
from lethe.vault.store.tables import events, memories, scope_changes
from tests.conftest import agent, write_cmd

# The batches here mix rows of several tenants (g0, g1, ...) to test group commit itself, which
# behind PostgreSQL's tenant wall only the tables' owner may write in one transaction.
SEVERAL_TENANTS = "test: group commit's mechanics, over rows of several tenants"


def _row(tenant: str) -> Callable[[Any], str]:
    """A piece of work that writes one row (a scope token of its own tenant)."""

    def work(conn: Any) -> str:
        conn.execute(scope_changes.insert().values(tenant_id=tenant, agent_id="a", purpose="p", token=tenant))
        return tenant

    return work


def _rows_sent_together(*tenants: str) -> Callable[[Any], str]:
    """A piece of work that inserts its rows without a round trip each (``store.pipeline``):
    a duplicate among them fails when the block ends, not at its own statement."""

    def work(conn: Any) -> str:
        with inserts_sent_together(conn):
            for tenant in tenants:
                _row(tenant)(conn)
        return tenants[0]

    return work


def _failing(tenant: str, error: BaseException) -> Callable[[Any], str]:
    """Writes its row, then raises."""

    def work(conn: Any) -> str:
        _row(tenant)(conn)
        raise error

    return work


def _as_one_batch(c, works: list[Callable[[Any], Any]]) -> tuple[list[Any], int]:  # type: ignore[no-untyped-def]
    """Run ``works`` from threads of their own as one batch: their outcomes (a result or
    the exception raised) in order, and how many transactions committed meanwhile."""
    outcomes: list[Any] = [None] * len(works)
    commits: list[int] = []

    def committed(conn: Any) -> None:
        commits.append(1)

    sa.event.listen(c.uow.engine, "commit", committed)

    def writer(i: int) -> None:
        try:
            with c.uow.maintenance(SEVERAL_TENANTS):  # a thread starts in no scope: set in it
                outcomes[i] = c.uow.grouped(works[i])
        except BaseException as exc:
            outcomes[i] = exc

    try:
        with c.uow.write():  # holds the lock while the writers queue
            threads = [threading.Thread(target=writer, args=(i,)) for i in range(len(works))]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 10
            while len(c.uow._group._queued) < len(works) and time.monotonic() < deadline:
                time.sleep(0.005)
            assert len(c.uow._group._queued) == len(works)
        commits.clear()  # the holder's own (empty) transaction
        for t in threads:
            t.join(timeout=30)
    finally:
        sa.event.remove(c.uow.engine, "commit", committed)
    return outcomes, len(commits)


def _tenants_written(c) -> set[str]:  # type: ignore[no-untyped-def]
    with c.uow.maintenance("test: inspect every tenant's rows"), c.uow.read() as conn:
        return set(
            conn.execute(sa.select(scope_changes.c.tenant_id).where(scope_changes.c.purpose == "p")).scalars()
        )


def test_concurrent_writers_share_one_commit_and_each_gets_its_own_result(lethe):
    outcomes, commits = _as_one_batch(lethe, [_row(f"g{i}") for i in range(8)])
    assert outcomes == [f"g{i}" for i in range(8)]
    assert commits == 1
    assert _tenants_written(lethe) == {f"g{i}" for i in range(8)}


def test_a_writer_that_fails_is_rolled_back_alone_and_gets_its_own_error(lethe):
    conflict = VersionConflict("stale")
    works = [
        _row("g0"),
        _failing("g1", conflict),
        _row("g2"),
        _row("g0"),
        _row("g4"),
    ]  # g0 twice: a duplicate key
    outcomes, commits = _as_one_batch(lethe, works)
    assert outcomes[0] == "g0" and outcomes[2] == "g2" and outcomes[4] == "g4"
    assert outcomes[1] is conflict
    assert isinstance(outcomes[3], IntegrityError)
    assert commits == 1
    assert _tenants_written(lethe) == {"g0", "g2", "g4"}  # neither g1's row nor a second g0


def test_a_writer_whose_inserts_sent_together_fail_is_rolled_back_alone(lethe):
    works = [_rows_sent_together("g0"), _rows_sent_together("g1", "g0", "g5"), _rows_sent_together("g2")]
    outcomes, commits = _as_one_batch(lethe, works)
    assert outcomes[0] == "g0" and outcomes[2] == "g2"
    assert isinstance(outcomes[1], IntegrityError)  # SQLAlchemy's, as for a statement sent alone
    assert commits == 1
    assert _tenants_written(lethe) == {"g0", "g2"}  # none of g1's rows: not the one before the duplicate


def test_a_driver_error_aborts_the_whole_batch_and_no_writer_is_told_it_was_written(lethe):
    outage = OperationalError("INSERT", {}, Exception("disk I/O error"))
    works = [_row("g0"), _failing("g1", outage), _row("g2")]
    outcomes, commits = _as_one_batch(lethe, works)
    assert all(isinstance(o, StoreUnavailable) for o in outcomes)
    assert commits == 0
    assert _tenants_written(lethe) == set()


def test_a_writer_alone_runs_without_a_savepoint_and_its_error_rolls_it_back(lethe):
    statements: list[str] = []
    sa.event.listen(lethe.uow.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    with lethe.uow.maintenance(SEVERAL_TENANTS):
        assert lethe.uow.grouped(_row("g0")) == "g0"
        with pytest.raises(VersionConflict):
            lethe.uow.grouped(_failing("g1", VersionConflict("stale")))
    assert not any("SAVEPOINT" in s.upper() for s in statements)
    assert _tenants_written(lethe) == {"g0"}


def test_a_writer_alone_whose_inserts_sent_together_fail_commits_none_of_them(lethe):
    with pytest.raises(IntegrityError), lethe.uow.maintenance(SEVERAL_TENANTS):
        lethe.uow.grouped(_rows_sent_together("g0", "g1", "g0", "g2"))
    assert _tenants_written(lethe) == set()
    with lethe.uow.maintenance(SEVERAL_TENANTS):  # the connection is usable again
        assert lethe.uow.grouped(_rows_sent_together("g3")) == "g3"
    assert _tenants_written(lethe) == {"g3"}


def test_memories_written_by_sixteen_threads_at_once_are_all_readable_and_replay_to_the_same_state(lethe):
    done: list[Any] = []

    def writer(i: int) -> None:
        done.append(lethe.memories.write(agent(), write_cmd(f"Alice noted fact number {i}")).item)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(done) == 16
    assert {lethe.memories.get(agent(), m.id).content for m in done} == {
        f"Alice noted fact number {i}" for i in range(16)
    }
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        seqs = list(conn.execute(sa.select(events.c.seq).order_by(events.c.seq)).scalars())
        assert conn.execute(sa.select(sa.func.count()).select_from(memories)).scalar_one() == 16
    assert seqs == list(range(1, len(seqs) + 1))  # the log stays dense
    assert replay.check(lethe.uow.engine).differences == []


def test_a_writer_that_fails_before_sending_anything_leaves_the_others_written(lethe):
    """Its savepoint was never sent (PostgreSQL holds it for the work's first statement):
    nothing to roll back, and the next writer's statements go out as usual."""

    def refused(conn: Any) -> str:
        raise VersionConflict("stale before any statement")

    outcomes, commits = _as_one_batch(lethe, [_row("g0"), refused, _row("g2")])
    assert outcomes[0] == "g0" and outcomes[2] == "g2" and isinstance(outcomes[1], VersionConflict)
    assert commits == 1
    assert _tenants_written(lethe) == {"g0", "g2"}
