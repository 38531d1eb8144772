"""What routes get from the app: the container, the metrics, the erasure service.

Exceptions: ``StoreUnavailable`` (503) when the erasure service is not wired in.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from lethe.api.bootstrap import Container
from lethe.api.http.metrics import Metrics
from lethe.vault.access.tokens import TokenService
from lethe.vault.errors import StoreUnavailable


def get_container(request: Request) -> Container:
    return request.app.state.container


def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


def get_tokens(request: Request) -> TokenService:
    return request.app.state.tokens


def get_erasure(request: Request) -> Any:
    """The erasure service, if this build has one (it lands separately from the API)."""
    service = getattr(request.app.state.container, "erasure", None)
    if service is None:
        raise StoreUnavailable("erasure service not available")
    return service


ContainerDep = Annotated[Container, Depends(get_container)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
TokensDep = Annotated[TokenService, Depends(get_tokens)]
ErasureDep = Annotated[Any, Depends(get_erasure)]
