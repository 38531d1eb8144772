"""No import cycles between our modules, counting imports inside functions too.

A function-local import hides a cycle from Python (it runs after both modules have
loaded) but not from a reader: the CLI once had ``cli.main`` and ``cli.audit``
importing each other that way. Modules are the files of ``api/``, ``vault/``, ``keys/``,
``client/`` and ``integrations/`` under their installed names (``lethe.api.cli.main``).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "lethe"
PACKAGES = ("api", "vault", "keys", "client", "integrations")


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(("lethe", *(p for p in parts if p != "__init__")))


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (``from pkg import submodule`` names the submodule)."""
    files = {module_name(p, root): p for pkg in packages for p in (root / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.add(node.module)
                targets |= {f"{node.module}.{a.name}" for a in node.names}
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_of_ours_imports_itself_through_others() -> None:
    graph = import_graph(SRC)
    assert len(graph) > 150  # the tree was found (an empty graph has no cycle either)
    assert cycles(graph) == []


def test_the_cycle_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "api" / "cli").mkdir(parents=True)
    (tmp_path / "api" / "cli" / "main.py").write_text("from lethe.api.cli import audit\n")
    (tmp_path / "api" / "cli" / "audit.py").write_text(
        "def verify():\n    from lethe.api.cli.main import container\n"
    )
    (tmp_path / "api" / "cli" / "store.py").write_text("import lethe.api.cli.audit\n")
    graph = import_graph(tmp_path, ("api",))
    assert cycles(graph) == [["lethe.api.cli.audit", "lethe.api.cli.main"]]
