"""An agent developer installs the client from the server's address: ``lethe serve`` serves
its own ``lethe-vault`` wheel at ``/wheels/<name>``, with the extras of the distribution it
runs, and pip installs it from that file (``test_fresh_clone`` does it over a real server).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from fastapi.testclient import TestClient

from lethe.api.client_wheel import ROUTE, build_wheel, package_root, served_wheel, version, wheel_name
from tests.api.conftest import Api


def test_the_wheel_holds_the_whole_package_with_its_extras_and_no_bytecode() -> None:
    data = build_wheel()
    assert data == build_wheel()
    with zipfile.ZipFile(io.BytesIO(data)) as wheel:
        names = wheel.namelist()
        meta = wheel.read(f"lethe_vault-{version()}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"lethe_vault-{version()}.dist-info/entry_points.txt").decode()
    for needed in (
        "lethe/client/__init__.py",
        "lethe/api/http/verify.html",
        "lethe/api/console/templates/base.html",
        "lethe/vault/store/migrations/script.py.mako",
    ):
        assert needed in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "Name: lethe-vault" in meta and "Provides-Extra: client" in meta
    assert 'httpx<1,>=0.27; extra == "client"' in meta
    assert "lethe = " in entry_points


def test_a_stray_file_in_the_package_is_not_served(tmp_path: Path) -> None:
    checkout = tmp_path / "lethe"
    shutil.copytree(package_root(), checkout, ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / "vault" / "scratch-notes.sqlite3").write_bytes(b"not shipped")
    (checkout / "vault" / "notes.py").write_text("# shipped: a module like any other\n")
    with zipfile.ZipFile(io.BytesIO(build_wheel(checkout))) as wheel:
        names = wheel.namelist()
    assert "lethe/vault/notes.py" in names
    assert "lethe/vault/scratch-notes.sqlite3" not in names


def test_the_server_serves_its_wheel_without_a_token_and_pip_installs_it(api: Api, tmp_path: Path) -> None:
    client: TestClient = api.client
    r = client.get(f"{ROUTE}/{wheel_name()}")
    assert r.status_code == 200 and r.content == served_wheel()
    assert r.headers["content-type"] == "application/zip"
    assert client.get(f"{ROUTE}/lethe_vault-0.0.0-py3-none-any.whl").status_code == 404
    wheel = tmp_path / wheel_name()
    wheel.write_bytes(r.content)
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target)]
    installed = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr
    assert (target / "lethe" / "client" / "__init__.py").exists()
    assert (target / "bin" / "lethe").exists()
