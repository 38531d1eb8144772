"""``lethe bench``: run the benchmark (``lethe.api.bench``), print the figures, and write the
reports asked for: the Markdown with ``--output FILE`` (``docs/performance.md`` is regenerated
only on purpose, never as a side effect of a run), the JSON with ``--json FILE``.

Exit codes: 0 when every figure was measured (a missed target is a result, not a
failure), 1 when a figure could not be measured, 2 when the run could not start or a
required part is missing (``--kms vault`` without OpenBao).
"""

from __future__ import annotations

import shlex
import sys
import time
from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

# Not on a terminal (a log, a test), rich would wrap the table at 80 columns.
console = Console() if sys.stdout.isatty() else Console(width=160)
err = Console(stderr=True, soft_wrap=True)


class ScaleName(StrEnum):
    small = "small"
    full = "full"


class KmsName(StrEnum):
    local = "local"
    vault = "vault"


_VERDICT_STYLE = {"met": "green", "missed": "red", "error": "bold red"}

app = typer.Typer()


@app.command("bench")
def bench(
    scale: ScaleName = typer.Option(
        ScaleName.small, "--scale", help="small: 100k-item large store (minutes); full: 1M items."
    ),
    kms: KmsName = typer.Option(
        KmsName.local,
        "--kms",
        help="KMS of the benchmark stores. The OpenBao figure runs whenever `bao` is installed; "
        "with `vault` it is required.",
    ),
    json_file: Path | None = typer.Option(None, "--json", help="Write every figure as JSON here."),
    output: Path | None = typer.Option(
        None,
        "--output",
        help="Write the Markdown report here (docs/performance.md to regenerate it); none without it.",
    ),
    workdir: Path | None = typer.Option(
        None, "--workdir", help="Parent of the temporary data dirs (default: the system temp dir)."
    ),
    loaders: int | None = typer.Option(
        None, "--loaders", min=1, help="Data-generation worker processes (default: min(2, cores))."
    ),
    previous: Path | None = typer.Option(
        None,
        "--previous",
        exists=True,
        file_okay=False,
        help="A checkout of an earlier release: its `lethe serve` is measured on the same store in the "
        "same run, as the HTTP search baseline (e.g. `git worktree add /tmp/prev v0.1.0`).",
    ),
    soak_minutes: float = typer.Option(
        0.0,
        "--soak-minutes",
        min=0.0,
        help="After figure 6's loads, keep the HTTP load on its server this long, sampling the "
        "resident memory of its largest process each minute (the serve RSS figure; 0: none).",
    ),
) -> None:
    """Measure Lethe against same-machine baselines; --output writes the Markdown report."""
    # Lazy: the benchmark pulls in hvac (its OpenBao figure) and every figure's module; at
    # the top, every `lethe` process, `lethe serve` on the local KMS too, would carry them.
    from lethe.api.bench.context import BenchError
    from lethe.api.bench.report import write_json, write_markdown
    from lethe.api.bench.runner import Bench
    from lethe.api.bench.scales import SCALES
    from lethe.api.bench.summary import summary_rows

    command = "lethe " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    started = time.perf_counter()

    def say(msg: str) -> None:
        err.print(f"[dim]{time.perf_counter() - started:8.1f}s[/dim] {escape(msg)}")

    try:
        runner = Bench(
            SCALES[scale.value],
            kms=kms.value,
            workdir=workdir,
            loaders=loaders,
            say=say,
            command=command,
            previous=previous,
            soak_seconds=soak_minutes * 60,
        )
        results = runner.run()
    except BenchError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None

    table = Table(title=f"lethe bench --scale {scale.value} ({results['total_seconds']:.0f} s)")
    for col in ("Figure", "Lethe", "Baseline", "Ratio", "Target", "Verdict"):
        table.add_column(col, overflow="fold")
    for row in summary_rows(results):
        style = _VERDICT_STYLE.get(row[5], "yellow" if row[5] else "")
        table.add_row(*row[:5], f"[{style}]{escape(row[5])}[/{style}]" if style else row[5])
    console.print(table)

    if output is not None:
        write_markdown(results, output)
        console.print(f"wrote {output}")
    if json_file is not None:
        write_json(results, json_file)
        console.print(f"wrote {json_file}")
    if results["errors"]:
        for e in results["errors"]:
            err.print(f"[red]not measured:[/red] {escape(e)}")
        raise typer.Exit(1)
