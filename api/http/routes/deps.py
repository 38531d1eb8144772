"""What routes get from the app: the container (every service), the metrics, the token service.

Exceptions: none; the app sets all three before it serves a request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from lethe.api.bootstrap import Container
from lethe.api.http.metrics import Metrics
from lethe.vault.access.tokens import TokenService


def get_container(request: Request) -> Container:
    return request.app.state.container


def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


def get_tokens(request: Request) -> TokenService:
    return request.app.state.tokens


ContainerDep = Annotated[Container, Depends(get_container)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
TokensDep = Annotated[TokenService, Depends(get_tokens)]
