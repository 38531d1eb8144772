"""Every import uses the installed names ``lethe.vault``, ``lethe.keys``, ``lethe.api``,
``lethe.client``, ``lethe.integrations``.

From the repository root the folders would also import under their bare names, as a
second copy of every module: ``vault.errors.VaultError`` and ``lethe.vault.errors.VaultError``
would be two classes, and an ``except`` of one would miss the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BARE = {"vault", "keys", "api", "client", "integrations"}
SKIP = {".venv", ".git", "build", "dist"}


def bare_imports(source: str, filename: str = "<source>") -> list[str]:
    """The bare ``vault``/``keys``/``api`` imports in one module's source (line: statement)."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in BARE]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _top(node.module) in BARE:
            found.append(f"{node.lineno}: from {node.module} import ...")
    return found


def _top(module: str | None) -> str:
    return (module or "").split(".")[0]


def python_files() -> list[Path]:
    return [p for p in ROOT.rglob("*.py") if not SKIP & set(p.relative_to(ROOT).parts)]


def test_no_module_imports_a_bare_top_level_name():
    offenders = {
        str(p.relative_to(ROOT)): hits
        for p in python_files()
        if (hits := bare_imports(p.read_text(), str(p)))
    }
    assert offenders == {}


def test_the_guard_can_fail():
    assert bare_imports("from vault.errors import VaultError\nimport api.cli\nimport keys\n") == [
        "1: from vault.errors import ...",
        "2: import api.cli",
        "3: import keys",
    ]
    assert bare_imports("from lethe.vault.errors import VaultError\nimport apispec\n") == []
