"""Right to be forgotten: ``lethe forget``, ``lethe erasure list|show``.

``--json`` prints the HTTP bodies: ``forget`` and ``show`` an ``ErasureJobOut`` (as
``GET /v1/erasure-requests/{id}``), ``list`` an ``ErasureJobList`` (as ``GET /v1/erasure-requests``).
"""

from __future__ import annotations

import time

import typer
from rich.table import Table

from lethe.api.cli.common import ExitCode, console, container, officer, print_json
from lethe.api.http.schemas.erasure import ErasureJobList, ErasureJobOut
from lethe.vault.erasure.model import ErasureJob

WAIT_SECONDS = 300.0  # how long `lethe forget` follows a job another runner is advancing

app = typer.Typer()
erasure_app = typer.Typer(help="Inspect erasure requests.", no_args_is_help=True)
app.add_typer(erasure_app, name="erasure")


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
        job = c.erasure.request(officer(tenant), subject, basis, reference)
        deadline = time.monotonic() + WAIT_SECONDS
        while wait:
            c.erasure.advance(job.id)  # or a running server's runner holds it and advances it
            job = c.erasure.get(officer(tenant), job.id)
            stuck = job.last_error or job.status == "blocked"
            if job.completed_at or stuck or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        job = c.erasure.get(officer(tenant), job.id)
    if as_json:
        print_json(ErasureJobOut.from_domain(job))
    else:
        _show(job)
    if wait and job.completed_at is None:
        raise typer.Exit(ExitCode.UNFINISHED)


@erasure_app.command("list")
def erasure_list(
    tenant: str = typer.Option(...),
    status: str | None = typer.Option(None),
    overdue: bool = typer.Option(False, "--overdue", help="Only unfinished requests past their due date."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List erasure requests of a tenant."""
    with container() as c:
        jobs = c.erasure.list(officer(tenant), status=status, overdue=overdue)
    if as_json:
        print_json(ErasureJobList.from_domain(jobs))
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
        job = c.erasure.get(officer(tenant), job_id)
    if as_json:
        print_json(ErasureJobOut.from_domain(job))
    else:
        _show(job)
