"""The building blocks of ``docs/performance.md``'s sections: tables, latency cells, paragraphs."""

from __future__ import annotations

import textwrap
from typing import Any

from lethe.api.bench.summary import fmt
from lethe.api.settings import Settings

DEFAULT_VECTOR_CACHE = Settings.model_fields["vector_cache_entries"].default


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def lats(lat: dict[str, float]) -> list[str]:
    """The p50, p95, p99 and max cells of a latency summary."""
    return [fmt(lat[k], 2) for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms")]


def para(*parts: str) -> str:
    """One paragraph from pieces, wrapped for reading in a terminal as well."""
    return textwrap.fill(" ".join(p.strip() for p in parts if p), width=92, break_on_hyphens=False)
