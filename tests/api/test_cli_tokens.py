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

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        return runner.invoke(app, list(args))

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
