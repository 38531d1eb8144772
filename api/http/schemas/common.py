"""What every schema module shares: the strict base model, ids in URLs, bounded subject ids."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Header
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field, field_validator


class Strict(BaseModel):
    """A request body: unknown fields and NUL characters are a 422."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        """PostgreSQL text cannot hold NUL; refuse it here as a 422 rather than fail as a 500."""
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and "\x00" in v for v in values):
            raise ValueError("must not contain NUL characters")
        return value


# Ids in URLs: uuids in practice; anything else is refused before it reaches a query.
ResourceId = Annotated[str, PathParam(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$")]
IdempotencyHeader = Annotated[
    str | None, Header(alias="Idempotency-Key", min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")
]
SubjectId = Annotated[
    str, Field(min_length=1, max_length=256, description="The data subject; only ever sent in bodies.")
]
