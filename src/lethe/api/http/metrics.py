"""Prometheus metrics, counted in api/ from the outcomes the core returns.

Each app owns a ``CollectorRegistry``: two apps in one process (tests, or a future
admin listener) never share or collide on counters, and nothing registers at import
time. The KMS is wrapped in ``InstrumentedKms``, a proxy that times every call and
counts failures without changing what it returns or raises.

The attributed-memory KPIs (``vault.oversight.kpis``) are gauges computed when scraped, for
the whole store (``/metrics`` is unauthenticated, so no tenant is named), at most once
per ``KPI_MAX_AGE_SECONDS``; an unreachable store leaves them out of that scrape and sets
``lethe_kpis_up`` to 0 rather than failing it.

Exceptions: none of its own; ``InstrumentedKms`` re-raises whatever the backend raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lethe.keys.protocol import DataKey, DestructionReceipt, KeyInfo, KeyManager, ProbeResult
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.errors import ForbiddenContent, VaultError
from lethe.vault.oversight.kpis import Kpis

KPI_MAX_AGE_SECONDS = 30.0

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
        self.forbidden_content = counter(
            "lethe_forbidden_content_total",
            "Writes refused by the data policy, by the class their text fell in (never the text).",
            ("forbidden_class",),
        )
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

        self.kpis = KpiCollector()
        r.register(self.kpis)
        self.plaintext = PlaintextCollector()
        r.register(self.plaintext)

    def count_problem(self, exc: VaultError) -> None:
        if exc.status == 409:
            self.conflicts.labels(reason=type(exc).__name__).inc()
        elif isinstance(exc, ForbiddenContent):
            self.forbidden_content.labels(forbidden_class=exc.forbidden_class).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class KpiCollector(Collector):
    """The store-wide KPIs as gauges; ``source`` is set once the app's container exists."""

    def __init__(self) -> None:
        self.source: Callable[[], Kpis] | None = None
        self._cached: tuple[float, Kpis] | None = None

    def _kpis(self) -> Kpis | None:
        if self.source is None:
            return None
        now = time.monotonic()
        if self._cached is None or now - self._cached[0] > KPI_MAX_AGE_SECONDS:
            try:
                self._cached = (now, self.source())
            except VaultError:
                return None
        return self._cached[1]

    def collect(self) -> Iterator[Metric]:
        k = self._kpis()
        yield GaugeMetricFamily(
            "lethe_kpis_up", "1 if the KPIs below were computed.", value=int(k is not None)
        )
        if k is None:
            return

        def gauge(name: str, doc: str, value: float | None) -> Iterator[Metric]:
            if value is not None:
                yield GaugeMetricFamily(name, doc, value=value)

        yield from gauge("lethe_memories_live", "Active and quarantined memories.", k.live_memories)
        yield from gauge(
            "lethe_attribution_complete_ratio",
            "Share of live memories with complete attribution.",
            k.attribution_complete_share,
        )
        yield from gauge(
            "lethe_memory_age_median_seconds", "Median age of live memories.", k.median_age_seconds
        )
        yield from gauge(
            "lethe_expiry_on_time_ratio", "Share of due memories expired on time.", k.expired_on_time_share
        )
        lag = GaugeMetricFamily(
            "lethe_deletion_propagation_lag_seconds",
            "Erasure request received to last copy removed, over completed erasures.",
            labels=["quantile"],
        )
        for q, v in (("0.5", k.deletion_lag_p50_seconds), ("0.95", k.deletion_lag_p95_seconds)):
            if v is not None:
                lag.add_metric([q], v)
        yield lag
        yield from gauge("lethe_retractions", "Retraction ledger entries.", k.retractions)
        yield from gauge(
            "lethe_memories_retracted",
            "Memories retracted, derived summaries included.",
            k.memories_retracted + k.derived_retracted,
        )
        yield from gauge("lethe_erasure_requests_open", "Erasure requests not completed.", k.open_requests)
        yield from gauge(
            "lethe_erasure_requests_overdue", "Open erasure requests past due.", k.overdue_requests
        )


class PlaintextCollector(Collector):
    """What plaintext this process holds in memory, by kind (counts only): it falls to zero
    within the TTL and one sweep of the last use (``custody.plaintext_expiry``), which is how
    an operator, or a test, sees an idle node let go of a forgotten subject."""

    def __init__(self) -> None:
        self.keyring: SubjectKeyring | None = None

    def collect(self) -> Iterator[Metric]:
        k = self.keyring
        if k is None:
            return
        held = GaugeMetricFamily(
            "lethe_plaintext_held",
            "Plaintext this process holds: data keys, opened vectors, kept scopes (with their results).",
            labels=["kind"],
        )
        held.add_metric(["data_keys"], len(k.cache))
        held.add_metric(["vectors"], k.opened.held)
        held.add_metric(["kept_scopes"], k.opened.kept_scopes)
        yield held


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
