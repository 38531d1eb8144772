"""Every refusal is an RFC 9457 problem, never echoes what was sent, and writes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.api.conftest import Api, assert_problem, bearer, memory_body

CANARY = "CANARY-7f3a9c-secret-content"


@pytest.fixture
def agent(api: Api) -> dict[str, str]:
    return bearer(api.mint())


def test_malformed_json(api: Api, agent: dict[str, str]) -> None:
    before = api.events()
    r = api.client.post(
        "/v1/memories",
        content=b'{"content": "' + CANARY.encode() + b'", ',
        headers={**agent, "Content-Type": "application/json"},
    )
    doc = assert_problem(r, 422)
    assert doc["title"] == "Malformed JSON"
    assert CANARY not in r.text
    assert api.events() == before


def test_missing_fields_are_listed(api: Api, agent: dict[str, str]) -> None:
    before = api.events()
    r = api.client.post("/v1/memories", json={"content": CANARY}, headers=agent)
    doc = assert_problem(r, 422)
    missing = {e["loc"][-1] for e in doc["errors"] if e["type"] == "missing"}
    assert {"subject_id", "purpose", "kind", "provenance"} <= missing
    assert CANARY not in r.text
    assert api.events() == before


def test_wrong_types_are_listed_without_echoing_input(api: Api, agent: dict[str, str]) -> None:
    before = api.events()
    body = memory_body(confidence=CANARY, expected_version=CANARY, subject_id=["not", CANARY])
    r = api.client.post("/v1/memories", json=body, headers=agent)
    doc = assert_problem(r, 422)
    assert {e["loc"][-1] for e in doc["errors"]} >= {"confidence", "expected_version", "subject_id"}
    assert all(set(e) == {"loc", "msg", "type"} for e in doc["errors"])
    assert CANARY not in r.text
    assert api.events() == before


def test_unknown_kind(api: Api, agent: dict[str, str]) -> None:
    before = api.events()
    r = api.client.post("/v1/memories", json=memory_body(kind="gossip"), headers=agent)
    doc = assert_problem(r, 422)
    assert [e["loc"] for e in doc["errors"]] == [["body", "kind"]]
    assert "gossip" not in r.text
    assert api.events() == before


def _chunks(total: int, size: int = 8192) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        yield b"x" * min(size, total - sent)
        sent += size


@pytest.mark.parametrize("how", ["content-length", "chunked"])
def test_an_oversized_body_is_413_even_without_content_length(
    api: Api, agent: dict[str, str], how: str
) -> None:
    limit = api.app.state.settings.max_body_bytes
    before = api.events()
    if how == "content-length":
        r = api.client.post("/v1/memories", content=b"x" * (limit + 1), headers=agent)
    else:
        r = api.client.post("/v1/memories", content=_chunks(limit + 1), headers=agent)
        assert "content-length" not in {k.lower() for k in r.request.headers}
    assert_problem(r, 413)
    assert api.events() == before


def test_content_over_the_core_limit_is_413(api: Api, agent: dict[str, str]) -> None:
    before = api.events()
    too_big = "y" * (api.container.settings.max_content_bytes + 1)
    assert_problem(api.client.post("/v1/memories", json=memory_body(too_big), headers=agent), 413)
    assert api.events() == before


def test_stale_version_is_409(api: Api, agent: dict[str, str]) -> None:
    item = api.client.post("/v1/memories", json=memory_body("v1"), headers=agent).json()
    r = api.client.post(
        "/v1/memories", json=memory_body("v2", id=item["id"], expected_version=1), headers=agent
    )
    assert r.status_code == 201 and r.json()["version"] == 2
    before = api.events()
    r = api.client.post(
        "/v1/memories", json=memory_body("stale", id=item["id"], expected_version=1), headers=agent
    )
    assert assert_problem(r, 409)["title"] == "Version conflict"
    assert api.events() == before


def test_idempotency_key_reused_with_another_body_is_409(api: Api, agent: dict[str, str]) -> None:
    key = uuid.uuid4().hex
    first = api.client.post("/v1/memories", json=memory_body("first", idempotency_key=key), headers=agent)
    assert first.status_code == 201
    before = api.events()
    r = api.client.post("/v1/memories", json=memory_body("second", idempotency_key=key), headers=agent)
    assert assert_problem(r, 409)["title"] == "Idempotency key reused"
    assert api.events() == before


def test_unknown_route_and_wrong_method_are_problems(api: Api) -> None:
    doc = assert_problem(api.client.get(f"/v1/{CANARY}"), 404)
    assert CANARY not in doc["detail"]
    assert_problem(api.client.patch("/v1/memories/search"), 405)  # DELETE is a route now: /v1/memories/{id}


def test_a_store_outage_is_503(api: Api, agent: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from lethe.vault.errors import StoreUnavailable

    def down(*_a: object, **_k: object) -> None:
        raise StoreUnavailable("database unavailable")

    monkeypatch.setattr(api.container.memories, "get", down)
    assert_problem(api.client.get(f"/v1/memories/{uuid.uuid4()}", headers=agent), 503)


def test_an_unexpected_error_is_a_bare_500(
    api: Api, agent: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError(CANARY)

    monkeypatch.setattr(api.container.memories, "get", boom)
    r = api.client.get(f"/v1/memories/{uuid.uuid4()}", headers=agent)
    assert_problem(r, 500)
    assert CANARY not in r.text
