"""An erasure certificate cannot be linked to its subject by anything an agent received
(docs/verifying-erasure.md, "What a certificate can be linked to"), and sweeping candidate
subject ids through the fence is throttled and logged.

The items an agent receives (over HTTP and from MCP's ``remember``) carry no ``subject_ref``;
the certificate's events carry a per-request subject reference, and key receipts name keys
under it. So no value of any item occurs anywhere in the certificate: its JSON, its embedded
events decoded from base64, its HTML and its PDF.
"""

from __future__ import annotations

import asyncio
import base64
import html
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from pypdf import PdfReader

from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.model import Role
from lethe.vault.oversight.certificate import sign_certificate
from tests.api.conftest import Api, api_settings, assert_problem, bearer, memory_body
from tests.api.mcp_clients import call
from tests.children import lethe_command, lethe_env

SUBJECT = "dana@example.com"


def strings(value: Any) -> set[str]:
    """Every string in a JSON value, keys' values only."""
    if isinstance(value, dict):
        return set().union(*(strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(strings(v) for v in value)) if value else set()
    return {value} if isinstance(value, str) else set()


def certificate_text(doc: bytes) -> str:
    """The certificate JSON with every embedded event decoded from base64."""
    parsed = json.loads(doc)
    events = [base64.b64decode(s["event"]).decode() for s in parsed["steps"]]
    return doc.decode() + "\n".join(events)


async def remember_over_mcp(settings: Settings, token: str, errlog: Path) -> dict[str, Any]:
    command, *base = lethe_command()
    env = {**lethe_env(settings.data_dir), "LETHE_TOKEN": token}
    if settings.database_url:
        env["LETHE_DATABASE_URL"] = settings.database_url
    params = StdioServerParameters(command=command, args=[*base, "mcp"], env=env)
    memory = {"subject_id": SUBJECT, "kind": "preference", "content": "Dana prefers oolong"}
    with errlog.open("a") as log:
        async with Client(stdio_client(params, errlog=log)) as client:
            return await call(client, "remember", **memory, provenance={"source_ref": "chat-9/t2"})


@pytest.mark.parametrize("backend", ["sqlite"])
def test_no_value_an_agent_received_occurs_in_the_certificate(api: Api, settings: Settings, tmp_path: Path):
    token = api.mint()
    agent, officer = bearer(token), bearer(api.mint(Role.PRIVACY_OFFICER))
    received: list[Any] = []
    for i in range(2):
        written = api.client.post(
            "/v1/memories", json=memory_body(f"Dana likes tea {i}", subject_id=SUBJECT), headers=agent
        )
        assert written.status_code == 201, written.text
        received += [
            written.json(),
            api.client.get(f"/v1/memories/{written.json()['id']}", headers=agent).json(),
        ]
    search = {"query": "tea", "purpose": "support", "subject_id": SUBJECT}
    received.append(api.client.post("/v1/memories/search", json=search, headers=agent).json())
    received.append(asyncio.run(remember_over_mcp(settings, token, tmp_path / "mcp.stderr")))
    assert all("subject_ref" not in item for item in received[:4])  # the item shape itself
    filed = api.client.post(
        "/v1/erasure-requests", json={"subject_id": SUBJECT, "legal_basis": "gdpr-art17-1a"}, headers=officer
    ).json()
    api.container.erasure.run_pending()
    report_id = api.client.get(f"/v1/erasure-requests/{filed['id']}", headers=officer).json()["report_id"]
    url = f"/v1/erasure-reports/{report_id}"
    doc = api.client.get(url, headers=officer).content
    page = html.unescape(api.client.get(url, params={"format": "html"}, headers=officer).text)
    pdf = api.client.get(url, params={"format": "pdf"}, headers=officer).content
    pdf_text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages)
    haystack = "\n".join((certificate_text(doc), page, pdf_text))

    values = {v for v in strings(received) if len(v) >= 8}
    assert len(values) >= 10 and {SUBJECT, "Dana prefers oolong"} <= values  # the check sees them
    assert sorted(v for v in values if v in haystack) == []
    stable = api.container.pseudonyms.subject_ref("t1", SUBJECT)  # what items carried before
    assert stable[:16] not in haystack  # not even as the prefix a KMS key name embeds
    pem = api.container.audit.public_key().pem.encode()
    assert verify_certificate(doc, pem, subject_id=SUBJECT, verification_code=filed["verification_code"]).ok


