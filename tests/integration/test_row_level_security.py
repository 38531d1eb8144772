"""PostgreSQL's tenant wall (``store.tenancy``, migration 0024): a second barrier behind the
application's WHERE clauses. Each refusal is paired with its positive control: the
maintenance path, the tables' owner, sees every tenant's rows."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import ProgrammingError

from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings
from lethe.vault.model import Role, SearchQuery
from lethe.vault.store import tenancy
from lethe.vault.store.db import make_engine
from lethe.vault.store.readiness import check_readiness
from lethe.vault.store.schema import downgrade, upgrade
from tests.conftest import agent, write_cmd

ALL = sa.text("SELECT DISTINCT tenant_id FROM memories")  # deliberately unfiltered


@pytest.fixture
def walled(settings: Settings) -> Iterator[Container]:
    """A store with the wall on, holding one memory of tenant t1 and one of t2."""
    c = build(settings.model_copy(update={"row_security": True}), create=True)
    c.memories.write(agent("t1"), write_cmd("Alice prefers tea over coffee"))
    c.memories.write(agent("t2"), write_cmd("Bob prefers coffee over tea", subject="bob@example.com"))
    yield c
    c.close()


def tenants(rows: Any) -> set[str]:
    return {r[0] for r in rows}


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_an_unfiltered_select_in_a_tenants_transaction_returns_only_its_rows(walled: Container) -> None:
    uow = walled.uow
    with uow.acting_for("t1"), uow.read() as conn:
        assert tenants(conn.execute(ALL)) == {"t1"}
        assert conn.execute(sa.text("SELECT current_user")).scalar_one() == tenancy.APP_ROLE
    with uow.acting_for("t2"), uow.write() as conn:
        assert tenants(conn.execute(ALL)) == {"t2"}
    for table in tenancy.TENANT_TABLES:  # every walled table: nothing of t2 from t1's transaction
        with uow.acting_for("t1"), uow.read() as conn:
            others = f"SELECT count(*) FROM {table} WHERE tenant_id <> 't1'"
            assert conn.execute(sa.text(others)).scalar_one() == 0, table
    with uow.read() as conn:  # acting for no one: nothing at all (fail closed)
        assert tenants(conn.execute(ALL)) == set()
    # The positive control: the maintenance path, as the tables' owner, sees both tenants.
    with uow.maintenance("test: the positive control"), uow.read() as conn:
        assert tenants(conn.execute(ALL)) == {"t1", "t2"}
        assert conn.execute(sa.text("SELECT current_user")).scalar_one() != tenancy.APP_ROLE


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_tenants_transaction_cannot_write_a_row_of_another(walled: Container) -> None:
    insert = sa.text("INSERT INTO scope_changes VALUES (:t, 'a9', 'p9', 'x')")
    refused = pytest.raises(ProgrammingError, match="row-level security")
    with refused, walled.uow.acting_for("t1"), walled.uow.write() as conn:
        conn.execute(insert, {"t": "t2"})
    with walled.uow.acting_for("t1"), walled.uow.write() as conn:  # its own tenant's row: written
        conn.execute(insert, {"t": "t1"})
        assert conn.execute(sa.text("UPDATE memories SET version = version")).rowcount == 1


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_the_services_work_behind_the_wall(walled: Container) -> None:
    """Writes, reads, searches and token lookups of each tenant go through (the wall is no
    outage), and neither tenant's search finds the other's memory."""
    tea = walled.search.search(agent("t1"), SearchQuery("tea", "support"))
    assert [i.content for i in tea.items] == ["Alice prefers tea over coffee"]
    coffee = walled.search.search(agent("t2"), SearchQuery("coffee", "support"))
    assert [i.content for i in coffee.items] == ["Bob prefers coffee over tea"]
    token, _ = walled.tokens.create(Role.AGENT, "t2", agent_id="a1", purposes=["support"])
    with walled.uow.acting_for("t1"):  # found by hash whatever the connection acts for
        assert walled.tokens.authenticate(token).tenant_id == "t2"


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_grouped_writes_of_two_tenants_never_share_a_transaction(walled: Container) -> None:
    """Group commit batches only writes of one tenant: the tenant setting is the transaction's."""
    uow = walled.uow
    seen: dict[str, set[str]] = {}
    commits: list[int] = []
    sa.event.listen(uow._walled, "commit", lambda _conn: commits.append(1))  # type: ignore[arg-type]

    def work(tenant: str) -> Any:
        def run(conn: sa.Connection) -> None:
            seen[tenant] = tenants(conn.execute(ALL))

        return run

    def writer(tenant: str) -> None:
        with uow.acting_for(tenant):
            uow.grouped(work(tenant))

    with uow.maintenance("test: hold the lock"), uow.write():  # the writers queue meanwhile
        threads = [threading.Thread(target=writer, args=(t,)) for t in ("t1", "t2", "t1", "t2")]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while len(uow._group._queued) < 4 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert len(uow._group._queued) == 4
    for t in threads:
        t.join(timeout=30)
    assert seen == {"t1": {"t1"}, "t2": {"t2"}}
    assert len(commits) == 2  # one batch per tenant, each writer's pair sharing its commit


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_readiness_fails_when_the_wall_is_taken_down(walled: Container) -> None:
    assert {c.name: c.ok for c in check_readiness(walled.uow, walled.kms)}["tenant wall"]
    with walled.uow.maintenance("test: take the wall down"), walled.uow.write() as conn:
        conn.execute(sa.text("ALTER TABLE legal_holds DISABLE ROW LEVEL SECURITY"))
    wall = {c.name: c for c in check_readiness(walled.uow, walled.kms)}["tenant wall"]
    assert not wall.ok and wall.detail == "WallDown"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_on_sqlite_the_application_check_is_the_only_one(walled: Container) -> None:
    """SQLite has no second barrier: the setting changes nothing, an unfiltered statement sees
    every tenant, and readiness has no wall to check."""
    assert walled.uow.row_security is False
    with walled.uow.acting_for("t1"), walled.uow.read() as conn:
        assert tenants(conn.execute(ALL)) == {"t1", "t2"}
    assert "tenant wall" not in {c.name for c in check_readiness(walled.uow, walled.kms)}


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_migration_0024_goes_back_and_forward_on_postgres(settings: Settings) -> None:
    """Downgrading drops the policies and the token function (the cluster's role stays);
    upgrading again finds the role there and puts the wall back."""
    engine = make_engine(settings.db_url)
    walled = sa.text(
        "SELECT count(*) FROM pg_class WHERE relrowsecurity AND relname = ANY(CAST(:t AS text[]))"
    )
    function = sa.text("SELECT count(*) FROM pg_proc WHERE proname = 'lethe_token_by_hash'")
    every = len(tenancy.WALLED_TABLES)  # each table the code names is one the migration walls
    try:
        upgrade(engine)
        with engine.connect() as conn:
            assert conn.execute(walled, {"t": list(tenancy.WALLED_TABLES)}).scalar_one() == every
            assert conn.execute(function).scalar_one() == 1
        downgrade(engine, "0023")  # the revision before 0024
        with engine.connect() as conn:
            assert conn.execute(walled, {"t": list(tenancy.WALLED_TABLES)}).scalar_one() == 0
            assert conn.execute(function).scalar_one() == 0
        upgrade(engine)
        with engine.connect() as conn:
            assert conn.execute(walled, {"t": list(tenancy.WALLED_TABLES)}).scalar_one() == every
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_every_table_with_a_tenant_in_the_live_schema_is_walled_or_named_store_wide(
    lethe: Container,
) -> None:
    """Against the schema the migrations built (not the code's idea of it): each table with a
    ``tenant_id`` or ``job_id`` column has Row-Level Security and its ``tenant_wall`` policy
    for ``lethe_app``, unless ``tenancy.STORE_WIDE_TABLES`` names it; the positive control is
    that the query does see the store-wide ``events`` table, unwalled."""
    shape = sa.text(
        "SELECT c.relname AS name, c.relrowsecurity AS rls,"
        " EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = 'tenant_wall'"
        "   AND CAST(:role AS regrole) = ANY(p.polroles)) AS wall"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND c.relkind = 'r' AND EXISTS ("
        "   SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND NOT a.attisdropped"
        "   AND a.attname IN ('tenant_id', 'job_id'))"
    )
    with lethe.uow.maintenance("test: read the catalogue as the tables' owner"), lethe.uow.read() as conn:
        rows = {r.name: (r.rls, r.wall) for r in conn.execute(shape, {"role": tenancy.APP_ROLE})}
    unwalled = {name for name, (rls, wall) in rows.items() if not (rls and wall)}
    assert unwalled == {"events"} and "events" in tenancy.STORE_WIDE_TABLES
    assert set(rows) - unwalled == set(tenancy.WALLED_TABLES)


def test_a_store_migrating_while_another_creates_the_app_role_uses_that_role(private_postgres: Any) -> None:
    """Roles are the cluster's: on a fresh cluster (no ``lethe_app`` yet) a store whose migration
    meets another's uncommitted ``CREATE ROLE lethe_app`` waits for it and, once it is committed,
    uses that role instead of failing on the duplicate (two vaults, or two test workers, starting
    together). The other's transaction is held open here, so the meeting is certain."""
    admin = sa.create_engine(private_postgres.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE "lethe_race"'))
    engine = make_engine(sa.engine.make_url(private_postgres.url).set(database="lethe_race"))
    waiting = sa.text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = 'lethe_race' AND wait_event_type = 'Lock'"
    )
    failed: list[BaseException] = []

    def migrate() -> None:
        try:
            upgrade(engine)
        except BaseException as exc:  # reported by the test's thread below
            failed.append(exc)

    try:
        with admin.connect() as holder:
            holder.execute(sa.text("BEGIN"))
            holder.execute(
                sa.text(f"CREATE ROLE {tenancy.APP_ROLE} NOLOGIN NOSUPERUSER NOINHERIT NOBYPASSRLS")
            )
            migration = threading.Thread(target=migrate, daemon=True)
            migration.start()
            for _ in range(600):  # until the migration waits on the uncommitted role (or ends)
                with admin.connect() as watch:  # a transaction of its own: a fresh view of the sessions
                    if not migration.is_alive() or watch.execute(waiting).scalar_one() > 0:
                        break
                time.sleep(0.1)
            assert migration.is_alive(), f"the migration ended without meeting the role: {failed}"
            holder.execute(sa.text("COMMIT"))
        migration.join(120)
        assert not migration.is_alive()
        assert failed == []
        with engine.connect() as conn:
            walled = "SELECT count(*) FROM pg_class WHERE relrowsecurity AND relname = 'memories'"
            assert conn.execute(sa.text(walled)).scalar_one() == 1
    finally:
        engine.dispose()
        admin.dispose()
