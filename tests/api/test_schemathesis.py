"""Property-based tests of every operation against the app's own OpenAPI schema.

Schemathesis generates requests from the schema; each is sent with a token of a role
the operation allows. The checks: no 5xx, every status documented, responses match
their documented schema, content type and headers. Bounded: 20 examples an operation by default.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from lethe.api.http.auth import ROUTE_ROLES  # noqa: E402
from lethe.api.server.app import create_app  # noqa: E402
from lethe.api.settings import Settings  # noqa: E402
from lethe.vault.model import Role  # noqa: E402
from tests.api.conftest import api_settings  # noqa: E402

# Bounded for CI; LETHE_SCHEMATHESIS_EXAMPLES=500 for a deeper local hunt.
EXAMPLES = int(os.environ.get("LETHE_SCHEMATHESIS_EXAMPLES", "20"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def api_schema(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    url = None
    if request.param == "postgres":
        pg = request.getfixturevalue("postgres")
        url = pg.create()
    base = Settings(data_dir=tmp_path_factory.mktemp("schemathesis") / "data", database_url=url)
    # Webhooks are never sent here: generated URLs must not reach any resolver or network.
    app = create_app(api_settings(base, erasure_interval_seconds=0.5, webhook_interval_seconds=3600))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)  # starts the app's lifespan
    assert app.state.container.uow.engine.dialect.name == ("postgresql" if url else "sqlite")
    tokens = app.state.tokens
    by_role = {
        role: tokens.create(role, "t1", "a1" if role is Role.AGENT else None, ("support",))[0]
        for role in Role
    }
    # Operation (method, path) -> a token of a role it allows; public ones get an agent token.
    app.state.test_tokens = {
        (method.upper(), route.path): by_role[sorted(ROUTE_ROLES.get(route.name, {Role.AGENT}))[0]]
        for route in _api_routes()
        for method in route.methods
    }
    schema.app_under_test = app  # type: ignore[attr-defined]
    yield schema
    from schemathesis.python import asgi

    asgi.shutdown_lifespans()  # stop the background loops and close the container
    if url is not None:
        pg.drop(url)


def _api_routes() -> list:  # type: ignore[type-arg]
    from fastapi.routing import APIRoute

    from lethe.api.http.routes import (
        audit,
        erasure,
        health,
        memories,
        review,
        sessions,
        subject_access,
        tokens,
        webhooks,
    )

    return [
        r
        for m in (health, memories, sessions, review, erasure, subject_access, tokens, audit, webhooks)
        for r in m.router.routes
        if isinstance(r, APIRoute)
    ]


def _operations() -> list[tuple[str, str]]:
    """(METHOD, path) of every documented operation; building an app touches no disk."""
    paths = create_app(Settings()).openapi()["paths"]
    return [(method.upper(), path) for path, item in paths.items() for method in item]


@pytest.mark.parametrize(("method", "path"), _operations(), ids=lambda v: str(v))
def test_every_operation_conforms_to_its_schema(api_schema, method: str, path: str) -> None:  # type: ignore[no-untyped-def]
    app = api_schema.app_under_test
    token = app.state.test_tokens[(method, path)]
    operation = api_schema[path][method]
    cases = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @given(case=cases)
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case) -> None:  # type: ignore[no-untyped-def]
        case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)

    run()
