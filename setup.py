"""Packaging: each top-level folder installs as one subpackage of ``lethe``.

``vault/``, ``keys/`` and ``api/`` are the server (``lethe.vault``, ``lethe.keys``,
``lethe.api``); ``client/`` is the HTTP client (``lethe.client``) and ``integrations/``
the framework adapters built on it (``lethe.integrations``). ``lethe`` itself is a
namespace package (it has no folder of its own), so the wheel's only top-level name is
``lethe``, and every folder installs exactly once. Metadata lives in pyproject.toml;
this file only maps folders.
"""

from setuptools import find_packages, setup

FOLDERS = ("vault", "keys", "api", "client", "integrations")

setup(
    package_dir={f"lethe.{folder}": folder for folder in FOLDERS},
    packages=[
        f"lethe.{name}"
        for name in find_packages(include=[pattern for f in FOLDERS for pattern in (f, f"{f}.*")])
    ],
)
