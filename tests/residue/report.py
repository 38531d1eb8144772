"""The suite's figures, written into ``docs/erasure-semantics.md`` between its marker comments
(only that block is rewritten; a backend not run this time keeps its last figures) and printed."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from tests.residue.deployment import NODE_A_WORKERS
from tests.residue.probes import Figures
from tests.residue.queries import NOT_PROBES

DOC = Path(__file__).resolve().parents[2] / "docs" / "erasure-semantics.md"
BEGIN, END = "<!-- residue-suite:begin -->", "<!-- residue-suite:end -->"
DATA = re.compile(r"<!-- residue-suite:data (.*?) -->", re.S)


def _previous(text: str) -> dict[str, dict]:
    found = DATA.search(text)
    return json.loads(found.group(1)) if found else {}


def render(runs: dict[str, dict]) -> str:
    """The block: each backend's totals, then one table (surface x backend: probes, control
    hits before the forget, residues after)."""
    figures = {b: Figures.from_json(runs[b]) for b in sorted(runs)}
    lines = [BEGIN, "", "_Written by `tests/residue/test_residue_suite.py`; do not edit by hand._", ""]
    for b, f in figures.items():
        run = runs[b]
        lines.append(
            f"- **{b}** ({run['date']}, {f.seconds:.0f} s, node A with {run.get('workers', '?')} "
            f"worker(s)): {f.probes} probes, {f.hits} hit the subject in their control run, "
            f"**{f.residue_count} residues** after the forget."
        )
    total = [sum(f.probes for f in figures.values()), sum(f.hits for f in figures.values())]
    total.append(sum(f.residue_count for f in figures.values()))
    lines += [
        f"- All backends: **{total[0]} probes, {total[1]} control hits, {total[2]} residues.**",
        "",
        "| surface | " + " | ".join(f"{b}: probes / control hits / residues" for b in figures) + " |",
        "|---|" + "---|" * len(figures),
    ]
    surfaces = sorted({x for f in figures.values() for x in f.surfaces})
    for surface in surfaces:
        cells = [
            " / ".join(map(str, f.surfaces[surface])) if surface in f.surfaces else "-"
            for f in figures.values()
        ]
        lines.append(f"| {surface} | " + " | ".join(cells) + " |")
    skipped = {(x.surface, x.reason) for f in figures.values() for x in f.skipped}
    lines += [
        f"| {surface} | skipped: {reason} |" + " |" * (len(figures) - 1)
        for surface, reason in sorted(skipped)
    ]
    lines += [
        "",
        "Not probes (they find nothing before the forget, so they would prove nothing after):",
        "",
        *[f"- {n}" for n in NOT_PROBES],
        "",
        f"<!-- residue-suite:data {json.dumps(runs, sort_keys=True, ensure_ascii=False)} -->",
        END,
    ]
    return "\n".join(lines)


def write(figures: Figures) -> None:
    """Rewrite the block in the doc with this backend's figures (others' kept)."""
    text = DOC.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    runs = _previous(text[start:end])
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    runs[figures.backend] = {**figures.as_json(), "date": date, "workers": NODE_A_WORKERS}
    DOC.write_text(text[:start] + render(runs) + text[end:])


def summary(figures: Figures) -> str:
    """What the suite prints for one backend."""
    out = [
        f"residue suite [{figures.backend}] {figures.seconds:.1f} s, node A with {NODE_A_WORKERS} worker(s): "
        f"{figures.probes} probes, "
        f"{figures.hits} control hits before the forget, {figures.residue_count} residues after"
    ]
    out += [f"  {s}: {p} probes, {h} hits, {r} residues" for s, (p, h, r) in sorted(figures.surfaces.items())]
    out += [f"  skipped {s.surface}: {s.reason}" for s in figures.skipped]
    return "\n".join(out)
