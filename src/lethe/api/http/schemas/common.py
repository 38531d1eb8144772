"""What every schema module shares: the strict base model of request bodies, bounded subject ids.

Plain pydantic (no FastAPI), so the CLI can print these models without loading the web stack.
"""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lethe.vault.errors import InvalidCommand


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


class Out(BaseModel):
    """A response body read from the attributes of the domain object of the same field names.

    The fields are the whole mapping, stated once: a field added here is filled from the
    attribute of that name, and no second list of fields can fall behind.
    """

    model_config = ConfigDict(from_attributes=True)

    @classmethod
    def from_domain(cls, obj: object) -> Self:
        return cls.model_validate(obj)


SubjectId = Annotated[
    str, Field(min_length=1, max_length=256, description="The data subject; only ever sent in bodies.")
]


def one_idempotency_key(in_body: str | None, in_header: str | None) -> str | None:
    """The request's idempotency key, from the body or the ``Idempotency-Key`` header (not two)."""
    if in_body and in_header and in_body != in_header:
        raise InvalidCommand("the Idempotency-Key header and the idempotency_key field differ")
    return in_body or in_header


def one_session_id(in_body: str | None, in_header: str | None) -> str | None:
    """The request's agent session, from the ``Lethe-Session`` header or the body's ``session_id``:
    two that differ are refused (neither is echoed)."""
    if in_body is not None and in_header is not None and in_body != in_header:
        raise InvalidCommand("the Lethe-Session header and the session_id field differ")
    return in_body if in_body is not None else in_header


SessionIdField = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9._:-]+$",
        description="The agent's session, or the Lethe-Session header (the two must agree).",
    ),
]

IdempotencyKeyField = Annotated[
    str | None, Field(min_length=1, max_length=128, description="Or the Idempotency-Key header.")
]
