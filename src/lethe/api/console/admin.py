"""Admin pages: the tenant's tokens (list, mint with role, agent, purposes and a name, revoke).

A minted token is shown once, on the page that answers the form, and never again;
revoking a token also ends its console sessions.

Exceptions: core errors become error pages (``api.console.app``); ``InvalidCommand``
(422) for a lifetime that is not a whole number of days within the API's bound
(parsed as the API's own type, ``api.http.schemas.numbers``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response

from lethe.api.console.render import page
from lethe.api.console.session import Act, User, acting, container, viewing
from lethe.api.http.routes.deps import ResourceId
from lethe.api.http.schemas.numbers import TokenTtlSeconds, days_from_form
from lethe.vault.access.tokens import MAX_TOKEN_TTL
from lethe.vault.model import Role

router = APIRouter()
ROLES = [r.value for r in Role]
TTL_REFUSAL = f"the lifetime is a whole number of days from 1 to {MAX_TOKEN_TTL.days}"


@router.get("/tokens")
def tokens(request: Request, user: Annotated[User, Depends(viewing("list_tokens"))]) -> Response:
    listed = container(request).tokens.list(user.caller.tenant_id)
    return page(request, user, "tokens.html", tokens=listed, roles=ROLES, minted=None, title="Tokens")


@router.post("/tokens")
def mint(request: Request, act: Annotated[Act, Depends(acting("create_token"))]) -> Response:
    days = act.text("ttl_days")
    ttl = days_from_form(days, TokenTtlSeconds, TTL_REFUSAL) if days is not None else None
    purposes = [p.strip() for p in (act.text("purposes") or "").split(",") if p.strip()]
    c = container(request)
    token, info = c.tokens.create(
        act.text("role") or "",
        act.user.caller.tenant_id,
        agent_id=act.text("agent_id"),
        purposes=purposes,
        ttl=timedelta(seconds=ttl) if ttl is not None else None,
        description=act.text("description"),
        display_name=act.text("display_name"),
        email=act.text("email"),
        created_by=act.user.caller.principal,
    )
    listed = c.tokens.list(act.user.caller.tenant_id)
    minted = {"token": token, "info": info}
    return page(request, act.user, "tokens.html", tokens=listed, roles=ROLES, minted=minted, title="Tokens")


@router.post("/tokens/{token_id}/revoke")
def revoke(
    request: Request, token_id: ResourceId, act: Annotated[Act, Depends(acting("revoke_token"))]
) -> Response:
    c = container(request)
    c.tokens.revoke(token_id, tenant_id=act.user.caller.tenant_id, revoked_by=act.user.caller.principal)
    c.sessions.close_for_token(token_id)
    return RedirectResponse("/console/tokens", status_code=303)
