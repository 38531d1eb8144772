"""Background loops keep going after a failure, log it by type only, and stop cleanly."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Callable

import pytest

from lethe.api.http.background import BackgroundWork
from lethe.api.http.logging import JsonFormatter

SECRET = "CANARY-subject@example.com"


def test_a_failing_run_is_logged_without_its_message_and_the_loop_continues(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []
    results: list[int] = []

    def job() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(f"could not forget {SECRET}")
        return 2

    async def scenario() -> None:
        work = BackgroundWork()
        work.every(0.01, "test_job", job, results.append)
        while len(calls) < 3:
            await asyncio.sleep(0.01)
        await work.stop()

    with caplog.at_level(logging.INFO, logger="lethe.api"):
        asyncio.run(asyncio.wait_for(scenario(), timeout=10))
    assert results[:2] == [2, 2]
    (failure,) = [r for r in caplog.records if r.getMessage() == "background task failed"]
    line = JsonFormatter().format(failure)
    assert json.loads(line)["error"] == "RuntimeError" and json.loads(line)["task"] == "test_job"
    assert all(SECRET not in JsonFormatter().format(r) for r in caplog.records)


def test_stop_waits_for_a_run_in_progress() -> None:
    finished: list[bool] = []

    def slow() -> int:
        import time

        time.sleep(0.3)
        finished.append(True)
        return 0

    async def scenario() -> None:
        work = BackgroundWork()
        work.every(60, "slow", slow, lambda n: None)
        await asyncio.sleep(0.05)
        await work.stop()

    asyncio.run(scenario())
    assert finished == [True]


def test_exception_messages_never_reach_a_log_line() -> None:
    try:
        raise ValueError(f"bad content {SECRET}")
    except ValueError as exc:
        record = logging.LogRecord("lethe.api", logging.ERROR, __file__, 1, "unhandled error", None, None)
        record.exc_info = (type(exc), exc, exc.__traceback__)
    line = json.loads(JsonFormatter().format(record))
    assert line["exc_type"] == "ValueError" and line["exc_frames"]
    assert SECRET not in json.dumps(line)


def test_the_checkpoint_job_signs_only_when_the_log_grew(lethe) -> None:  # type: ignore[no-untyped-def]
    from lethe.api.http.background import sign_checkpoint
    from tests.conftest import agent, write_cmd

    for i in range(3):
        lethe.memories.write(agent(), write_cmd(f"memory {i}"))
    grown = sign_checkpoint(lethe)
    assert grown == lethe.audit.size() > 0
    assert lethe.audit.latest().tree_size == lethe.audit.size()
    assert sign_checkpoint(lethe) == 0  # nothing new: no new checkpoint
    lethe.memories.write(agent(), write_cmd("one more"))
    assert sign_checkpoint(lethe) == 1


def test_a_job_that_waits_first_runs_only_after_one_interval() -> None:
    runs: list[float] = []

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()

        def late() -> int:
            runs.append(loop.time() - start)
            return 0

        work = BackgroundWork()
        work.every(0.3, "late", late, lambda n: None, wait_first=True)
        await asyncio.sleep(0.1)
        before = len(runs)
        await asyncio.sleep(0.35)
        await work.stop()
        return before

    assert asyncio.run(scenario()) == 0  # nothing at start
    assert runs and runs[0] >= 0.3


def test_the_server_gives_freed_memory_back_every_interval_and_never_when_told_not_to(  # type: ignore[no-untyped-def]
    lethe, settings, monkeypatch
) -> None:
    from lethe.api.http import allocator
    from lethe.api.http.background import start_server_work
    from lethe.api.http.metrics import Metrics

    trims: list[int] = []
    monkeypatch.setattr(allocator, "trim", lambda: trims.append(1) or 0)

    async def serve(interval: float) -> list[str]:
        work = start_server_work(
            lethe, settings.model_copy(update={"malloc_trim_interval_seconds": interval}), Metrics()
        )
        names = [t.get_name() for t in work._tasks]
        for _ in range(500):  # up to 5 s for two ticks (a loaded machine)
            if len(trims) >= 2 or not interval:
                break
            await asyncio.sleep(0.01)
        await work.stop()
        return names

    assert "malloc_trim" in asyncio.run(serve(0.01)) and len(trims) >= 2
    trims.clear()
    assert "malloc_trim" not in asyncio.run(serve(0)) and trims == []


def _two_workers_run(  # type: ignore[no-untyped-def]
    lethe, settings, install: Callable[[Callable[..., int]], None], update: dict[str, float], seconds: float
) -> list[float]:
    """When (seconds from start) a job ran, over ``seconds`` of two workers' server work with
    ``update`` to the settings; ``install`` puts the recorder in the job's place."""
    from lethe.api.http import background
    from lethe.api.http.metrics import Metrics

    ran: list[float] = []

    async def two_workers() -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()

        def record(*_: object) -> int:
            ran.append(loop.time() - start)
            return 0

        install(record)
        changed = settings.model_copy(update=update)
        workers = [background.start_server_work(lethe, changed, Metrics()) for _ in range(2)]
        await asyncio.sleep(seconds)
        for work in workers:
            await work.stop()

    asyncio.run(two_workers())
    return ran


