"""Operator memories: ``lethe operator write`` records a configuration or house-rule memory.

The CLI acts for a tenant as its operator (principal ``cli``): the memory gets authority
``operator`` and trust ``verified`` from the policy table, is active at once, and every
agent of the tenant reads it in searches of its purpose (``vault.memory.visibility``).
``--json`` prints the HTTP body of ``POST /v1/memories`` (a ``MemoryOut``).
"""

from __future__ import annotations

import uuid

import typer

from lethe.api.cli.common import console, container, print_json
from lethe.api.http.schemas.memories import MemoryOut
from lethe.vault.model import Caller, Kind, Provenance, Role, SourceType, WriteCommand

app = typer.Typer()
operator_app = typer.Typer(help="Operator memories: configuration every agent of a purpose reads.")
app.add_typer(operator_app, name="operator")


def operator(tenant: str) -> Caller:
    """The caller ``lethe operator`` acts as: the tenant's operator."""
    return Caller(tenant, Role.OPERATOR, None, frozenset(), principal="cli")


@operator_app.command("write")
def write(
    content: str = typer.Argument(..., help="The fact or rule, as agents should read it."),
    tenant: str = typer.Option(..., "--tenant"),
    purpose: str = typer.Option(..., "--purpose", help="Agents of this purpose read it."),
    subject: str = typer.Option(..., "--subject", help="Whom it is about (an org id for house rules)."),
    kind: Kind = typer.Option(Kind.FACT, "--kind"),
    source_ref: str = typer.Option("lethe-cli", "--source-ref", help="Where the rule comes from."),
    idempotency_key: str | None = typer.Option(None, "--idempotency-key"),
    as_json: bool = typer.Option(False, "--json", help="Print the HTTP API's body."),
) -> None:
    """Record an operator memory (authority operator, trust verified, active at once)."""
    cmd = WriteCommand(
        subject_id=subject,
        purpose=purpose,
        kind=kind.value,
        content=content,
        provenance=Provenance(SourceType.OPERATOR_CONFIG, source_ref),
        idempotency_key=idempotency_key or uuid.uuid4().hex,
    )
    with container() as c:
        outcome = c.memories.write(operator(tenant), cmd)
    if as_json:
        print_json(MemoryOut.from_domain(outcome.item))
        return
    item = outcome.item
    verb = "recorded" if outcome.created else "already recorded"
    console.print(f"{verb} operator memory {item.id} v{item.version} for purpose {item.purpose}")