@pytest.mark.parametrize("backend", ["sqlite"])
def test_every_step_of_one_request_carries_one_reference_and_requests_differ(api: Api):
    """The verifier still checks that every step concerns one subject: the events share the
    per-request reference; two requests about one subject share nothing."""
    officer, agent = bearer(api.mint(Role.PRIVACY_OFFICER)), bearer(api.mint())
    refs = []
    for reference in ("first", "second"):
        api.client.post("/v1/memories", json=memory_body("Dana likes tea", subject_id=SUBJECT), headers=agent)
        body = {"subject_id": SUBJECT, "legal_basis": "gdpr-art17-1a", "reference": reference}
        filed = api.client.post("/v1/erasure-requests", json=body, headers=officer).json()
        api.container.erasure.run_pending()
        job = api.client.get(f"/v1/erasure-requests/{filed['id']}", headers=officer).json()
        doc = json.loads(api.client.get(f"/v1/erasure-reports/{job['report_id']}", headers=officer).content)
        events = [json.loads(base64.b64decode(s["event"])) for s in doc["steps"]]
        assert {e["subject_ref"] for e in events} == {doc["subject"]["request_subject_ref"]}
        assert "subject_ref" not in doc["subject"]
        refs.append(doc["subject"]["request_subject_ref"])
        reinstate = {"subject_id": SUBJECT, "reason": "identity mix-up"}
        assert (
            api.client.post("/v1/subject-reinstatements", json=reinstate, headers=officer).status_code == 201
        )
    assert refs[0] != refs[1]
    # A certificate naming a stable ref beside the per-request one is malformed, even re-signed.
    both = {**doc, "subject": {**doc["subject"], "subject_ref": "00" * 32}}
    signed = sign_certificate(both, api.container.reports.signer, api.container.audit.origin)
    pem = api.container.audit.public_key().pem.encode()
    assert "format" in verify_certificate(signed, pem).failed
    assert verify_certificate(
        sign_certificate(doc, api.container.reports.signer, api.container.audit.origin), pem
    ).ok


@pytest.fixture
def swept(settings: Settings) -> Iterator[Api]:
    """The API with the shipped sweep limits (the other tests raise them out of the way)."""
    defaults = Settings.model_fields
    app = create_app(
        api_settings(
            settings,
            subject_sweep_rate_limit=defaults["subject_sweep_rate_limit"].default,
            subject_sweep_tenant_rate_limit=defaults["subject_sweep_tenant_rate_limit"].default,
        )
    )
    with TestClient(app) as client:
        yield Api(app, client)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_candidate_sweep_by_an_agent_token_is_throttled_and_logged(swept: Api, caplog):
    """1,000 writes, one per candidate id (the forgotten one among them): past the token's
    limit of new subjects the rest are 429s, the forgotten candidate is never reached, and the
    log says so without naming any candidate."""
    api = swept
    officer = bearer(api.mint(Role.PRIVACY_OFFICER))
    forgotten = "candidate-0700@example.com"
    body = {"subject_id": forgotten, "legal_basis": "gdpr-art17-1a"}
    assert api.client.post("/v1/erasure-requests", json=body, headers=officer).status_code == 202
    agent = bearer(api.mint())
    statuses = []
    with caplog.at_level(logging.WARNING, logger="lethe.api"):
        for i in range(1000):
            candidate = f"candidate-{i:04d}@example.com"
            r = api.client.post("/v1/memories", json=memory_body("note", subject_id=candidate), headers=agent)
            statuses.append(r.status_code)
    limit = 120
    assert statuses[:limit] == [201] * limit  # a positive control: an agent naming subjects at work
    assert set(statuses[limit:]) == {429} and 409 not in statuses  # the fence never answered
    problem = assert_problem(
        api.client.post("/v1/memories", json=memory_body("x", subject_id=forgotten), headers=agent), 429
    )
    assert (
        "Retry-After"
        in api.client.post(
            "/v1/memories", json=memory_body("x", subject_id="one-more@example.com"), headers=agent
        ).headers
    )
    assert "subject" in problem["detail"]
    throttled = [r for r in caplog.records if r.getMessage() == "subject sweep throttled"]
    assert len(throttled) == 1000 - limit + 2 and {r.limit for r in throttled} == {"token"}
    assert all("candidate" not in r.getMessage() + json.dumps(r.__dict__, default=str) for r in throttled)
    # Subjects it already named cost nothing: the agent keeps working for them.
    again = api.client.post(
        "/v1/memories", json=memory_body("more", subject_id="candidate-0001@example.com"), headers=agent
    )
    assert again.status_code == 201, again.text


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_tenant_limit_holds_across_tokens(settings: Settings, caplog):
    """Three agent tokens of one tenant, each within its own limit (20), meet the tenant's (50)."""
    limits = {"subject_sweep_rate_limit": "20/minute", "subject_sweep_tenant_rate_limit": "50/minute"}
    with TestClient(create_app(api_settings(settings, **limits))) as client:
        api = Api(client.app, client)  # type: ignore[arg-type]
        statuses = []
        with caplog.at_level(logging.WARNING, logger="lethe.api"):
            for t in range(3):
                agent = bearer(api.mint(agent=f"a{t}"))
                for i in range(20):
                    body = memory_body("note", subject_id=f"s-{t}-{i}@example.com")
                    statuses.append(api.client.post("/v1/memories", json=body, headers=agent).status_code)
        assert statuses[:50] == [201] * 50 and statuses[50:] == [429] * 10
        assert {r.limit for r in caplog.records if r.getMessage() == "subject sweep throttled"} == {"tenant"}
        other = bearer(api.mint(tenant="t2"))  # control: another tenant is not held back
        body = memory_body("n", subject_id="x@example.com")
        assert api.client.post("/v1/memories", json=body, headers=other).status_code == 201
