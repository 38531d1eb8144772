"""The schema's migrations form one line: numbered files, each revising the one before.

Several people add migrations at once; two taking the same number, or one revising an
older head, leaves Alembic with two heads and every store refusing to open. This catches
it before any database is touched.
"""

from __future__ import annotations

import ast
from itertools import pairwise
from pathlib import Path

import lethe.vault.store.migrations as migrations

VERSIONS = Path(migrations.__file__).parent / "versions"


def revisions() -> list[tuple[str, str, str | None]]:
    """(file name, revision, down_revision) of every migration file."""
    out = []
    for path in sorted(VERSIONS.glob("[0-9]*.py")):
        values: dict[str, str | None] = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if name in ("revision", "down_revision") and isinstance(node.value, ast.Constant):
                    values[name] = node.value.value
        out.append((path.name, str(values["revision"]), values.get("down_revision")))
    return out


def test_every_migration_file_is_named_by_its_revision() -> None:
    for name, revision, _ in revisions():
        assert name.startswith(f"{revision}_"), f"{name} declares revision {revision}"


def test_the_migrations_form_one_line_without_two_heads() -> None:
    chain = revisions()
    assert len({r for _, r, _ in chain}) == len(chain), "two migrations share a revision number"
    assert chain[0][2] is None
    for (_, previous, _), (name, _, down) in pairwise(chain):
        assert down == previous, f"{name} revises {down}, but the migration before it is {previous}"


def test_schema_head_names_alembics_head() -> None:
    # A store at HEAD opens without importing Alembic; a migration added without moving HEAD
    # would make every process take this release's previous schema for current.
    from alembic.script import ScriptDirectory

    from lethe.vault.store import schema

    assert ScriptDirectory.from_config(schema._config()).get_current_head() == schema.HEAD
    assert revisions()[-1][1] == schema.HEAD
