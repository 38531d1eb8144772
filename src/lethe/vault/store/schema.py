"""Creates, checks and upgrades the database schema through Alembic migrations.

A process never migrates a store it merely opens: ``lethe init`` creates the schema of
a new store and ``lethe migrate`` upgrades an existing one (after a backup), so a
server and a CLI of different releases can never race to rewrite the schema under each
other. Everything else calls ``require_current`` and refuses a store at another revision.

Alembic is imported only where a schema is created, changed or found not current: with
its templating and highlighting libraries it is 11 MiB of every process's memory, and a
server checks its store at start and on every readiness probe. A store at ``HEAD`` is
recognised by reading Alembic's version table directly.

Exceptions: ``StoreNotReady`` (the schema is missing, older or newer than this release).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from lethe.vault.errors import StoreNotReady

if TYPE_CHECKING:
    from alembic.config import Config

_MIGRATIONS = Path(__file__).parent / "migrations"
# The newest migration's revision: what this release writes (test_migration_chain checks that
# it is Alembic's head).
HEAD = "0030"


def _config() -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    return cfg


@dataclass(frozen=True)
class SchemaState:
    current: str | None  # None: no schema yet
    head: str  # the revision this release writes
    known: bool  # False: written by a release newer than this one

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head


def schema_state(engine: Engine) -> SchemaState:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    script = ScriptDirectory.from_config(_config())
    head = script.get_current_head()
    assert head is not None
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    known = True
    if current is not None:
        try:
            known = script.get_revision(current) is not None
        except CommandError:
            known = False
    return SchemaState(current, head, known)


def require_current(engine: Engine) -> SchemaState:
    """Refuse a store this release did not write, naming the command that fixes it."""
    if _stamped(engine) == HEAD:
        return SchemaState(HEAD, HEAD, True)
    state = schema_state(engine)
    if state.current is None:
        raise StoreNotReady("the database has no Lethe schema; run `lethe init` to create one")
    if not state.known:
        raise StoreNotReady(
            f"the store's schema is at revision {state.current}, written by a newer Lethe than this "
            f"one (which knows up to {state.head}); upgrade Lethe, or restore a backup this release wrote"
        )
    if not state.up_to_date:
        raise StoreNotReady(
            f"the store's schema is at revision {state.current}; this Lethe needs {state.head}. "
            "Stop every Lethe process on this store, take a backup (`lethe backup create`), "
            "then run `lethe migrate`"
        )
    return state


def _stamped(engine: Engine) -> str | None:
    """The one revision in Alembic's version table; None if there is no table or not one row.
    A store that cannot be reached raises here, as Alembic's own check would."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        rows = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
    return rows[0] if len(rows) == 1 else None


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (``lethe init`` and ``lethe migrate`` only)."""
    from alembic import command

    cfg = _config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the schema back to ``revision`` (``lethe bench --previous``: an earlier release's
    server on today's store); ``upgrade`` brings it forward again."""
    from alembic import command

    cfg = _config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def autogenerate(engine: Engine, message: str) -> None:
    """Developer helper: write a new revision from the difference to ``tables.py``."""
    from alembic import command

    cfg = _config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.revision(cfg, message=message, autogenerate=True)
