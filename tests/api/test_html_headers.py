"""Every ``text/html`` response carries a Content-Security-Policy with ``frame-ancestors``,
``X-Frame-Options`` and ``nosniff`` (``api.http.html_headers``), the JSON API's
``?format=html`` certificates and exports included.

The walk requests every GET route of the app (the console's and the mounted ones too), its
path parameters filled with real ids, as every role, plain and with ``?format=html``, and
the POST routes that answer HTML; every HTML answer must carry the headers. It must meet
the known HTML routes on its way, so it cannot pass by seeing none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from fastapi.testclient import TestClient
from starlette.routing import Mount

from lethe.api.bootstrap import Container
from lethe.vault.model import Role
from tests.api.conftest import Api, bearer
from tests.api.test_console import csrf_of, sign_in
from tests.conftest import agent, officer, write_cmd

ROLES = [Role.AGENT, Role.REVIEWER, Role.PRIVACY_OFFICER, Role.AUDITOR, Role.ADMIN, Role.OPERATOR]
MUST_MEET = {
    "/v1/erasure-reports/{report_id}",
    "/verify",
    "/docs",
    "/redoc",
    "/console/sign-in",
    "/console/requests/{job_id}",
    "/console/certificates/{report_id}",
    "/console/certificates/{report_id}/download",
    "/console/tokens",
}


def get_routes(routes: Any, prefix: str = "") -> Iterator[str]:
    """The path templates of every route answering GET, sub-apps and included routers too."""
    for route in routes:
        if isinstance(route, Mount):
            yield from get_routes(route.routes, prefix + route.path)
        elif type(route).__name__ == "_IncludedRouter":  # FastAPI's lazily included router
            yield from get_routes(route.original_router.routes, prefix + route.include_context.prefix)
        elif "GET" in (getattr(route, "methods", None) or {"GET"}):
            yield prefix + route.path


def assert_guarded(r: Any, what: str) -> bool:
    """True if ``r`` is HTML (then with its headers checked)."""
    if not r.headers.get("content-type", "").startswith("text/html"):
        return False
    csp = r.headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in csp and "default-src " in csp, (what, csp)
    assert r.headers.get("x-frame-options") == "DENY", what
    assert r.headers.get("x-content-type-options") == "nosniff", what
    return True


def forgotten(c: Container) -> tuple[str, str, str]:
    """A memory of bob, and a finished erasure of alice: (memory id, job id, report id)."""
    item = c.memories.write(agent(), write_cmd("bob likes tea", subject="bob@example.com"))
    c.memories.write(agent(), write_cmd("alice likes tea"))
    job = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "t-1")
    c.erasure.run_pending()
    report_id = c.erasure.get(officer(), job.id).report_id
    assert report_id is not None
    return item.item.id, job.id, report_id


def test_every_html_response_carries_a_csp_and_frame_protection(api: Api) -> None:
    memory_id, job_id, report_id = forgotten(api.container)
    token_id = api.tokens.create(Role.AUDITOR, "t1")[1].id
    ids = {"memory_id": memory_id, "job_id": job_id, "report_id": report_id, "token_id": token_id}
    templates = sorted(set(get_routes(api.app.routes)))
    met: set[str] = set()
    client = TestClient(api.app, raise_server_exceptions=False)
    for role in ROLES:
        agent_id, purposes = ("a1", ["support"]) if role is Role.AGENT else (None, [])
        token, _ = api.tokens.create(role, "t1", agent_id, purposes)
        if role not in (Role.AGENT, Role.OPERATOR):
            assert sign_in(client, token).status_code == 303
        for template in templates:
            path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: ids.get(m.group(1), "x"), template)
            for params in ({}, {"format": "html"}):
                r = client.get(path, params=params, headers=bearer(token), follow_redirects=False)
                if assert_guarded(r, f"{role.value} GET {path} {params}"):
                    met.add(template)
    missed = MUST_MEET - met
    assert not missed, missed

    # The POST routes that answer HTML: the subject access export, a console form's page.
    po, _ = api.tokens.create(Role.PRIVACY_OFFICER, "t1")
    export = client.post(
        "/v1/subject-access-requests",
        params={"format": "html"},
        json={"subject_id": "bob@example.com"},
        headers=bearer(po),
    )
    assert export.status_code == 200 and assert_guarded(export, "subject access export")
    admin, _ = api.tokens.create(Role.ADMIN, "t1")
    sign_in(client, admin)
    minted = client.post(
        "/console/tokens", data={"role": "auditor", "csrf_token": csrf_of(client, "/console/tokens")}
    )
    assert minted.status_code == 200 and assert_guarded(minted, "console mint page")
    missing = client.get("/console/nowhere")
    assert assert_guarded(missing, "console 404 page")


def test_json_answers_are_left_alone(api: Api) -> None:
    r = api.client.get("/healthz")
    assert r.headers["content-type"].startswith("application/json")
    assert "content-security-policy" not in r.headers and "x-frame-options" not in r.headers
