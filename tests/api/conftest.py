"""Fixtures for the HTTP API: an in-process app over the shared SQLite/PostgreSQL settings."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from lethe.api.bootstrap import Container, build
from lethe.api.server.app import create_app
from lethe.api.settings import Settings
from lethe.vault.access.tokens import TokenService
from lethe.vault.clock import utcnow
from lethe.vault.model import Role

PROBLEM = "application/problem+json"


def memory_body(content: str = "Alice prefers tea over coffee", **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "subject_id": "alice@example.com",
        "purpose": "support",
        "kind": "preference",
        "content": content,
        "provenance": {"source_type": "user_statement", "source_ref": "session-1/turn-1"},
        "confidence": 0.9,
        "idempotency_key": uuid.uuid4().hex,
    }
    body.update(kw)
    return body


def assert_problem(response: Any, status: int) -> dict[str, Any]:
    """The response is an RFC 9457 problem with this status; returns its body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM), response.headers["content-type"]
    doc = response.json()
    assert {"type", "title", "status", "detail", "instance"} <= doc.keys(), doc
    assert doc["status"] == status
    return doc


@dataclass
class Api:
    """An app under test, its client, and helpers to mint tokens and count events."""

    app: FastAPI
    client: TestClient

    @property
    def container(self) -> Container:
        return self.app.state.container

    @property
    def tokens(self) -> TokenService:
        return self.app.state.tokens

    def mint(
        self,
        role: Role | str = Role.AGENT,
        tenant: str = "t1",
        agent: str | None = None,
        purposes: tuple[str, ...] = (),
        ttl: timedelta | None = None,
    ) -> str:
        role = Role(role)
        if role is Role.AGENT:
            agent = agent or "a1"
            purposes = purposes or ("support",)
        token, _ = self.tokens.create(role, tenant, agent, purposes, ttl)
        return token

    def expired(self, role: Role = Role.AGENT) -> str:
        c = self.container
        past = TokenService(c.uow, clock=lambda: utcnow() - timedelta(days=2), log=c.log)
        agent, purposes = ("a1", ("support",)) if role is Role.AGENT else (None, ())
        token, _ = past.create(role, "t1", agent, purposes, ttl=timedelta(days=1))
        return token

    def revoked(self, role: Role = Role.AGENT) -> str:
        agent, purposes = ("a1", ("support",)) if role is Role.AGENT else (None, ())
        token, info = self.tokens.create(role, "t1", agent, purposes)
        self.tokens.revoke(info.id)
        return token

    def events(self) -> int:
        with self.container.uow.read() as conn:
            return conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def api_settings(settings: Settings, **overrides: Any) -> Settings:
    """Test settings: generous rate limits and a sweep that stays out of the way.

    The store is initialised here (as `lethe init` would): the server opens only existing stores.
    """
    build(settings, create=True).close()
    base = {
        "rate_limit": "100000/minute",
        "auth_failure_rate_limit": "100000/minute",
        "subject_sweep_rate_limit": "100000/minute",
        "subject_sweep_tenant_rate_limit": "100000/minute",
        "sweep_interval_seconds": 3600.0,
    }
    return settings.model_copy(update={**base, **overrides})


@pytest.fixture
def api(settings: Settings) -> Iterator[Api]:
    app = create_app(api_settings(settings))
    with TestClient(app) as client:
        yield Api(app, client)


@dataclass
class Served:
    """A real ``lethe serve`` (tests/api/test_serve.py) and a token per role, minted over HTTP."""

    server: Any
    tokens: dict[str, str]

    @property
    def url(self) -> str:
        return self.server.url


def serve_with_tokens(tmp_path: Any, extra_env: dict[str, str] | None = None) -> Served:
    """Start ``lethe serve`` on a fresh store; the first-run admin token mints the others."""
    import httpx

    from tests.api.test_serve import start_server

    server = start_server(tmp_path, extra_env or {})
    tokens = {"admin": server.first_admin_token()}
    specs = {
        "agent": {"role": "agent", "agent_id": "a1", "purposes": ["support"]},
        "agent2": {"role": "agent", "agent_id": "a2", "purposes": ["support", "billing"]},
        "reviewer": {"role": "reviewer"},
        "privacy_officer": {"role": "privacy_officer"},
        "auditor": {"role": "auditor"},
    }
    with httpx.Client(base_url=server.url, timeout=30, headers=bearer(tokens["admin"])) as http:
        for name, body in specs.items():
            r = http.post("/v1/admin/tokens", json=body)
            assert r.status_code == 201, r.text
            tokens[name] = r.json()["token"]
    return Served(server, tokens)
