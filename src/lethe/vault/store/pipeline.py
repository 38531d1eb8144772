"""Inserts whose results nothing reads, sent without waiting for each (PostgreSQL).

A governed write on PostgreSQL was twelve round trips (about 0.35 ms each on a 2-core
machine, most of a write), and seven of them were inserts nothing reads back: the event,
the memory, its idempotency key, its scope token, its index row, postings and vector. In
psycopg's pipeline mode they go out back to back and the server answers them together at
one sync, so they cost one round trip instead of seven (and with its checks read in one
statement, ``MemoryService._checks``, a create is four: ``BEGIN`` with the lock, the
checks, the inserts, ``COMMIT``).

Inside ``inserts_sent_together`` only inserts may run: a read would see no rows (the
driver has not received them when SQLAlchemy looks) and an update's row count would be
unknown (so no compare-and-swap). ``guard`` makes any other statement there fail loudly
instead of quietly wrong. An insert that fails (a reused key) surfaces when the block
ends, as SQLAlchemy's exception of its kind (``IntegrityError``; a lost connection is
invalidated and becomes ``StoreUnavailable`` in ``UnitOfWork``), and the inserts after it
did not run; the transaction is then failed, as after any failed statement, and the
caller's rollback (or its savepoint's) undoes the rest. On SQLite there are no round
trips to save, and psycopg over a libpq older than 14 has no pipeline mode: there the
block just runs, each insert in its own round trip.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lethe.vault.store.driver_cursor import IN_PIPELINE, as_sqlalchemy_error, pipelined

_ALLOWED = ("INSERT", "SAVEPOINT", "RELEASE SAVEPOINT")


@contextmanager
def inserts_sent_together(conn: Connection) -> Iterator[None]:
    """Run the block's inserts without a round trip each (PostgreSQL); see the module doc."""
    if not pipelined(conn.dialect):
        yield
        return
    driver = conn.connection.driver_connection
    info = conn.connection.info
    info[IN_PIPELINE] = True  # in the pooled connection's ``info`` while a block is open
    try:
        with driver.pipeline():
            yield
    except conn.dialect.loaded_dbapi.Error as exc:  # raised at the sync: SQLAlchemy never saw it
        raise as_sqlalchemy_error(conn, exc, "(inserts sent together)") from exc
    finally:
        info.pop(IN_PIPELINE, None)


def guard(engine: Engine) -> None:
    """Refuse any statement but an insert inside ``inserts_sent_together`` (module doc)."""

    @sa.event.listens_for(engine, "before_cursor_execute")
    def _only_inserts(conn: Connection, _cursor: Any, statement: str, *_args: Any) -> None:
        # A group commit's savepoint statements may go out with the block's first insert.
        if conn.connection.info.get(IN_PIPELINE) and not statement.lstrip().upper().startswith(_ALLOWED):
            raise sa.exc.InvalidRequestError(f"only inserts may be sent together, not: {statement[:40]}")
