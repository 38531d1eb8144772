"""The memory endpoints end to end in-process: status codes, shapes, metrics, limits."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid

import pytest
from fastapi.testclient import TestClient

from lethe.api.http.logging import JsonFormatter
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.keys.protocol import KmsUnavailable
from tests.api.conftest import Api, api_settings, assert_problem, bearer, memory_body


def metric(api: Api, name: str) -> float:
    text = api.client.get("/metrics").text
    total = 0.0
    for line in text.splitlines():
        m = re.match(rf"^{re.escape(name)}(\{{[^}}]*\}})? ([0-9.e+-]+)$", line)
        if m:
            total += float(m.group(2))
    return total


def test_write_then_replay_returns_the_first_result(api: Api) -> None:
    h = bearer(api.mint())
    body = memory_body()
    first = api.client.post("/v1/memories", json=body, headers=h)
    assert first.status_code == 201
    item = first.json()
    assert item["status"] == "active" and item["trust"] == "trusted" and item["version"] == 1
    assert item["content"] == body["content"] and item["subject_id"] == body["subject_id"]
    assert item["tenant_id"] == "t1" and item["agent_id"] == "a1"
    before = api.events()
    again = api.client.post("/v1/memories", json=body, headers=h)
    assert again.status_code == 200 and again.json() == item
    assert api.events() == before
    assert api.client.get(f"/v1/memories/{item['id']}", headers=h).json() == item


def test_the_idempotency_key_may_come_from_the_header(api: Api) -> None:
    h = bearer(api.mint())
    body = memory_body()
    del body["idempotency_key"]
    key = {"Idempotency-Key": uuid.uuid4().hex}
    assert api.client.post("/v1/memories", json=body, headers={**h, **key}).status_code == 201
    assert api.client.post("/v1/memories", json=body, headers={**h, **key}).status_code == 200
    r = api.client.post("/v1/memories", json={**body, "idempotency_key": "other"}, headers={**h, **key})
    assert_problem(r, 422)
    assert_problem(api.client.post("/v1/memories", json=body, headers=h), 422)  # no key at all


def test_seed_scenario_quarantine_search_promote(api: Api) -> None:
    agent, reviewer = bearer(api.mint()), bearer(api.mint("reviewer"))
    trusted = api.client.post("/v1/memories", json=memory_body("Alice likes green tea"), headers=agent).json()
    web = memory_body(
        "Alice drinks tea daily",
        provenance={
            "source_type": "web_page",
            "source_ref": "https://example.com",
            "url": "https://example.com",
        },
    )
    untrusted = api.client.post("/v1/memories", json=web, headers=agent).json()
    assert trusted["status"] == "active" and untrusted["status"] == "quarantined"

    r = api.client.post("/v1/memories/search", json={"query": "tea", "purpose": "support"}, headers=agent)
    result = r.json()
    assert r.status_code == 200 and set(result) == {"items", "used_tokens", "skipped_over_budget", "recall"}
    assert result["recall"] == "hybrid"
    assert [i["id"] for i in result["items"]] == [trusted["id"]]
    parts = {"lexical", "semantic", "authority", "trust", "confidence", "recency", "total"}
    assert set(result["items"][0]["score"]) == parts
    assert result["used_tokens"] > 0 and result["skipped_over_budget"] == 0
    assert_problem(api.client.get(f"/v1/memories/{untrusted['id']}", headers=agent), 404)

    stale = api.client.post(
        f"/v1/memories/{untrusted['id']}/promote", json={"expected_version": 2}, headers=reviewer
    )
    assert_problem(stale, 409)
    r = api.client.post(
        f"/v1/memories/{untrusted['id']}/promote", json={"expected_version": 1}, headers=reviewer
    )
    assert r.status_code == 200
    assert r.json()["status"] == "active" and r.json()["trust"] == "verified" and r.json()["version"] == 2
    r = api.client.post("/v1/memories/search", json={"query": "tea", "purpose": "support"}, headers=agent)
    assert {i["id"] for i in r.json()["items"]} == {trusted["id"], untrusted["id"]}

    assert metric(api, "lethe_writes_total") == 2
    assert metric(api, "lethe_quarantined_total") == 1
    assert metric(api, "lethe_promotions_total") == 1
    assert metric(api, "lethe_conflicts_total") == 1
    assert metric(api, "lethe_search_seconds_count") == 2
    assert metric(api, "lethe_search_items_sum") == 3
    assert metric(api, "lethe_kms_seconds_count") >= 1  # the subject key was created through the proxy


def test_supersession_is_counted(api: Api) -> None:
    h = bearer(api.mint())
    old = api.client.post("/v1/memories", json=memory_body("Alice likes tea"), headers=h).json()
    new = api.client.post(
        "/v1/memories", json=memory_body("Alice likes coffee now", supersedes_id=old["id"]), headers=h
    )
    assert new.status_code == 201 and new.json()["supersedes_id"] == old["id"]
    assert metric(api, "lethe_supersessions_total") == 1
    r = api.client.post("/v1/memories", json=memory_body("again", supersedes_id=old["id"]), headers=h)
    assert_problem(r, 409)


def test_health_readiness_and_metrics(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    assert api.client.get("/healthz").status_code == 200
    assert api.client.get("/readyz").status_code == 200
    r = api.client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert "lethe_writes_total" in r.text

    def kms_down() -> None:
        raise KmsUnavailable("connection refused")

    monkeypatch.setattr(api.container.kms.inner, "health", kms_down)
    doc = assert_problem(api.client.get("/readyz"), 503)
    assert "key management" in doc["detail"]
    assert api.client.get("/healthz").status_code == 200
    assert metric(api, "lethe_kms_errors_total") == 1
    monkeypatch.undo()


def test_readiness_reports_a_store_that_reads_but_cannot_write(api: Api) -> None:
    """A SELECT 1 would say ready here; the write probe says what the server cannot do."""
    ok = api.client.get("/readyz")
    assert ok.status_code == 200 and ok.json()["checks"]["database write"] == "ok"
    engine = api.container.uow.engine
    with engine.connect() as other:  # another writer holds the write lock, and keeps it
        if engine.dialect.name == "sqlite":
            other.execution_options(sqlite_begin="IMMEDIATE").begin()
        else:
            other.exec_driver_sql("SELECT pg_advisory_lock(1279611976)")  # the event-log lock
        doc = assert_problem(api.client.get("/readyz"), 503)
        assert "database write failed" in doc["detail"] and "database read" not in doc["detail"]
        if engine.dialect.name != "sqlite":
            other.exec_driver_sql("SELECT pg_advisory_unlock(1279611976)")
        other.rollback()
    assert api.client.get("/readyz").status_code == 200


def test_readiness_reports_a_schema_another_release_wrote(api: Api) -> None:
    with api.container.uow.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_future'")
    assert "schema failed" in assert_problem(api.client.get("/readyz"), 503)["detail"]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_each_app_has_its_own_registry(settings: Settings) -> None:
    one, two = create_app(api_settings(settings)), create_app(api_settings(settings))
    assert one.state.metrics.registry is not two.state.metrics.registry
    one.state.metrics.writes.inc()
    assert two.state.metrics.writes._value.get() == 0


@pytest.mark.parametrize("backend", ["sqlite"])
def test_rate_limit_per_token_with_retry_after(settings: Settings) -> None:
    app = create_app(api_settings(settings, rate_limit="3/minute"))
    with TestClient(app) as client:
        api = Api(app, client)
        busy, other = bearer(api.mint()), bearer(api.mint(agent="a2"))
        search = {"query": "tea", "purpose": "support"}
        codes = [client.post("/v1/memories/search", json=search, headers=busy).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        r = client.post("/v1/memories/search", json=search, headers=busy)
        assert_problem(r, 429)
        assert 1 <= int(r.headers["retry-after"]) <= 60
        assert client.post("/v1/memories/search", json=search, headers=other).status_code == 200


@pytest.mark.parametrize("backend", ["sqlite"])
def test_expired_memories_are_swept_in_the_background(settings: Settings) -> None:
    app = create_app(api_settings(settings, sweep_interval_seconds=0.2))
    with TestClient(app) as client:
        api = Api(app, client)
        h = bearer(api.mint())
        item = client.post("/v1/memories", json=memory_body(ttl_seconds=1), headers=h).json()
        deadline = time.monotonic() + 10
        while metric(api, "lethe_expirations_total") < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert metric(api, "lethe_expirations_total") == 1
        assert_problem(client.get(f"/v1/memories/{item['id']}", headers=h), 404)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_one_access_line_per_request_with_route_template_and_token_id(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    token, info = api.tokens.create("agent", "t1", "a1", ["support"])
    memory_id = str(uuid.uuid4())
    with caplog.at_level(logging.INFO, logger="lethe.access"):
        r = api.client.get(
            f"/v1/memories/{memory_id}?q=secret", headers={**bearer(token), "X-Request-ID": "req-12345678"}
        )
    assert r.headers["x-request-id"] == "req-12345678"
    (record,) = [rec for rec in caplog.records if rec.name == "lethe.access"]
    line = json.loads(JsonFormatter().format(record))
    assert line["route"] == "/v1/memories/{memory_id}"
    assert line["method"] == "GET" and line["status"] == 404
    assert line["token_id"] == info.id and line["request_id"] == "req-12345678"
    assert isinstance(line["duration_ms"], float)
    text = json.dumps(line)
    assert memory_id not in text and "secret" not in text and token not in text
