"""The MCP SDK is loaded on the first request to ``/mcp`` or its metadata (``api.mcp.on_demand``):
a server that no agent reaches over MCP never imports it (about 20 MiB of each server
process), and the first request that needs it is answered as if it had always been there."""

from __future__ import annotations

from pathlib import Path

from tests.children import python_on_a_new_store

_SERVE_WITHOUT_THEN_WITH_MCP = """
import json, sys
from fastapi.testclient import TestClient
from lethe.api.server.app import create_app
from lethe.api.settings import Settings

loaded = lambda: sorted({m.split(".")[0] for m in sys.modules} & {"mcp", "httpx"})
out = {}
with TestClient(create_app(Settings(public_url="http://testserver"))) as client:
    out["ready"] = client.get("/readyz").status_code
    out["before"] = loaded()
    metadata = client.get("/.well-known/oauth-protected-resource/mcp")
    out["metadata"] = [metadata.status_code, metadata.json().get("resource")]
    out["after"] = loaded()
    unauthenticated = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    out["mcp"] = [unauthenticated.status_code, unauthenticated.headers.get("www-authenticate", "")]
    out["wrong_method"] = client.post("/.well-known/oauth-protected-resource").status_code
print(json.dumps(out))
"""


def test_a_server_that_no_agent_reaches_over_mcp_never_imports_the_sdk(tmp_path: Path) -> None:
    out = python_on_a_new_store(tmp_path / "data", _SERVE_WITHOUT_THEN_WITH_MCP)
    assert out["ready"] == 200
    assert out["before"] == []  # serving, ready, and neither the SDK nor its HTTP client loaded
    assert out["metadata"] == [200, "http://testserver/mcp"]  # the first request loads it
    assert out["after"] == ["httpx", "mcp"]
    status, challenge = out["mcp"]
    assert status == 401 and 'resource_metadata="http://testserver/.well-known/' in challenge
    assert out["wrong_method"] == 405  # the SDK's route answers, methods and all


_SERVE_WITH_A_BROKEN_SDK = """
import json, logging, sys
sys.path.insert(0, %(broken)r)
from fastapi.testclient import TestClient
from lethe.api.server.app import create_app
from lethe.api.settings import Settings

logged = []
class Keep(logging.Handler):
    def emit(self, record):
        logged.append(record.getMessage())
logging.getLogger("lethe.api").addHandler(Keep())
out = {}
with TestClient(create_app(Settings(public_url="http://testserver"))) as client:
    first = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    out["first"] = [first.status_code, first.headers["content-type"], first.json()["title"]]
    out["metadata"] = client.get("/.well-known/oauth-protected-resource/mcp").status_code
    out["healthz"] = client.get("/healthz").status_code
out["logged"] = [m for m in logged if "MCP" in m]
print(json.dumps(out))
"""


def test_a_found_but_broken_mcp_sdk_is_a_503_problem_and_one_log_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "mcp").mkdir(parents=True)
    (broken / "mcp" / "__init__.py").write_text("raise ImportError('a half-installed SDK')\n")
    out = python_on_a_new_store(tmp_path / "data", _SERVE_WITH_A_BROKEN_SDK % {"broken": str(broken)})
    assert out["first"] == [503, "application/problem+json", "MCP unavailable"]
    assert out["metadata"] == 503  # the failure is remembered, not retried per request
    assert out["healthz"] == 200  # the rest of the API is unaffected
    assert out["logged"] == ["MCP SDK failed to load; /mcp answers 503 until this node restarts"]
