"""Review and retraction: ``lethe review list|show|promote|reject|confirm``, ``lethe retract``.

The CLI acts for a tenant as its reviewer (review) and its privacy officer (retract), on
the server with the store's ``LETHE_DATA_DIR``. ``--json`` prints the HTTP bodies:
``list`` a ``ReviewQueueOut`` (as ``GET /v1/review-queue``), ``show``, ``promote`` and
``reject`` and ``confirm`` a ``MemoryOut``, ``retract`` a ``RetractionOut`` (as ``POST /v1/retractions``).
"""

from __future__ import annotations

from datetime import timedelta

import typer
from rich.markup import escape
from rich.table import Table

from lethe.api.cli.common import console, container, officer, print_json, reviewer
from lethe.api.http.schemas.memories import MemoryOut
from lethe.api.http.schemas.review import RetractionOut, ReviewItemOut, ReviewQueueOut
from lethe.vault.memory.review import MAX_AGE, MAX_PAGE, QueueQuery
from lethe.vault.memory.validation import MAX_VERSION
from lethe.vault.model import MemoryItem, SourceType

app = typer.Typer()
review_app = typer.Typer(
    help="Review quarantined memories: list, read, promote, reject.", no_args_is_help=True
)
app.add_typer(review_app, name="review")

TENANT = typer.Option(..., "--tenant", help="The tenant whose quarantine is reviewed.")
AS_JSON = typer.Option(False, "--json", help="Print the HTTP API's body.")
VERSION = typer.Option(..., "--expected-version", min=1, max=MAX_VERSION, help="The item's current version.")
KEY = typer.Option(None, "--idempotency-key", help="Send the same key again to get the first result back.")


def _show(item: MemoryItem) -> None:
    p = item.provenance
    console.print(
        f"[bold]{item.id}[/bold] v{item.version} {item.status.value}  agent {escape(item.agent_id)}  "
        f"purpose {escape(item.purpose)}  kind {item.kind.value}  created {item.created_at:%Y-%m-%d %H:%M}"
    )
    console.print(
        f"  source: {p.source_type.value} {escape(p.source_ref or '(gone with the content)')}"
        + (f"  cites {', '.join(p.sources)}" if p.sources else "")
    )
    console.print(
        f"  authority {item.authority.value}, trust {item.trust.value}, confidence {item.confidence}"
    )
    if item.content is not None:
        console.print(f"  content: {escape(item.content)}")


def _emit(item: MemoryItem, as_json: bool) -> None:
    if as_json:
        print_json(MemoryOut.from_domain(item))
    else:
        _show(item)


@review_app.command("list")
def review_list(
    tenant: str = TENANT,
    agent: str | None = typer.Option(None, "--agent", help="Only this agent's writes."),
    purpose: str | None = typer.Option(None, "--purpose"),
    source_type: SourceType | None = typer.Option(None, "--source-type"),
    older_than: int | None = typer.Option(
        None,
        "--older-than",
        min=0,
        max=int(MAX_AGE.total_seconds()),
        help="Seconds: only items at least this old.",
    ),
    cursor: str | None = typer.Option(None, "--cursor", help="The next_cursor a page ended with."),
    limit: int = typer.Option(50, "--limit", min=1, max=MAX_PAGE),
    as_json: bool = AS_JSON,
) -> None:
    """One page of the tenant's quarantined memories, oldest first, with content and provenance."""
    query = QueueQuery(
        agent_id=agent,
        purpose=purpose,
        source_type=source_type,
        older_than=timedelta(seconds=older_than) if older_than is not None else None,
        cursor=cursor,
        limit=limit,
    )
    with container() as c:
        page = c.review.queue(reviewer(tenant), query)
    if as_json:
        print_json(ReviewQueueOut.from_domain(page))
        return
    table = Table("id", "version", "agent", "purpose", "source", "created", "content")
    for i in page.items:
        source = f"{i.provenance.source_type.value} {i.provenance.source_ref}"
        content = (i.content or "")[:60]
        table.add_row(
            i.id,
            str(i.version),
            escape(i.agent_id),
            escape(i.purpose),
            escape(source),
            f"{i.created_at:%Y-%m-%d %H:%M}",
            escape(content),
        )
    console.print(table)
    if page.next_cursor:
        console.print(f"next page: --cursor {page.next_cursor}")


