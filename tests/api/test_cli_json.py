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
from lethe.vault.model import Provenance, SourceType
from tests.api.conftest import Api, bearer
from tests.conftest import agent, officer, page_url, write_cmd

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


def test_review_list_and_show_json_equal_the_http_bodies(api: Api, cli_json: CliJson) -> None:
    c = api.container
    ids = [
        c.memories.write(agent(), write_cmd(f"tea page {i}", source=SourceType.WEB_PAGE)).item.id
        for i in range(3)
    ]
    reviewer = bearer(api.mint("reviewer"))
    http = api.client.get("/v1/review-queue", params={"limit": 2}, headers=reviewer)
    assert http.status_code == 200 and [i["id"] for i in http.json()["items"]] == ids[:2]
    assert cli_json("review", "list", "--tenant", "t1", "--limit", "2") == http.json()
    rest = cli_json("review", "list", "--tenant", "t1", "--cursor", http.json()["next_cursor"])
    assert (
        rest
        == api.client.get(
            "/v1/review-queue", params={"cursor": http.json()["next_cursor"]}, headers=reviewer
        ).json()
    )
    shown = api.client.get(f"/v1/review-queue/{ids[0]}", headers=reviewer)
    assert cli_json("review", "show", ids[0], "--tenant", "t1") == shown.json()


def test_review_promote_json_is_the_http_body_of_its_retry(api: Api, cli_json: CliJson) -> None:
    item = api.container.memories.write(agent(), write_cmd("tea page", source=SourceType.WEB_PAGE)).item
    promoted = cli_json("review", "promote", item.id, "--tenant", "t1", "--expected-version", "1")
    assert promoted["status"] == "active" and promoted["trust"] == "verified"
    other = api.container.memories.write(agent(), write_cmd("tea page 2", source=SourceType.WEB_PAGE)).item
    args = ("review", "reject", other.id, "--tenant", "t1", "--expected-version", "1", "--reason", "hoax")
    rejected = cli_json(*args, "--idempotency-key", "k-1")
    assert rejected["status"] == "retracted" and rejected["content"] is None
    assert cli_json(*args, "--idempotency-key", "k-1") == rejected  # the retry: the first result


def test_retract_dry_run_json_equals_the_http_body(api: Api, cli_json: CliJson) -> None:
    ref = "https://evil.example/page"
    item = api.container.memories.write(
        agent(),
        write_cmd("tea", provenance=Provenance(SourceType.WEB_PAGE, ref, url=page_url(SourceType.WEB_PAGE))),
    ).item
    body = {"source_ref": ref, "reason": "compromised", "dry_run": True}
    http = api.client.post("/v1/retractions", json=body, headers=bearer(api.mint("privacy_officer")))
    assert http.status_code == 200
    cli = cli_json("retract", "--tenant", "t1", "--source-ref", ref, "--reason", "compromised", "--dry-run")
    assert cli == http.json() and cli["memory_ids"] == [item.id]
    done = cli_json("retract", "--tenant", "t1", "--memory-id", item.id, "--reason", "compromised")
    assert done["id"] and done["memory_ids"] == [item.id] and not done["dry_run"]
