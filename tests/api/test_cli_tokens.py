"""``lethe token create|list|revoke``: the token is printed once, errors exit non-zero."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lethe.api.cli.main import app


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LETHE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    runner = CliRunner()

    def invoke(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
        return runner.invoke(app, list(args), env=env)

    assert invoke("init").exit_code == 0
    return invoke


def test_create_list_revoke(run) -> None:  # type: ignore[no-untyped-def]
    r = run(
        "token",
        "create",
        "--tenant",
        "t1",
        "--role",
        "agent",
        "--agent",
        "a1",
        "--purpose",
        "support",
        "--purpose",
        "billing",
        "--ttl-days",
        "30",
        "--json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["token"].startswith("lethe_") and doc["role"] == "agent" and doc["tenant_id"] == "t1"
    assert doc["purposes"] == ["support", "billing"] and doc["expires_at"] is not None

    r = run("token", "list", "--tenant", "t1", "--json")
    assert r.exit_code == 0
    (listed,) = json.loads(r.stdout)["items"]  # the body of GET /v1/admin/tokens
    assert listed["id"] == doc["id"] and "token" not in listed and doc["token"] not in r.stdout

    human = run("token", "create", "--tenant", "t1", "--role", "auditor")
    assert human.exit_code == 0 and "lethe_" in human.stdout and "shown once" in human.stdout

    assert run("token", "revoke", doc["id"]).exit_code == 0
    table = run("token", "list", "--tenant", "t1")
    assert table.exit_code == 0 and "revoked" in table.stdout and "active" in table.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("token", "create", "--tenant", "t1", "--role", "agent"), 1, "agent id"),
        (("token", "create", "--tenant", "t1", "--role", "superuser"), 2, ""),
        (("token", "revoke", "no-such-id"), 1, "not found"),
        (
            ("token", "create", "--tenant", "t1", "--role", "auditor", "--ttl-days", "99999999999"),
            2,
            "ttl-days",
        ),
    ],
)
def test_errors_exit_non_zero_with_a_message(run, args, code: int, message: str) -> None:  # type: ignore[no-untyped-def]
    r = run(*args)
    assert r.exit_code == code
    assert message in r.output
    assert "Traceback" not in r.output


def test_create_with_source_types_and_list_them(run) -> None:  # type: ignore[no-untyped-def]
    base = ("token", "create", "--tenant", "t1", "--role", "agent", "--agent", "a1", "--purpose", "support")
    r = run(*base, "--source-type", "agent_inference", "--source-type", "tool_result", "--json")
    assert r.exit_code == 0, r.output
    limited = json.loads(r.stdout)
    assert limited["source_types"] == ["tool_result", "agent_inference"]
    human = run(*base, "--source-type", "user_statement")
    assert human.exit_code == 0 and "source types: user_statement" in human.stdout
    legacy = json.loads(run(*base, "--json").stdout)
    assert legacy["source_types"] is None  # no flag: the role's default

    listed = {
        t["id"]: t["source_types"]
        for t in json.loads(run("token", "list", "--tenant", "t1", "--json").stdout)["items"]
    }
    assert listed[limited["id"]] == ["tool_result", "agent_inference"] and listed[legacy["id"]] is None
    table = run("token", "list", "--tenant", "t1", env={"COLUMNS": "300"})
    assert "tool_result,agent_inference" in table.stdout and "role default" in table.stdout

    refused = run(*base, "--source-type", "operator_config")
    assert refused.exit_code == 1 and "may not assert operator_config" in refused.output
    unknown = run(*base, "--source-type", "gossip")
    assert unknown.exit_code == 2 and "source-type" in unknown.output
