"""API tokens: what an admin asks for, and what is shown (the secret only once)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from lethe.api.http.schemas.common import Strict
from lethe.vault.access.tokens import MAX_TOKEN_TTL, TokenInfo
from lethe.vault.model import Role


class TokenCreate(Strict):
    role: Role
    tenant_id: str | None = Field(
        default=None, max_length=64, description="Optional; must be the admin's own tenant."
    )
    agent_id: str | None = Field(default=None, max_length=64, description="Required for agent tokens.")
    purposes: list[str] = Field(default_factory=list, max_length=50)
    ttl_seconds: int | None = Field(default=None, gt=0, le=int(MAX_TOKEN_TTL.total_seconds()), strict=True)
    description: str | None = Field(default=None, max_length=200)


class TokenOut(BaseModel):
    id: str
    role: Role
    tenant_id: str
    agent_id: str | None
    purposes: list[str]
    description: str | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def fields_of(cls, info: TokenInfo) -> dict[str, Any]:
        return {
            "id": info.id,
            "role": info.role,
            "tenant_id": info.tenant_id,
            "agent_id": info.agent_id,
            "purposes": list(info.purposes),
            "description": info.description,
            "created_at": info.created_at,
            "expires_at": info.expires_at,
            "revoked_at": info.revoked_at,
        }

    @classmethod
    def from_domain(cls, info: TokenInfo) -> TokenOut:
        return cls(**cls.fields_of(info))


class TokenCreated(TokenOut):
    token: str = Field(description="The bearer token. Shown once; only its hash is stored.")

    @classmethod
    def from_domain(cls, token: str, info: TokenInfo) -> TokenCreated:
        return cls(token=token, **cls.fields_of(info))
