"""Console forms parse numbers with the API's own bounded types (``api.http.schemas.numbers``).

``"²"`` passes ``str.isdigit`` and fails ``int``; 5,000 digits pass both but exceed every
bound; ``99999999999`` days overflow ``timedelta``. Each is a 4xx page in the console, as
the JSON API refuses the same values with 422, and a value in bounds still acts.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from lethe.vault.model import Role
from tests.api.conftest import Api, bearer
from tests.api.test_console import csrf_of, minted, sign_in
from tests.api.test_review_api import quarantined

BAD_NUMBERS = ["²", "9" * 5000, "99999999999", "-3", "1.5", "seven"]


@pytest.fixture
def client(api: Api) -> TestClient:
    """The app's client reporting a server error as a 500 response (not an exception)."""
    return TestClient(api.app, raise_server_exceptions=False)


def test_a_promote_form_with_a_bad_version_is_a_4xx_page_and_a_good_one_promotes(
    api: Api, client: TestClient
) -> None:
    item = quarantined(api, bearer(api.mint()))
    sign_in(client, minted(api, Role.REVIEWER))
    csrf = csrf_of(client, "/console/review")
    path = f"/console/review/{item['id']}/promote"
    for bad in BAD_NUMBERS:
        r = client.post(path, data={"expected_version": bad, "csrf_token": csrf}, follow_redirects=False)
        assert r.status_code == 422, (bad[:20], r.status_code)
        assert "text/html" in r.headers["content-type"] and "reload the queue" in r.text
        assert "9" * 50 not in r.text  # the value is not echoed
    ok = client.post(path, data={"expected_version": "1", "csrf_token": csrf}, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == "/console/review?done=promoted"


def test_the_api_refuses_the_same_versions_with_422(api: Api) -> None:
    item = quarantined(api, bearer(api.mint()))
    reviewer = bearer(api.mint("reviewer"))
    for bad in (str(2**31), "9" * 5000, '"1"', '"²"'):
        r = api.client.post(
            f"/v1/memories/{item['id']}/promote",
            content='{"expected_version": ' + bad + "}",
            headers={**reviewer, "Content-Type": "application/json"},
        )
        assert r.status_code == 422, r.text[:200]


def test_a_token_form_with_a_bad_lifetime_is_a_4xx_page_and_a_good_one_mints(
    api: Api, client: TestClient
) -> None:
    sign_in(client, minted(api, Role.ADMIN))
    csrf = csrf_of(client, "/console/tokens")
    form = {"role": "auditor", "csrf_token": csrf}
    before = len(api.tokens.list("t1"))
    for bad in [*BAD_NUMBERS, "0", "3651"]:
        r = client.post("/console/tokens", data={**form, "ttl_days": bad}, follow_redirects=False)
        assert r.status_code == 422, (bad[:20], r.status_code)
        assert "whole number of days from 1 to 3650" in r.text
    assert len(api.tokens.list("t1")) == before  # nothing minted
    ok = client.post("/console/tokens", data={**form, "ttl_days": "3650"}, follow_redirects=False)
    assert ok.status_code == 200 and "lethe_" in ok.text
    made = max(api.tokens.list("t1"), key=lambda t: t.created_at)
    assert made.expires_at is not None and made.expires_at - made.created_at == timedelta(days=3650)


def test_an_extension_form_takes_the_apis_months(api: Api, client: TestClient) -> None:
    sign_in(client, minted(api, Role.PRIVACY_OFFICER))
    csrf = csrf_of(client, "/console/requests/new")
    for bad in ["²", "9" * 5000, "3", "0"]:
        data = {"months": bad, "reason": "complex", "subject_notified_at": "2026-01-01", "csrf_token": csrf}
        r = client.post("/console/requests/00000000-0000-4000-8000-000000000000/extend", data=data)
        assert r.status_code == 422, (bad[:20], r.status_code)
