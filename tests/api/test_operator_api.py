"""Operator memories over HTTP and the CLI (issue 12, item 3). SQLite and PostgreSQL.

An operator token writes an ``operator_config`` memory (201, authority operator); an
agent token of the purpose finds it in a search above a contradicting agent inference of
equal relevance, with the score's parts named; ``lethe operator write --json`` prints
the same body shape as the HTTP write.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from tests.api.conftest import Api, assert_problem, bearer, memory_body

RULE = {"source_type": "operator_config", "source_ref": "policies/refunds.md"}


def test_an_operator_token_writes_a_memory_every_agent_of_the_purpose_ranks_first(api: Api) -> None:
    op, a1, a2 = bearer(api.mint("operator")), bearer(api.mint(agent="a1")), bearer(api.mint(agent="a2"))
    body = memory_body("refunds allowed within 30 days", subject_id="org:acme", kind="fact", confidence=0.5)
    r = api.client.post("/v1/memories", json={**body, "provenance": RULE}, headers=op)
    assert r.status_code == 201, r.text
    rule = r.json()
    assert (rule["authority"], rule["trust"], rule["status"]) == ("operator", "verified", "active")
    guess = memory_body("refunds allowed within 90 days", subject_id="org:acme", kind="fact", confidence=1.0)
    guess["provenance"] = {"source_type": "agent_inference", "source_ref": "run-7"}
    g = api.client.post("/v1/memories", json=guess, headers=a1).json()
    promoted = api.client.post(
        f"/v1/memories/{g['id']}/promote", json={"expected_version": 1}, headers=bearer(api.mint("reviewer"))
    )
    assert promoted.status_code == 200
    found = api.client.post(
        "/v1/memories/search", json={"query": "refunds allowed within days", "purpose": "support"}, headers=a1
    ).json()["items"]
    assert [i["id"] for i in found] == [rule["id"], g["id"]]
    assert {"authority", "trust"} <= found[0]["score"].keys()
    other = api.client.post(
        "/v1/memories/search", json={"query": "refunds", "purpose": "support"}, headers=a2
    )
    assert [i["id"] for i in other.json()["items"]] == [rule["id"]]  # another agent, same purpose
    assert api.client.get(f"/v1/memories/{rule['id']}", headers=a2).status_code == 200


def test_an_operator_token_cannot_write_a_user_statement(api: Api) -> None:
    r = api.client.post("/v1/memories", json=memory_body(), headers=bearer(api.mint("operator")))
    assert_problem(r, 403)


@pytest.fixture
def runner(api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    else:
        monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    return CliRunner()


def test_lethe_operator_write_records_a_memory_agents_find(api: Api, runner: CliRunner) -> None:
    args = ["operator", "write", "invoices go out on the first", "--tenant", "t1", "--purpose", "support"]
    result = runner.invoke(cli, [*args, "--subject", "org:acme", "--idempotency-key", "k1", "--json"])
    assert result.exit_code == 0, result.output
    item = json.loads(result.stdout)
    assert item["authority"] == "operator" and item["agent_id"] == "operator:cli"
    found = api.client.post(
        "/v1/memories/search", json={"query": "invoices", "purpose": "support"}, headers=bearer(api.mint())
    ).json()["items"]
    assert [i["id"] for i in found] == [item["id"]]
    again = runner.invoke(cli, [*args, "--subject", "org:acme", "--idempotency-key", "k1"])
    assert again.exit_code == 0 and "already recorded" in again.stdout
