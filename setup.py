"""Packaging: the folders vault/, keys/ and api/ install as lethe.vault, lethe.keys, lethe.api.

``lethe`` itself is a namespace package (it has no folder of its own), so the wheel's only
top-level name is ``lethe``. Metadata lives in pyproject.toml; this file only maps folders.
"""

from setuptools import find_packages, setup

FOLDERS = ("vault", "keys", "api")

setup(
    package_dir={f"lethe.{folder}": folder for folder in FOLDERS},
    packages=[
        f"lethe.{name}"
        for name in find_packages(include=[pattern for f in FOLDERS for pattern in (f, f"{f}.*")])
    ],
)
