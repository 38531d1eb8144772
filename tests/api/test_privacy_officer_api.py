"""Privacy officers over HTTP and the CLI: deadlines, extensions, a stopped clock, holds, named tokens.

Runs on SQLite and PostgreSQL through the real app; records say who acted by the
display name of the token that acted, and lists never show a token's secret or hash.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from lethe.vault.erasure.deadlines import add_months
from lethe.vault.erasure.service import ErasureService
from lethe.vault.model import Role
from lethe.vault.store.tables import api_tokens
from tests.api.conftest import Api, assert_problem, bearer


@pytest.fixture(autouse=True)
def _erasure_runner_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's background erasure runner does nothing (set before ``api`` starts it):
    these tests act on a request before any step of it runs (a legal hold placed after
    filing raced the runner)."""
    monkeypatch.setattr(ErasureService, "run_pending", lambda self: 0)


def named_officer(api: Api, name: str = "Dana Officer", tenant: str = "t1") -> tuple[dict[str, str], str]:
    token, info = api.tokens.create(Role.PRIVACY_OFFICER, tenant, display_name=name, email="dana@example.org")
    return bearer(token), info.id


def file(
    api: Api, headers: dict[str, str], subject: str = "alice@example.com", **extra: Any
) -> dict[str, Any]:
    body = {"subject_id": subject, "legal_basis": "gdpr-art17-1a", **extra}
    r = api.client.post("/v1/erasure-requests", json=body, headers=headers)
    assert r.status_code == 202, r.text
    return api.client.get(f"/v1/erasure-requests/{r.json()['id']}", headers=headers).json()


def test_a_request_shows_its_deadline_and_who_filed_it_by_name(api: Api) -> None:
    officer, token_id = named_officer(api)
    job = file(api, officer, identity_verification_ref="IDV-2026-7")
    received = datetime.fromisoformat(job["received_at"])
    assert datetime.fromisoformat(job["due_at"]) == add_months(received, 1)
    assert job["days_left"] in (27, 28, 29, 30) and job["overdue"] is False and job["paused"] is False
    assert (job["extension_months"], job["extensions"], job["extended_until"]) == (0, [], None)
    assert job["requested_by"] == token_id and job["requested_by_name"] == "Dana Officer"
    assert job["identity_verification_ref"] == "IDV-2026-7"
    listed = api.client.get("/v1/erasure-requests", headers=officer).json()["items"]
    assert [j["requested_by_name"] for j in listed] == ["Dana Officer"]


def test_an_officer_extends_pauses_and_resumes_a_request_over_http(api: Api) -> None:
    officer, token_id = named_officer(api)
    job = file(api, officer)
    url = f"/v1/erasure-requests/{job['id']}"
    told = datetime.now(UTC).isoformat()
    r = api.client.post(
        f"{url}/extensions",
        json={"months": 1, "reason": "many systems", "subject_notified_at": told},
        headers=officer,
    )
    assert r.status_code == 200, r.text
    extended = r.json()
    received = datetime.fromisoformat(job["received_at"])
    assert (
        datetime.fromisoformat(extended["due_at"])
        == add_months(received, 2)
        == datetime.fromisoformat(extended["extended_until"])
    )
    (ext,) = extended["extensions"]
    assert (ext["months"], ext["reason"], ext["extended_by"], ext["extended_by_name"]) == (
        1,
        "many systems",
        token_id,
        "Dana Officer",
    )
    three = {"months": 3, "reason": "x", "subject_notified_at": told}
    assert_problem(api.client.post(f"{url}/extensions", json=three, headers=officer), 422)
    two_more = {"months": 2, "reason": "more", "subject_notified_at": told}
    doc = assert_problem(api.client.post(f"{url}/extensions", json=two_more, headers=officer), 409)
    assert "2 months in total" in doc["detail"]

    paused = api.client.post(f"{url}/pause", headers=officer)
    assert paused.status_code == 200 and paused.json()["paused"] is True
    assert_problem(api.client.post(f"{url}/pause", headers=officer), 409)
    resumed = api.client.post(f"{url}/resume", json={"identity_verification_ref": "IDV-9"}, headers=officer)
    assert resumed.status_code == 200, resumed.text
    body = resumed.json()
    assert body["paused"] is False and body["identity_verification_ref"] == "IDV-9"
    assert datetime.fromisoformat(body["due_at"]) >= datetime.fromisoformat(extended["due_at"])
    assert_problem(api.client.post(f"{url}/resume", headers=officer), 409)
    other_tenant, _ = named_officer(api, tenant="t2")
    assert_problem(api.client.post(f"{url}/pause", headers=other_tenant), 404)


