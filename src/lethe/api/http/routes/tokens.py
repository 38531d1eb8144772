"""Token administration: an admin mints, lists and revokes the tokens of its own tenant;
any token reads its own scope (``whoami``).

Lists show ids, scope and names, never a secret or its hash. Another tenant's token is
a 404 on revocation, indistinguishable from an unknown id.

Exceptions: ``OutOfScope`` (403) for minting in another tenant; ``NotFound`` (404);
``InvalidCommand`` (422) from ``TokenService`` for a scope that makes no sense.
"""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Response

from lethe.api.http.auth import CallerDep
from lethe.api.http.problems import problem_responses
from lethe.api.http.routes.deps import ResourceId, TokensDep
from lethe.api.http.schemas.tokens import TokenCreate, TokenCreated, TokenList, Whoami
from lethe.vault.errors import OutOfScope

router = APIRouter(prefix="/v1", tags=["admin"])


@router.post(
    "/admin/tokens",
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
        display_name=body.display_name,
        email=body.email,
        created_by=caller.principal,
        source_types=body.source_types,
    )
    response.headers["Cache-Control"] = "no-store"
    return TokenCreated.from_minted(token, info)


@router.get(
    "/admin/tokens",
    name="list_tokens",
    response_model=TokenList,
    responses=problem_responses(401, 403, 429, 503),
)
def list_tokens(caller: CallerDep, tokens: TokensDep) -> TokenList:
    """The tokens of the admin's tenant, oldest first, revoked and expired ones included."""
    return TokenList.from_domain(tokens.list(caller.tenant_id))


@router.delete(
    "/admin/tokens/{token_id}",
    name="revoke_token",
    status_code=204,
    response_class=Response,
    responses=problem_responses(401, 403, 404, 422, 429, 503),
)
def revoke_token(token_id: ResourceId, caller: CallerDep, tokens: TokensDep) -> Response:
    """Revoke a token of the admin's tenant at once (revoking it again changes nothing)."""
    tokens.revoke(token_id, tenant_id=caller.tenant_id, revoked_by=caller.principal)
    return Response(status_code=204)


@router.get(
    "/whoami",
    name="whoami",
    response_model=Whoami,
    tags=["tokens"],
    responses=problem_responses(401, 429, 503),
)
def whoami(caller: CallerDep) -> Whoami:
    """The calling token's tenant, role, agent, purposes and source types (never its secret):
    a client learns its scope before it writes, rather than from a write that has landed."""
    return Whoami.model_validate(
        {
            "token_id": caller.principal,
            "tenant_id": caller.tenant_id,
            "role": caller.role,
            "agent_id": caller.agent_id,
            "purposes": sorted(caller.purposes),
            "source_types": None if caller.source_types is None else sorted(caller.source_types),
        }
    )