@review_app.command("show")
def review_show(
    memory_id: str = typer.Argument(..., metavar="ID"), tenant: str = TENANT, as_json: bool = AS_JSON
) -> None:
    """One quarantined memory, decrypted, with its provenance and the session taint that put it
    there (as ``GET /v1/review-queue/{id}``)."""
    with container() as c:
        item = c.review.get(reviewer(tenant), memory_id)
    if as_json:
        print_json(ReviewItemOut.from_domain(item))
        return
    _show(item)
    if item.session_taint is not None:
        taint = item.session_taint
        console.print(f"  quarantined by its tainted session: {escape(taint.cause)} at {taint.tainted_at}")


@review_app.command("promote")
def review_promote(
    memory_id: str = typer.Argument(..., metavar="ID"),
    tenant: str = TENANT,
    expected_version: int = VERSION,
    idempotency_key: str | None = KEY,
    as_json: bool = AS_JSON,
    reason: str | None = typer.Option(
        None, help="Why it is kept (required for a memory an erasure's residue hunt queued)."
    ),
) -> None:
    """Release a quarantined memory: active and verified."""
    with container() as c:
        decision = c.review.promote(reviewer(tenant), memory_id, expected_version, idempotency_key, reason)
    _emit(decision.item, as_json)


@review_app.command("confirm")
def review_confirm(
    memory_id: str = typer.Argument(..., metavar="ID"),
    tenant: str = TENANT,
    expected_version: int = VERSION,
    ttl_days: float | None = typer.Option(
        None, "--ttl-days", min=0, help="Keep it this many days from now (default: its kind's default TTL)."
    ),
    as_json: bool = AS_JSON,
) -> None:
    """Confirm an active memory: keep it longer than its source allows (up to its kind's maximum)."""
    ttl = timedelta(days=ttl_days) if ttl_days is not None else None
    with container() as c:
        item = c.retention.confirm(reviewer(tenant), memory_id, expected_version, ttl)
    if as_json:
        print_json(MemoryOut.from_domain(item))
    else:
        console.print(f"kept {item.id} until {item.expires_at:%Y-%m-%d %H:%M} UTC (now v{item.version})")


@review_app.command("reject")
def review_reject(
    memory_id: str = typer.Argument(..., metavar="ID"),
    tenant: str = TENANT,
    expected_version: int = VERSION,
    reason: str = typer.Option(..., "--reason", help="Kept in the audit log: never content or a subject id."),
    idempotency_key: str | None = KEY,
    as_json: bool = AS_JSON,
) -> None:
    """Retract a quarantined memory, and the summaries citing it."""
    with container() as c:
        decision = c.review.reject(reviewer(tenant), memory_id, expected_version, reason, idempotency_key)
    _emit(decision.item, as_json)


@app.command()
def retract(
    tenant: str = typer.Option(..., "--tenant"),
    memory_id: str | None = typer.Option(None, "--memory-id", help="Retract this memory..."),
    source_ref: str | None = typer.Option(
        None, "--source-ref", help="...or every memory written from this source."
    ),
    reason: str = typer.Option(..., "--reason", help="Kept in the audit log: never content or a subject id."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would go; change nothing."),
    as_json: bool = AS_JSON,
) -> None:
    """Retract one memory or everything from one source, with the summaries built on them."""
    with container() as c:
        result = c.retractions.retract(
            officer(tenant), memory_id=memory_id, source_ref=source_ref, reason=reason, dry_run=dry_run
        )
    if as_json:
        print_json(RetractionOut.from_domain(result))
        return
    verb = "would retract" if dry_run else f"retraction {result.id}: retracted"
    console.print(
        f"{verb} {len(result.memory_ids)} memories and {len(result.derived_ids)} summaries citing them"
    )
    for memory in result.memory_ids:
        console.print(f"  memory  {memory}")
    for summary in result.derived_ids:
        console.print(f"  summary {summary}")