@pytest.mark.alone  # its gaps are timed: run without the parallel workers beside it
def test_workers_started_together_sign_checkpoints_at_different_moments(  # type: ignore[no-untyped-def]
    lethe, settings, monkeypatch
) -> None:
    """A signing checks every row since the last checkpoint, whoever signed it: two workers
    signing at the same moment do the same work on the same cores, and requests wait."""
    from lethe.api.http import background

    fractions = itertools.cycle([0.1, 0.35, 0.6, 0.85])  # where second runs fall in the interval
    monkeypatch.setattr(background._STAGGER, "random", lambda: next(fractions))
    ran = _two_workers_run(
        lethe,
        settings,
        lambda record: monkeypatch.setattr(background, "sign_checkpoint", record),
        {"checkpoint_interval_seconds": 1.0},
        0.95,
    )
    first, second, *later = sorted(ran)
    assert first < 0.3 and second < 0.3  # both run at start
    assert len(later) == 2 and later[1] - later[0] > 0.2  # then apart, not both at 1.0


@pytest.mark.alone  # its gaps are timed: run without the parallel workers beside it
def test_a_job_that_waits_first_and_staggers_runs_after_an_interval_and_a_random_part_of_another() -> None:
    """The scheduled compaction's schedule: not while a restarted server takes its first
    requests, and not in every worker that started with it at the same moment."""
    from lethe.api.http import background

    fractions = iter([0.1, 0.6])
    ran: dict[str, float] = {}

    async def two_workers() -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        workers = []
        for name in ("first", "second"):
            work = BackgroundWork()
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(background._STAGGER, "random", lambda: next(fractions))
                work.every(
                    0.5,
                    name,
                    lambda n=name: ran.setdefault(n, loop.time() - start) and 0,
                    lambda n: None,
                    wait_first=True,
                    stagger=True,
                )
                await asyncio.sleep(0)  # the loop draws its fraction when it starts
            workers.append(work)
        await asyncio.sleep(0.95)
        for work in workers:
            await work.stop()

    asyncio.run(two_workers())
    assert 0.5 <= ran["first"] < 0.65 and 0.75 <= ran["second"] < 0.9, ran


@pytest.mark.parametrize("job", ["expiry_sweep", "compaction"])
@pytest.mark.alone  # its gaps are timed: run without the parallel workers beside it
def test_workers_started_together_run_a_whole_store_job_once_per_interval_between_them(  # type: ignore[no-untyped-def]
    lethe, settings, monkeypatch, job
) -> None:
    """A sweep reads every memory, a scheduled compaction the whole log: two workers (or
    nodes) running each on its own clock did the same scan twice for the same result."""
    from lethe.api.http import background

    def install(record: Callable[..., int]) -> None:
        if job == "compaction":
            monkeypatch.setattr(background, "scheduled_compaction", record)
        else:
            monkeypatch.setattr(lethe.memories, "sweep_expired", record)

    fractions = itertools.cycle([0.1, 0.2])  # the workers wake 0.05 s apart
    monkeypatch.setattr(background._STAGGER, "random", lambda: next(fractions))
    update = {"sweep_interval_seconds": 0.5, "compaction_interval_seconds": 0.5}
    ran = _two_workers_run(lethe, settings, install, update, 1.7)
    assert len(ran) >= 2  # it still runs, every interval
    # Once per interval, whoever runs it: without turns both workers ran it at start (the
    # sweep) or 0.05 s apart (the compaction).
    # (Each run is recorded after its turn's write transaction, whose time varies: not 0.475.)
    gaps = [b - a for a, b in itertools.pairwise(sorted(ran))]
    assert min(gaps) > 0.25, ran
