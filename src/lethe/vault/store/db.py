"""Engines and transactions: the unit of work every command runs in.

SQLite runs in WAL mode with a busy timeout; write transactions start with
``BEGIN IMMEDIATE`` so two processes never both read-then-upgrade (the classic
SQLITE_BUSY deadlock). PostgreSQL write transactions take one advisory lock so event
sequence numbers stay dense: they are Merkle leaf indices and may not have gaps.

On PostgreSQL every round trip counts (a search is a handful of statements, each one):
- reads run without ``BEGIN``/``ROLLBACK``. At READ COMMITTED, PostgreSQL's level here,
  each statement takes its own snapshot inside a transaction too, so a read sees exactly
  what it would in one; no read takes a lock or writes.
- a write sends ``BEGIN`` and its advisory lock in one round trip (the driver would send
  ``BEGIN`` alone before the first statement): its connection is in autocommit at the
  driver, which still sends ``COMMIT`` or ``ROLLBACK`` for the transaction it is in.
- a pooled connection is pinged before use only once it has sat idle for
  ``PING_AFTER_IDLE_S`` (``pool_pre_ping`` pinged before every use). A connection that
  broke while idle (a restarted server) is replaced unseen; one that breaks while in use
  fails its request with ``StoreUnavailable`` (503), and the pool then replaces every
  connection opened before the break.

Row-Level Security (PostgreSQL, ``row_security``; ``store.tenancy``): the unit of work then
keeps two pools. Its transactions run on connections that ``SET ROLE`` to the application
role once, when they connect, and never leave it; the tenant they act for rides in the
round trips they send anyway: a write's ``SET LOCAL lethe.tenant`` goes in the same simple
query as its ``BEGIN`` and advisory lock, and a read's session setting is sent only when the
pooled connection last served another tenant, held until the read's first statement
(``driver_cursor.defer``: in the same round trip for the hot reads at the driver). Only
``maintenance()`` transactions, and the engine's own connections (``engine``: migrations,
compaction's VACUUM, the audit leaves, the store lease), run as the connecting user, the
tables' owner, which the policies do not bind.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from lethe.vault.errors import StoreUnavailable
from lethe.vault.store import driver_cursor, pipeline, tenancy
from lethe.vault.store.group_commit import GroupCommit
from lethe.vault.store.sqlite_writers import writer_queue

T = TypeVar("T")

_EVENT_LOG_LOCK = 0x4C455448  # "LETH": the advisory lock that serialises appends
SQLITE_BUSY_TIMEOUT_MS = 30_000
# Connections kept open per engine: as many as a server's request threads use at once (16
# concurrent clients kept SQLAlchemy's default 5 busy opening and closing connections, a
# sixth of a server's time); more than that open on demand and close when returned.
POOL_SIZE = 16
POOL_OVERFLOW = 16
# Pages each SQLite connection caches (SQLite's default is 2,000 KiB). A server's pool cycles
# through all its connections, so every one fills its cache: 16 held 34 MiB under a search
# load, against 10 MiB at this size, with no loss of throughput measured (searches, writes,
# compaction). The operating system's page cache still holds the file, and under writes a WAL
# connection drops its cache at each read transaction that follows another's commit anyway.
SQLITE_CACHE_KIB = 512


def upsert_insert(table: sa.Table, dialect: str) -> Any:
    """An INSERT into ``table`` that can take ``on_conflict_do_update``: SQLite's and
    PostgreSQL's each have one, with the same arguments; SQLAlchemy's core insert has none."""
    return (postgresql if dialect == "postgresql" else sqlite).insert(table)


def make_engine(url: str | sa.URL, *, echo: bool = False, role: str | None = None) -> Engine:
    """Create an engine with the per-dialect settings Lethe relies on; on PostgreSQL, with
    ``role``, every connection runs as that role from its first statement (``SET ROLE``)."""
    url = url if isinstance(url, str) else url.render_as_string(hide_password=False)
    if url.startswith("sqlite"):
        in_memory = url in ("sqlite://", "sqlite:///:memory:") or "mode=memory" in url
        pool = {} if in_memory else {"pool_size": POOL_SIZE, "max_overflow": POOL_OVERFLOW}
        engine = sa.create_engine(url, echo=echo, connect_args={"timeout": 30}, **pool)

        @sa.event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA secure_delete=ON")
            cur.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
            try:
                cur.execute("SELECT exp(0)")
            except sqlite3.OperationalError:  # SQLite built without math functions
                dbapi_conn.create_function("exp", 1, math.exp, deterministic=True)
            cur.close()

        @sa.event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
            conn.exec_driver_sql(f"BEGIN {mode}")

        return engine
    engine = sa.create_engine(url, echo=echo, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)
    if role is not None:
        _run_as(engine, role)
    _ping_when_idle(engine)
    pipeline.guard(engine)
    driver_cursor.hold_statements(engine)
    return engine


_TENANT_NOW = "lethe_tenant"  # in a walled connection's ``info``: its session's ``lethe.tenant``


def _run_as(engine: Engine, role: str) -> None:
    """Every new connection of ``engine`` takes ``role`` for its whole life, with no tenant."""

    @sa.event.listens_for(engine, "connect")
    def _as_role(dbapi_conn, record) -> None:  # type: ignore[no-untyped-def]
        with dbapi_conn.cursor() as cur:
            cur.execute(f'SET ROLE "{role}"; {tenancy.session_setting(tenancy.UNSCOPED)}')
        dbapi_conn.commit()  # a session setting made in a transaction that rolls back is undone
        record.info[_TENANT_NOW] = ""


PING_AFTER_IDLE_S = 1.0  # a connection idle this long is pinged before its next use


def _ping_when_idle(engine: Engine) -> None:
    """Ping a pooled connection before use if it has been idle ``PING_AFTER_IDLE_S``; a dead
    one is replaced (``DisconnectionError`` makes the pool connect afresh)."""

    @sa.event.listens_for(engine, "checkin")
    def _idle_from(_dbapi_conn, record) -> None:  # type: ignore[no-untyped-def]
        record.info["idle_since"] = time.monotonic()  # ``info`` goes with this DBAPI connection

    @sa.event.listens_for(engine, "checkout")
    def _ping(dbapi_conn, record, _proxy) -> None:  # type: ignore[no-untyped-def]
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < PING_AFTER_IDLE_S:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
            dbapi_conn.rollback()  # the ping's transaction: a read sets autocommit next
        except engine.dialect.loaded_dbapi.Error as exc:
            raise sa.exc.DisconnectionError("a pooled connection died while idle") from exc


def _locked_begin(lock_wait_ms: int | None, tenant: str | None = None) -> str:
    """PostgreSQL: open the transaction and take the append lock in one round trip (one
    simple query of several statements, so it carries no parameters); on a walled
    connection (``tenant`` given) its tenant setting goes in the same query."""
    wait = "" if lock_wait_ms is None else f" SET LOCAL lock_timeout = {int(lock_wait_ms)};"
    if tenant is not None:
        wait += f" {tenancy.transaction_setting(tenancy.Scope(tenant=tenant))};"
    return f"BEGIN ISOLATION LEVEL READ COMMITTED;{wait} SELECT pg_advisory_xact_lock({_EVENT_LOG_LOCK})"


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


_OUTAGE_HINTS = (
    "locked",
    "unable to open",
    "could not connect",
    "connection",
    "server closed",
    "disk i/o",
    "lock timeout",
)


def _is_outage(exc: DBAPIError) -> bool:
    """Outages (retry later) versus bugs (re-raised): only the former become 503s."""
    if exc.connection_invalidated:
        return True
    return isinstance(exc, OperationalError) and any(h in str(exc.orig).lower() for h in _OUTAGE_HINTS)


class UnitOfWork:
    """Opens read and write transactions; translates driver outages to ``StoreUnavailable``.

    Exceptions: ``StoreUnavailable`` (503) for an outage (locked, unreachable, I/O); any
    other driver error is a bug and passes through unchanged, to surface as a 500.
    """

    def __init__(self, engine: Engine, *, row_security: bool = True) -> None:
        """``engine`` connects as the tables' owner; with ``row_security`` (the default; it
        means something on PostgreSQL only) every transaction but a ``maintenance()`` one runs
        as ``tenancy.APP_ROLE`` (module doc). Off only on request: safe by default."""
        self.engine = engine
        # PostgreSQL reads in autocommit: the same pool, no BEGIN/ROLLBACK round trips (module doc).
        self._reader = engine if is_sqlite(engine) else engine.execution_options(isolation_level="AUTOCOMMIT")
        self._writer = engine if is_sqlite(engine) else self._reader  # sends its own BEGIN (module doc)
        self.row_security = row_security and not is_sqlite(engine)
        self._walled: Engine | None = None
        if self.row_security:
            self._walled = make_engine(engine.url, role=tenancy.APP_ROLE).execution_options(
                isolation_level="AUTOCOMMIT"
            )
        # Behind the wall a transaction acts for one tenant, so only its writes may share it;
        # without the wall every write may, as before.
        affinity = tenancy.current if self.row_security else lambda: tenancy.UNSCOPED
        self._group = GroupCommit(self._write_in, affinity=affinity)

    @property
    def tenant_engine(self) -> Engine:
        """The engine a tenant's transactions run on (the walled pool behind the tenant wall,
        else ``engine``): where a listener hooks the statements a request sends."""
        return self._walled if self._walled is not None else self.engine

    def dispose(self) -> None:
        """Close every pooled connection (the engine's and the walled pool's)."""
        self.engine.dispose()
        if self._walled is not None:
            self._walled.dispose()

    def maintenance(self, why: str) -> AbstractContextManager[None]:
        """Transactions opened in the block run as the tables' owner, across tenants: the
        named jobs of ``store.tenancy`` only (docs/operations.md lists them)."""
        return tenancy.maintenance(why)

    def acting_for(self, tenant_id: str) -> AbstractContextManager[None]:
        """Transactions opened in the block see and write ``tenant_id``'s rows only."""
        return tenancy.acting_for(tenant_id)

    def grouped(self, work: Callable[[Connection], T]) -> T:
        """``work(conn)`` in a write transaction that the concurrent writes of this process
        may share, each in its own savepoint (``store.group_commit``): its result once
        committed, or its exception (the others' are theirs). ``work`` must not open a
        transaction of its own. Only writes of the same scope (tenant) share a transaction:
        the tenant setting is the transaction's."""
        return self._group.run(work)

    def _wall(self, scope: tenancy.Scope) -> Engine | None:
        """The walled pool for a transaction of ``scope``, or None (owner's pool)."""
        if self._walled is None or scope.maintenance is not None:
            return None
        return self._walled

    @contextmanager
    def write(self, lock_wait_ms: int | None = None) -> Iterator[Connection]:
        """``_write_in`` for the scope of the caller's context (``store.tenancy``)."""
        with self._write_in(tenancy.current(), lock_wait_ms) as conn:
            yield conn

    @contextmanager
    def _write_in(self, scope: tenancy.Scope, lock_wait_ms: int | None = None) -> Iterator[Connection]:
        """A serialised write transaction: commits on success, rolls back on any error.

        ``lock_wait_ms`` bounds the wait for the write lock (readiness probes); by default
        a writer waits as long as the driver's busy timeout allows.

        On SQLite, writers first queue in the process and then across processes
        (``store.sqlite_writers``), so none of them sleeps in SQLite's busy handler while
        the lock passes from writer to writer.
        """
        if not is_sqlite(self.engine):
            with self._write(lock_wait_ms, scope) as conn:
                yield conn
            return
        queue = writer_queue(self.engine)
        wait_ms = SQLITE_BUSY_TIMEOUT_MS if lock_wait_ms is None else lock_wait_ms
        if not queue.acquire(timeout=wait_ms / 1000):
            raise StoreUnavailable("database unavailable")
        try:
            with self._write(lock_wait_ms) as conn:
                yield conn
        finally:
            queue.release()

    @contextmanager
    def _write(
        self, lock_wait_ms: int | None, scope: tenancy.Scope = tenancy.UNSCOPED
    ) -> Iterator[Connection]:
        sqlite = is_sqlite(self.engine)
        walled = self._wall(scope)
        tenant = None if walled is None else (scope.tenant or "")
        try:
            with (walled or self._writer).connect() as conn:
                if sqlite:
                    conn = conn.execution_options(sqlite_begin="IMMEDIATE")
                    if lock_wait_ms is not None:  # on the driver connection: no transaction yet
                        conn.connection.driver_connection.execute(f"PRAGMA busy_timeout={int(lock_wait_ms)}")
                try:
                    with conn.begin():
                        if not sqlite:
                            conn.exec_driver_sql(_locked_begin(lock_wait_ms, tenant))
                        yield conn
                finally:
                    if sqlite and lock_wait_ms is not None:
                        raw = conn.connection.driver_connection
                        raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        except DBAPIError as exc:
            if _is_outage(exc):
                raise StoreUnavailable("database unavailable") from exc
            raise

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read: on SQLite one snapshot (a deferred transaction); on PostgreSQL a snapshot
        per statement, as READ COMMITTED gives inside a transaction too. Never write in it."""
        walled = self._wall(tenancy.current())
        try:
            with (walled or self._reader).connect() as conn, conn.begin():
                if walled is None:
                    yield conn
                else:
                    with _tenant_read(conn, tenancy.current().tenant or ""):
                        yield conn
        except DBAPIError as exc:
            if _is_outage(exc):
                raise StoreUnavailable("database unavailable") from exc
            raise

    def ping(self) -> None:
        with self.read() as conn:
            conn.execute(sa.text("SELECT 1"))


@contextmanager
def _tenant_read(conn: Connection, tenant: str) -> Iterator[None]:
    """A read of a walled connection acting for ``tenant``: the session setting is changed
    only if the connection last served another, and sent with the read's first statement
    (``driver_cursor.defer``). A read that fails leaves the setting unknown (a pipeline's
    failure undoes what went with it): the next read sends it again."""
    info = conn.connection.info
    before = info.get(_TENANT_NOW)
    if before == tenant:
        yield
        return
    statement = tenancy.session_setting(tenancy.Scope(tenant=tenant))
    driver_cursor.defer(conn, statement)
    info[_TENANT_NOW] = tenant
    try:
        yield
    except BaseException:
        info.pop(_TENANT_NOW, None)
        raise
    if driver_cursor.take_back(conn, statement):  # nothing was sent: the session is as it was
        if before is None:
            info.pop(_TENANT_NOW, None)
        else:
            info[_TENANT_NOW] = before
