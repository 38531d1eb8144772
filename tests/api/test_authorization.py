"""The authorisation matrix: every endpoint x every role and every kind of bad token.

``TABLE`` restates the access policy of DESIGN.md independently of ``api.auth``; the
tests check the running app against it, and that it and ``ROUTE_ROLES`` agree on every
route. Resources a successful call consumes (a quarantined memory to promote, a hold
to lift, a forgotten subject to reinstate) are made fresh for each allowed call.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from lethe.api.http.auth import ROUTE_ROLES
from lethe.api.http.routes import (
    audit,
    erasure,
    health,
    memories,
    review,
    sessions,
    subject_access,
    tokens,
    webhooks,
)
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.model import Caller, Role, SourceType
from tests.api.conftest import Api, api_settings, bearer, memory_body
from tests.conftest import write_cmd

A, R, P, U, D, OP = Role.AGENT, Role.REVIEWER, Role.PRIVACY_OFFICER, Role.AUDITOR, Role.ADMIN, Role.OPERATOR
PUBLIC = None  # no token needed
HOOK_URL = "https://hooks.example.com/lethe"  # never resolved here: the delivery loop is held back

# route name, method, path (placeholders filled per call), roles allowed, success status
TABLE: list[tuple[str, str, str, frozenset[Role] | None, int]] = [
    ("healthz", "GET", "/healthz", PUBLIC, 200),
    ("readyz", "GET", "/readyz", PUBLIC, 200),
    ("metrics", "GET", "/metrics", PUBLIC, 200),
    ("write_memory", "POST", "/v1/memories", frozenset({A, OP}), 201),
    ("get_memory", "GET", "/v1/memories/{memory}", frozenset({A}), 200),
    ("search_memories", "POST", "/v1/memories/search", frozenset({A}), 200),
    ("list_memories", "POST", "/v1/memories/list", frozenset({A}), 200),
    ("delete_memory", "DELETE", "/v1/memories/{own}", frozenset({A}), 204),
    ("taint_session", "POST", "/v1/sessions/conv-1/taint", frozenset({A}), 200),
    ("list_review_queue", "GET", "/v1/review-queue", frozenset({R}), 200),
    ("get_review_item", "GET", "/v1/review-queue/{quarantined}", frozenset({R}), 200),
    ("promote_memory", "POST", "/v1/memories/{quarantined}/promote", frozenset({R}), 200),
    ("reject_memory", "POST", "/v1/memories/{quarantined}/reject", frozenset({R}), 200),
    ("confirm_retention", "POST", "/v1/memories/{confirmable}/retention", frozenset({R}), 200),
    ("retract_memories", "POST", "/v1/retractions", frozenset({R, P}), 202),
    ("request_erasure", "POST", "/v1/erasure-requests", frozenset({P}), 202),
    ("list_erasure_requests", "GET", "/v1/erasure-requests", frozenset({P, U}), 200),
    ("get_erasure_request", "GET", "/v1/erasure-requests/{job}", frozenset({P, U}), 200),
    ("extend_erasure_request", "POST", "/v1/erasure-requests/{open_job}/extensions", frozenset({P}), 200),
    ("pause_erasure_request", "POST", "/v1/erasure-requests/{open_job}/pause", frozenset({P}), 200),
    ("resume_erasure_request", "POST", "/v1/erasure-requests/{paused_job}/resume", frozenset({P}), 200),
    ("list_legal_holds", "GET", "/v1/legal-holds", frozenset({P}), 200),
    ("place_legal_hold", "POST", "/v1/legal-holds", frozenset({P}), 201),
    ("lift_legal_hold", "DELETE", "/v1/legal-holds/{hold}", frozenset({P}), 204),
    ("reinstate_subject", "POST", "/v1/subject-reinstatements", frozenset({P}), 201),
    ("request_subject_access", "POST", "/v1/subject-access-requests", frozenset({P}), 200),
    ("create_token", "POST", "/v1/admin/tokens", frozenset({D}), 201),
    ("list_tokens", "GET", "/v1/admin/tokens", frozenset({D}), 200),
    ("revoke_token", "DELETE", "/v1/admin/tokens/{token}", frozenset({D}), 204),
    ("whoami", "GET", "/v1/whoami", frozenset(Role), 200),
    ("create_webhook", "POST", "/v1/admin/webhooks", frozenset({D, P}), 201),
    ("list_webhooks", "GET", "/v1/admin/webhooks", frozenset({D, P}), 200),
    ("delete_webhook", "DELETE", "/v1/admin/webhooks/{webhook}", frozenset({D, P}), 204),
    ("list_webhook_deliveries", "GET", "/v1/admin/webhooks/{webhook}/deliveries", frozenset({D, P}), 200),
    (
        "replay_webhook_delivery",
        "POST",
        "/v1/admin/webhooks/{webhook}/deliveries/{delivery}/replay",
        frozenset({D, P}),
        202,
    ),
    ("get_audit_checkpoint", "GET", "/v1/audit/checkpoint", frozenset({U}), 200),
    ("get_audit_kpis", "GET", "/v1/audit/kpis", frozenset({U}), 200),
    ("get_audit_public_key", "GET", "/v1/audit/public-key", frozenset({U}), 200),
    ("get_audit_public_key_pem", "GET", "/v1/audit/public-key.pem", frozenset({U}), 200),
    ("get_inclusion_proof", "GET", "/v1/audit/proofs/inclusion?index=0&tree_size=1", frozenset({U}), 200),
    ("get_consistency_proof", "GET", "/v1/audit/proofs/consistency?first=1&second=2", frozenset({U}), 200),
    ("list_audit_forks", "GET", "/v1/audit/forks", frozenset({P, U}), 200),
    ("get_erasure_report", "GET", "/v1/erasure-reports/{report}", frozenset({P, U}), 200),
]
BAD_TOKENS = ("none", "malformed", "unknown", "expired", "revoked")
IDENTITIES = [r.value for r in Role] + list(BAD_TOKENS)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    # The erasure runner's one pass at start comes before any job: open jobs stay open.
    data_dir = Path(tmp_path_factory.mktemp("authz")) / "data"
    held_back = {"erasure_interval_seconds": 3600, "webhook_interval_seconds": 3600}
    settings = api_settings(Settings(data_dir=data_dir), **held_back)
    app = create_app(settings)
    with TestClient(app) as client:
        yield World(Api(app, client))


class World:
    """Long-lived resources, and fresh ones for calls that consume them."""

    def __init__(self, api: Api) -> None:
        self.api = api
        c = api.container
        self.tokens = {r: api.mint(r) for r in Role}
        self.agent = Caller("t1", Role.AGENT, "a1", frozenset({"support"}), principal="writer")
        self.officer = Caller("t1", Role.PRIVACY_OFFICER, None, frozenset(), principal="officer")
        self.memory = c.memories.write(self.agent, write_cmd("tea at noon")).item.id
        self.job = c.erasure.request(self.officer, f"s-{uuid.uuid4()}", "gdpr-art17-1a", None).id
        c.erasure.run_pending()
        self.report = c.erasure.get(self.officer, self.job).report_id

    def resource(self, name: str, fresh: bool) -> str:
        c = self.api.container
        if not fresh:  # the call must be refused before it could touch anything
            return str(uuid.uuid4())
        if name == "memory":
            return self.memory
        if name == "job":
            return self.job
        if name == "report":
            return self.report
        if name == "quarantined":
            cmd = write_cmd("tea from the web", source=SourceType.WEB_PAGE)
            return c.memories.write(self.agent, cmd).item.id
        if name == "own":  # a memory of the agent token's own agent (a1), to delete
            return c.memories.write(self.agent, write_cmd("tea to forget")).item.id
        if name == "confirmable":  # an active memory someone else wrote
            return c.memories.write(self.agent, write_cmd("tea every day")).item.id
        if name == "hold":
            return c.erasure.place_hold(self.officer, f"s-{uuid.uuid4()}", "litigation").id
        if name in ("open_job", "paused_job"):  # the runner passes hourly here
            subject = f"s-{uuid.uuid4()}"
            job = c.erasure.request(self.officer, subject, "gdpr-art17-1a", None).id
            c.erasure.place_hold(self.officer, subject, "litigation")
            if name == "paused_job":
                c.deadlines.pause(self.officer, job)
            return job
        if name == "token":
            return self.api.tokens.create(Role.AUDITOR, "t1")[1].id
        if name == "webhook":  # subscribed to exports, with one delivery waiting (never sent here)
            self.webhook = c.webhooks.subscribe(self.officer, HOOK_URL, ["access_export.ready"])[0].id
            c.subject_access.export(self.officer, f"s-{uuid.uuid4()}")
            return self.webhook
        if name == "delivery":  # of the webhook just made
            return c.webhooks.deliveries(self.officer, self.webhook)[0].id
        raise KeyError(name)

    def retractable(self, fresh: bool) -> str:
        """A live memory to retract (an unknown id for a call that must be refused first)."""
        if not fresh:
            return str(uuid.uuid4())
        return self.api.container.memories.write(self.agent, write_cmd("tea by mistake")).item.id

    def forgotten_subject(self) -> str:
        subject = f"s-{uuid.uuid4()}"
        c = self.api.container
        c.erasure.request(self.officer, subject, "gdpr-art17-1a", None)
        c.erasure.run_pending()
        return subject

    def token(self, identity: str, allowed: frozenset[Role] | None) -> str | None:
        role = sorted(allowed or {A})[0]
        if identity == "none":
            return None
        if identity == "malformed":
            return "not-a-lethe-token"
        if identity == "unknown":
            return "lethe_" + "x" * 43
        if identity == "expired":
            return self.api.expired(role)
        if identity == "revoked":
            return self.api.revoked(role)
        return self.tokens[Role(identity)]


BODIES: dict[str, Callable[[World, bool], dict[str, Any]]] = {
    "write_memory": lambda w, fresh: memory_body(),
    "search_memories": lambda w, fresh: {"query": "tea", "purpose": "support"},
    "list_memories": lambda w, fresh: {},
    "taint_session": lambda w, fresh: {"reason": "read an untrusted page"},
    "promote_memory": lambda w, fresh: {"expected_version": 1},
    "reject_memory": lambda w, fresh: {"expected_version": 1, "reason": "unsupported claim"},
    "confirm_retention": lambda w, fresh: {"expected_version": 1, "ttl_seconds": 2 * 365 * 86400},
    "retract_memories": lambda w, fresh: {"memory_id": w.retractable(fresh), "reason": "poisoned page"},
    "request_erasure": lambda w, fresh: {"subject_id": f"s-{uuid.uuid4()}", "legal_basis": "gdpr-art17-1a"},
    "place_legal_hold": lambda w, fresh: {"subject_id": f"s-{uuid.uuid4()}", "reason": "litigation"},
    "reinstate_subject": lambda w, fresh: {
        "subject_id": w.forgotten_subject() if fresh else f"s-{uuid.uuid4()}",
        "reason": "consent given again",
    },
    "create_token": lambda w, fresh: {"role": "auditor"},
    "create_webhook": lambda w, fresh: {"url": HOOK_URL, "events": ["erasure.reported"]},
    "request_subject_access": lambda w, fresh: {"subject_id": "alice@example.com"},
    "extend_erasure_request": lambda w, fresh: {
        "months": 1,
        "reason": "records in several systems",
        "subject_notified_at": datetime.now(UTC).isoformat(),
    },
}


def expected(allowed: frozenset[Role] | None, ok: int, identity: str) -> int:
    if allowed is PUBLIC:
        return ok
    if identity in BAD_TOKENS:
        return 401
    return ok if Role(identity) in allowed else 403


@pytest.mark.parametrize("identity", IDENTITIES)
@pytest.mark.parametrize(("name", "method", "path", "allowed", "ok"), TABLE, ids=[row[0] for row in TABLE])
def test_authorisation_matrix(
    world: World,
    name: str,
    method: str,
    path: str,
    allowed: frozenset[Role] | None,
    ok: int,
    identity: str,
) -> None:
    want = expected(allowed, ok, identity)
    fresh = want == ok
    url = path
    for placeholder in (
        "memory",
        "own",
        "quarantined",
        "confirmable",
        "job",
        "open_job",
        "paused_job",
        "hold",
        "report",
        "token",
        "webhook",
        "delivery",
    ):
        if "{" + placeholder + "}" in url:
            url = url.replace("{" + placeholder + "}", world.resource(placeholder, fresh))
    body = BODIES[name](world, fresh) if name in BODIES else None
    if name == "write_memory" and identity == OP.value:  # an operator writes operator_config only
        body = memory_body(provenance={"source_type": "operator_config", "source_ref": "deploy/config"})
    token = world.token(identity, allowed)
    headers = bearer(token) if token else {}
    r = world.api.client.request(method, url, json=body, headers=headers)
    assert r.status_code == want, (name, identity, r.text)
    if want >= 400:
        assert r.headers["content-type"].startswith("application/problem+json")
    if want == 401:
        assert r.headers["www-authenticate"].startswith("Bearer")


def test_the_matrix_covers_every_route_and_agrees_with_the_policy_table() -> None:
    served = {
        r.name
        for m in (health, memories, sessions, review, erasure, subject_access, tokens, audit, webhooks)
        for r in m.router.routes
        if isinstance(r, APIRoute)
    }
    assert {row[0] for row in TABLE} == served
    assert {row[0]: row[3] for row in TABLE if row[3] is not PUBLIC} == ROUTE_ROLES


def test_an_admin_mints_only_for_its_own_tenant(world: World) -> None:
    client, admin = world.api.client, world.tokens[D]
    r = client.post(
        "/v1/admin/tokens",
        json={"role": "agent", "tenant_id": "t2", "agent_id": "x", "purposes": ["support"]},
        headers=bearer(admin),
    )
    assert r.status_code == 403
    r = client.post(
        "/v1/admin/tokens",
        json={"role": "agent", "agent_id": "x", "purposes": ["support"]},
        headers=bearer(admin),
    )
    assert r.status_code == 201 and r.json()["tenant_id"] == "t1"
    assert r.headers["cache-control"] == "no-store"
    minted = r.json()["token"]
    assert (
        client.post(
            "/v1/memories/search", json={"query": "tea", "purpose": "support"}, headers=bearer(minted)
        ).status_code
        == 200
    )
    r = client.post("/v1/admin/tokens", json={"role": "agent", "agent_id": "x"}, headers=bearer(admin))
    assert r.status_code == 422  # an agent token needs a purpose


def test_no_role_that_may_write_may_review() -> None:
    from lethe.vault.policy import DEFAULT_POLICY

    writers = {role for role, _ in DEFAULT_POLICY} | ROUTE_ROLES["write_memory"]
    for route in ("promote_memory", "reject_memory", "list_review_queue", "get_review_item"):
        assert not writers & ROUTE_ROLES[route], route
