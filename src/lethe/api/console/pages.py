"""The console's pages and the API route each one acts as: the role check in one place.

A page is allowed to a role exactly when ``ROUTE_ROLES`` allows that role the API route
named here (``api.http.auth.may``), so the console has no access policy of its own: a
change to the API's table changes the console with it. A role that may open no page
(agent, operator) cannot sign in at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from lethe.api.http.auth import may
from lethe.vault.model import Role


@dataclass(frozen=True)
class Page:
    path: str
    label: str
    route: str  # the API route whose allowed roles decide who may open the page


NAV: tuple[Page, ...] = (
    Page("/console/requests", "Erasure requests", "list_erasure_requests"),
    Page("/console/holds", "Legal holds", "list_legal_holds"),
    Page("/console/subjects", "Subjects", "request_subject_access"),
    Page("/console/review", "Review queue", "list_review_queue"),
    Page("/console/retractions", "Retractions", "retract_memories"),
    Page("/console/certificates", "Certificates", "list_erasure_requests"),
    Page("/console/audit", "Audit log", "get_audit_checkpoint"),
    Page("/console/kpis", "KPIs", "get_audit_kpis"),
    Page("/console/tokens", "Tokens", "list_tokens"),
    Page("/console/webhooks", "Webhooks", "list_webhooks"),
)


def pages_for(role: Role) -> list[Page]:
    return [p for p in NAV if may(role, p.route)]


def may_use_console(role: Role) -> bool:
    return bool(pages_for(role))


def home_for(role: Role) -> str:
    pages = pages_for(role)
    return pages[0].path if pages else "/console/sign-in"
