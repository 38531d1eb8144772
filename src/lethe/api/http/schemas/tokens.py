"""API tokens: what an admin asks for, and what is shown (the secret only once)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from lethe.api.http.schemas.common import Out, Strict
from lethe.api.http.schemas.numbers import TokenTtlSeconds
from lethe.vault.access.tokens import MAX_DISPLAY_NAME, MAX_EMAIL, TokenInfo
from lethe.vault.model import Role, SourceType

_SOURCE_TYPES = (
    "The source types the token may assert in a memory's provenance; a write asserting another "
    "is a 403. Null: its role's default (an agent token every type but operator_config, an "
    "operator token operator_config)."
)


class TokenCreate(Strict):
    role: Role
    tenant_id: str | None = Field(
        default=None, max_length=64, description="Optional; must be the admin's own tenant."
    )
    agent_id: str | None = Field(default=None, max_length=64, description="Required for agent tokens.")
    purposes: list[str] = Field(default_factory=list, max_length=50)
    ttl_seconds: TokenTtlSeconds | None = None
    description: str | None = Field(default=None, max_length=200)
    display_name: str | None = Field(
        default=None, min_length=1, max_length=MAX_DISPLAY_NAME, description="Who the token stands for."
    )
    email: str | None = Field(default=None, min_length=3, max_length=MAX_EMAIL)
    source_types: list[SourceType] | None = Field(
        default=None, min_length=1, max_length=len(SourceType), description=_SOURCE_TYPES
    )


class TokenOut(Out):
    """A token's id and scope: everything about it but the secret."""

    id: str
    role: Role
    tenant_id: str
    agent_id: str | None
    purposes: list[str]
    description: str | None
    display_name: str | None
    email: str | None
    source_types: list[SourceType] | None = Field(description=_SOURCE_TYPES)
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


class TokenList(BaseModel):
    """The tokens of the admin's tenant: ids and scope, never secrets or hashes."""

    items: list[TokenOut]

    @classmethod
    def from_domain(cls, infos: Sequence[TokenInfo]) -> TokenList:
        return cls(items=[TokenOut.from_domain(i) for i in infos])


class TokenCreated(TokenOut):
    token: str = Field(description="The bearer token. Shown once; only its hash is stored.")

    @classmethod
    def from_minted(cls, token: str, info: TokenInfo) -> TokenCreated:
        return cls(token=token, **TokenOut.from_domain(info).model_dump())


class Whoami(BaseModel):
    """The caller's own token, as the server reads it: what a client needs to know about its
    scope (the LangGraph store derives its items' ids from the agent), never the secret."""

    token_id: str
    tenant_id: str
    role: Role
    agent_id: str | None
    purposes: list[str]
    source_types: list[SourceType] | None = Field(description=_SOURCE_TYPES)
