"""The console and the CLI say a KMS's refusal as it is: partial, never "destroyed".

Over the real app on SQLite and PostgreSQL and a real OpenBao whose policy denies key
deletion (refusal window zero: the first refusal is final). The request page names the
step "key destruction refused by the KMS" and says the result; the certificate page says
"Result: Partial" and that the key manager refused; `lethe erasure show` prints the
partial line. None of them says a key was destroyed. The control: a normal forget's
request page names the step "key destroyed" and says nothing of a refusal.
"""

from __future__ import annotations

import html
import subprocess
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.model import Role
from tests.api.conftest import Api, api_settings
from tests.api.test_console import sign_in
from tests.children import lethe_env
from tests.conftest import agent, officer, write_cmd
from tests.integration.test_certificate import LETHE
from tests.integration.test_kms_refusal import refusing_policy
from tests.integration.test_result_classes import DESTROYED_CLAIMS
from tests.integration.test_vault_transit import token_with_policies
from tests.openbao import OpenBaoDevServer


@pytest.fixture
def refusing_settings(settings: Settings, openbao: OpenBaoDevServer) -> Settings:
    root = openbao.client(openbao.token)
    root.sys.create_or_update_policy("lethe-no-delete", refusing_policy())
    vault = {
        "kms": "vault",
        "vault_addr": openbao.addr,
        "vault_token": SecretStr(token_with_policies(root, "lethe-no-delete")),
        "erasure_kms_refusal_window_seconds": 0,
    }
    return settings.model_copy(update=vault)


@pytest.fixture
def refusing_api(refusing_settings: Settings) -> Iterator[Api]:
    app = create_app(api_settings(refusing_settings))
    with TestClient(app) as client:
        yield Api(app, client)


def forget(api: Api) -> tuple[str, str | None]:
    c = api.container
    c.memories.write(agent(), write_cmd("alice likes tea"))
    filed = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "DSR-6")
    c.erasure.run_pending()
    return filed.id, c.erasure.get(officer(), filed.id).report_id


def pages(api: Api, job_id: str, report_id: str | None) -> tuple[str, str]:
    sign_in(api.client, api.tokens.create(Role.PRIVACY_OFFICER, "t1")[0])
    request = api.client.get(f"/console/requests/{job_id}")
    certificate = api.client.get(f"/console/certificates/{report_id}")
    assert request.status_code == certificate.status_code == 200
    return html.unescape(request.text), html.unescape(certificate.text)


def test_the_console_and_cli_say_a_refused_key_is_refused_never_destroyed(
    refusing_api: Api, refusing_settings: Settings
) -> None:
    job_id, report_id = forget(refusing_api)
    assert report_id is not None
    request, certificate = pages(refusing_api, job_id, report_id)
    assert "key destruction refused by the KMS" in request and "Partial: the key manager refused" in request
    assert "Result: Partial" in certificate and "refused to destroy" in certificate
    assert "This is the final certificate of this request" in certificate
    for page in (request, certificate):
        claims = DESTROYED_CLAIMS.findall(page) + [w for w in ("key destroyed", "Key destroyed") if w in page]
        assert not claims, claims

    s = refusing_settings
    env = lethe_env(s.data_dir, LETHE_KMS="vault", LETHE_VAULT_ADDR=s.vault_addr or "")
    env["LETHE_VAULT_TOKEN"] = s.vault_token.get_secret_value() if s.vault_token else ""
    if s.database_url:
        env["LETHE_DATABASE_URL"] = s.database_url
    env["COLUMNS"] = "200"
    shown = subprocess.run(
        [str(LETHE), "erasure", "show", job_id, "--tenant", "t1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "partial: the KMS refused to destroy key generation(s) 1" in " ".join(shown.stdout.split())


def test_a_normal_forgets_request_page_names_the_destroyed_key_and_no_refusal(api: Api) -> None:
    job_id, report_id = forget(api)
    request, _ = pages(api, job_id, report_id)
    assert "key destroyed" in request and "refused" not in request.lower()
