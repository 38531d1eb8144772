"""The ``lethe-vault`` wheel, served by ``lethe serve`` so an agent developer installs the
client from the server's address alone.

``pip install "lethe-vault[client] @ $LETHE/wheels/lethe_vault-<version>-py3-none-any.whl"``
is the one install command the docs give: a direct URL, never a bare ``lethe-vault`` name nor
an extra index, because that name is not ours on the public index (a squatter could take it).

Like ``api.verifier_wheel`` it is built on request from the package this server runs (so
the client always matches the API it talks to): the ``lethe`` package's sources and data
files (no bytecode, nothing else), with the installed distribution's own ``METADATA`` (its extras: ``client``,
``mcp``, ``langgraph``, ``semantic``…) and ``entry_points.txt`` (the ``lethe`` command).
Built once per process (about 2 MB), the same sources giving the same bytes.
``tests/api/test_client_wheel.py`` installs it; ``tests/integration/test_fresh_clone.py``
installs it from a running server exactly as ``docs/agents.md`` says.

Exceptions: ``OSError`` if an installed file cannot be read;
``importlib.metadata.PackageNotFoundError`` if ``lethe-vault`` is not installed as a
distribution (a bare ``PYTHONPATH=src``).
"""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path

import lethe.vault
from lethe.api.wheel_pack import pack_wheel

DISTRIBUTION = "lethe-vault"
ROUTE = "/wheels"
# What the package ships (``[tool.setuptools.package-data]``): a stray file in a checkout (an
# editor's swap file, a scratch database) is never served.
_SHIPPED_SUFFIXES = {".py", ".typed", ".html", ".css", ".svg", ".json", ".mako", ".hcl"}


def version() -> str:
    return metadata.version(DISTRIBUTION)


def wheel_name() -> str:
    """``lethe_vault-<version>-py3-none-any.whl``: pip checks the name and version in it."""
    return f"lethe_vault-{version()}-py3-none-any.whl"


def package_root() -> Path:
    return Path(lethe.vault.__file__).resolve().parents[1]  # ``lethe`` is a namespace package


def _package_files(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or "__pycache__" in rel.parts or path.suffix not in _SHIPPED_SUFFIXES:
            continue
        files[f"lethe/{rel.as_posix()}"] = path.read_bytes()
    return files


def build_wheel(root: Path | None = None) -> bytes:
    """The wheel of the ``lethe`` package at ``root`` (default: the one this process runs)."""
    dist = metadata.distribution(DISTRIBUTION)
    info = f"lethe_vault-{dist.version}.dist-info"
    files = _package_files(root or package_root())
    files[f"{info}/METADATA"] = (dist.read_text("METADATA") or "").encode()
    entry_points = dist.read_text("entry_points.txt")
    if entry_points:
        files[f"{info}/entry_points.txt"] = entry_points.encode()
    return pack_wheel(info, files)


@functools.cache
def served_wheel() -> bytes:
    """The wheel this process serves, built at its first request (the running code does not change)."""
    return build_wheel()
