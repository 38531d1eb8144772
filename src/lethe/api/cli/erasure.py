"""Right to be forgotten: ``lethe forget``, ``lethe erasure list|show|extend|pause|resume``.

``--json`` prints the HTTP bodies: ``forget`` an ``ErasureFiled`` (the job and its
verification code, shown this once), ``show``, ``extend``, ``pause`` and
``resume`` an ``ErasureJobOut`` (as ``GET /v1/erasure-requests/{id}``), ``list`` an
``ErasureJobList`` (as ``GET /v1/erasure-requests``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Column, Table

from lethe.api.cli.common import ExitCode, console, container, officer, print_json
from lethe.api.http.schemas.erasure import ErasureFiled, ErasureJobList, ErasureJobOut, ErasurePreviewOut
from lethe.vault.audit.step_names import Step
from lethe.vault.erasure.deadlines import MAX_EXTENSION_MONTHS
from lethe.vault.erasure.legal_bases import words
from lethe.vault.erasure.model import ErasureJob
from lethe.vault.erasure.preview import preview_erasure

WAIT_SECONDS = 300.0  # how long `lethe forget` follows a job another runner is advancing

app = typer.Typer()
erasure_app = typer.Typer(help="Inspect erasure requests.", no_args_is_help=True)
app.add_typer(erasure_app, name="erasure")


def _days_left(job: ErasureJob) -> str:
    """ "12", "0", "3 late", "12 (paused)", or "" once done."""
    if job.days_left is None:
        return ""
    left = f"{-job.days_left} late" if job.days_left < 0 else str(job.days_left)
    return f"{left} (paused)" if job.paused else left


def _show(job: ErasureJob, basis: Callable[[str], str] = words) -> None:
    colour = "green" if job.completed_at else ("red" if job.last_error else "yellow")
    console.print(
        f"erasure request [bold]{job.id}[/bold]: [{colour}]{job.status}[/{colour}]"
        f"  (due {job.due_at:%Y-%m-%d}{', OVERDUE' if job.overdue else ''}"
        f"{f', days left {_days_left(job)}' if job.days_left is not None else ''})"
    )
    console.print(f"  requested by {job.requested_by_name or job.requested_by}")
    console.print(f"  legal basis: {escape(basis(job.legal_basis))}")
    if job.paused:
        console.print(f"  [yellow]paused[/yellow] since {job.paused_at:%Y-%m-%d %H:%M} (identity check)")
    for e in job.extensions:
        console.print(
            f"  extension {e.number}: +{e.months} month(s), subject told {e.subject_notified_at:%Y-%m-%d}, "
            f"by {e.extended_by_name or e.extended_by}: {escape(e.reason)}"
        )
    if job.last_error:
        console.print(f"  waiting: {job.last_error}")
    table = Table("step", "completed at", "audit event", "evidence")
    for s in job.steps:
        summary = ", ".join(f"{k}={v}" for k, v in s.evidence.items() if isinstance(v, int | bool | str))
        table.add_row(s.step, f"{s.completed_at:%Y-%m-%d %H:%M:%S}", str(s.event_seq), summary[:120])
    console.print(table)
    refused = next((s.evidence.get("refused") for s in job.steps if s.step == Step.KEY_DESTROYED), None)
    if refused:  # no line may say the key is destroyed: the KMS refused past the window
        gens = ", ".join(str(r.get("generation")) for r in refused)
        console.print(
            f"  [red]partial[/red]: the KMS refused to destroy key generation(s) {gens}; Lethe stopped "
            "asking when its window closed. The certificate says partial and names them (final)."
        )
    if job.report_id:
        console.print(f"report: lethe report get {job.report_id} --format pdf -o erasure-{job.id[:8]}.pdf")
    if job.final_report_id:
        console.print(f"final certificate (the KMS's waiting window closed): {job.final_report_id}")


def _lines(path: Path | None) -> list[str]:
    """The identifiers in a file, one a line (blank lines skipped)."""
    if path is None:
        return []
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@app.command()
def forget(
    tenant: str = typer.Option(..., help="Tenant of the subject."),
    subject: str = typer.Option(..., help="Subject id (never logged, never stored in clear)."),
    basis: str = typer.Option(
        ..., help="Legal basis: a code from the list in docs/erasure-semantics.md, e.g. gdpr-art17-1a."
    ),
    reference: str | None = typer.Option(None, help="Your ticket or case reference."),
    identity_ref: str | None = typer.Option(
        None, "--identity-ref", help="Where the requester's identity was verified (a reference only)."
    ),
    idempotency_key: str | None = typer.Option(
        None,
        "--idempotency-key",
        help="Send the same key again within 24 hours to get the same request and code back.",
    ),
    wait: bool = typer.Option(True, help="Run the erasure now and show the outcome."),
    as_json: bool = typer.Option(False, "--json"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only show what the forget would touch."),
    identifier: list[str] = typer.Option(
        [],
        "--identifier",
        help="A name, e-mail, phone or account number of the subject (repeatable): other subjects' "
        "memories that mention it are retracted or reviewed (--residue). Kept only as keyed hashes.",
    ),
    identifiers_file: Path | None = typer.Option(
        None,
        "--identifiers-file",
        help="A file of identifiers, one a line (keeps them out of the shell's history and process list).",
    ),
    residue: str | None = typer.Option(
        None,
        "--residue",
        help="retract or review (default review) other subjects' memories that mention them.",
    ),
) -> None:
    """File a right-to-forget request and run it (crypto-shredding, verification, compaction)."""
    if dry_run:
        _preview(tenant, subject, as_json)
        return
    identifiers = [*identifier, *_lines(identifiers_file)]
    with container() as c:
        job = c.erasure.request(
            officer(tenant),
            subject,
            basis,
            reference,
            identity_ref,
            idempotency_key,
            identifiers=identifiers,
            residue_action=residue,
        )
        code = job.verification_code
        assert code is not None
        deadline = time.monotonic() + WAIT_SECONDS
        while wait:
            c.erasure.advance(job.id)  # or a running server's runner holds it and advances it
            job = c.erasure.get(officer(tenant), job.id)
            stuck = job.last_error or job.status == "blocked" or job.paused
            if job.completed_at or stuck or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        job = c.erasure.get(officer(tenant), job.id)
        basis_words = c.erasure.legal_bases.words
    if as_json:
        print_json(ErasureFiled.from_domain(replace(job, verification_code=code)))
    else:
        _show(job, basis_words)
        console.print(
            f"verification code: [bold]{code}[/bold]\n"
            "  shown this once and never stored: give it to the data subject. With it and the subject id,\n"
            "  lethe verify CERT --public-key PEM --subject-id ID --verification-code CODE confirms the\n"
            "  certificate is about them; without it the certificate confirms no guess."
        )
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
        basis_words = c.erasure.legal_bases.words
    if as_json:
        print_json(ErasureJobList.from_domain(jobs))
        return
    rows = [
        (
            j.id,
            j.status,
            basis_words(j.legal_basis),
            f"{j.received_at:%Y-%m-%d %H:%M}",
            f"{j.due_at:%Y-%m-%d}" + (f" (+{j.extension_months} mo)" if j.extension_months else ""),
            _days_left(j),
            "yes" if j.overdue else "",
            j.report_id or "",
        )
        for j in jobs
    ]
    table = Table(
        Column("id", no_wrap=True),
        "status",
        "legal basis",
        "received",
        "due",
        "days left",
        "overdue",
        Column("report", no_wrap=True),
    )
    for row in rows:
        table.add_row(*row)
    wide = console.options.update(max_width=10_000)
    if Measurement.get(console, wide, table).maximum <= console.width:
        console.print(table)
        return
    # Too narrow for the table (two whole ids take 72 columns): one block per request, so that
    # every id stays whole and can be copied.
    for rid, state, basis, received, due, left, late, report in rows:
        console.print(f"[bold]{rid}[/bold]  {state}" + ("  [red]overdue[/red]" if late else ""))
        days = f", days left {left}" if left else ""
        console.print(f"  received {received}, due {due}{days}")
        # The basis's words run to ~100 characters: wrapped to the terminal, indented.
        console.print(f"  basis: {escape(basis)}", soft_wrap=False)
        if report:
            console.print(f"  report {report}")


@erasure_app.command("show")
def erasure_show(
    job_id: str = typer.Argument(..., metavar="ID"),
    tenant: str = typer.Option(...),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show one erasure request with every step and its evidence."""
    with container() as c:
        job = c.erasure.get(officer(tenant), job_id)
        basis_words = c.erasure.legal_bases.words
    if as_json:
        print_json(ErasureJobOut.from_domain(job))
    else:
        _show(job, basis_words)


