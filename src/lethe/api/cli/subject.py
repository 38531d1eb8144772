"""Subject access (GDPR Art. 15 / 20): ``lethe subject export``, ``lethe verify-export``.

- ``lethe subject export --tenant T --subject ID [--format json|html|pdf] [-o FILE]``:
  the signed export of everything held about the subject (as ``POST
  /v1/subject-access-requests``), one audit event per export; a PDF needs ``-o``.
- ``lethe verify-export EXPORT --public-key PEM [--tenant T] [--json]``: offline; touches
  no database and no network; exit 0 only if every check passes, else 1 naming the first
  failed check. A separate command from ``lethe verify`` (certificates): the two documents
  have different checks and options, and a mode flag would let one pass for the other.

Exceptions: none escape; errors become exit codes (``api.cli.common.ExitCode``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer
from rich.markup import escape

from lethe.api.cli.common import ExitCode, container, err, fail, officer, print_checks
from lethe.api.report_formats import ReportFormat, render_subject_export
from lethe.vault.audit.verify_export import verify_export

app = typer.Typer()
subject_app = typer.Typer(help="What Lethe holds about a data subject (Art. 15 / 20).", no_args_is_help=True)
app.add_typer(subject_app, name="subject")


@subject_app.command("export")
def subject_export(
    tenant: str = typer.Option(..., help="Tenant of the subject."),
    subject: str = typer.Option(..., help="Subject id (never logged)."),
    fmt: ReportFormat = typer.Option(ReportFormat.JSON, "--format", case_sensitive=False),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write here instead of stdout."),
) -> None:
    """Export everything held about a subject: signed JSON, or HTML / PDF to hand to the subject."""
    if fmt is ReportFormat.PDF and output is None:
        fail("a PDF is written to a file: add -o FILE", ExitCode.SETUP)
    with container() as c:
        export = c.subject_access.export(officer(tenant), subject, fmt.value)
        pem = c.audit.public_key().pem.encode("ascii")
    data = render_subject_export(export.document, export.tenant_id, pem, fmt)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    output.write_bytes(data)
    err.print(
        f"wrote {fmt.value} export {export.id} ({export.items} items, {export.forgotten} forgotten) "
        f"to {escape(str(output))}"
    )


@app.command("verify-export")
def verify_export_command(
    export: Path = typer.Argument(..., help="The subject access export (JSON) to verify.", dir_okay=False),
    public_key: Path = typer.Option(
        ..., "--public-key", help="The issuer's Ed25519 public key (PEM), obtained independently."
    ),
    tenant: str | None = typer.Option(None, "--tenant", help="Check the export is of this tenant."),
    as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Verify a subject access export offline (no database, no server, no network)."""
    try:
        doc, pem = export.read_bytes(), public_key.read_bytes()
    except OSError as exc:
        fail(f"cannot read {exc.filename}: {exc.strerror}", ExitCode.SETUP)
    started = time.perf_counter()
    result = verify_export(doc, pem, tenant=tenant)
    elapsed = time.perf_counter() - started
    print_checks(result, f"Subject access export {result.report_id or '?'}", elapsed, as_json)
    if not result.ok:
        raise typer.Exit(ExitCode.REFUSED)
