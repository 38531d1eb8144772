"""CLI commands for auditors and operators: certificates, checkpoints, log verification.

- ``lethe verify REPORT --public-key PEM [--subject-id ID --verification-code CODE] [--tenant T]
  [--checkpoint OLDER] [--consistency-proof FILE]``: offline; touches no database
  and no network; exit 0 only if every check passes, else 1 naming the first failed check.
- ``lethe audit verify``: recompute every leaf of the event log and every signed root;
  exit 1 naming the first bad leaf index.
- ``lethe audit checkpoint``: sign and print a checkpoint (refused, exit 1, if the log
  is inconsistent with the latest one).
- ``lethe audit public-key [-o FILE] [--json]``: the key auditors pin; ``--pem`` writes
  it as ``lethe-public.pem`` (or ``-o FILE``), the file ``lethe verify --public-key`` reads.
- ``lethe audit forks [--json]``: where restores of older backups forked the log, the
  abandoned branches' signed checkpoints and the erasures re-applied (``--json``: the
  body of ``GET /v1/audit/forks``, every tenant's re-applied erasures).
- ``lethe report get ID [--format json|html|pdf] [-o FILE]``.

Exceptions: none escape; errors become exit codes (``api.cli.common.ExitCode``;
1: verification failed or the command was refused; 2: bad input files or configuration).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from lethe.api.cli.common import ExitCode, console, container, err, fail, load_settings, print_json
from lethe.api.http.routes.audit import PEM_FILENAME
from lethe.api.http.schemas.audit import AuditForkList, AuditForkOut, KpisOut, PublicKeyOut
from lethe.api.report_formats import ReportFormat, officer_name, render_report
from lethe.api.signing_key import load_signer, log_origin
from lethe.vault.audit.log import public_key_info
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.model import Caller, Role

app = typer.Typer()
audit_app = typer.Typer(
    help="The tamper-evident audit log: verify, sign, show the key.", no_args_is_help=True
)
report_app = typer.Typer(help="Erasure certificates (reports).", no_args_is_help=True)
app.add_typer(audit_app, name="audit")
app.add_typer(report_app, name="report")


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        fail(f"cannot read the {what} {path}: {exc}", ExitCode.SETUP)


@app.command("verify")
def verify(
    report: Path = typer.Argument(..., help="The erasure certificate (JSON) to verify.", dir_okay=False),
    public_key: Path = typer.Option(
        ..., "--public-key", help="The issuer's Ed25519 public key (PEM), obtained independently."
    ),
    subject_id: str | None = typer.Option(
        None, "--subject-id", help="Check the certificate is about this subject. '-' reads it from stdin."
    ),
    verification_code: str | None = typer.Option(
        None,
        "--verification-code",
        help="The code given when the request was filed; with --subject-id it confirms whom a v2 "
        "certificate is about. '-' reads it from stdin (after the subject id, if that is '-' too).",
    ),
    tenant: str | None = typer.Option(None, "--tenant", help="Check the certificate is for this tenant."),
    checkpoint: Path | None = typer.Option(
        None, "--checkpoint", help="An older signed checkpoint (note text, or an older certificate)."
    ),
    previous: Path | None = typer.Option(
        None,
        "--previous",
        help="For a final certificate (issued when a KMS's waiting window closed): the first "
        "certificate it follows, checked by its SHA-256.",
    ),
    consistency_proof: Path | None = typer.Option(
        None,
        "--consistency-proof",
        help="JSON {first, second, proof} from /v1/audit/proofs/consistency, if the older "
        "checkpoint's size is not among those the certificate embeds proofs from.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Verify an erasure certificate offline (no database, no server, no network)."""
    doc = _read(report, "certificate")
    pem = _read(public_key, "public key")
    if subject_id == "-":
        subject_id = sys.stdin.readline().rstrip("\n")
    if verification_code == "-":
        verification_code = sys.stdin.readline().rstrip("\n")
    older = _read(checkpoint, "checkpoint") if checkpoint is not None else None
    proof = _read(consistency_proof, "consistency proof") if consistency_proof is not None else None
    first = _read(previous, "first certificate") if previous is not None else None
    started = time.perf_counter()
    result = verify_certificate(
        doc,
        pem,
        subject_id=subject_id,
        tenant=tenant,
        older_checkpoint=older,
        consistency_proof=proof,
        verification_code=verification_code,
        previous=first,
    )
    elapsed = time.perf_counter() - started
    if as_json:
        print_json(
            {
                "ok": result.ok,
                "report_id": result.report_id,
                "first_failure": result.first_failure.name if result.first_failure else None,
                "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in result.checks],
            }
        )
    else:
        table = Table("check", "result", "detail", title=f"Erasure certificate {result.report_id or '?'}")
        for c in result.checks:
            verdict = "[green]pass[/green]" if c.ok else "[red]FAIL[/red]"
            table.add_row(escape(c.name), verdict, escape(c.detail))
        console.print(table)
        if not result.ok:
            typer.echo(f"failed checks: {', '.join(result.failed)}")
        typer.echo(f"{result.summary()} [{elapsed * 1000:.1f} ms]")
        if result.ok and subject_id is None:
            typer.echo(
                "No subject was confirmed: the certificate is genuine, but whom it is about was not "
                "checked (add --subject-id ID --verification-code CODE to confirm it)."
            )
    if not result.ok:
        raise typer.Exit(ExitCode.REFUSED)


