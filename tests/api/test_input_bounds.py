"""Bad input at the HTTP edge: numbers past what the store or the clock can hold, lax
types, oversized queries, a correction aimed outside the token's purposes and floods of
bad tokens. Each is a 4xx RFC 9457 problem that does not echo the input and writes nothing.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.model import Role
from tests.api.conftest import Api, api_settings, assert_problem, bearer, memory_body

TOO_BIG_FOR_JSON_HASHING = 2**53
TOO_BIG_FOR_THE_STORE = 2**31


@pytest.fixture
def agent(api: Api) -> dict[str, str]:
    return bearer(api.mint())


def refused(api: Api, path: str, body: dict[str, Any], headers: dict[str, str], *echo: str) -> dict[str, Any]:
    """POST ``body``: a 422 problem that names none of ``echo`` and appends no event."""
    before = api.events()
    r = api.client.post(path, json=body, headers=headers)
    doc = assert_problem(r, 422)
    for text in echo:
        assert text not in r.text
    assert api.events() == before
    return doc


# -- 1. expected_version -------------------------------------------------------------


@pytest.mark.parametrize("version", [TOO_BIG_FOR_JSON_HASHING, TOO_BIG_FOR_THE_STORE, 10**30])
def test_expected_version_beyond_the_store_range_is_a_422_and_writes_nothing(
    api: Api, agent: dict[str, str], version: int
) -> None:
    item = api.client.post("/v1/memories", json=memory_body("v1"), headers=agent).json()
    for body in (memory_body(expected_version=version), memory_body(id=item["id"], expected_version=version)):
        doc = refused(api, "/v1/memories", body, agent, str(version))
        assert [e["loc"] for e in doc["errors"]] == [["body", "expected_version"]]


def test_expected_version_at_the_top_of_the_store_range_is_not_a_schema_error(
    api: Api, agent: dict[str, str]
) -> None:
    body = memory_body(id=str(uuid.uuid4()), expected_version=2**31 - 1)
    assert_problem(api.client.post("/v1/memories", json=body, headers=agent), 404)


def test_a_promotion_with_an_expected_version_beyond_the_store_range_is_a_422(api: Api) -> None:
    reviewer = bearer(api.mint(Role.REVIEWER))
    body = {"expected_version": TOO_BIG_FOR_JSON_HASHING}
    refused(api, f"/v1/memories/{uuid.uuid4()}/promote", body, reviewer, str(TOO_BIG_FOR_JSON_HASHING))


# -- 2. ttl_seconds and expires_at ---------------------------------------------------------


@pytest.mark.parametrize("ttl", [10**14, 10**20, 10 * 365 * 86400 + 1])
def test_a_ttl_too_long_for_the_clock_is_a_422_and_writes_nothing(
    api: Api, agent: dict[str, str], ttl: int
) -> None:
    doc = refused(api, "/v1/memories", memory_body(kind="fact", ttl_seconds=ttl), agent, str(ttl))
    assert [e["loc"] for e in doc["errors"]] == [["body", "ttl_seconds"]]


def test_a_ttl_within_the_schema_bound_but_past_the_kind_maximum_is_a_422(
    api: Api, agent: dict[str, str]
) -> None:
    doc = refused(api, "/v1/memories", memory_body(kind="fact", ttl_seconds=6 * 365 * 86400), agent)
    assert doc["title"] == "Invalid expiry"


@pytest.mark.parametrize(
    "expires_at", ["9999-12-31T23:59:59+00:00", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+14:00"]
)
def test_an_expiry_at_the_edge_of_the_calendar_is_a_422_not_a_500(
    api: Api, agent: dict[str, str], expires_at: str
) -> None:
    doc = refused(api, "/v1/memories", memory_body(kind="fact", expires_at=expires_at), agent, expires_at)
    assert doc["title"] == "Invalid expiry"


def test_an_iso_expiry_with_an_offset_is_still_accepted(api: Api, agent: dict[str, str]) -> None:
    when = (datetime.now(UTC) + timedelta(days=30)).astimezone(timezone(timedelta(hours=2)))
    r = api.client.post("/v1/memories", json=memory_body(expires_at=when.isoformat()), headers=agent)
    assert r.status_code == 201, r.text
    assert datetime.fromisoformat(r.json()["expires_at"].replace("Z", "+00:00")) == when


# -- 3. every number a request body accepts is bounded ------------------------------------


def _numbers(schema: dict[str, Any], spec: dict[str, Any], where: str, seen: set[str]) -> list[tuple]:
    """(where, schema) of every integer/number reachable from ``schema``, following $refs."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return []
        return _numbers(spec["components"]["schemas"][name], spec, where, seen | {name})
    found = []
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            found += _numbers(sub, spec, where, seen)
    if schema.get("type") in ("integer", "number"):
        found.append((where, schema))
    for name, prop in schema.get("properties", {}).items():
        found += _numbers(prop, spec, f"{where}.{name}", seen)
    if isinstance(schema.get("items"), dict):
        found += _numbers(schema["items"], spec, f"{where}[]", seen)
    if isinstance(schema.get("additionalProperties"), dict):
        found += _numbers(schema["additionalProperties"], spec, f"{where}{{}}", seen)
    return found


