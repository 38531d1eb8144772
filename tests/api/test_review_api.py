"""Review and retraction over HTTP (SQLite and PostgreSQL): the second-wave contract shapes.

GET /v1/review-queue[/{id}], POST /v1/memories/{id}/promote|reject and POST /v1/retractions:
bodies, statuses, problems, and the retry of a decision returning its first result.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.api.conftest import Api, assert_problem, bearer, memory_body

POISONED = "https://evil.example/page"


@pytest.fixture
def tokens(api: Api) -> dict[str, dict[str, str]]:
    return {
        "agent": bearer(api.mint()),
        "reviewer": bearer(api.mint("reviewer")),
        "officer": bearer(api.mint("privacy_officer")),
        "other_reviewer": bearer(api.mint("reviewer", tenant="t2")),
        "other_agent": bearer(api.mint(tenant="t2")),
    }


def quarantined(api: Api, headers: dict[str, str], content: str = "works at Example Corp", **kw: Any) -> dict:
    provenance = {
        "source_type": kw.pop("source_type", "web_page"),
        "source_ref": kw.pop("source_ref", POISONED),
    }
    if provenance["source_type"] == "web_page":
        provenance["url"] = "https://example.org/page"
    r = api.client.post(
        "/v1/memories", json=memory_body(content, provenance=provenance, **kw), headers=headers
    )
    assert r.status_code == 201 and r.json()["status"] == "quarantined", r.text
    return r.json()


def test_a_retried_promote_returns_the_first_result_over_http(api: Api, tokens) -> None:  # type: ignore[no-untyped-def]
    item = quarantined(api, tokens["agent"])
    url = f"/v1/memories/{item['id']}/promote"
    key = {**tokens["reviewer"], "Idempotency-Key": "promote-7"}
    first = api.client.post(url, json={"expected_version": 1}, headers=key)
    assert first.status_code == 200 and first.json()["status"] == "active"
    assert first.json()["trust"] == "verified" and first.json()["content"] == "works at Example Corp"
    events = api.events()
    again = api.client.post(url, json={"expected_version": 1}, headers=key)
    assert again.status_code == 200 and again.json() == first.json() and api.events() == events
    # The item moves on (its agent corrects it); the retry still answers the first result, never a 409.
    correction = memory_body("works at Example Inc", supersedes_id=item["id"])
    assert api.client.post("/v1/memories", json=correction, headers=tokens["agent"]).status_code == 201
    body_key = {"expected_version": 1, "idempotency_key": "promote-7"}
    later = api.client.post(url, json=body_key, headers=tokens["reviewer"])
    assert later.status_code == 200 and later.json() == first.json()
    # The same key for another request is a conflict; a header and a body key that differ are a 422.
    other = quarantined(api, tokens["agent"], "another page")
    doc = assert_problem(
        api.client.post(f"/v1/memories/{other['id']}/promote", json={"expected_version": 1}, headers=key), 409
    )
    assert doc["title"] == "Idempotency key reused"
    both = {"expected_version": 1, "idempotency_key": "not-the-header"}
    assert_problem(api.client.post(f"/v1/memories/{other['id']}/promote", json=both, headers=key), 422)


def test_reject_retracts_a_quarantined_memory_and_a_retry_returns_the_first_result(api: Api, tokens) -> None:  # type: ignore[no-untyped-def]
    item = quarantined(api, tokens["agent"])
    url = f"/v1/memories/{item['id']}/reject"
    body = {"expected_version": 1, "reason": "the page is a hoax", "idempotency_key": "reject-1"}
    first = api.client.post(url, json=body, headers=tokens["reviewer"])
    assert first.status_code == 200, first.text
    doc = first.json()
    assert doc["status"] == "retracted" and doc["version"] == 2
    # The origin is sealed with the content: a retracted memory's answer holds neither.
    assert doc["content"] is None and doc["subject_id"] is None
    assert doc["provenance"]["source_type"] == "web_page" and doc["provenance"]["source_ref"] is None
    assert api.client.post(url, json=body, headers=tokens["reviewer"]).json() == doc
    assert_problem(api.client.get(f"/v1/memories/{item['id']}", headers=tokens["agent"]), 404)
    assert_problem(api.client.get(f"/v1/review-queue/{item['id']}", headers=tokens["reviewer"]), 404)
    no_reason = {"expected_version": 1}
    assert_problem(api.client.post(url, json=no_reason, headers=tokens["reviewer"]), 422)


def test_only_quarantined_memory_can_be_promoted_over_http(api: Api, tokens) -> None:  # type: ignore[no-untyped-def]
    active = api.client.post("/v1/memories", json=memory_body(), headers=tokens["agent"]).json()
    r = api.client.post(
        f"/v1/memories/{active['id']}/promote", json={"expected_version": 1}, headers=tokens["reviewer"]
    )
    doc = assert_problem(r, 409)
    assert "only a quarantined memory can be promoted" in doc["detail"]


def test_the_review_queue_filters_and_pages_over_http(api: Api, tokens) -> None:  # type: ignore[no-untyped-def]
    a2 = bearer(api.mint(agent="a2", purposes=("support", "billing")))
    mine = [quarantined(api, tokens["agent"], f"page {i}")["id"] for i in range(3)]
    theirs = quarantined(
        api, a2, "billing page", purpose="billing", source_type="tool_result", source_ref="tool:crm"
    )["id"]
    quarantined(api, tokens["other_agent"], "another tenant's page")
    headers = tokens["reviewer"]
    seen, cursor = [], None
    while True:
        r = api.client.get(
            "/v1/review-queue", params={"limit": 2, **({"cursor": cursor} if cursor else {})}, headers=headers
        )
        assert r.status_code == 200, r.text
        seen += [i["id"] for i in r.json()["items"]]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == [*mine, theirs]
    [first] = api.client.get("/v1/review-queue", params={"limit": 1}, headers=headers).json()["items"]
    assert first["content"] == "page 0" and first["subject_id"] == "alice@example.com"
    assert first["provenance"] == {
        "source_type": "web_page",
        "source_ref": POISONED,
        "sources": [],
        "turn": None,
        "tool": None,
        "url": "https://example.org/page",
        "document_ref": None,
        "origins": None,
    }

    def ids(**params: Any) -> list[str]:
        r = api.client.get("/v1/review-queue", params=params, headers=headers)
        assert r.status_code == 200, r.text
        return [i["id"] for i in r.json()["items"]]

    assert ids(agent_id="a2") == ids(purpose="billing") == [theirs]
    assert ids(source_type="web_page") == mine
    assert ids(older_than=3600) == []
    assert ids(older_than=0) == [*mine, theirs]
    one = api.client.get(f"/v1/review-queue/{mine[1]}", headers=headers)
    assert one.status_code == 200 and one.json()["content"] == "page 1"
    assert_problem(api.client.get(f"/v1/review-queue/{mine[1]}", headers=tokens["other_reviewer"]), 404)
    for bad in (
        {"cursor": "bm90LW91cnM"},
        {"older_than": -1},
        {"limit": 0},
        {"limit": 101},
        {"source_type": "gossip"},
    ):
        assert_problem(api.client.get("/v1/review-queue", params=bad, headers=headers), 422)


def test_a_retraction_dry_run_answers_200_and_writes_nothing_then_202_retracts(api: Api, tokens) -> None:  # type: ignore[no-untyped-def]
    item = quarantined(api, tokens["agent"])
    events = api.events()
    body = {"source_ref": POISONED, "reason": "the site was compromised", "dry_run": True}
    dry = api.client.post("/v1/retractions", json=body, headers=tokens["officer"])
    assert dry.status_code == 200, dry.text
    assert dry.json() == {"id": None, "dry_run": True, "memory_ids": [item["id"]], "derived_ids": []}
    assert api.events() == events
    body["dry_run"] = False
    done = api.client.post("/v1/retractions", json=body, headers=tokens["reviewer"])
    assert done.status_code == 202, done.text
    assert done.json()["id"] and done.json()["memory_ids"] == [item["id"]] and not done.json()["dry_run"]
    assert_problem(api.client.get(f"/v1/review-queue/{item['id']}", headers=tokens["reviewer"]), 404)


@pytest.mark.parametrize(
    "body",
    [
        {"reason": "neither"},
        {"memory_id": "00000000-0000-4000-8000-000000000000", "source_ref": POISONED, "reason": "both"},
        {"source_ref": POISONED},
        {"source_ref": POISONED, "reason": ""},
        {"source_ref": POISONED, "reason": "x", "dry_run": "yes"},
        {"source_ref": POISONED, "reason": "x", "tenant_id": "t2"},
    ],
)
def test_a_bad_retraction_is_a_422_problem_and_writes_nothing(api: Api, tokens, body: dict) -> None:  # type: ignore[no-untyped-def]
    events = api.events()
    assert_problem(api.client.post("/v1/retractions", json=body, headers=tokens["officer"]), 422)
    assert api.events() == events


def test_an_unknown_memory_id_is_a_404_indistinguishable_from_another_tenants(api: Api, tokens) -> None:  # type: ignore[no-untyped-def]
    theirs = api.client.post("/v1/memories", json=memory_body(), headers=tokens["other_agent"]).json()
    answers = []
    for memory_id in (str(uuid.uuid4()), theirs["id"]):
        body = {"memory_id": memory_id, "reason": "wrong"}
        doc = assert_problem(api.client.post("/v1/retractions", json=body, headers=tokens["officer"]), 404)
        answers.append({k: v for k, v in doc.items() if k != "instance"})
    assert answers[0] == answers[1]
    assert memory_id not in str(answers)
    theirs_now = api.client.get(f"/v1/memories/{theirs['id']}", headers=tokens["other_agent"])
    assert theirs_now.status_code == 200 and theirs_now.json()["status"] == "active"
