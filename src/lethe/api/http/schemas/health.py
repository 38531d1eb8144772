"""Liveness and readiness answers."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Health(BaseModel):
    status: str
    checks: dict[str, str] | None = Field(default=None, description="Readiness: each check and its result.")
