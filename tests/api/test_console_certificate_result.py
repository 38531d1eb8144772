"""The console's certificate page says the certificate's result in the words of its evidence.

Over the real app (SQLite and PostgreSQL): a never-seen subject's certificate page says
"Result: Nothing held" and no line of it says a key was destroyed; a normal forget's says
"Result: Erased" and names the key's destruction.
"""

from __future__ import annotations

import html

from lethe.vault.model import Role
from tests.api.conftest import Api
from tests.api.test_console import sign_in
from tests.conftest import agent, officer, write_cmd
from tests.integration.test_result_classes import DESTROYED_CLAIMS


def certificate_page(api: Api, subject: str) -> str:
    c = api.container
    filed = c.erasure.request(officer(), subject, "gdpr-art17-1a", "DSR-9")
    c.erasure.run_pending()
    report_id = c.erasure.get(officer(), filed.id).report_id
    assert report_id is not None
    sign_in(api.client, api.tokens.create(Role.AUDITOR, "t1")[0])
    page = api.client.get(f"/console/certificates/{report_id}")
    assert page.status_code == 200
    return html.unescape(page.text)


def test_a_never_seen_subjects_certificate_page_says_nothing_held_and_claims_no_destroyed_key(
    api: Api,
) -> None:
    page = certificate_page(api, "customer-9")
    assert "Result: Nothing held" in page and "no key was destroyed" in page
    assert "No encryption key existed: none to destroy" in page
    claims = DESTROYED_CLAIMS.findall(page) + [w for w in ("Key destroyed",) if w in page]
    assert not claims, claims


def test_a_normal_forgets_certificate_page_says_erased(api: Api) -> None:
    api.container.memories.write(agent(), write_cmd("alice likes tea"))
    page = certificate_page(api, "alice@example.com")
    assert "Result: Erased" in page and "that key was destroyed in" in page
    assert "The subject's encryption key destroyed" in page
