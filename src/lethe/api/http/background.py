"""Periodic background work of the server (expiry sweep, erasure runner, compaction,
audit checkpoints, webhook deliveries, returning freed memory to the kernel).

Each job runs in a worker thread on a fixed interval; a failure is logged by its type
only (storage errors can quote parameters) and the job is retried on the next tick. The
two that read the whole store (the expiry sweep, the scheduled compaction) run once per
interval across every worker and node: each worker takes the job's turn first
(``store.turns``), and runs it only if nobody else did within the interval. Webhook
deliveries run in every worker; each delivery is leased by one sender (``vault.webhooks.delivery``).

Exceptions: none escape a loop; ``stop`` cancels what overstays its grace period.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import timedelta

from lethe.api.bootstrap import Container
from lethe.api.http import allocator
from lethe.api.http.metrics import Metrics
from lethe.api.settings import Settings
from lethe.api.store_lease import StoreLease
from lethe.vault.clock import utcnow
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.turns import take_turn
from lethe.vault.webhooks.deadlines import prune_deliveries, sweep_deadlines

log = logging.getLogger("lethe.api")
Job = Callable[[], int]  # a unit of background work; returns how much it did
_STAGGER = random.Random()  # where a staggered job's second run falls in its interval


class BackgroundWork:
    """Periodic jobs on the event loop, run in worker threads; failures are logged and retried."""

    def __init__(self) -> None:
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def every(
        self,
        seconds: float,
        name: str,
        fn: Job,
        on_result: Callable[[int], object],
        wait_first: bool = False,
        stagger: bool = False,
    ) -> None:
        """Run ``fn`` every ``seconds``: at once, or after one interval with ``wait_first``.
        ``stagger``: the second run comes after a random part of the interval (with
        ``wait_first``, the first run after one interval and a random part of another), so
        that the workers and nodes that all started together do not all run it at the same
        moment."""
        loop = self._loop(seconds, name, fn, on_result, wait_first, stagger)
        self._tasks.append(asyncio.create_task(loop, name=name))

    async def _loop(
        self,
        seconds: float,
        name: str,
        fn: Job,
        on_result: Callable[[int], object],
        wait_first: bool,
        stagger: bool,
    ) -> None:
        spread = seconds * _STAGGER.random() if stagger else 0.0
        if wait_first:  # the spread goes into the first wait
            await self._pause(seconds + spread)
            spread = 0.0
        wait = spread or seconds
        while not self._stop.is_set():
            try:
                n = await asyncio.to_thread(fn)
                if n:
                    on_result(n)
                    log.info("background task did work", extra={"task": name, "count": n})
            except Exception as exc:
                # The type only: messages of storage errors can quote parameters.
                log.warning("background task failed", extra={"task": name, "error": type(exc).__name__})
            await self._pause(wait)
            wait = seconds

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or until asked to stop."""
        with suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=seconds)

    async def stop(self, grace: float = 10.0) -> None:
        """Ask the loops to stop, let a run in progress finish, cancel what overstays."""
        self._stop.set()
        if not self._tasks:
            return
        _, pending = await asyncio.wait(self._tasks, timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def sign_checkpoint(container: Container) -> int:
    """Sign a checkpoint if the log grew; how many events it newly covers.

    Signing checks every row added since the last checkpoint against its leaf, so doing it
    regularly keeps the check a certificate waits for small (not the whole log).
    """
    latest = container.audit.latest()
    before = latest.tree_size if latest is not None else 0
    return container.audit.sign().tree_size - before


LEASE_RENEW_SECONDS = 2.0
VECTOR_FILL_SECONDS = 2.0  # a page per run, from the start: a store missing many fills in minutes
# Once none is missing, how often a worker counts again (a writer without an embedder may
# have written since): one read of every retrievable memory's vector row by key.
VECTOR_RECOUNT_SECONDS = 60.0


def _fill_vectors(container: Container) -> int:
    """One page of memories without a vector embedded (``vault.memory.vector_fill``), its
    progress logged while any remain; once none do, only a count every minute."""
    fill = container.vector_fill
    if fill.remaining == 0 and time.monotonic() - fill.counted_at < VECTOR_RECOUNT_SECONDS:
        return 0
    if fill.remaining in (None, 0) and fill.missing() == 0:
        return 0
    n = fill.fill_page()
    log.info(
        "memories given a vector", extra={"task": "vector_fill", "count": n, "remaining": fill.remaining}
    )
    return n


def _sweep(container: Container) -> int:
    """The expiry sweep's turn: memories past their expiry (the count), then the keyed erasure
    filings past their 24 hours, sealed verification codes with them (``vault.erasure.filings``):
    once per interval across the deployment, like the memories' sweep, not in every worker."""
    expired = container.memories.sweep_expired()
    container.erasure.forget_expired_filings()
    sweep_deadlines(container.uow)  # request.due_soon / request.overdue webhooks, once each
    prune_deliveries(container.uow, utcnow())  # finished deliveries' records, after 30 days
    return expired


def start_server_work(
    container: Container, settings: Settings, metrics: Metrics, lease: StoreLease | None = None
) -> BackgroundWork:
    """Start the server's periodic jobs (on the running event loop), each counted in ``metrics``."""
    work = BackgroundWork()
    if lease is not None:
        work.every(LEASE_RENEW_SECONDS, "store_lease", lease.renew, lambda n: None)
    work.every(
        settings.sweep_interval_seconds,
        "expiry_sweep",
        in_turn(
            container.uow,
            "expiry_sweep",
            settings.sweep_interval_seconds,
            lambda: _sweep(container),
        ),
        metrics.expirations.inc,
        stagger=True,  # each sweep reads every memory
    )
    work.every(
        settings.erasure_interval_seconds,
        "erasure_runner",
        container.erasure.run_pending,
        metrics.forget_completions.inc,
    )
    if container.webhook_dispatch is not None:  # every worker sends; a lease per delivery (vault.webhooks)
        work.every(
            settings.webhook_interval_seconds,
            "webhook_delivery",
            container.webhook_dispatch.run_due,
            lambda n: None,
        )
    work.every(
        settings.checkpoint_interval_seconds,
        "audit_checkpoint",
        lambda: sign_checkpoint(container),
        lambda n: None,
        stagger=True,  # a signing checks the rows since the last one, whoever signed it
    )
    if container.search.vectors.embedder is not None:  # memories written without a vector get one
        work.every(VECTOR_FILL_SECONDS, "vector_fill", lambda: _fill_vectors(container), lambda n: None)
    if settings.malloc_trim_interval_seconds:  # a server's memory settles (api.http.allocator)
        work.every(settings.malloc_trim_interval_seconds, "malloc_trim", allocator.trim, lambda n: None)
    # Scheduled compaction reads the whole log for dead ciphertext (5.7 s on a 1M-memory
    # store). Every worker of every node wakes for it, so it waits one interval after start,
    # and a random part of another: restarts (and `--workers N`) neither rescan the store at
    # once while the server takes its first requests, nor at the same moment as each other;
    # and only the one that takes the turn runs it. An erasure compacts its own subject in
    # its `compacted` step, whatever this schedule.
    work.every(
        settings.compaction_interval_seconds,
        "compaction",
        in_turn(
            container.uow,
            "compaction",
            settings.compaction_interval_seconds,
            lambda: scheduled_compaction(container),
        ),
        lambda n: None,
        wait_first=True,
        stagger=True,
    )
    return work


def in_turn(uow: UnitOfWork, job: str, seconds: float, fn: Job) -> Job:
    """``fn``, run only when this worker takes ``job``'s turn (``store.turns``): once per
    ``seconds`` across every worker and node sharing the store."""
    interval = timedelta(seconds=seconds)

    def run() -> int:
        if not take_turn(uow, job, interval, utcnow()):
            return 0
        return fn()

    return run


def scheduled_compaction(container: Container) -> int:
    """One scheduled compaction; how many events it rewrote. A WAL it could not empty is
    logged (the next run empties it, even with nothing to rewrite): until then the database file
    may hold the rewritten pages' old versions.

    No VACUUM on SQLite: ``secure_delete`` and the checkpoint already leave no byte of the
    dead ciphertext in the files, and a VACUUM holds every writer of every process for its
    whole rewrite (97 s on a 1M-memory store here). ``lethe compact`` VACUUMs when asked."""
    result = container.compactor.compact(vacuum=False)
    if result.wal_left:
        log.warning("compaction did not empty the WAL; the next run retries", extra={"task": "compaction"})
    return result.events_rewritten
