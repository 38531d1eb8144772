"""Request and response bodies of the HTTP API (pydantic), apart from domain objects; one
module per area (``memories``, ``review``, ``tokens``, ``erasure``, ``audit``, ``health``) over
``common``.

The CLI prints these same models for its ``--json`` output, so the two never drift.

Every request model forbids unknown fields: a body naming ``tenant_id`` or
``agent_id`` is a 422, because scope comes from the token and a silently ignored
field would let a client believe it chose its tenant. Response models (``common.Out``)
read a domain object's attributes of the same names (``from_domain``), so the wire
format is stated once, as the model's fields.

Every number a request accepts is bounded, so none reaches an overflow in the clock,
the store or the request hash, and strict (``"10"`` or ``true`` is not a number; an int
is still a float). Strict per field, not model-wide: FastAPI validates the parsed JSON
as Python objects, where a strict datetime would refuse the ISO 8601 strings
``expires_at`` arrives as.

Exceptions: pydantic's ``ValidationError`` (rendered as a 422 problem by FastAPI).
"""
