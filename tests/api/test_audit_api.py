"""The audit HTTP routes serve verifiable checkpoints, proofs and tenant-scoped reports.

Served by the real app, so every call is authorised by a real token against
``api.http.auth.ROUTE_ROLES``, the one access policy of every route.
"""

from __future__ import annotations

import base64
import io
import json

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from pypdf import PdfReader

from lethe.api.bootstrap import Container
from lethe.api.http import problems
from lethe.vault.audit.checkpoint import parse_and_verify
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.erasure.backup import create_backup, restore_backup
from lethe.vault.merkle import verify_consistency, verify_inclusion
from tests.api.conftest import Api, bearer
from tests.conftest import agent, event_count, officer, write_cmd


class Client:
    """The app's test client with a token per role of tenant t1 (auditor unless told)."""

    def __init__(self, api: Api) -> None:
        self.http: TestClient = api.client
        self.tokens = {role: bearer(api.mint(role)) for role in ("auditor", "privacy_officer", "agent")}
        self.tokens["auditor of t2"] = bearer(api.mint("auditor", tenant="t2"))

    def get(self, url: str, role: str = "auditor", params: dict[str, int | str] | None = None) -> Response:
        return self.http.get(url, headers=self.tokens[role], params=params)


@pytest.fixture
def lethe(api: Api) -> Container:
    """The app's own container (not a second one over the same store)."""
    return api.container


@pytest.fixture
def client(api: Api) -> Client:
    return Client(api)


def forget(c: Container) -> str:
    for i in range(3):
        c.memories.write(agent(), write_cmd(f"alice {i}"))
    job = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "t-1")
    c.erasure.run_pending()
    CODES[job.id] = job.verification_code
    return c.erasure.get(officer(), job.id).report_id


CODES: dict[str, str | None] = {}  # verification codes by request id, as handed out when filed


def test_checkpoint_public_key_and_proofs_verify_against_each_other(lethe: Container, client: Client) -> None:
    base = event_count(lethe)  # minting the fixture's tokens is audited too
    for i in range(6):
        lethe.memories.write(agent(), write_cmd(f"m{i}"))
    key = client.get("/v1/audit/public-key").json()
    assert key["origin"] == lethe.audit.origin and key["vkey"].startswith(key["origin"] + "+" + key["key_id"])
    first = client.get("/v1/audit/checkpoint")
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/plain")
    cp1 = parse_and_verify(first.text, key["origin"], key["pem"].encode())
    lethe.memories.write(agent(), write_cmd("one more"))
    cp2 = parse_and_verify(client.get("/v1/audit/checkpoint").text, key["origin"], key["pem"].encode())
    assert (cp1.size, cp2.size) == (base + 6, base + 7)

    inc = client.get("/v1/audit/proofs/inclusion", params={"index": 3, "tree_size": cp2.size}).json()
    proof = [base64.b64decode(h) for h in inc["proof"]]
    assert verify_inclusion(base64.b64decode(inc["leaf_hash"]), 3, cp2.size, proof, cp2.root)
    con = client.get("/v1/audit/proofs/consistency", params={"first": cp1.size, "second": cp2.size}).json()
    proof = [base64.b64decode(h) for h in con["proof"]]
    assert verify_consistency(cp1.size, cp2.size, cp1.root, cp2.root, proof)

    too_big = client.get("/v1/audit/proofs/inclusion", params={"index": 0, "tree_size": 999})
    assert too_big.status_code == 422 and too_big.headers["content-type"] == problems.PROBLEM_JSON
    assert client.get("/v1/audit/checkpoint", role="agent").status_code == 403
    assert client.get("/v1/audit/checkpoint", role="privacy_officer").status_code == 403


def test_erasure_reports_are_served_verbatim_rendered_and_tenant_scoped(
    lethe: Container, client: Client
) -> None:
    report_id = forget(lethe)
    stored = lethe.reports.load(report_id).document
    pem = lethe.audit.public_key().pem.encode()

    raw = client.get(f"/v1/erasure-reports/{report_id}")
    assert raw.status_code == 200 and raw.content == stored
    code = CODES[json.loads(raw.content)["request"]["id"]]
    assert verify_certificate(raw.content, pem, subject_id="alice@example.com", verification_code=code).ok
    officer_view = client.get(f"/v1/erasure-reports/{report_id}", role="privacy_officer")
    assert officer_view.status_code == 200

    page = client.get(f"/v1/erasure-reports/{report_id}", params={"format": "html"})
    assert page.headers["content-type"].startswith("text/html") and report_id in page.text
    pdf = client.get(f"/v1/erasure-reports/{report_id}", params={"format": "pdf"})
    assert pdf.headers["content-type"] == "application/pdf"
    assert report_id in PdfReader(io.BytesIO(pdf.content)).pages[0].extract_text()

    other = client.get(f"/v1/erasure-reports/{report_id}", role="auditor of t2")
    assert other.status_code == 404
    assert client.get("/v1/erasure-reports/no-such-report").status_code == 404
    assert client.get(f"/v1/erasure-reports/{report_id}", role="agent").status_code == 403


def test_audit_forks_show_a_restore_and_the_tenants_reapplied_erasures(
    lethe: Container, client: Client, tmp_path
) -> None:
    assert client.get("/v1/audit/forks").json() == {"items": []}
    manifest = create_backup(lethe.uow, tmp_path / "backups", log=lethe.log)
    report_id = forget(lethe)
    job_id = lethe.reports.load(report_id).job_id
    restore_backup(lethe.uow, lethe.keyring, manifest, log=lethe.log)

    for role in ("auditor", "privacy_officer"):
        r = client.get("/v1/audit/forks", role=role)
        assert r.status_code == 200, r.text
        (fork,) = r.json()["items"]
        assert fork["fork_tree_size"] < fork["abandoned_tree_size"] and fork["abandoned_checkpoints"]
        assert fork["reapplied"] == [{"tenant_id": "t1", "request_id": job_id}]
    assert client.get("/v1/audit/forks", role="auditor of t2").json()["items"][0]["reapplied"] == []
    assert client.get("/v1/audit/forks", role="agent").status_code == 403
    assert client.get(f"/v1/erasure-reports/{report_id}").status_code == 200  # kept across the restore
