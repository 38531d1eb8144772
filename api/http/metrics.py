"""Prometheus metrics, counted in api/ from the outcomes the core returns.

Each app owns a ``CollectorRegistry``: two apps in one process (tests, or a future
admin listener) never share or collide on counters, and nothing registers at import
time. The KMS is wrapped in ``InstrumentedKms``, a proxy that times every call and
counts failures without changing what it returns or raises.

Exceptions: none of its own; ``InstrumentedKms`` re-raises whatever the backend raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from lethe.keys.protocol import DataKey, DestructionReceipt, KeyInfo, KeyManager, ProbeResult
from lethe.vault.errors import VaultError

T = TypeVar("T")


class Metrics:
    """The counters and histograms of one app."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, labels, registry=r)

        self.writes = counter("lethe_writes_total", "Memories written (idempotent replays excluded).")
        self.quarantined = counter("lethe_quarantined_total", "Writes stored in quarantine.")
        self.promotions = counter("lethe_promotions_total", "Quarantined memories promoted by a reviewer.")
        self.conflicts = counter("lethe_conflicts_total", "Requests refused with 409 Conflict.", ("reason",))
        self.expirations = counter("lethe_expirations_total", "Memories expired by the sweep.")
        self.supersessions = counter("lethe_supersessions_total", "Memories superseded by a correction.")
        self.forget_requests = counter("lethe_forget_requests_total", "Erasure requests accepted.")
        self.forget_completions = counter(
            "lethe_forget_completions_total", "Erasure jobs the background runner advanced to completion."
        )
        self.kms_errors = counter("lethe_kms_errors_total", "KMS calls that raised.", ("operation", "error"))
        self.search_seconds = Histogram("lethe_search_seconds", "Latency of scoped search.", registry=r)
        self.search_items = Histogram(
            "lethe_search_items",
            "Items returned by a search.",
            buckets=(0, 1, 2, 5, 10, 20, 50, 100),
            registry=r,
        )
        self.kms_seconds = Histogram(
            "lethe_kms_seconds",
            "Latency of KMS calls.",
            ("operation",),
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=r,
        )

    def count_problem(self, exc: VaultError) -> None:
        if exc.status == 409:
            self.conflicts.labels(reason=type(exc).__name__).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class InstrumentedKms:
    """A ``KeyManager`` proxy that times each call and counts the ones that raise."""

    def __init__(self, inner: KeyManager, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics
        self.backend = inner.backend

    def _timed(self, operation: str, fn: Callable[..., T], *args: Any) -> T:
        start = time.perf_counter()
        try:
            return fn(*args)
        except Exception as exc:
            self.metrics.kms_errors.labels(operation=operation, error=type(exc).__name__).inc()
            raise
        finally:
            self.metrics.kms_seconds.labels(operation=operation).observe(time.perf_counter() - start)

    def create_key(self, name: str) -> KeyInfo:
        return self._timed("create_key", self.inner.create_key, name)

    def generate_data_key(self, name: str) -> DataKey:
        return self._timed("generate_data_key", self.inner.generate_data_key, name)

    def unwrap_data_key(self, name: str, wrapped: bytes) -> bytes:
        return self._timed("unwrap_data_key", self.inner.unwrap_data_key, name, wrapped)

    def destroy_key(self, name: str) -> DestructionReceipt:
        return self._timed("destroy_key", self.inner.destroy_key, name)

    def probe(self, name: str, wrapped: bytes) -> ProbeResult:
        return self._timed("probe", self.inner.probe, name, wrapped)

    def health(self) -> None:
        self._timed("health", self.inner.health)

    def close(self) -> None:
        self.inner.close()
