"""The type checker's configuration keeps its promises (it is read, not run: mypy itself runs
in scripts/test.sh).

The packages that hold keys, erasure and its evidence are checked strictly, and nothing
loosens that for one of their modules: the list of modules still to clean (``ignore_errors``)
never names one, and no other override relaxes them. That list names only modules that exist,
so it shrinks as they are cleaned or removed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
STRICT = (
    "lethe.keys",
    "lethe.vault.erasure",
    "lethe.vault.audit",
    "lethe.vault.oversight",
    "lethe.vault.custody",
)


def _mypy() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]


def _modules(override: dict[str, Any]) -> list[str]:
    module = override["module"]
    return [module] if isinstance(module, str) else list(module)


def _covers(pattern: str, package: str) -> bool:
    """Whether a mypy module pattern (``a.b``, ``a.b.*``, ``a.*.c``) reaches into ``package``."""
    parts, inside = pattern.split("."), package.split(".")

    def same(a: list[str], b: list[str]) -> bool:
        return all(x in ("*", y) for x, y in zip(a, b, strict=True))

    if parts[-1] == "*":  # ``a.b.*``: a.b and every module under it
        n = min(len(parts) - 1, len(inside))
        return same(parts[:n], inside[:n])
    return len(parts) >= len(inside) and same(parts[: len(inside)], inside)


def _exists(module: str) -> bool:
    path = SRC.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_the_strict_override_names_the_four_packages():
    strict = [o for o in _mypy().get("overrides", []) if o.get("strict") is True]
    named = {m for o in strict for m in _modules(o)}
    assert {f"{p}.*" for p in STRICT} <= named, f"strict override lost some of {STRICT}: {sorted(named)}"


def test_no_override_loosens_a_strict_package():
    config = _mypy()
    assert not config.get("ignore_errors"), "ignore_errors set for the whole tree"
    for override in config.get("overrides", []):
        if override.get("strict") is True and set(override) <= {"module", "strict"}:
            continue  # the strict override itself
        reached = sorted({m for m in _modules(override) for p in STRICT if _covers(m, p)})
        loosened = sorted(set(override) - {"module"})
        assert not reached, f"an override setting {loosened} reaches strict modules: {reached}"


def test_the_modules_still_to_clean_exist():
    listed = [m for o in _mypy().get("overrides", []) if o.get("ignore_errors") is True for m in _modules(o)]
    assert listed == sorted(set(listed)), "keep the list sorted and without repeats"
    missing = [m for m in listed if "*" in m or not _exists(m)]
    assert not missing, f"not modules of src/ (a pattern, or cleaned away: delete the line): {missing}"


def test_ci_runs_the_type_checker_before_pytest():
    script = (ROOT / "scripts" / "test.sh").read_text()
    assert ".venv/bin/mypy\n" in script
    assert script.index(".venv/bin/mypy") < script.index("-m pytest")


def test_covers_reads_mypy_patterns():
    assert _covers("lethe.vault.audit.render", "lethe.vault.audit")
    assert _covers("lethe.vault.*", "lethe.vault.audit")
    assert _covers("lethe.*", "lethe.keys")
    assert _covers("lethe.vault.audit.*", "lethe.vault.audit")
    assert not _covers("lethe.vault.memory.search", "lethe.vault.audit")
    assert not _covers("lethe.vault.auditx", "lethe.vault.audit")
    assert not _covers("wordllama.*", "lethe.keys")
    assert not _covers("lethe.vault", "lethe.vault.audit")  # the package's __init__ only