def test_a_notification_time_that_utc_cannot_hold_is_a_422(api: Api) -> None:
    """Found by the schema-driven tests: year 1 at +00:01 is year 0 in UTC, and it was a 500."""
    officer, _ = named_officer(api)
    job = file(api, officer)
    url = f"/v1/erasure-requests/{job['id']}"
    for when in ("0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01"):
        body = {"months": 1, "reason": "x", "subject_notified_at": when}
        assert_problem(api.client.post(f"{url}/extensions", json=body, headers=officer), 422)
    assert api.client.get(url, headers=officer).json()["extension_months"] == 0


def test_legal_holds_are_listed_for_the_tenants_officers_with_who_placed_them(api: Api) -> None:
    officer, token_id = named_officer(api)
    first = api.client.post(
        "/v1/legal-holds", json={"subject_id": "a", "reason": "litigation"}, headers=officer
    ).json()
    second = api.client.post(
        "/v1/legal-holds", json={"subject_id": "b", "reason": "audit"}, headers=officer
    ).json()
    assert second["placed_by_name"] == "Dana Officer"
    other, _ = named_officer(api, tenant="t2")
    api.client.post("/v1/legal-holds", json={"subject_id": "c", "reason": "t2's own"}, headers=other)
    assert api.client.delete(f"/v1/legal-holds/{first['id']}", headers=officer).status_code == 204
    every = api.client.get("/v1/legal-holds", headers=officer).json()["items"]
    assert [h["id"] for h in every] == [first["id"], second["id"]]
    assert every[0]["lifted_at"] is not None and every[1]["placed_by"] == token_id
    active = api.client.get("/v1/legal-holds?active=true", headers=officer).json()["items"]
    assert [h["id"] for h in active] == [second["id"]]
    lifted = api.client.get("/v1/legal-holds?active=false", headers=officer).json()["items"]
    assert [h["id"] for h in lifted] == [first["id"]]
    assert "a" not in {h.get("subject_id") for h in every}  # subjects are never shown


def test_admins_list_and_revoke_their_tenants_tokens_and_never_see_a_secret(api: Api) -> None:
    admin = bearer(api.mint(Role.ADMIN))
    body = {"role": "auditor", "display_name": "Avery Auditor", "email": "avery@example.org"}
    created = api.client.post("/v1/admin/tokens", json=body, headers=admin).json()
    other_tenant = api.tokens.create(Role.AUDITOR, "t2")[1]
    r = api.client.get("/v1/admin/tokens", headers=admin)
    assert r.status_code == 200
    items = r.json()["items"]
    assert created["id"] in {t["id"] for t in items} and other_tenant.id not in {t["id"] for t in items}
    mine = next(t for t in items if t["id"] == created["id"])
    assert (mine["display_name"], mine["email"]) == ("Avery Auditor", "avery@example.org")
    with api.container.uow.maintenance("test: inspect every tenant's rows"), api.container.uow.read() as conn:
        hashes = [h for (h,) in conn.execute(sa.select(api_tokens.c.token_hash))]
    assert created["token"] not in r.text and not any(h in r.text for h in hashes)
    assert all("token" not in t and "token_hash" not in t for t in items)

    assert api.client.delete(f"/v1/admin/tokens/{created['id']}", headers=admin).status_code == 204
    assert api.client.get("/v1/audit/checkpoint", headers=bearer(created["token"])).status_code == 401
    assert api.client.delete(f"/v1/admin/tokens/{created['id']}", headers=admin).status_code == 204
    assert_problem(api.client.delete(f"/v1/admin/tokens/{other_tenant.id}", headers=admin), 404)
    assert_problem(api.client.delete("/v1/admin/tokens/no-such-token", headers=admin), 404)
    revoked = next(
        t
        for t in api.client.get("/v1/admin/tokens", headers=admin).json()["items"]
        if t["id"] == created["id"]
    )
    assert revoked["revoked_at"] is not None


