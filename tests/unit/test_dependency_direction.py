"""The arrows point down: api -> vault -> keys, and the core stays framework-free.

The client and the framework adapters stand apart: ``integrations -> client``, and the
client imports nothing of the server (``api`` may use the client, as the MCP tools do).

Inside each package the subpackages stand on floors (``FLOORS``): an import points to a
lower floor only, so there is no package cycle (counted over every ``lethe.*`` subpackage).
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


# The floors inside each package, bottom first: a subpackage imports only from floors below
# its own (never sideways, never up). The package's own root modules (``vault/model.py``,
# ``api/settings.py``...) are its ground floor. A new subpackage must be placed here.
FLOORS = {
    "vault": [
        {"lethe.vault"},  # canonical, clock, errors, merkle, model, policy, runner ids
        {"lethe.vault.store"},  # tables, the unit of work, the event log's rows, tenancy
        {"lethe.vault.audit"},  # the log: checkpoints, leaves, forks, certificate format, verifier
        {"lethe.vault.access", "lethe.vault.custody"},  # tokens and sessions; subject keys
        {"lethe.vault.webhooks"},  # the outbox state changes write to, its delivery
        {"lethe.vault.memory"},
        {"lethe.vault.erasure", "lethe.vault.subject_access"},
        {"lethe.vault.oversight"},  # certificate issuers, KPIs, renderings: they read erasure
    ],
    "api": [
        {"lethe.api"},  # settings, bootstrap, report formats, wheels
        {"lethe.api.http", "lethe.api.bench"},
        {"lethe.api.console", "lethe.api.mcp"},  # built on http's auth, problems, logging
        {"lethe.api.server"},  # the app that mounts http, the console and MCP
        {"lethe.api.cli"},
    ],
    "integrations": [{"lethe.integrations"}, {"lethe.integrations.langgraph"}],
    "keys": [{"lethe.keys"}],
    "client": [{"lethe.client"}],
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


PACKAGES = {_module_name(p) for p in SRC.rglob("__init__.py")}


def unit_of(module: str) -> str:
    """The floor-level package a module belongs to: ``lethe.vault.store.tables`` and
    ``lethe.vault.store.migrations.env`` -> ``lethe.vault.store``; ``lethe.vault.model`` ->
    ``lethe.vault`` (a root module is its package's ground floor)."""
    parts = module.split(".")
    for n in (3, 2):
        if ".".join(parts[:n]) in PACKAGES:
            return ".".join(parts[:n])
    return ".".join(parts[:2])


def lethe_imports(path: Path, module: str) -> set[str]:
    """Every ``lethe.*`` module a file imports, at any depth (inside functions and
    ``TYPE_CHECKING`` blocks too), relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in PACKAGES}
    return {m for m in found if m.split(".")[0] == "lethe"}


def arrows(files: dict[str, Path] | None = None) -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> the names of the files that draw that arrow."""
    files = files or {_module_name(p): p for p in SRC.rglob("*.py")}
    out: dict[tuple[str, str], list[str]] = {}
    for module, path in files.items():
        here = unit_of(module)
        for there in {unit_of(m) for m in lethe_imports(path, module)} - {here}:
            out.setdefault((here, there), []).append(path.name)
    return out


def floor_of(unit: str) -> tuple[str, int]:
    top = unit.split(".")[1]
    return top, next(i for i, floor in enumerate(FLOORS[top]) if unit in floor)


def upward(edges: dict[tuple[str, str], list[str]]) -> dict[str, list[str]]:
    """The arrows inside one package that do not point to a lower floor."""
    bad = {}
    for (a, b), where in edges.items():
        (top_a, floor_a), (top_b, floor_b) = floor_of(a), floor_of(b)
        if top_a == top_b and floor_b >= floor_a:
            bad[f"{a} -> {b}"] = sorted(where)
    return bad


def cycles(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one unit (Tarjan): each is a package cycle."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                found.append(sorted([v, *group]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_subpackage_has_a_floor():
    placed = [u for floors in FLOORS.values() for floor in floors for u in floor]
    assert len(placed) == len(set(placed))
    assert {unit_of(p) for p in PACKAGES} == set(placed)


def test_no_subpackage_imports_its_own_floor_or_one_above():
    edges = arrows()
    assert ("lethe.vault.oversight", "lethe.vault.erasure") in edges  # the scan sees arrows
    assert upward(edges) == {}


def test_no_package_cycle_among_lethe_subpackages():
    edges = arrows()
    assert len({u for e in edges for u in e}) >= 15  # the count saw the whole tree, not one corner
    assert cycles(edges) == []


def test_the_floor_and_cycle_checks_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from ..oversight import kpis\n")
    edges = arrows({"lethe.vault.erasure.bad": bad})
    assert edges == {("lethe.vault.erasure", "lethe.vault.oversight"): ["bad.py"]}
    assert list(upward(edges)) == ["lethe.vault.erasure -> lethe.vault.oversight"]
    loop = {("lethe.api.http", "lethe.api.server"): ["x"], ("lethe.api.server", "lethe.api.http"): ["y"]}
    assert cycles(loop) == [["lethe.api.http", "lethe.api.server"]]
