"""TokenService over SQLite and PostgreSQL: opaque tokens, stored only as hashes."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
import sqlalchemy as sa

from lethe.api.bootstrap import Container
from lethe.vault.access.tokens import TokenService
from lethe.vault.clock import utcnow
from lethe.vault.errors import InvalidCommand, NotFound, Unauthenticated
from lethe.vault.model import Role
from lethe.vault.store.tables import api_tokens


@pytest.fixture
def tokens(lethe: Container) -> TokenService:
    return lethe.tokens


def test_a_token_is_opaque_and_only_its_hash_is_stored(tokens: TokenService, lethe: Container) -> None:
    token, info = tokens.create(Role.AGENT, "t1", "a1", ["support", "billing"], description="bot")
    assert re.fullmatch(r"lethe_[A-Za-z0-9_-]{43}", token)
    with lethe.uow.maintenance("test: inspect every tenant's rows"), lethe.uow.read() as conn:
        rows = conn.execute(sa.select(api_tokens)).all()
    assert len(rows) == 1
    assert rows[0].token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(tuple(rows[0])) and token[6:] not in str(tuple(rows[0]))
    caller = tokens.authenticate(token)
    assert (caller.tenant_id, caller.role, caller.agent_id) == ("t1", Role.AGENT, "a1")
    assert caller.purposes == frozenset({"support", "billing"})
    assert caller.principal == info.id != token


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize("bad", [None, "", "lethe_short", "Bearer lethe_x", "lethe_" + "A" * 43])
def test_malformed_and_unknown_tokens_are_one_error(tokens: TokenService, bad: str | None) -> None:
    with pytest.raises(Unauthenticated):
        tokens.authenticate(bad)


def test_expired_and_revoked_tokens_are_refused(tokens: TokenService, lethe: Container) -> None:
    past = TokenService(lethe.uow, clock=lambda: utcnow() - timedelta(hours=2), log=lethe.log)
    expired, _ = past.create(Role.AUDITOR, "t1", ttl=timedelta(hours=1))
    live, info = tokens.create(Role.AUDITOR, "t1", ttl=timedelta(hours=1))
    with pytest.raises(Unauthenticated):
        tokens.authenticate(expired)
    assert tokens.authenticate(live).role is Role.AUDITOR
    first = tokens.revoke(info.id)
    again = tokens.revoke(info.id)
    assert first.revoked_at is not None and again.revoked_at == first.revoked_at
    with pytest.raises(Unauthenticated):
        tokens.authenticate(live)
    with pytest.raises(NotFound):
        tokens.revoke("no-such-id")


def test_list_is_per_tenant(tokens: TokenService) -> None:
    tokens.create(Role.ADMIN, "t1")
    tokens.create(Role.REVIEWER, "t1")
    tokens.create(Role.ADMIN, "t2")
    assert [i.role for i in tokens.list("t1")] == [Role.ADMIN, Role.REVIEWER]
    assert [i.tenant_id for i in tokens.list("t2")] == ["t2"]
    assert tokens.any_with_role(Role.ADMIN) and not tokens.any_with_role(Role.AUDITOR)


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize(
    ("role", "tenant", "agent", "purposes", "ttl"),
    [
        (Role.AGENT, "t1", None, ["support"], None),  # an agent needs an agent id
        (Role.AGENT, "t1", "a1", [], None),  # ... and a purpose
        (Role.AGENT, "t1", "a1", ["Not A Purpose"], None),
        (Role.AGENT, "t1", "role:x", ["support"], None),  # ':' is reserved for non-agent writers
        (Role.ADMIN, "", None, [], None),
        (Role.ADMIN, "t1", None, [], timedelta(0)),
        (Role.ADMIN, "t1", None, [], timedelta(days=3651)),  # ten years at most
        (Role.ADMIN, "t1", None, [], timedelta(days=999_999_999)),  # past the calendar: not an overflow
        ("superuser", "t1", None, [], None),
    ],
)
def test_nonsensical_scopes_are_refused(tokens: TokenService, role, tenant, agent, purposes, ttl) -> None:
    with pytest.raises(InvalidCommand):
        tokens.create(role, tenant, agent, purposes, ttl)
    assert tokens.list(tenant or "t1") == []
