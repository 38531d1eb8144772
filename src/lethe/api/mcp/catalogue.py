"""What the MCP server offers, and which HTTP route each offering calls.

A role sees a tool or resource exactly when ``ROUTE_ROLES`` lets it call the route behind
it: the listing is a view of the one access policy, never a second one. With today's
table an agent sees ``remember``, ``recall`` and ``get_memory``; an operator ``remember``
(its writes must be ``operator_config``); a privacy officer
``request_erasure``, ``erasure_status`` and ``get_certificate``; an auditor
``erasure_status``, ``get_certificate`` and the audit checkpoint. A role with nothing to
see (reviewer, admin) is refused at the door: 403 ``insufficient_scope``.

Exceptions: none.
"""

from __future__ import annotations

from lethe.api.http.auth import ROUTE_ROLES
from lethe.vault.model import Role

TOOL_ROUTES: dict[str, str] = {
    "remember": "write_memory",
    "recall": "search_memories",
    "get_memory": "get_memory",
    "request_erasure": "request_erasure",
    "erasure_status": "get_erasure_request",
    "get_certificate": "get_erasure_report",
}
RESOURCE_ROUTES: dict[str, str] = {  # resource (or template) name -> route
    "certificate": "get_erasure_report",
    "audit_checkpoint": "get_audit_checkpoint",
}
SCOPE = "mcp"  # the OAuth scope a token carries when its role sees anything here


def visible(role: Role, routes: dict[str, str]) -> frozenset[str]:
    """The names in ``routes`` whose route this role may call."""
    return frozenset(name for name, route in routes.items() if role in ROUTE_ROLES[route])


def scopes_of(role: Role) -> list[str]:
    return [SCOPE] if visible(role, TOOL_ROUTES) | visible(role, RESOURCE_ROUTES) else []
