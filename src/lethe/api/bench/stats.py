"""Latency percentiles, rates and ratios: how every figure turns timings into numbers.

Standard library only: the load generator subprocess imports it and must stay light.
"""

from __future__ import annotations

import math
import statistics


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50/p95/p99/max in milliseconds of samples in seconds (inclusive quantiles)."""
    if not samples:
        return {"p50_ms": math.nan, "p95_ms": math.nan, "p99_ms": math.nan, "max_ms": math.nan}
    q = [samples[0]] * 99 if len(samples) == 1 else statistics.quantiles(samples, n=100, method="inclusive")
    return {
        "p50_ms": round(q[49] * 1000, 3),
        "p95_ms": round(q[94] * 1000, 3),
        "p99_ms": round(q[98] * 1000, 3),
        "max_ms": round(max(samples) * 1000, 3),
    }


def rate(durations: list[float]) -> float:
    """Operations per second of a list of per-operation durations (seconds)."""
    return len(durations) / sum(durations)


def ratio(a: float, b: float) -> float:
    """``a / b`` to three places; NaN (shown as ``n/a``) when the baseline is zero."""
    return round(a / b, 3) if b else math.nan
