"""Whose rows a transaction may touch: the tenant wall PostgreSQL keeps (Row-Level Security).

Tenant isolation is first the application's: every statement carries its tenant in its
WHERE clause. On PostgreSQL a second barrier stands behind it (migration 0024): the tables
of ``TENANT_TABLES`` (and ``JOB_TABLES`` through their job) have a policy that shows the
application role ``APP_ROLE`` only the rows of the tenant in the ``lethe.tenant`` setting.
The server's unit of work runs as that role, which owns no table, so a statement that
forgot its tenant still sees one tenant's rows, and an insert for another tenant fails.

Which tenant a transaction is for is this module's context (a ``ContextVar``, so it follows
the thread or task that opened the transaction):

- ``acting_for(tenant)``: the work of a caller; ``for_caller`` wraps a service method in it,
  from its ``caller`` argument (the token's tenant, never the request body's);
- ``maintenance(why)``: the named whole-store jobs that must span tenants (the erasure
  runner, the expiry sweep, compaction, replay, reindex, backup and restore, token and
  console-session lookups before a tenant is known). Never the default: the unit of work
  sends a maintenance transaction to the tables' owner only inside this block;
- neither: the application role with no tenant, which sees no row of a walled table and may
  write none (fail closed).

On SQLite there is no second barrier: the application's WHERE clauses are the only one.

Exceptions: ``RuntimeError`` if code acting for one tenant opens a scope for another (a bug).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

APP_ROLE = "lethe_app"
TENANT_SETTING = "lethe.tenant"

# Tables with a ``tenant_id`` column whose policy is ``tenant_id = current_setting('lethe.tenant')``
# (migration 0024; ``erasure_filings`` by 0029; the webhook tables by 0030).
TENANT_TABLES = (
    "memories",
    "search_index",
    "search_postings",
    "memory_vectors",
    "scope_changes",
    "idempotency_keys",
    "forgotten_subjects",
    "subject_keys",
    "review_decisions",
    "retractions",
    "api_tokens",
    "erasure_jobs",
    "legal_holds",
    "erasure_reports",
    "erasure_final_reports",
    "console_sessions",
    "agent_sessions",
    "erasure_identifiers",
    "subject_aliases",
    "erasure_filings",
    "webhook_endpoints",
    "webhook_events",
    "webhook_deliveries",
    "webhook_attempts",
)
# Tables keyed by an erasure job: a row is visible when its job is (the job's own policy).
JOB_TABLES = ("erasure_steps", "erasure_extensions")
WALLED_TABLES = TENANT_TABLES + JOB_TABLES
# Tables deliberately not walled, each with why: every table of the schema is in exactly one
# of WALLED_TABLES and these (tests/unit/test_tenancy.py, and against the live PostgreSQL
# schema tests/integration/test_row_level_security.py).
STORE_WIDE_TABLES = {
    "events": "one Merkle tree over every tenant; each write reads the log's size",
    "checkpoints": "signed heads of that one tree",
    "merkle_chunk_roots": "cached roots of that one tree",
    "audit_forks": "a fork of the one log, for every tenant",
    "backups": "a backup is of the whole store",
    "index_recipes": "how the search index of the whole store is built",
    "scheduled_turns": "one row per periodic job of the deployment",
    "console_one_time": "no tenant column: found by a console session's hash, sealed under its id",
    "alembic_version": "the schema's revision",
}


@dataclass(frozen=True)
class Scope:
    """A transaction's reach: one tenant, the maintenance path (named), or nothing."""

    tenant: str | None = None
    maintenance: str | None = None  # why: the job's name, for the reader of the code and logs


UNSCOPED = Scope()
_current: ContextVar[Scope] = ContextVar("lethe_tenant_scope", default=UNSCOPED)


def current() -> Scope:
    """The scope transactions opened here now run in."""
    return _current.get()


@contextmanager
def acting_for(tenant_id: str) -> Iterator[None]:
    """Transactions opened in the block see and write ``tenant_id``'s rows only."""
    now = _current.get()
    if now.tenant is not None and now.tenant != tenant_id:
        raise RuntimeError("a transaction acting for one tenant was asked to act for another")
    token = _current.set(Scope(tenant=tenant_id))
    try:
        yield
    finally:
        _current.reset(token)


@contextmanager
def maintenance(why: str) -> Iterator[None]:
    """Transactions opened in the block run as the tables' owner, across tenants: only for
    the named jobs listed in docs/operations.md ("Row-Level Security")."""
    token = _current.set(Scope(maintenance=why))
    try:
        yield
    finally:
        _current.reset(token)


F = TypeVar("F", bound=Callable[..., Any])


def for_caller(method: F) -> F:
    """Run a service method acting for its ``caller`` argument's tenant."""
    position = list(inspect.signature(method).parameters).index("caller")  # found once, not per call

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        caller = args[position] if len(args) > position else kwargs["caller"]
        with acting_for(caller.tenant_id):
            return method(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def literal(value: str) -> str:
    """A SQL string literal (``standard_conforming_strings``, PostgreSQL's default since 9.1):
    the tenant setting is sent in a simple query, which carries no parameters."""
    if "\x00" in value:
        raise ValueError("a tenant id cannot hold NUL")
    return "'" + value.replace("'", "''") + "'"


def session_setting(scope: Scope) -> str:
    """The statement that puts a connection of the application role in ``scope`` until changed
    (reads run in autocommit, so only a session setting outlives their first statement)."""
    return f"SET {TENANT_SETTING} TO {literal(scope.tenant or '')}"


def transaction_setting(scope: Scope) -> str:
    """The same for one transaction only (sent with its ``BEGIN``)."""
    return f"SET LOCAL {TENANT_SETTING} TO {literal(scope.tenant or '')}"


def maintenance_job(why: str) -> Callable[[F], F]:
    """Run a function as the named maintenance job ``why`` (``maintenance``)."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with maintenance(why):
                return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
