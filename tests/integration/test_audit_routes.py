"""The audit HTTP routes serve verifiable checkpoints, proofs and tenant-scoped reports.

The router is mounted on a bare app with a ``FakeCaller`` dependency (the real app mounts
it behind ``api.auth.authorised``); the fake enforces ``AUDIT_ROUTE_ROLES`` the same way.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from pypdf import PdfReader

from lethe.api.bootstrap import Container
from lethe.api.http import problems
from lethe.api.http.routes.audit import AUDIT_ROUTE_ROLES, make_router
from lethe.vault.audit.checkpoint import parse_and_verify
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.errors import OutOfScope
from lethe.vault.merkle import verify_consistency, verify_inclusion
from lethe.vault.model import Caller, Role
from tests.conftest import agent, officer, write_cmd


def fake_caller(request: Request) -> Caller:
    """``X-Role`` / ``X-Tenant`` headers instead of a token; roles checked per route name."""
    role = Role(request.headers.get("x-role", "auditor"))
    route = request.scope["route"].name
    if role.value not in AUDIT_ROUTE_ROLES[route]:
        raise OutOfScope("role not allowed")
    return Caller(request.headers.get("x-tenant", "t1"), role, principal="test")


@pytest.fixture
def client(lethe: Container) -> Iterator[TestClient]:
    app = FastAPI()
    problems.install(app)
    app.include_router(make_router(fake_caller))
    app.state.container = lethe
    with TestClient(app) as c:
        yield c


def forget(c: Container) -> str:
    for i in range(3):
        c.memories.write(agent(), write_cmd(f"alice {i}"))
    job = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "t-1")
    c.erasure.run_pending()
    return c.erasure.get(officer(), job.id).report_id


def test_checkpoint_public_key_and_proofs_verify_against_each_other(
    lethe: Container, client: TestClient
) -> None:
    for i in range(6):
        lethe.memories.write(agent(), write_cmd(f"m{i}"))
    key = client.get("/v1/audit/public-key").json()
    assert key["origin"] == lethe.audit.origin and key["vkey"].startswith(key["origin"] + "+" + key["key_id"])
    first = client.get("/v1/audit/checkpoint")
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/plain")
    cp1 = parse_and_verify(first.text, key["origin"], key["pem"].encode())
    lethe.memories.write(agent(), write_cmd("one more"))
    cp2 = parse_and_verify(client.get("/v1/audit/checkpoint").text, key["origin"], key["pem"].encode())
    assert (cp1.size, cp2.size) == (6, 7)

    inc = client.get("/v1/audit/proofs/inclusion", params={"index": 3, "tree_size": cp2.size}).json()
    proof = [base64.b64decode(h) for h in inc["proof"]]
    assert verify_inclusion(base64.b64decode(inc["leaf_hash"]), 3, cp2.size, proof, cp2.root)
    con = client.get("/v1/audit/proofs/consistency", params={"first": cp1.size, "second": cp2.size}).json()
    proof = [base64.b64decode(h) for h in con["proof"]]
    assert verify_consistency(cp1.size, cp2.size, cp1.root, cp2.root, proof)

    too_big = client.get("/v1/audit/proofs/inclusion", params={"index": 0, "tree_size": 999})
    assert too_big.status_code == 422 and too_big.headers["content-type"] == problems.PROBLEM_JSON
    assert client.get("/v1/audit/checkpoint", headers={"x-role": "agent"}).status_code == 403
    assert client.get("/v1/audit/checkpoint", headers={"x-role": "privacy_officer"}).status_code == 403


def test_erasure_reports_are_served_verbatim_rendered_and_tenant_scoped(
    lethe: Container, client: TestClient
) -> None:
    report_id = forget(lethe)
    stored = lethe.reports.load(report_id).document
    pem = lethe.audit.public_key().pem.encode()

    raw = client.get(f"/v1/erasure-reports/{report_id}")
    assert raw.status_code == 200 and raw.content == stored
    assert verify_certificate(raw.content, pem, subject_id="alice@example.com").ok
    officer_view = client.get(f"/v1/erasure-reports/{report_id}", headers={"x-role": "privacy_officer"})
    assert officer_view.status_code == 200

    page = client.get(f"/v1/erasure-reports/{report_id}", params={"format": "html"})
    assert page.headers["content-type"].startswith("text/html") and report_id in page.text
    pdf = client.get(f"/v1/erasure-reports/{report_id}", params={"format": "pdf"})
    assert pdf.headers["content-type"] == "application/pdf"
    assert report_id in PdfReader(io.BytesIO(pdf.content)).pages[0].extract_text()

    other = client.get(f"/v1/erasure-reports/{report_id}", headers={"x-tenant": "t2"})
    assert other.status_code == 404
    assert client.get("/v1/erasure-reports/no-such-report").status_code == 404
    assert client.get(f"/v1/erasure-reports/{report_id}", headers={"x-role": "agent"}).status_code == 403