@pytest.mark.parametrize(
    "bad",
    [
        {"display_name": ""},
        {"display_name": "x" * 101},
        {"display_name": "tab\there"},
        {"email": "not-an-address"},
        {"email": "a@b"},
        {"email": "someone@" + "x" * 250 + ".org"},
        {"email": "two@@example.org"},
    ],
)
def test_a_tokens_display_name_and_email_are_bounded_and_validated(api: Api, bad: dict[str, str]) -> None:
    admin = bearer(api.mint(Role.ADMIN))
    assert_problem(api.client.post("/v1/admin/tokens", json={"role": "auditor", **bad}, headers=admin), 422)


def run_cli(settings: Settings, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    else:
        monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    return CliRunner().invoke(cli, list(args))


def test_the_cli_extends_pauses_resumes_and_lists_days_left(
    api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    officer, _ = named_officer(api)
    job = file(api, officer)
    run = lambda *a: run_cli(settings, monkeypatch, *a)  # noqa: E731
    told = (datetime.now(UTC) + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S%z")
    extend = ("erasure", "extend", job["id"], "--tenant", "t1", "--reason", "backlog", "--notified-at", told)
    r = run(*extend, "--months", "1", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["extension_months"] == 1
    r = run(*extend, "--months", "2")
    assert r.exit_code == 1 and "2 months in total" in r.output
    paused = run("erasure", "pause", job["id"], "--tenant", "t1", "--json")
    assert paused.exit_code == 0 and json.loads(paused.stdout)["paused"] is True
    table = run("erasure", "list", "--tenant", "t1")
    assert table.exit_code == 0 and "days" in table.stdout and "(pause" in table.stdout  # narrow terminal
    resumed = run("erasure", "resume", job["id"], "--tenant", "t1", "--identity-ref", "IDV-1", "--json")
    assert resumed.exit_code == 0 and json.loads(resumed.stdout)["identity_verification_ref"] == "IDV-1"
    shown = run("erasure", "show", job["id"], "--tenant", "t1")
    assert "Dana Officer" in shown.stdout and "extension 1: +1 month(s)" in shown.stdout
    overdue = run("erasure", "list", "--tenant", "t1", "--overdue", "--json")
    assert overdue.exit_code == 0 and json.loads(overdue.stdout)["items"] == []


def test_the_cli_mints_a_named_token_and_lists_its_name(
    api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = run_cli(
        settings,
        monkeypatch,
        "token",
        "create",
        "--tenant",
        "t1",
        "--role",
        "auditor",
        "--name",
        "Avery A.",
        "--email",
        "avery@example.org",
        "--json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["display_name"], doc["email"]) == ("Avery A.", "avery@example.org")
    table = run_cli(settings, monkeypatch, "token", "list", "--tenant", "t1")
    assert "Avery" in table.stdout  # the name column (wrapped in a narrow terminal)
    bad = run_cli(
        settings, monkeypatch, "token", "create", "--tenant", "t1", "--role", "auditor", "--email", "nope"
    )
    assert bad.exit_code == 1 and "e-mail" in bad.output
