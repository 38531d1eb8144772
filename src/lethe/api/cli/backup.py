"""Disk and backups: ``lethe compact``, ``lethe backup create|restore`` (keys are never backed up)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from lethe.api.cli.common import ExitCode, console, container, err, fail, print_json
from lethe.api.store_lease import exclusive_lease
from lethe.vault.erasure.backup import create_backup, restore_backup
from lethe.vault.errors import BackupError

app = typer.Typer()
backup_app = typer.Typer(help="Back up and restore the data store (never the keys).", no_args_is_help=True)
app.add_typer(backup_app, name="backup")


@app.command()
def compact(
    retention_days: float | None = typer.Option(None, help="Override LETHE_COMPACTION_RETENTION_DAYS."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Remove dead ciphertext from the event log and reclaim the space on disk.

    On SQLite this VACUUMs: the whole file is rewritten without its free pages, and every
    writer (a running server's too) waits until it is done: minutes on a large store."""
    with container() as c:
        if retention_days is not None:
            c.compactor.retention = timedelta(days=retention_days)
        with Progress(
            TextColumn("compacting"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            disable=as_json,
        ) as bar:
            task = bar.add_task("compact", total=None)
            result = c.compactor.compact(  # asked by hand: reclaim even with nothing to rewrite
                progress=lambda done, total: bar.update(task, completed=done, total=total), reclaim=True
            )
    if as_json:
        print_json(result.evidence())
        return
    console.print(
        f"rewrote {result.events_rewritten} events in {result.batches} batches, "
        f"{result.projection_rows_rewritten} projection rows; "
        f"store {result.bytes_before:,} -> {result.bytes_after:,} bytes "
        f"({result.bytes_reclaimed:,} reclaimed)"
    )
    if result.wal_left:
        err.print(
            "the WAL was not emptied: SQLite stayed busy (another connection's checkpoint or a "
            "long read); the database file may hold the rewritten pages' old versions until the "
            "next checkpoint: run `lethe compact` again"
        )


@backup_app.command("create")
def backup_create(
    to: Path | None = typer.Option(None, "--to", help="Folder for backups (default <data dir>/backups)."),
) -> None:
    """Write a consistent snapshot of the data store and a manifest. Keys are never included."""
    with container() as c:
        dest = to or c.settings.backup_dir or (c.settings.data_dir / "backups")
        try:
            manifest = create_backup(c.uow, dest, log=c.log)
        except BackupError as exc:
            fail(str(exc), ExitCode.REFUSED)
    console.print(f"backup written: {manifest}")


@backup_app.command("restore")
def backup_restore(manifest: Path = typer.Argument(..., exists=True, dir_okay=False)) -> None:
    """Restore a snapshot, then forget again every subject forgotten since it was taken."""
    with container() as c, exclusive_lease(c.settings.data_dir, c.uow.engine, "a restore"):
        try:
            report = restore_backup(c.uow, c.keyring, manifest, log=c.log)
        except BackupError as exc:
            fail(str(exc), ExitCode.REFUSED)
    print_json(asdict(report))