def test_every_number_a_request_accepts_has_a_minimum_and_a_maximum(tmp_path: Path) -> None:
    spec = create_app(Settings(data_dir=tmp_path / "data")).openapi()
    numbers = []
    for path, item in spec["paths"].items():
        for method, op in item.items():
            where = f"{method.upper()} {path}"
            for content in op.get("requestBody", {}).get("content", {}).values():
                numbers += _numbers(content["schema"], spec, f"{where} body", set())
            for param in op.get("parameters", []):
                numbers += _numbers(param["schema"], spec, f"{where} {param['in']} {param['name']}", set())
    names = {where.rsplit(".", 1)[-1] for where, _ in numbers}
    assert {"expected_version", "ttl_seconds", "confidence", "limit", "token_budget"} <= names
    unbounded = [
        where
        for where, s in numbers
        if not ({"minimum", "exclusiveMinimum"} & s.keys() and {"maximum", "exclusiveMaximum"} & s.keys())
    ]
    assert unbounded == []


# -- 4. search query size -----------------------------------------------------------------


def _words(n: int) -> str:
    """``n`` distinct two-letter-or-longer words, as short as possible."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [a + b for a in letters for b in letters] + [
        a + b + c for a in letters for b in letters for c in letters
    ]
    return " ".join(words[:n])


def test_a_query_of_more_distinct_terms_than_the_limit_is_a_422_that_names_the_limit(
    api: Api, agent: dict[str, str]
) -> None:
    from lethe.vault.memory.search import MAX_QUERY_TERMS

    api.client.post("/v1/memories", json=memory_body("aa ab ac"), headers=agent)
    ok = api.client.post(
        "/v1/memories/search", json={"query": _words(MAX_QUERY_TERMS), "purpose": "support"}, headers=agent
    )
    assert ok.status_code == 200 and len(ok.json()["items"]) == 1
    query = _words(MAX_QUERY_TERMS + 1)
    doc = refused(api, "/v1/memories/search", {"query": query, "purpose": "support"}, agent, query[:40])
    assert str(MAX_QUERY_TERMS) in doc["detail"]


def test_a_query_of_a_thousand_distinct_words_is_a_422_not_a_500(api: Api, agent: dict[str, str]) -> None:
    query = _words(1100)
    assert len(query) <= 4096
    refused(api, "/v1/memories/search", {"query": query, "purpose": "support"}, agent)


def test_a_query_longer_than_the_limit_is_a_422(api: Api, agent: dict[str, str]) -> None:
    from lethe.vault.memory.search import MAX_QUERY_CHARS

    doc = refused(
        api, "/v1/memories/search", {"query": "a" * (MAX_QUERY_CHARS + 1), "purpose": "support"}, agent
    )
    assert [e["loc"] for e in doc["errors"]] == [["body", "query"]]


# -- 5. no lax types ----------------------------------------------------------------------

LAX = [
    ("/v1/memories", {"confidence": True}),
    ("/v1/memories", {"confidence": "0.5"}),
    ("/v1/memories", {"ttl_seconds": "10"}),
    ("/v1/memories", {"ttl_seconds": 10.0}),
    ("/v1/memories", {"expected_version": "1"}),
    ("/v1/memories", {"expected_version": 0.0}),
    ("/v1/memories", {"expected_version": False}),
    ("/v1/memories/search", {"limit": "5"}),
    ("/v1/memories/search", {"limit": True}),
    ("/v1/memories/search", {"token_budget": "500"}),
    ("/v1/memories/{id}/promote", {"expected_version": "1"}),
    ("/v1/admin/tokens", {"ttl_seconds": "3600"}),
]


@pytest.mark.parametrize(("path", "lax"), LAX, ids=lambda v: str(v))
def test_a_number_sent_as_a_string_or_a_bool_is_a_422_and_writes_nothing(
    api: Api, path: str, lax: dict[str, Any]
) -> None:
    if path == "/v1/memories":
        headers, body = bearer(api.mint()), memory_body(**lax)
    elif path == "/v1/memories/search":
        headers, body = bearer(api.mint()), {"query": "tea", "purpose": "support", **lax}
    elif path.endswith("/promote"):
        path = path.format(id=uuid.uuid4())
        headers, body = bearer(api.mint(Role.REVIEWER)), lax
    else:
        headers, body = bearer(api.mint(Role.ADMIN)), {"role": "auditor", **lax}
    doc = refused(api, path, body, headers)
    assert [e["loc"][-1] for e in doc["errors"]] == list(lax)


def test_a_whole_number_confidence_is_still_accepted(api: Api, agent: dict[str, str]) -> None:
    r = api.client.post("/v1/memories", json=memory_body(confidence=1), headers=agent)
    assert r.status_code == 201 and r.json()["confidence"] == 1.0


# -- 6. supersession outside the token's purposes -------------------------------------------


def test_superseding_an_item_in_a_purpose_the_token_lacks_is_a_404_like_an_unknown_id(api: Api) -> None:
    both = bearer(api.mint(purposes=("support", "billing")))
    support_only = bearer(api.mint(purposes=("support",)))
    billing = api.client.post("/v1/memories", json=memory_body(purpose="billing"), headers=both).json()
    before = api.events()
    aimed = api.client.post(
        "/v1/memories", json=memory_body(supersedes_id=billing["id"]), headers=support_only
    )
    unknown = api.client.post(
        "/v1/memories", json=memory_body(supersedes_id=str(uuid.uuid4())), headers=support_only
    )
    doc, other = assert_problem(aimed, 404), assert_problem(unknown, 404)
    assert (doc["title"], doc["detail"]) == (other["title"], other["detail"])
    assert api.events() == before
    # With the purpose in scope the old rule still applies: a correction keeps the purpose.
    assert_problem(
        api.client.post("/v1/memories", json=memory_body(supersedes_id=billing["id"]), headers=both), 422
    )


# -- 7. failed authentications are rate limited per client address ------------------------


@pytest.mark.parametrize("backend", ["sqlite"])
def test_bad_tokens_from_one_address_are_rate_limited_but_a_valid_token_still_works(
    settings: Settings,
) -> None:
    app = create_app(api_settings(settings, auth_failure_rate_limit="5/minute"))
    with TestClient(app) as client:
        api = Api(app, client)
        good = bearer(api.mint())
        search = {"query": "tea", "purpose": "support"}
        # Successful requests are not charged to the failure limit.
        assert {
            client.post("/v1/memories/search", json=search, headers=good).status_code for _ in range(10)
        } == {200}
        bad = [bearer(f"lethe_{uuid.uuid4().hex}{'x' * 11}"), {}, bearer("not-a-token")]
        codes = [
            client.post("/v1/memories/search", json=search, headers=bad[i % 3]).status_code for i in range(5)
        ]
        assert codes == [401] * 5
        r = client.post("/v1/memories/search", json=search, headers=bad[0])
        doc = assert_problem(r, 429)
        assert 1 <= int(r.headers["retry-after"]) <= 60
        assert "5/minute" in doc["detail"] and bad[0]["Authorization"][7:] not in r.text
        assert client.post("/v1/memories/search", json=search, headers=good).status_code == 200
        # The limit is per address: another client's bad token is still a plain 401.
        elsewhere = TestClient(app, client=("203.0.113.7", 50000))
        assert_problem(elsewhere.post("/v1/memories/search", json=search, headers=bad[0]), 401)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_agents_routes_refuse_a_missing_or_malformed_token_before_they_read_the_body(
    settings: Settings,
) -> None:
    # Write, read and search look a token up in the thread of their work, so a token of the
    # right form is looked up only once the body is valid; no token, or a malformed one, is
    # refused first, as on every route.
    app = create_app(api_settings(settings, auth_failure_rate_limit="6/minute"))
    with TestClient(app) as client:
        invalid = {"query": 5}
        for route in ("/v1/memories/search", "/v1/memories"):
            assert_problem(client.post(route, json=invalid), 401)
            assert_problem(client.post(route, json=invalid, headers=bearer("not-a-token")), 401)
        unknown = bearer(f"lethe_{uuid.uuid4().hex}{'x' * 11}")
        # An invalid body with a well-formed token: 422, no lookup, nothing charged...
        for _ in range(5):
            assert_problem(client.post("/v1/memories/search", json=invalid, headers=unknown), 422)
        # ...so the failure limit (6, four spent above) still has two 401s left.
        search = {"query": "tea", "purpose": "support"}
        codes = [client.post("/v1/memories/search", json=search, headers=unknown).status_code for _ in "abc"]
        assert codes == [401, 401, 429]


def test_an_unreadable_auth_failure_rate_limit_is_refused_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="auth_failure_rate_limit"):
        Settings(data_dir=tmp_path, auth_failure_rate_limit="plenty")


@pytest.mark.parametrize("uri", ["memcached://127.0.0.1:11211", "127.0.0.1:6379", "redis"])
def test_a_rate_limit_storage_other_than_memory_or_redis_is_refused_at_start_up(
    tmp_path: Path, uri: str
) -> None:
    with pytest.raises(ValueError, match="rate_limit_storage"):
        Settings(data_dir=tmp_path, rate_limit_storage=uri)


def test_a_redis_rate_limit_storage_is_accepted(tmp_path: Path) -> None:
    uri = "redis://127.0.0.1:6379/0"
    assert Settings(data_dir=tmp_path, rate_limit_storage=uri).rate_limit_storage == uri
