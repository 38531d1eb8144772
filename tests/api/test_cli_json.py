"""The CLI's ``--json`` output is the HTTP API's body for the same question: they cannot drift.

The app and the CLI run over one store (SQLite and PostgreSQL); each test compares a
CLI command's parsed output with the HTTP response for the same resource, whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from tests.api.conftest import Api, bearer
from tests.conftest import agent, officer, write_cmd

CliJson = Callable[..., Any]


@pytest.fixture
def cli_json(api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> CliJson:
    """Run ``lethe ARGS --json`` on the app's store and return the parsed output."""
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    else:
        monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(cli, [*args, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return run


def completed_job(api: Api) -> str:
    """A finished erasure job (steps, evidence, report id and every timestamp filled in)."""
    c = api.container
    c.memories.write(agent(), write_cmd("alice likes tea"))
    job = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "T-7")
    c.erasure.run_pending()
    assert c.erasure.get(officer(), job.id).completed_at is not None
    return job.id


def test_erasure_show_json_equals_the_http_body_of_the_same_job(api: Api, cli_json: CliJson) -> None:
    job_id = completed_job(api)
    http = api.client.get(f"/v1/erasure-requests/{job_id}", headers=bearer(api.mint("privacy_officer")))
    assert http.status_code == 200
    shown = cli_json("erasure", "show", job_id, "--tenant", "t1")
    assert shown == http.json()
    assert "updated_at" in shown and shown["steps"] and shown["report_id"]


def test_erasure_list_json_equals_the_http_body_of_the_same_listing(api: Api, cli_json: CliJson) -> None:
    completed_job(api)
    http = api.client.get("/v1/erasure-requests", headers=bearer(api.mint("auditor")))
    assert http.status_code == 200 and len(http.json()["items"]) == 1
    assert cli_json("erasure", "list", "--tenant", "t1") == http.json()


def test_audit_public_key_json_equals_the_http_body(api: Api, cli_json: CliJson) -> None:
    http = api.client.get("/v1/audit/public-key", headers=bearer(api.mint("auditor")))
    assert http.status_code == 200
    assert cli_json("audit", "public-key") == http.json()
