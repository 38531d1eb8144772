"""The offline verifier imports with nothing of Lethe's runtime: auditors run it on its own.

A fresh interpreter blocks the runtime's dependencies (database, web, KMS client, CLI),
imports ``lethe.vault.audit.verify``, and lists every third-party package it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

ALLOWED = {"lethe", "cryptography", "rfc8785", "_cffi_backend", "_openssl"}
BLOCKED = (
    "sqlalchemy",
    "alembic",
    "psycopg",
    "fastapi",
    "starlette",
    "pydantic",
    "hvac",
    "typer",
    "rich",
    "uvicorn",
    "fpdf",
    "prometheus_client",
    "limits",
    "httpx",
)

SCRIPT = f"""
import importlib.abc, json, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError(f"blocked: {{name}}")
        return None

sys.meta_path.insert(0, Block())
before = {{n.split(".")[0] for n in sys.modules}}
from lethe.vault.audit.verify import verify_certificate
loaded = {{n.split(".")[0] for n in sys.modules}} - before - set(sys.stdlib_module_names)
result = verify_certificate(b"{{}}", b"not a key")
print(json.dumps({{"loaded": sorted(loaded), "ok": result.ok}}))
"""


def test_the_verifier_imports_with_only_cryptography_rfc8785_and_its_own_helpers():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert set(out["loaded"]) <= ALLOWED
    assert out["ok"] is False


def test_the_block_list_really_blocks():
    core = "from lethe.vault.store.db import UnitOfWork  #"  # needs SQLAlchemy
    script = SCRIPT.replace("from lethe.vault.audit.verify import", core)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and "blocked: sqlalchemy" in proc.stderr


def test_the_export_verifier_imports_with_only_cryptography_rfc8785_and_its_own_helpers():
    script = SCRIPT.replace(
        "from lethe.vault.audit.verify import verify_certificate",
        "from lethe.vault.audit.verify_export import verify_export as verify_certificate",
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert set(out["loaded"]) <= ALLOWED
    assert out["ok"] is False