def _print(job: ErasureJob, as_json: bool) -> None:
    if as_json:
        print_json(ErasureJobOut.from_domain(job))
    else:
        _show(job)


@erasure_app.command("extend")
def erasure_extend(
    job_id: str = typer.Argument(..., metavar="ID"),
    tenant: str = typer.Option(...),
    months: int = typer.Option(..., min=1, max=MAX_EXTENSION_MONTHS, help="1 or 2; at most 2 in total."),
    reason: str = typer.Option(..., help="Why the request needs longer (kept with the request)."),
    notified_at: datetime = typer.Option(
        ...,
        "--notified-at",
        formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"],
        help="When the subject was told of the extension (UTC unless an offset is given).",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Extend a request's deadline (GDPR Art. 12(3)); the subject must be told within the first month."""
    told = notified_at if notified_at.tzinfo else notified_at.replace(tzinfo=UTC)
    with container() as c:
        job = c.deadlines.extend(officer(tenant), job_id, months, reason, told)
    _print(job, as_json)


@erasure_app.command("pause")
def erasure_pause(
    job_id: str = typer.Argument(..., metavar="ID"),
    tenant: str = typer.Option(...),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Stop the clock while the requester's identity is verified: nothing is erased until resumed."""
    with container() as c:
        job = c.deadlines.pause(officer(tenant), job_id)
    _print(job, as_json)


@erasure_app.command("resume")
def erasure_resume(
    job_id: str = typer.Argument(..., metavar="ID"),
    tenant: str = typer.Option(...),
    identity_ref: str | None = typer.Option(
        None, "--identity-ref", help="Where the identity was verified (a reference, never documents)."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Restart the clock: the due date moves by the time it stood still; the runner picks the job up."""
    with container() as c:
        job = c.deadlines.resume(officer(tenant), job_id, identity_ref)
    _print(job, as_json)


def _preview(tenant: str, subject: str, as_json: bool) -> None:
    """``lethe forget --dry-run``: what a forget would touch; nothing is filed or changed."""
    with container() as c:
        found = preview_erasure(c.uow, c.pseudonyms, c.keyring, officer(tenant), subject)
    if as_json:
        print_json(ErasurePreviewOut.from_domain(found))
        return
    console.print("[bold]dry run[/bold]: nothing was filed or changed. A forget would touch:")
    by_status = ", ".join(f"{n} {status}" for status, n in found.memories.items()) or "none"
    console.print(f"  memories: {found.memories_to_forget} to forget ({by_status})")
    console.print(f"  other subjects' summaries built on them: {len(found.derived)}")
    console.print(f"  sealed vectors: {found.sealed_vectors}, search index entries: {found.index_entries}")
    console.print(f"  live key generations to destroy: {found.key_generations}")
    console.print(f"  backups holding the subject: {len(found.backups)}")
    console.print(f"  open requests for the subject: {len(found.open_requests)}")
    for h in found.legal_holds:
        console.print(f"  [red]legal hold {h.id}[/red] would refuse the request: {escape(h.reason)}")
    if found.nothing_held:
        console.print("  nothing of this subject is held: a forget would be certified as nothing held")