@audit_app.command("verify")
def audit_verify(as_json: bool = typer.Option(False, "--json")) -> None:
    """Recompute every leaf from the event rows and every signed root; name the first bad index."""
    with container() as c:
        started = time.perf_counter()
        result = c.audit.verify_log()
        elapsed = time.perf_counter() - started
    if as_json:
        print_json(
            {
                "ok": result.ok,
                "tree_size": result.tree_size,
                "checkpoints_checked": result.checkpoints_checked,
                "latest_checkpoint_size": result.latest_checkpoint_size,
                "first_bad_index": result.first_bad_index,
                "bad_range": list(result.bad_range) if result.bad_range else None,
                "problem": result.problem,
                "seconds": round(elapsed, 3),
            }
        )
    elif result.ok:
        signed = result.latest_checkpoint_size
        tail = result.tree_size - (signed or 0)
        typer.echo(
            f"audit log OK: {result.tree_size} events recomputed, {result.checkpoints_checked} signed "
            f"checkpoint(s) verified (latest at size {signed if signed is not None else '-'}; "
            f"{tail} event(s) since, not yet signed) in {elapsed:.2f} s"
        )
    else:
        where = (
            f"first bad leaf index {result.first_bad_index}"
            if result.first_bad_index is not None
            else f"bad leaf index range [{result.bad_range[0]}, {result.bad_range[1]})"
            if result.bad_range
            else "checkpoints"
        )
        typer.echo(f"audit log FAILED: {where}: {result.problem}")
    if not result.ok:
        raise typer.Exit(ExitCode.REFUSED)


@audit_app.command("forks")
def audit_forks(as_json: bool = typer.Option(False, "--json")) -> None:
    """Where restoring an older backup forked the audit log, and the erasures it re-applied."""
    with container() as c:
        forks = c.forks.all()
    if as_json:
        print_json(AuditForkList(items=[AuditForkOut.from_domain(f) for f in forks]))
        return
    if not forks:
        console.print("no forks: the audit log has one history")
        return
    table = Table(
        "restored at", "backup", "shared prefix", "abandoned size", "abandoned checkpoints", "re-applied"
    )
    for f in forks:
        table.add_row(
            f.restored_at,
            f.backup_id,
            f"1..{f.fork_tree_size}",
            str(f.abandoned_tree_size),
            str(len(f.abandoned_checkpoints)),
            ", ".join(r.request_id for r in f.reapplied) or "-",
        )
    console.print(table)


@audit_app.command("checkpoint")
def audit_checkpoint() -> None:
    """Sign a checkpoint of the current log (after checking it extends the last one) and print it."""
    with container() as c:
        note = c.audit.checkpoint()
    sys.stdout.write(note)


@audit_app.command("kpis")
def audit_kpis(
    tenant: str = typer.Option(..., "--tenant"),
    as_json: bool = typer.Option(False, "--json", help="Print the HTTP API's body (GET /v1/audit/kpis)."),
) -> None:
    """A tenant's attributed-memory KPIs: attribution, age, expiry, deletion lag, retractions, requests."""
    with container() as c:
        kpis = KpisOut.from_domain(c.kpis.for_tenant(Caller(tenant, Role.AUDITOR, principal="cli")))
    if as_json:
        print_json(kpis)
        return
    table = Table("KPI", "value", title=f"KPIs of tenant {escape(tenant)}")
    for name, value in kpis.model_dump(exclude={"tenant_id"}).items():
        table.add_row(name.replace("_", " "), "n/a" if value is None else str(value))
    console.print(table)


@audit_app.command("public-key")
def audit_public_key(
    output: Path | None = typer.Option(None, "-o", "--output", help="Also write the PEM to this file."),
    as_json: bool = typer.Option(False, "--json"),
    pem: bool = typer.Option(
        False, "--pem", help=f"Write the PEM file ({PEM_FILENAME}, or -o FILE) for `lethe verify`."
    ),
) -> None:
    """Print the log's public key, key id and note verifier key (what auditors pin)."""
    settings = load_settings()
    try:
        info = public_key_info(load_signer(settings), log_origin(settings))
    except (ValueError, OSError) as exc:
        fail(str(exc), ExitCode.SETUP)
    if pem and output is None:
        output = Path(PEM_FILENAME)
    if output is not None:
        try:
            output.write_text(info.pem, encoding="ascii")
        except OSError as exc:
            fail(f"cannot write {output}: {exc}", ExitCode.SETUP)
    if pem:
        typer.echo(f"wrote the public key to {output} (fingerprint sha256:{info.fingerprint})")
        typer.echo(f"verify a certificate with: lethe verify CERTIFICATE.json --public-key {output}")
        return
    if as_json:
        print_json(PublicKeyOut.from_domain(info))
        return
    typer.echo(info.pem.rstrip("\n"))
    typer.echo(f"origin:      {info.origin}")
    typer.echo(f"key id:      {info.key_id}")
    typer.echo(f"vkey:        {info.vkey}")
    typer.echo(f"fingerprint: sha256:{info.fingerprint}")


@report_app.command("get")
def report_get(
    report_id: str = typer.Argument(..., metavar="ID"),
    fmt: ReportFormat = typer.Option(ReportFormat.JSON, "--format", case_sensitive=False),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write here instead of stdout."),
) -> None:
    """Fetch an erasure certificate as signed JSON, or rendered as HTML or PDF."""
    with container() as c:
        report = c.reports.load(report_id)
        pem = c.audit.public_key().pem.encode("ascii")
        name = officer_name(c.uow, report) if fmt is not ReportFormat.JSON else None
    data = render_report(report, pem, fmt, name)
    if output is not None:
        output.write_bytes(data)
        err.print(f"wrote {fmt.value} certificate {report.id} to {escape(str(output))}")
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
