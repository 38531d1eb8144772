"""CLI commands for privacy officers and operators: forget, erasure, compact, backup."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from lethe.api.store_lease import exclusive_lease
from lethe.vault.erasure.backup import BackupError, create_backup, restore_backup
from lethe.vault.erasure.service import ErasureJob
from lethe.vault.model import Caller, Role

console = Console(soft_wrap=True)
WAIT_SECONDS = 300.0  # how long `lethe forget` follows a job another runner is advancing
err = Console(stderr=True, soft_wrap=True)


def _officer(tenant: str) -> Caller:
    return Caller(tenant, Role.PRIVACY_OFFICER, None, frozenset(), principal="cli")


def _job_json(job: ErasureJob) -> dict:
    return {
        "id": job.id,
        "tenant_id": job.tenant_id,
        "status": job.status,
        "legal_basis": job.legal_basis,
        "reference": job.reference,
        "requested_by": job.requested_by,
        "received_at": job.received_at.isoformat(),
        "due_at": job.due_at.isoformat(),
        "completed_at": job.completed_at.isoformat() if job.completed_at else None,
        "overdue": job.overdue,
        "last_error": job.last_error,
        "report_id": job.report_id,
        "steps": [
            {
                "step": s.step,
                "completed_at": s.completed_at.isoformat(),
                "event_seq": s.event_seq,
                "evidence": s.evidence,
            }
            for s in job.steps
        ],
    }


def _show(job: ErasureJob) -> None:
    colour = "green" if job.completed_at else ("red" if job.last_error else "yellow")
    console.print(
        f"erasure request [bold]{job.id}[/bold]: [{colour}]{job.status}[/{colour}]"
        f"  (due {job.due_at:%Y-%m-%d}{', OVERDUE' if job.overdue else ''})"
    )
    if job.last_error:
        console.print(f"  waiting: {job.last_error}")
    table = Table("step", "completed at", "audit event", "evidence")
    for s in job.steps:
        summary = ", ".join(f"{k}={v}" for k, v in s.evidence.items() if isinstance(v, int | bool | str))
        table.add_row(s.step, f"{s.completed_at:%Y-%m-%d %H:%M:%S}", str(s.event_seq), summary[:120])
    console.print(table)
    if job.report_id:
        console.print(f"report: lethe report get {job.report_id} --format pdf -o erasure-{job.id[:8]}.pdf")


def register(app: typer.Typer, container) -> None:  # type: ignore[no-untyped-def]
    """Add the commands to ``app``; ``container`` is the CLI's context manager."""
    erasure_app = typer.Typer(help="Inspect erasure requests.", no_args_is_help=True)
    backup_app = typer.Typer(
        help="Back up and restore the data store (never the keys).", no_args_is_help=True
    )
    app.add_typer(erasure_app, name="erasure")
    app.add_typer(backup_app, name="backup")

    @app.command()
    def forget(
        tenant: str = typer.Option(..., help="Tenant of the subject."),
        subject: str = typer.Option(..., help="Subject id (never logged, never stored in clear)."),
        basis: str = typer.Option(..., help="Legal basis, e.g. gdpr-art17-1a."),
        reference: str | None = typer.Option(None, help="Your ticket or case reference."),
        wait: bool = typer.Option(True, help="Run the erasure now and show the outcome."),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """File a right-to-forget request and run it (crypto-shredding, verification, compaction)."""
        with container() as c:
            job = c.erasure.request(_officer(tenant), subject, basis, reference)
            deadline = time.monotonic() + WAIT_SECONDS
            while wait:
                c.erasure.advance(job.id)  # or a running server's runner holds it and advances it
                job = c.erasure.get(_officer(tenant), job.id)
                stuck = job.last_error or job.status == "blocked"
                if job.completed_at or stuck or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            job = c.erasure.get(_officer(tenant), job.id)
        if as_json:
            console.print_json(json.dumps(_job_json(job)))
        else:
            _show(job)
        if wait and job.completed_at is None:
            raise typer.Exit(3)  # accepted but not finished: the runner will resume it

    @erasure_app.command("list")
    def erasure_list(
        tenant: str = typer.Option(...),
        status: str | None = typer.Option(None),
        overdue: bool = typer.Option(
            False, "--overdue", help="Only unfinished requests past their due date."
        ),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """List erasure requests of a tenant."""
        with container() as c:
            jobs = c.erasure.list(_officer(tenant), status=status, overdue=overdue)
        if as_json:
            console.print_json(json.dumps([_job_json(j) for j in jobs]))
            return
        table = Table("id", "status", "legal basis", "received", "due", "overdue", "report")
        for j in jobs:
            table.add_row(
                j.id,
                j.status,
                j.legal_basis,
                f"{j.received_at:%Y-%m-%d %H:%M}",
                f"{j.due_at:%Y-%m-%d}",
                "yes" if j.overdue else "",
                j.report_id or "",
            )
        console.print(table)

    @erasure_app.command("show")
    def erasure_show(
        job_id: str = typer.Argument(..., metavar="ID"),
        tenant: str = typer.Option(...),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Show one erasure request with every step and its evidence."""
        with container() as c:
            job = c.erasure.get(_officer(tenant), job_id)
        if as_json:
            console.print_json(json.dumps(_job_json(job)))
        else:
            _show(job)

    @app.command()
    def compact(
        retention_days: float | None = typer.Option(None, help="Override LETHE_COMPACTION_RETENTION_DAYS."),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Remove dead ciphertext from the event log and reclaim the space on disk."""
        from datetime import timedelta

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
                result = c.compactor.compact(
                    progress=lambda done, total: bar.update(task, completed=done, total=total)
                )
        if as_json:
            console.print_json(json.dumps(result.evidence()))
            return
        console.print(
            f"rewrote {result.events_rewritten} events in {result.batches} batches, "
            f"{result.projection_rows_rewritten} projection rows; "
            f"store {result.bytes_before:,} -> {result.bytes_after:,} bytes "
            f"({result.bytes_reclaimed:,} reclaimed)"
        )

    @backup_app.command("create")
    def backup_create(
        to: Path | None = typer.Option(None, "--to", help="Folder for backups (default <data dir>/backups)."),
    ) -> None:
        """Write a consistent snapshot of the data store and a manifest. Keys are never included."""
        with container() as c:
            dest = to or c.settings.backup_dir or (c.settings.data_dir / "backups")
            try:
                manifest = create_backup(c.uow, dest)
            except BackupError as exc:
                err.print(f"[red]error:[/red] {exc}")
                raise typer.Exit(1) from None
        console.print(f"backup written: {manifest}")

    @backup_app.command("restore")
    def backup_restore(manifest: Path = typer.Argument(..., exists=True, dir_okay=False)) -> None:
        """Restore a snapshot, then forget again every subject forgotten since it was taken."""
        with container() as c, exclusive_lease(c.settings.data_dir, c.uow.engine, "a restore"):
            try:
                report = restore_backup(c.uow, c.keyring, manifest)
            except BackupError as exc:
                err.print(f"[red]error:[/red] {exc}")
                raise typer.Exit(1) from None
        console.print_json(json.dumps(asdict(report)))
