"""The residue suite's probe framework: a probe, its control run and its run after the forget.

A probe is one question put to one surface (a search with one query on one node, a read by
id, an export, a gauge...) that answers with what it found *of the subject*: ids, content or
counts. Each probe runs twice with the same question: before the forget (the control: it must
find the subject, or it proves nothing after) and after the erasure reached its certificate
(every thing it still finds is a residue). Probes are paired by key, so the two runs ask
exactly the same questions.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Probe:
    """``run()`` returns what of the subject the surface gave back (empty: nothing)."""

    surface: str
    name: str
    run: Callable[[], list[str]]

    @property
    def key(self) -> tuple[str, str]:
        return self.surface, self.name


@dataclass
class Outcome:
    surface: str
    name: str
    found: list[str]


@dataclass
class Skipped:
    """A surface the suite could not probe on this deployment, and why (printed, counted)."""

    surface: str
    reason: str


def run_all(probes: Iterable[Probe], threads: int = 1) -> dict[tuple[str, str], Outcome]:
    """Run each probe once (``threads`` at a time: probes only read); by key."""
    todo = list(probes)
    keys = [p.key for p in todo]
    assert len(set(keys)) == len(keys), "two probes with one name"
    with ThreadPoolExecutor(threads) as pool:
        found = list(pool.map(lambda p: list(p.run()), todo))
    return {p.key: Outcome(p.surface, p.name, f) for p, f in zip(todo, found, strict=True)}


@dataclass
class Figures:
    """One backend's figures: per surface, probes run, control hits before, residues after."""

    backend: str
    surfaces: dict[str, list[int]] = field(default_factory=dict)  # surface -> [probes, hits, residues]
    skipped: list[Skipped] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)  # probes whose control found nothing
    residues: list[str] = field(default_factory=list)  # what came back after the forget
    seconds: float = 0.0

    @property
    def probes(self) -> int:
        return sum(v[0] for v in self.surfaces.values())

    @property
    def hits(self) -> int:
        return sum(v[1] for v in self.surfaces.values())

    @property
    def residue_count(self) -> int:
        return sum(v[2] for v in self.surfaces.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "surfaces": self.surfaces,
            "skipped": [[s.surface, s.reason] for s in self.skipped],
            "seconds": round(self.seconds, 1),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Figures:
        f = cls(doc["backend"], {k: list(v) for k, v in doc["surfaces"].items()})
        f.skipped = [Skipped(s, r) for s, r in doc.get("skipped", [])]
        f.seconds = float(doc.get("seconds", 0.0))
        return f


def tally(
    backend: str,
    before: dict[tuple[str, str], Outcome],
    after: dict[tuple[str, str], Outcome],
    skipped: list[Skipped],
) -> Figures:
    """Pair the control and the after run of each probe; both runs must ask the same questions."""
    assert before.keys() == after.keys(), sorted(before.keys() ^ after.keys())
    figures = Figures(backend, skipped=list(skipped))
    for key, control in before.items():
        row = figures.surfaces.setdefault(control.surface, [0, 0, 0])
        row[0] += 1
        if control.found:
            row[1] += 1
        else:
            figures.misses.append(f"{key[0]} / {key[1]}")
        left = after[key].found
        row[2] += len(left)
        figures.residues.extend(f"{key[0]} / {key[1]}: {x}" for x in left)
    return figures


# -- What "of the subject" means in an answer -------------------------------------------------


def folded(text: str) -> str:
    """Compare as a person would: compatibility forms (fullwidth), composed, case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


@dataclass(frozen=True)
class Markers:
    """The subject's traces: its memory ids and the derived summary's, and distinctive strings
    of its facts, identifiers and provenance (none of which any other subject's data holds)."""

    ids: frozenset[str]
    strings: tuple[str, ...]

    def content_only(self) -> Markers:
        """Without the ids: for a surface that lists ids that remain by design."""
        return Markers(frozenset(), self.strings)

    def in_text(self, text: str) -> list[str]:
        f = folded(text)
        return [m for m in (*self.ids, *self.strings) if folded(m) in f]

    def in_items(self, items: Iterable[Any]) -> list[str]:
        """Each item (a dict, a model or text) that holds a marker, as ``id: markers``."""
        found = []
        for item in items:
            text = item if isinstance(item, str) else json.dumps(item, default=str, ensure_ascii=False)
            hit = self.in_text(text)
            if hit:
                found.append(", ".join(sorted(hit))[:200])
        return found
