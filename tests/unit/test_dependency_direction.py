"""The arrows point down: api -> vault -> keys, and the core stays framework-free.

The client and the framework adapters stand apart: ``integrations -> client``, and the
client imports nothing of the server (``api`` may use the client, as the MCP tools do).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "lethe"
SERVER = {"lethe.vault", "lethe.api", "lethe.keys", "fastapi", "starlette", "sqlalchemy"} | {
    "typer",
    "uvicorn",
    "hvac",
}
FORBIDDEN = {
    "vault": {
        "lethe.api",
        "lethe.client",
        "lethe.integrations",
        "fastapi",
        "starlette",
        "typer",
        "hvac",
        "uvicorn",
        "rich",
        "jinja2",
        "httpx",
        "mcp",
        "langgraph",
    },
    "keys": {"lethe.vault", "lethe.api", "lethe.client", "fastapi", "starlette", "typer", "uvicorn"},
    "client": SERVER | {"lethe.integrations", "pydantic", "mcp", "langgraph"},
    "integrations": SERVER | {"mcp"},
}


def _root(module: str) -> str:
    """The package a module belongs to: ``lethe.vault.store`` -> ``lethe.vault``, ``hvac.x`` -> ``hvac``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "lethe" else parts[0]


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {_root(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(_root(node.module))
    return roots


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_never_imports_upward_or_a_framework(package):
    offenders = {
        str(p.relative_to(ROOT)): sorted(imported_roots(p) & FORBIDDEN[package])
        for p in (SRC / package).rglob("*.py")
    }
    assert offenders  # the package's modules were found (none found would pass vacuously)
    assert {k: v for k, v in offenders.items() if v} == {}


def test_hvac_is_confined_to_the_transit_backend():
    users = [p.name for p in (SRC / "keys").glob("*.py") if "hvac" in imported_roots(p)]
    assert users == ["vault_transit.py"]


def test_cryptography_hazmat_is_imported_only_in_keys():
    users = [
        str(p.relative_to(ROOT))
        for pkg in ("vault", "api")
        for p in (SRC / pkg).rglob("*.py")
        if "cryptography" in imported_roots(p)
    ]
    assert users == []


def test_the_checker_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import fastapi\nfrom lethe.api.server.app import create_app\nfrom lethe.keys import x\n")
    assert imported_roots(bad) & FORBIDDEN["vault"] == {"fastapi", "lethe.api"}
