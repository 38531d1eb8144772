"""The console over HTTP (no browser): sign-in, cookies, CSRF, CSP, and who sees which page.

Runs the real app on SQLite and PostgreSQL. The console has no access policy of its own:
each page acts as an API route, and the matrix below checks every page against
``ROUTE_ROLES`` for every role.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from http.cookies import SimpleCookie

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from lethe.api.console.pages import NAV
from lethe.api.http.auth import may
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.model import Role
from lethe.vault.store.tables import console_sessions, erasure_jobs
from tests.api.conftest import Api, api_settings

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def sign_in(client: TestClient, token: str, follow: bool = False):  # type: ignore[no-untyped-def]
    client.cookies.clear()
    form = client.get("/console/sign-in")
    pre = CSRF.search(form.text)
    assert pre is not None
    return client.post(
        "/console/sign-in", data={"token": token, "csrf_token": pre.group(1)}, follow_redirects=follow
    )


def csrf_of(client: TestClient, page: str) -> str:
    found = CSRF.search(client.get(page).text)
    assert found is not None, page
    return found.group(1)


def session_rows(api: Api) -> int:
    with api.container.uow.maintenance("test: inspect every tenant's rows"), api.container.uow.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(console_sessions)).scalar_one()


def minted(api: Api, role: Role, name: str | None = None) -> str:
    agent, purposes = ("a1", ["support"]) if role is Role.AGENT else (None, [])
    return api.tokens.create(role, "t1", agent, purposes, display_name=name)[0]


def test_signing_in_sets_a_strict_http_only_cookie_and_names_the_person(api: Api) -> None:
    r = sign_in(api.client, minted(api, Role.PRIVACY_OFFICER, "Dana Officer"))
    assert r.status_code == 303 and r.headers["location"] == "/console/"
    cookie = SimpleCookie()
    cookie.load(r.headers["set-cookie"].split(", lethe_console_pre")[0])
    morsel = cookie["lethe_console"]
    assert morsel["httponly"] and morsel["samesite"].lower() == "strict" and morsel["path"] == "/console"
    assert not morsel["secure"]  # plain http here; Secure when the request came over TLS
    home = api.client.get("/console/")
    assert home.status_code == 200 and "Dana Officer" in home.text and "Erasure requests" in home.text
    assert session_rows(api) == 1


def test_the_cookie_is_secure_when_the_request_came_over_tls(api: Api) -> None:
    tls = TestClient(api.app, base_url="https://testserver")
    r = sign_in(tls, minted(api, Role.AUDITOR))
    assert r.status_code == 303
    assert "secure" in r.headers["set-cookie"].split(", lethe_console_pre")[0].lower()


@pytest.mark.parametrize("role", [Role.AGENT, Role.OPERATOR])
def test_a_token_whose_role_has_no_page_gets_no_session(api: Api, role: Role) -> None:
    r = sign_in(api.client, minted(api, role))
    assert r.status_code == 403 and "cannot use the console" in r.text
    assert "lethe_console=" not in r.headers.get("set-cookie", "").replace("lethe_console_pre", "")
    assert session_rows(api) == 0
    for page in NAV:
        got = api.client.get(page.path, follow_redirects=False)
        assert got.status_code == 303 and got.headers["location"] == "/console/sign-in", page.path


def test_a_bad_token_is_refused_without_saying_why(api: Api) -> None:
    for token in ("lethe_" + "x" * 43, "not-a-token", api.revoked(Role.PRIVACY_OFFICER)):
        r = sign_in(api.client, token)
        assert r.status_code == 401 and "not valid" in r.text
    assert session_rows(api) == 0


def test_sign_in_without_the_form_csrf_value_is_refused(api: Api) -> None:
    api.client.cookies.clear()
    api.client.get("/console/sign-in")
    r = api.client.post("/console/sign-in", data={"token": minted(api, Role.AUDITOR)}, follow_redirects=False)
    assert r.status_code == 403 and session_rows(api) == 0


def test_every_page_is_open_exactly_to_the_roles_its_api_route_allows(api: Api) -> None:
    for role in (Role.PRIVACY_OFFICER, Role.REVIEWER, Role.AUDITOR, Role.ADMIN):
        assert sign_in(api.client, minted(api, role)).status_code == 303
        for page in NAV:
            r = api.client.get(page.path)
            assert r.status_code == (200 if may(role, page.route) else 403), (role, page.path, r.text[-300:])
            shown = f'href="{page.path}"' in r.text
            assert shown == may(role, page.route), (role, page.path)


def test_a_form_posted_without_its_csrf_token_changes_nothing(api: Api) -> None:
    sign_in(api.client, minted(api, Role.PRIVACY_OFFICER))
    body = {"subject_id": "alice@example.com", "legal_basis": "gdpr-art17-1a"}
    for sent in ({}, {"csrf_token": "0" * 64}):
        r = api.client.post("/console/requests", data={**body, **sent}, follow_redirects=False)
        assert r.status_code == 403 and "CSRF" in r.text
    with api.container.uow.maintenance("test: inspect every tenant's rows"), api.container.uow.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(erasure_jobs)).scalar_one() == 0
    token = csrf_of(api.client, "/console/requests/new")
    r = api.client.post("/console/requests", data={**body, "csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/console/requests/")


def test_another_sessions_csrf_token_is_refused(api: Api) -> None:
    sign_in(api.client, minted(api, Role.PRIVACY_OFFICER))
    theirs = csrf_of(api.client, "/console/requests/new")
    sign_in(api.client, minted(api, Role.PRIVACY_OFFICER))
    body = {"subject_id": "bob", "legal_basis": "gdpr-art17-1a", "csrf_token": theirs}
    assert api.client.post("/console/requests", data=body, follow_redirects=False).status_code == 403


def test_every_console_response_carries_a_strict_csp(api: Api) -> None:
    sign_in(api.client, minted(api, Role.ADMIN))
    for path in ("/console/sign-in", "/console/tokens", "/console/requests", "/console/nowhere"):
        r = api.client.get(path)
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "script-src" not in csp
        assert "unsafe-inline" not in csp and r.headers["cache-control"] == "no-store"


def test_the_officer_files_a_request_recorded_under_their_token(api: Api) -> None:
    token, info = api.tokens.create(Role.PRIVACY_OFFICER, "t1", display_name="Dana Officer")
    sign_in(api.client, token)
    form = {
        "subject_id": "alice@example.com",
        "legal_basis": "gdpr-art17-1b",
        "reference": "DSR-9",
        "csrf_token": csrf_of(api.client, "/console/requests/new"),
    }
    r = api.client.post("/console/requests", data=form)
    assert r.status_code == 200 and "DSR-9" in r.text
    (job,) = api.container.erasure.list(api.tokens.authenticate(token))
    assert (job.requested_by, job.legal_basis, job.reference) == (info.id, "gdpr-art17-1b", "DSR-9")
    code = re.search(r'id="verification_code" class="secret" readonly value="([^"]+)"', r.text)
    assert code is not None  # shown once: the request page never shows it again
    shown = api.client.get(f"/console/requests/{job.id}")
    assert "Dana Officer" in shown.text and code.group(1) not in shown.text


def test_sign_out_ends_the_session_in_the_database(api: Api) -> None:
    sign_in(api.client, minted(api, Role.AUDITOR))
    token = csrf_of(api.client, "/console/audit")
    r = api.client.post("/console/sign-out", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303 and session_rows(api) == 0
    assert api.client.get("/console/audit", follow_redirects=False).status_code == 303


def test_revoking_a_token_in_the_console_ends_its_sessions(api: Api) -> None:
    officer = minted(api, Role.PRIVACY_OFFICER)
    info = api.tokens.authenticate(officer)
    officer_browser = TestClient(api.app)
    assert sign_in(officer_browser, officer).status_code == 303
    sign_in(api.client, minted(api, Role.ADMIN))
    token = csrf_of(api.client, "/console/tokens")
    r = api.client.post(f"/console/tokens/{info.principal}/revoke", data={"csrf_token": token})
    assert r.status_code == 200
    assert officer_browser.get("/console/requests", follow_redirects=False).status_code == 303


@pytest.fixture
def second_node(settings: Settings, api: Api) -> Iterator[TestClient]:
    """Another app over the same store: a second server node behind the same load balancer."""
    app = create_app(api_settings(settings))
    with TestClient(app) as client:
        yield client


def test_a_session_signed_in_on_one_node_is_served_by_another(api: Api, second_node: TestClient) -> None:
    sign_in(api.client, minted(api, Role.AUDITOR))
    second_node.cookies.set("lethe_console", api.client.cookies["lethe_console"], path="/console")
    r = second_node.get("/console/audit")
    assert r.status_code == 200 and "Audit log" in r.text


def test_docs_pages_have_their_own_csp_not_the_consoles(api: Api) -> None:
    assert "'unsafe-inline'" in api.client.get("/docs").headers["content-security-policy"]
