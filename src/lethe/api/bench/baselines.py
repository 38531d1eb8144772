"""The baselines' storage: plain SQLAlchemy on SQLite at Lethe's durability (WAL,
``synchronous=FULL``), holding plain copies of Lethe's tables, so a ratio compares the
design with the same work done without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from lethe.vault.store.tables import events, memories


def plain_sqlite_engine(path: Path) -> sa.Engine:
    """A plain SQLAlchemy engine at Lethe's durability: WAL and ``synchronous=FULL``."""
    engine = sa.create_engine(f"sqlite:///{path}")

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    return engine


def plain_copy(path: Path, table: sa.Table) -> tuple[sa.Engine, sa.Table]:
    """A baseline database at ``path`` holding an empty copy of ``table`` (same columns, indexes)."""
    engine = plain_sqlite_engine(path)
    md = sa.MetaData()
    copy = table.to_metadata(md)
    md.create_all(engine)
    return engine, copy


def plain_memories_table(metadata: sa.MetaData) -> sa.Table:
    """``memories`` with the ciphertext column replaced by plaintext ``content``."""
    cols = [
        sa.Column("content", sa.Text)
        if c.name == "ciphertext"
        else sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
        for c in memories.columns
    ]
    table = sa.Table("plain_memories", metadata, *cols)
    sa.Index("ix_plain_scope", table.c.tenant_id, table.c.agent_id, table.c.purpose, table.c.status)
    sa.Index("ix_plain_subject", table.c.tenant_id, table.c.subject_ref)
    return table


def event_count(conn: sa.Connection) -> int:
    """How many events the store's log holds."""
    return conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one()
