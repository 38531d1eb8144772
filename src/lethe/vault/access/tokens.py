"""API tokens: opaque bearer credentials that carry a caller's whole scope.

A token is ``lethe_`` followed by 43 URL-safe characters (256 random bits). Only its
SHA-256 is stored, so a copy of the database yields no usable credential; a high-entropy
secret needs no slow hash. The scope of every request (tenant, role, agent, purposes, the
source types it may assert) comes from the token row, never from a request body.
``Caller.principal`` is the token id, which is safe to log; the token itself never is.

Exceptions:
- ``Unauthenticated`` (401): the token is malformed, unknown, expired or revoked; one
  error for all four, so a caller cannot tell which.
- ``InvalidCommand`` (422): a token was requested with a scope that makes no sense (an
  agent without an agent id or purposes, a bad purpose, a lifetime that is not positive
  or is longer than ``MAX_TOKEN_TTL``, which also keeps expiry inside the calendar), with
  source types its role may not write or an empty list of them, or with a display name or
  e-mail address out of bounds.
- ``NotFound`` (404): revoking a token id that does not exist (or is another tenant's).

A token may carry the ``display_name`` and ``email`` of the person or system it stands
for: records keep the token id and show the name (``vault.access.principals``).

A token may name the source types it may assert (``source_types``; ``vault.policy`` refuses
a write asserting another). Stored as NULL when not given: the role's default (an agent's
every non-operator type, an operator's ``operator_config``), which is what every token
minted before the column existed keeps. Minting
and revoking append ``token.created`` / ``token.revoked`` audit events (ids, role and
who acted; never the secret, its hash, the name or the address). The SQL is
``access.token_repository``.
- ``StoreUnavailable`` (503): from the unit of work, when the database is down.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

import sqlalchemy as sa

from lethe.vault.access import token_repository as repo
from lethe.vault.access.known_tokens import REFUSAL, KnownTokens
from lethe.vault.access.token_repository import TokenInfo as TokenInfo  # the service's answer
from lethe.vault.access.token_repository import token_info
from lethe.vault.clock import iso, utcnow
from lethe.vault.errors import InvalidCommand, NotFound, Unauthenticated
from lethe.vault.model import Caller, Role, SourceType
from lethe.vault.policy import DEFAULT_POLICY, role_source_types
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.tenancy import acting_for, maintenance, maintenance_job

TOKEN_PREFIX = "lethe_"  # noqa: S105 (a prefix, not a secret)
MAX_TOKEN_TTL = timedelta(days=3650)
_TOKEN = re.compile(r"^lethe_[A-Za-z0-9_-]{43}$")
_PURPOSE = re.compile(r"^[a-z0-9][a-z0-9_.:-]{0,63}$")
_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$")
# No ':' in agent ids: the core names non-agent writers "role:principal".
_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
MAX_DISPLAY_NAME, MAX_EMAIL = 100, 254
# A mailbox as people type it: one '@', no spaces or controls, a dot in the domain (RFC 5321 lengths).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(rf"^[^@\s\x00-\x1f\x7f]{{1,64}}@{_LABEL}(?:\.{_LABEL})+$")
TOKEN_CREATED, TOKEN_REVOKED = "token.created", "token.revoked"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def well_formed(token: str | None) -> bool:
    """Whether ``token`` has the form of a Lethe token (a cheap check before any lookup)."""
    return bool(token) and _TOKEN.match(token) is not None


class TokenService:
    """Mints, checks, revokes and lists API tokens (``api_tokens`` table).

    Exceptions: ``Unauthenticated`` (401, a token malformed, unknown, expired or revoked:
    one error for all), ``InvalidCommand`` (422, a scope, display name or e-mail that
    makes no sense), ``NotFound`` (404, revoking an unknown token id or another tenant's),
    ``StoreUnavailable`` (503).
    """

    def __init__(
        self,
        uow: UnitOfWork,
        clock: Callable[[], datetime] = utcnow,
        *,
        log: EventLog,
    ) -> None:
        self.uow = uow
        self.clock = clock
        self.log = log
        self.known = KnownTokens()  # what ``authenticate`` found, for ``recall``

    def create(
        self,
        role: Role | str,
        tenant_id: str,
        agent_id: str | None = None,
        purposes: Iterable[str] = (),
        ttl: timedelta | None = None,
        description: str | None = None,
        display_name: str | None = None,
        email: str | None = None,
        created_by: str = "system",
        source_types: Iterable[str] | None = None,
    ) -> tuple[str, TokenInfo]:
        """Mint a token; the plaintext is returned once and never stored.

        ``created_by`` is the principal minting it (an admin's token id, or ``cli``);
        ``source_types`` what it may assert (None: its role's default).
        """
        token, info = self._new(
            role, tenant_id, agent_id, purposes, ttl, description, display_name, email, source_types
        )
        with acting_for(tenant_id), self.uow.write() as conn:
            self._insert(conn, token, info, created_by)
        return token, info

    def _new(
        self,
        role: Role | str,
        tenant_id: str,
        agent_id: str | None = None,
        purposes: Iterable[str] = (),
        ttl: timedelta | None = None,
        description: str | None = None,
        display_name: str | None = None,
        email: str | None = None,
        source_types: Iterable[str] | None = None,
    ) -> tuple[str, TokenInfo]:
        """A new token and what may be shown about it, its scope checked; nothing stored yet."""
        try:
            role = Role(role)
        except ValueError:
            raise InvalidCommand(f"unknown role; expected one of {[r.value for r in Role]}") from None
        purposes = tuple(dict.fromkeys(purposes))
        if not _TENANT.match(tenant_id or ""):
            raise InvalidCommand("tenant must be 1-64 letters, digits or '_', '.', ':', '@', '-'")
        if agent_id is not None and not _AGENT.match(agent_id):
            raise InvalidCommand("agent must be 1-64 letters, digits or '_', '.', '@', '-'")
        if role is Role.AGENT and (agent_id is None or not purposes):
            raise InvalidCommand("an agent token needs an agent id and at least one purpose")
        for p in purposes:
            if not _PURPOSE.match(p):
                raise InvalidCommand("a purpose is 1-64 characters of a-z, 0-9, '_', '.', ':' or '-'")
        if ttl is not None and not timedelta(0) < ttl <= MAX_TOKEN_TTL:
            raise InvalidCommand(f"a token's lifetime must be positive and at most {MAX_TOKEN_TTL.days} days")
        if description is not None and len(description) > 200:
            raise InvalidCommand("description exceeds 200 characters")
        display_name, email = _display_name(display_name), _email(email)
        asserts = _source_types(role, source_types)
        now = self.clock()
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        info = TokenInfo(
            id=str(uuid.uuid4()),
            role=role,
            tenant_id=tenant_id,
            agent_id=agent_id,
            purposes=purposes,
            description=description,
            created_at=now,
            expires_at=now + ttl if ttl is not None else None,
            revoked_at=None,
            display_name=display_name,
            email=email,
            source_types=asserts,
        )
        return token, info

    def create_first_admin(self, tenant_id: str, description: str) -> tuple[str, TokenInfo] | None:
        """Mint an admin token for ``tenant_id`` unless the store has an admin token (of any
        tenant); None when it has one.

        The check and the insert are one write transaction, and write transactions hold the
        store's write lock (PostgreSQL's advisory lock, SQLite's ``BEGIN IMMEDIATE``), so any
        number of concurrent first starts mint exactly one (tests/api/test_bootstrap_once.py).
        A maintenance transaction (``token roles``): the admin may be another tenant's.
        """
        token, info = self._new(Role.ADMIN, tenant_id, description=description)
        with maintenance("token roles"), self.uow.write() as conn:
            if repo.any_with_role(conn, Role.ADMIN):
                return None
            self._insert(conn, token, info, "system")
        return token, info

    def _insert(self, conn: sa.Connection, token: str, info: TokenInfo, created_by: str) -> None:
        """Store a minted token's row (its hash, never the token) and its audit event."""
        asserts = info.source_types
        repo.add(conn, hash_token(token), info)
        payload = {
            "token_id": info.id,
            "role": info.role.value,
            "agent_id": info.agent_id,
            "created_by": created_by,
            "source_types": None if asserts is None else list(asserts),  # who granted what trust
        }
        self.log.append(conn, Event(TOKEN_CREATED, info.tenant_id, payload, occurred_at=iso(info.created_at)))

    def authenticate(self, token: str | None) -> Caller:
        """The caller a bearer token stands for; ``Unauthenticated`` for anything else."""
        refused = Unauthenticated(REFUSAL)
        if not well_formed(token):
            raise refused
        digest = hash_token(token)
        with self.uow.read() as conn:
            row = repo.by_hash(conn, digest, past_the_wall=self.uow.row_security)
        # The lookup is by an index; comparing in constant time as well costs nothing.
        if row is None or not hmac.compare_digest(row.token_hash, digest):
            raise refused
        info = token_info(row)
        if not info.active(self.clock()):
            raise refused
        self.known.remember(digest, info)
        return _caller(info)

    def recall(self, token: str | None) -> Caller | None:
        """The caller of a token ``authenticate`` accepted before in this process and that
        has not expired by now, from memory: **its revocation is not read**. Only for work
        that reads it with its own statements before it answers or writes anything
        (``vault.access.known_tokens``; ``confirm_token`` of the search and of the write).
        None: authenticate."""
        if not well_formed(token):
            return None
        info = self.known.get(hash_token(token))  # type: ignore[arg-type]
        if info is None or not info.active(self.clock()):
            return None
        return _caller(info)

    def accepted(self, token: str | None) -> bool:
        """Whether ``authenticate`` accepted this token before in this process (and has not
        forgotten it since): no statement is sent."""
        return well_formed(token) and self.known.get(hash_token(token)) is not None  # type: ignore[arg-type]

    def forget(self, token: str) -> None:
        """Drop a token from ``recall`` (its read found it revoked): it is looked up again."""
        self.known.forget(hash_token(token))

    @maintenance_job("token by id")
    def caller_by_id(self, token_id: str) -> Caller:
        """The caller a still-valid token id stands for (a console session holds the id, not the token)."""
        with self.uow.read() as conn:
            found = repo.by_id(conn, token_id)
        if found is None or not found.active(self.clock()):
            raise Unauthenticated("the token behind this session is no longer valid")
        return _caller(found)

    @maintenance_job("token by id")
    def info(self, token_id: str) -> TokenInfo:
        """What may be shown about one token (``NotFound`` if there is none)."""
        with self.uow.read() as conn:
            found = repo.by_id(conn, token_id)
        if found is None:
            raise NotFound("token not found")
        return found

    def revoke(self, token_id: str, tenant_id: str | None = None, revoked_by: str = "system") -> TokenInfo:
        """Revoke at once; revoking a revoked token is a no-op that keeps the first time.

        With ``tenant_id`` (an admin over HTTP) another tenant's token is ``NotFound``,
        exactly like an unknown id; the CLI, run on the server, may revoke any (a maintenance
        transaction: the token's tenant is not known before its row is read).
        """
        scope = maintenance("token by id") if tenant_id is None else acting_for(tenant_id)
        with scope, self.uow.write() as conn:
            found = repo.by_id(conn, token_id)
            if found is None or (tenant_id is not None and found.tenant_id != tenant_id):
                raise NotFound("token not found")
            if found.revoked_at is None:
                now = self.clock()
                repo.mark_revoked(conn, token_id, now)
                payload = {"token_id": token_id, "revoked_by": revoked_by}
                self.log.append(conn, Event(TOKEN_REVOKED, found.tenant_id, payload, occurred_at=iso(now)))
                found = repo.by_id(conn, token_id)
        assert found is not None  # read in the same transaction
        return found

    def list(self, tenant_id: str) -> list[TokenInfo]:
        with acting_for(tenant_id), self.uow.read() as conn:
            return repo.of_tenant(conn, tenant_id)

    @maintenance_job("token roles")
    def any_with_role(self, role: Role, tenant_id: str | None = None) -> bool:
        """Whether a token of this role (in this tenant) was ever minted: first-run detection."""
        with self.uow.read() as conn:
            return repo.any_with_role(conn, role, tenant_id)


def _caller(info: TokenInfo) -> Caller:
    return Caller(
        tenant_id=info.tenant_id,
        role=info.role,
        agent_id=info.agent_id,
        purposes=frozenset(info.purposes),
        principal=info.id,
        source_types=None if info.source_types is None else frozenset(info.source_types),
    )


def _source_types(role: Role, asked: Iterable[str] | None) -> tuple[SourceType, ...] | None:
    """The source types a token of ``role`` is minted to assert, in the enum's order; None
    (not given) is the role's default. Only types the role may write at all (the policy
    table), and at least one: a list the server would refuse every write of is a mistake."""
    if asked is None:
        return None
    may = role_source_types(DEFAULT_POLICY, role)
    if not may:
        raise InvalidCommand(f"a token of role {role.value} writes no memories: it takes no source types")
    wanted = set()
    for name in asked:
        try:
            wanted.add(SourceType(name))
        except ValueError:
            raise InvalidCommand(
                f"unknown source type; expected one of {[s.value for s in SourceType]}"
            ) from None
    if not wanted:
        raise InvalidCommand("source_types, when given, names at least one source type")
    if refused := [s.value for s in SourceType if s in wanted and s not in may]:
        raise InvalidCommand(
            f"a token of role {role.value} may not assert {', '.join(refused)}; "
            f"its role may write: {', '.join(may)}"
        )
    return tuple(s for s in SourceType if s in wanted)


def _display_name(name: str | None) -> str | None:
    """NFC, trimmed, 1-100 printable characters (it is shown in records and certificates)."""
    if name is None:
        return None
    name = unicodedata.normalize("NFC", name).strip()
    if not 1 <= len(name) <= MAX_DISPLAY_NAME:
        raise InvalidCommand(f"a display name is 1-{MAX_DISPLAY_NAME} characters")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise InvalidCommand("a display name must not contain control or format characters")
    return name


def _email(email: str | None) -> str | None:
    if email is None:
        return None
    email = email.strip()
    if len(email) > MAX_EMAIL or not _EMAIL.match(email):
        raise InvalidCommand(f"an e-mail address is local@domain.tld, at most {MAX_EMAIL} characters")
    return email
