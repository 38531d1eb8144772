"""``/mcp`` answers failed authentication like ``/v1``: each 401 costs the client address,
and past ``auth_failure_rate_limit`` the answer is a 429 problem (SQLite and PostgreSQL,
in-process app). A valid token's requests carry its token id into the access log."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.model import Role
from tests.api.conftest import PROBLEM, api_settings, bearer

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    app = create_app(
        api_settings(settings, auth_failure_rate_limit="3/minute", public_url="http://testserver")
    )
    with TestClient(app) as c:
        yield c


def test_failed_authentication_on_mcp_is_rate_limited_per_address(client: TestClient) -> None:
    bad = {**MCP_HEADERS, "Authorization": "Bearer lethe_" + "x" * 43}
    statuses = [client.post("/mcp", json=LIST_TOOLS, headers=bad).status_code for _ in range(4)]
    assert statuses == [401, 401, 401, 429]
    limited = client.post("/mcp", json=LIST_TOOLS, headers=MCP_HEADERS)
    assert limited.status_code == 429 and limited.headers["content-type"].startswith(PROBLEM)
    assert int(limited.headers["retry-after"]) > 0


def test_a_valid_token_is_served_and_its_id_logged(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    token, info = client.app.state.tokens.create(Role.AUDITOR, "t1")  # type: ignore[attr-defined]
    with caplog.at_level(logging.INFO, logger="lethe.access"):
        r = client.post("/mcp", json=LIST_TOOLS, headers={**MCP_HEADERS, **bearer(token)})
    assert r.status_code == 200 and {t["name"] for t in r.json()["result"]["tools"]} == {
        "erasure_status",
        "get_certificate",
    }
    lines = [rec for rec in caplog.records if getattr(rec, "route", None) == "/mcp"]
    assert [rec.token_id for rec in lines] == [info.id]  # type: ignore[attr-defined]
