"""Summaries are checked, over HTTP (issue 54, item 3): the refusal is an RFC 9457 problem.

SQLite and PostgreSQL (``api`` fixture). The rules themselves are proven in
tests/integration/test_summaries_checked.py.
"""

from __future__ import annotations

from tests.api.conftest import assert_problem, bearer, memory_body


def test_a_summary_citing_another_tenants_memory_is_a_422_problem_naming_the_position(api):
    mine = api.client.post("/v1/memories", json=memory_body(), headers=bearer(api.mint()))
    theirs = api.client.post("/v1/memories", json=memory_body(), headers=bearer(api.mint(tenant="t2")))
    assert mine.status_code == theirs.status_code == 201
    provenance = {"source_type": "summary", "source_ref": "summariser/run-1"}
    token = bearer(api.mint())
    before = api.events()
    refused = api.client.post(
        "/v1/memories",
        json=memory_body(
            "Alice likes tea", provenance={**provenance, "sources": [mine.json()["id"], theirs.json()["id"]]}
        ),
        headers=token,
    )
    doc = assert_problem(refused, 422)
    assert doc["detail"] == "provenance.sources[1]: unknown or not live memory"
    assert "Alice" not in refused.text and api.events() == before
    written = api.client.post(  # positive control: the tenant's own memory alone
        "/v1/memories",
        json=memory_body("Alice likes tea", provenance={**provenance, "sources": [mine.json()["id"]]}),
        headers=token,
    )
    assert written.status_code == 201, written.text
    provenance = written.json()["provenance"]
    assert provenance["sources"] == [mine.json()["id"]]
    assert provenance["origins"] == {
        "memory_ids": [mine.json()["id"]],
        "source_types": ["user_statement"],
        "trust": "trusted",
    }
    assert mine.json()["provenance"]["origins"] is None  # only a summary's are recorded
