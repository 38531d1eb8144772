"""``lethe.client`` imports without the server: no FastAPI, SQLAlchemy, ``lethe.vault`` or ``lethe.api``.

A fresh interpreter blocks the server's stack, imports the client, runs one call against
an in-memory transport, and reports which of our modules it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

BLOCKED = (
    "fastapi",
    "starlette",
    "sqlalchemy",
    "alembic",
    "psycopg",
    "pydantic",
    "pydantic_settings",
    "hvac",
    "typer",
    "uvicorn",
    "cryptography",
    "fpdf",
    "prometheus_client",
    "limits",
    "mcp",
    "langgraph",
    "lethe.vault",
    "lethe.api",
    "lethe.keys",
)

SCRIPT = f"""
import importlib.abc, json, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in {BLOCKED!r}):
            raise ImportError(f"blocked: {{name}}")
        return None

sys.meta_path.insert(0, Block())
import httpx
from lethe.client import LetheClient, NotFound

def answer(request):
    return httpx.Response(404, json={{"type": "urn:lethe:problem:not-found", "title": "Not found",
                                      "status": 404, "detail": "memory not found", "instance": "/"}})

with LetheClient("http://lethe.test", "lethe_t", transport=httpx.MockTransport(answer)) as c:
    try:
        c.get_memory("m1")
    except NotFound as exc:
        status = exc.status
ours = sorted(m for m in sys.modules if m.startswith("lethe."))
print(json.dumps({{"ours": ours, "status": status}}))
"""


def test_the_client_imports_and_runs_without_the_servers_stack() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["status"] == 404
    assert out["ours"] and all(m.startswith("lethe.client") for m in out["ours"])


def test_the_block_list_really_blocks() -> None:
    script = SCRIPT.replace("from lethe.client import LetheClient, NotFound", "import lethe.api.server.app")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and "blocked: " in proc.stderr
