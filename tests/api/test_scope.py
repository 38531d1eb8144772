"""Scope comes from the token only: a body cannot name a tenant or an agent, and another
tenant's data is indistinguishable from data that does not exist (SQLite and PostgreSQL)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.api.conftest import Api, assert_problem, bearer, memory_body


@pytest.fixture
def two_tenants(api: Api) -> tuple[str, str, str]:
    """(tenant t1 agent a1, tenant t2 agent a1, tenant t1 agent a2): same agent id in two tenants."""
    return api.mint(tenant="t1"), api.mint(tenant="t2"), api.mint(tenant="t1", agent="a2")


@pytest.mark.parametrize(
    "forged", [{"tenant_id": "t1"}, {"agent_id": "a1"}, {"tenant_id": "t1", "agent_id": "a1"}]
)
def test_a_body_naming_a_tenant_or_agent_is_rejected_and_writes_nothing(
    api: Api, two_tenants: tuple[str, str, str], forged: dict[str, str]
) -> None:
    _, t2, _ = two_tenants
    before = api.events()
    r = api.client.post("/v1/memories", json=memory_body(**forged), headers=bearer(t2))
    doc = assert_problem(r, 422)
    assert {tuple(e["loc"]) for e in doc["errors"]} == {("body", k) for k in forged}
    r = api.client.post(
        "/v1/memories/search", json={"query": "tea", "purpose": "support", **forged}, headers=bearer(t2)
    )
    assert_problem(r, 422)
    assert api.events() == before


def test_another_tenants_item_reads_exactly_like_a_missing_one(
    api: Api, two_tenants: tuple[str, str, str]
) -> None:
    t1, t2, t1_other_agent = two_tenants
    item = api.client.post(
        "/v1/memories", json=memory_body("Alice likes green tea"), headers=bearer(t1)
    ).json()
    assert api.client.get(f"/v1/memories/{item['id']}", headers=bearer(t1)).status_code == 200

    theirs = api.client.get(f"/v1/memories/{item['id']}", headers=bearer(t2))
    missing = api.client.get(f"/v1/memories/{uuid.uuid4()}", headers=bearer(t2))
    a, b = assert_problem(theirs, 404), assert_problem(missing, 404)
    assert {k: v for k, v in a.items() if k != "instance"} == {k: v for k, v in b.items() if k != "instance"}
    assert_problem(api.client.get(f"/v1/memories/{item['id']}", headers=bearer(t1_other_agent)), 404)

    # Search in tenant t2 with the same subject and words finds nothing of t1's.
    r = api.client.post(
        "/v1/memories/search",
        json={"query": "green tea", "purpose": "support", "subject_id": "alice@example.com"},
        headers=bearer(t2),
    )
    assert r.status_code == 200 and r.json()["items"] == []
    # Nor can t2 promote or update it by id.
    reviewer_t2 = api.mint("reviewer", tenant="t2")
    r = api.client.post(
        f"/v1/memories/{item['id']}/promote", json={"expected_version": 1}, headers=bearer(reviewer_t2)
    )
    assert_problem(r, 404)
    r = api.client.post(
        "/v1/memories", json=memory_body("overwrite", id=item["id"], expected_version=1), headers=bearer(t2)
    )
    assert r.status_code in (404, 409)
    assert (
        api.client.get(f"/v1/memories/{item['id']}", headers=bearer(t1)).json()["content"]
        == "Alice likes green tea"
    )


def test_a_purpose_outside_the_token_is_forbidden(api: Api) -> None:
    token = api.mint(purposes=("support",))
    before = api.events()
    r = api.client.post("/v1/memories", json=memory_body(purpose="marketing"), headers=bearer(token))
    assert_problem(r, 403)
    r = api.client.post(
        "/v1/memories/search", json={"query": "tea", "purpose": "marketing"}, headers=bearer(token)
    )
    assert_problem(r, 403)
    assert api.events() == before


def test_a_write_under_another_tenants_id_answers_exactly_like_one_under_an_unknown_id(
    api: Api, two_tenants: tuple[str, str, str]
) -> None:
    t1, t2, _ = two_tenants
    theirs = api.client.post("/v1/memories", json=memory_body("Alice likes green tea"), headers=bearer(t1))
    assert theirs.status_code == 201
    theirs_id = theirs.json()["id"]

    def post(memory_id: str, expected_version: int) -> Any:
        body = memory_body(
            "Bob likes black tea",
            subject_id="bob@example.com",
            id=memory_id,
            expected_version=expected_version,
        )
        return api.client.post("/v1/memories", json=body, headers=bearer(t2))

    # An update: t2 has no memory under either id, so both are 404 and read alike.
    other = assert_problem(post(theirs_id, 1), 404)
    missing = assert_problem(post(str(uuid.uuid4()), 1), 404)
    assert {k: v for k, v in other.items() if k != "instance"} == {
        k: v for k, v in missing.items() if k != "instance"
    }
    # A create: both succeed, with the same status and the same shape.
    shared, unknown = post(theirs_id, 0), post(str(uuid.uuid4()), 0)
    assert shared.status_code == unknown.status_code == 201, shared.text
    assert shared.headers["content-type"] == unknown.headers["content-type"]
    varying = {"id", "idempotency_key", "content_hmac", "created_at", "expires_at"}
    a, b = shared.json(), unknown.json()
    assert a.keys() == b.keys()
    assert {k: v for k, v in a.items() if k not in varying} == {
        k: v for k, v in b.items() if k not in varying
    }
    assert a["id"] == theirs_id and a["content"] == "Bob likes black tea"
    # Each tenant reads its own memory under the id; t1's is unchanged.
    assert api.client.get(f"/v1/memories/{theirs_id}", headers=bearer(t1)).json() == theirs.json()
    assert api.client.get(f"/v1/memories/{theirs_id}", headers=bearer(t2)).json() == a
