"""The wheel installs one top-level name, ``lethe``: embedding Lethe claims no ``api`` or ``vault``."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(out),
            ".",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("lethe_vault-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_has_one_top_level_name(wheel: zipfile.ZipFile) -> None:
    top_level = next(n for n in wheel.namelist() if n.endswith(".dist-info/top_level.txt"))
    assert wheel.read(top_level).decode().split() == ["lethe"]
    roots = {n.split("/")[0] for n in wheel.namelist() if ".dist-info/" not in n}
    assert roots == {"lethe"}
    assert "lethe/__init__.py" not in wheel.namelist()  # a namespace: others may add lethe.* too


def test_the_wheel_carries_its_data_files_and_no_tests(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "lethe/keys/vault_policy.hcl" in names
    assert "lethe/vault/store/migrations/script.py.mako" in names
    assert {"lethe/vault/__init__.py", "lethe/keys/__init__.py", "lethe/api/cli/__init__.py"} <= names
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)


def test_the_client_and_integrations_install_once_under_lethe(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert {"lethe/client/__init__.py", "lethe/client/operations.py"} <= names
    assert {"lethe/integrations/__init__.py", "lethe/integrations/langgraph/__init__.py"} <= names
    # a folder installs under one name only: the client is not also inside lethe.api
    assert not any(n.startswith(("lethe/api/client/", "lethe/api/integrations/")) for n in names)
