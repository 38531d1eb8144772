"""HTTP search and write do not look up a token their process accepted before; they read the
token's revocation themselves, so a revoked token is refused by its next search or write, the
refusal is charged to the failure limit like any other, and the token is looked up from then on."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.model import Role
from tests.api.conftest import Api, api_settings, assert_problem, bearer, memory_body

SEARCH = {"query": "tea", "purpose": "support"}


def test_a_token_revoked_since_its_last_search_is_refused_and_charged_as_a_failure(
    settings: Settings,
) -> None:
    app = create_app(api_settings(settings, auth_failure_rate_limit="3/minute"))
    with TestClient(app) as client:
        api = Api(app, client)
        token = api.mint()
        assert client.post("/v1/memories/search", json=SEARCH, headers=bearer(token)).status_code == 200
        recalled = api.tokens.recall(token)  # looked up once, remembered since
        assert recalled is not None
        assert client.post("/v1/memories/search", json=SEARCH, headers=bearer(token)).status_code == 200

        api.tokens.revoke(recalled.principal)

        doc = assert_problem(client.post("/v1/memories/search", json=SEARCH, headers=bearer(token)), 401)
        assert token not in doc["detail"]
        assert api.tokens.recall(token) is None  # forgotten: looked up from now on
        codes = [
            client.post("/v1/memories/search", json=SEARCH, headers=bearer(token)).status_code for _ in "abc"
        ]
        assert codes == [401, 401, 429]  # the limit (3) counted the recalled search's 401 too


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_revoked_token_of_a_role_the_search_refuses_is_told_401_not_403(settings: Settings) -> None:
    app = create_app(api_settings(settings))
    with TestClient(app) as client:
        api = Api(app, client)
        token = api.mint(Role.REVIEWER)
        assert client.get("/v1/review-queue", headers=bearer(token)).status_code == 200
        assert api.tokens.recall(token) is not None
        assert_problem(client.post("/v1/memories/search", json=SEARCH, headers=bearer(token)), 403)
        api.tokens.revoke(api.tokens.recall(token).principal)  # type: ignore[union-attr]
        assert_problem(client.post("/v1/memories/search", json=SEARCH, headers=bearer(token)), 401)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_token_revoked_since_its_last_write_is_refused_by_the_next_and_nothing_is_written(
    settings: Settings,
) -> None:
    app = create_app(api_settings(settings))
    with TestClient(app) as client:
        api = Api(app, client)
        token = api.mint()
        assert client.post("/v1/memories", json=memory_body(), headers=bearer(token)).status_code == 201
        recalled = api.tokens.recall(token)
        assert recalled is not None
        api.tokens.revoke(recalled.principal)
        assert_problem(
            client.post("/v1/memories", json=memory_body("Bob likes jazz"), headers=bearer(token)), 401
        )
        assert api.tokens.recall(token) is None
        # Only the first memory is there: the refused write left nothing.
        other = api.mint()
        found = client.post("/v1/memories/search", json=SEARCH | {"query": "tea jazz"}, headers=bearer(other))
        assert [i["content"] for i in found.json()["items"]] == ["Alice prefers tea over coffee"]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_revoked_token_refused_before_its_revocation_is_read_is_still_told_401(settings: Settings) -> None:
    # Over its rate limit (429) or asking a purpose it lacks (403), a recalled search is
    # refused before its statement runs: the token is looked up before the answer.
    app = create_app(api_settings(settings, rate_limit="3/minute"))
    with TestClient(app) as client:
        api = Api(app, client)
        limited, lacking = api.mint(), api.mint()

        def search(token: str, body: dict[str, str] = SEARCH) -> Any:
            return client.post("/v1/memories/search", json=body, headers=bearer(token))

        billing = SEARCH | {"purpose": "billing"}
        assert [search(limited).status_code for _ in "abcd"] == [200, 200, 200, 429]
        assert [search(lacking).status_code, search(lacking, billing).status_code] == [200, 403]
        for token in (limited, lacking):
            recalled = api.tokens.recall(token)
            assert recalled is not None
            api.tokens.revoke(recalled.principal)
        assert_problem(search(limited), 401)  # not 429
        assert_problem(search(lacking, billing), 401)  # not 403
