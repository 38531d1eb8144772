"""Shared fixtures: a Lethe container over real SQLite and real PostgreSQL."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from pydantic import SecretStr

from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings
from lethe.vault.model import Caller, Provenance, Role, SourceType, WriteCommand
from lethe.vault.store.db import UnitOfWork

pytest_plugins = ["tests.conftest_openbao", "tests.tallies", "tests.private_services", "tests.parallel"]

PG_ADMIN_URL = os.environ.get("LETHE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


class PostgresDatabases:
    """Creates a throwaway database per test on the real server, and drops it after."""

    def __init__(self, admin_url: str) -> None:
        self.admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        self.base = sa.engine.make_url(admin_url)

    def create(self) -> str:
        name = f"lethe_t_{uuid.uuid4().hex[:12]}"
        with self.admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        return self.base.set(database=name).render_as_string(hide_password=False)

    def drop(self, url: str) -> None:
        name = sa.engine.make_url(url).database
        with self.admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresDatabases]:
    dbs = PostgresDatabases(PG_ADMIN_URL)
    try:
        with dbs.admin.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.OperationalError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN_URL}: {exc}")
        pytest.skip("PostgreSQL is not reachable")
    yield dbs
    dbs.admin.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def settings(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Settings]:
    url = None
    if backend == "postgres":
        pg: PostgresDatabases = request.getfixturevalue("postgres")
        url = pg.create()
    yield Settings(data_dir=tmp_path / "data", database_url=url)
    if url is not None:
        pg.drop(url)


@pytest.fixture
def lethe(settings: Settings) -> Iterator[Container]:
    c = build(settings, create=True)
    yield c
    c.close()


def agent(tenant: str = "t1", agent_id: str = "a1", purposes: tuple[str, ...] = ("support",)) -> Caller:
    return Caller(tenant, Role.AGENT, agent_id, frozenset(purposes), principal=f"tok-{agent_id}")


def reviewer(tenant: str = "t1") -> Caller:
    return Caller(tenant, Role.REVIEWER, None, frozenset(), principal="reviewer-1")


def page_url(source: SourceType | str) -> str | None:
    """The URL a ``web_page`` write must give (``provenance.url``); None for other sources."""
    return "https://example.org/page" if source == SourceType.WEB_PAGE else None


def write_cmd(
    content: str = "Alice prefers tea over coffee",
    subject: str = "alice@example.com",
    source: SourceType = SourceType.USER_STATEMENT,
    key: str | None = None,
    provenance: Provenance | None = None,
    **kw,
) -> WriteCommand:
    fields = {"purpose": "support", "kind": "preference", "confidence": 0.9, **kw}
    return WriteCommand(
        subject_id=subject,
        content=content,
        provenance=provenance or Provenance(source, "session-1/turn-1", url=page_url(source)),
        idempotency_key=key or uuid.uuid4().hex,
        **fields,
    )


@contextmanager
def write_lock_held(uow: UnitOfWork) -> Iterator[threading.Thread]:
    """Another thread inside a write transaction of ``uow`` until the block ends."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with uow.write():
            holding.set()
            release.wait(60)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        assert holding.wait(10)
        yield holder
    finally:
        release.set()
        holder.join(30)


def logical_forget(c: Container, subject: str, tenant: str = "t1") -> None:
    """The subject's key destroyed and memories tombstoned, with no erasure job: dead
    ciphertext for a compaction to rewrite."""
    from lethe.vault.erasure.forgetting import tombstone_subject

    with c.uow.acting_for(tenant), c.uow.write() as conn:
        tombstone_subject(conn, c.log, c.keyring, tenant, c.pseudonyms.subject_ref(tenant, subject))


def event_count(c: Container) -> int:
    with c.uow.read() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one()


@pytest.fixture(params=["local", "vault"])
def kms_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def shred_settings(settings: Settings, kms_kind: str, request: pytest.FixtureRequest) -> Settings:
    """Settings on the chosen KMS: the local keystore, or a real OpenBao dev server."""
    if kms_kind == "local":
        return settings
    server = request.getfixturevalue("openbao")
    return settings.model_copy(
        update={
            "kms": "vault",
            "vault_addr": server.addr,
            "vault_token": SecretStr(server.token),
            "kms_timeout_seconds": 2.0,
        }
    )


@pytest.fixture
def shredder(shred_settings: Settings) -> Iterator[Container]:
    c = build(shred_settings, create=True)
    yield c
    c.close()


def officer(tenant: str = "t1") -> Caller:
    return Caller(tenant, Role.PRIVACY_OFFICER, None, frozenset(), principal="officer-1")
