"""What routes get from the request: the container (every service), the metrics, the token
service, and the bounded ids and headers routes accept.

Exceptions: none; the app sets all three before it serves a request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Path, Request

from lethe.api.bootstrap import Container
from lethe.api.http.metrics import Metrics
from lethe.vault.access.tokens import TokenService


# ``async def``: they only read the app's state, and FastAPI runs a plain ``def`` dependency
# in a worker thread (a thread hop per dependency per request).
async def get_container(request: Request) -> Container:
    return request.app.state.container


async def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


async def get_tokens(request: Request) -> TokenService:
    return request.app.state.tokens


# Ids in URLs: uuids in practice; anything else is refused before it reaches a query.
ResourceId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$")]
IdempotencyHeader = Annotated[
    str | None, Header(alias="Idempotency-Key", min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")
]

# An agent's session (``vault.memory.agent_sessions``), in a header or a write's or search's body.
SESSION_ID_PATTERN = r"^[A-Za-z0-9._:-]+$"
SessionHeader = Annotated[
    str | None, Header(alias="Lethe-Session", min_length=1, max_length=128, pattern=SESSION_ID_PATTERN)
]
SessionId = Annotated[str, Path(min_length=1, max_length=128, pattern=SESSION_ID_PATTERN)]

ContainerDep = Annotated[Container, Depends(get_container)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
TokensDep = Annotated[TokenService, Depends(get_tokens)]
