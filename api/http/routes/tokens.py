"""Token administration: an admin mints tokens for its own tenant.

Exceptions: ``OutOfScope`` (403) for another tenant; ``InvalidCommand`` (422) from
``TokenService`` for a scope that makes no sense.
"""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Response

from lethe.api.http.auth import CallerDep
from lethe.api.http.problems import problem_responses
from lethe.api.http.routes.deps import TokensDep
from lethe.api.http.schemas.tokens import TokenCreate, TokenCreated
from lethe.vault.errors import OutOfScope

router = APIRouter(prefix="/v1/admin", tags=["admin"])


@router.post(
    "/tokens",
    name="create_token",
    status_code=201,
    response_model=TokenCreated,
    responses=problem_responses(401, 403, 413, 422, 429, 503),
)
def create_token(body: TokenCreate, caller: CallerDep, tokens: TokensDep, response: Response) -> TokenCreated:
    """Mint a token; the response is the only place its plaintext ever appears."""
    if body.tenant_id is not None and body.tenant_id != caller.tenant_id:
        raise OutOfScope("an admin may mint tokens for its own tenant only")
    token, info = tokens.create(
        body.role,
        caller.tenant_id,
        agent_id=body.agent_id,
        purposes=body.purposes,
        ttl=timedelta(seconds=body.ttl_seconds) if body.ttl_seconds else None,
        description=body.description,
    )
    response.headers["Cache-Control"] = "no-store"
    return TokenCreated.from_minted(token, info)
