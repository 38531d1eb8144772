"""The runnable examples of docs/agents.md run against a real ``lethe serve`` and print what
the document says they print; its desktop-host config names the command that exists."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.conftest import Served, serve_with_tokens

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = serve_with_tokens(tmp_path_factory.mktemp("docs"))
    yield s
    s.server.stop()


def run(example: str, served: Served, **env: str) -> list[str]:
    environment = {
        "PATH": "/usr/bin:/bin",
        "LETHE_URL": served.url,
        "LETHE_TOKEN": served.tokens["agent"],
        **env,
    }
    command = [sys.executable, str(EXAMPLES / example)]
    r = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.splitlines()


def test_the_client_quickstart_runs(served: Served) -> None:
    assert run("client_quickstart.py", served) == [
        "active quarantined",
        "['Prefers email over phone calls']",
        "403 Out of scope",
    ]


def test_the_langgraph_example_remembers_across_threads(served: Served) -> None:
    user = f"customer-{uuid.uuid4().hex[:8]}"
    key = "docs-example-id-key"
    lines = run("langgraph_preference.py", served, LETHE_STORE_ID_KEY=key, EXAMPLE_USER=user)
    assert lines == ["monday Noted.", "tuesday [Spanish] Where is my parcel?"]


def test_the_mcp_http_example_runs(served: Served) -> None:
    lines = run("mcp_http_client.py", served)
    assert lines == ["['remember', 'recall', 'get_memory']", "quarantined", "[]", "True"]


def test_the_desktop_config_runs_lethe_mcp_with_a_token() -> None:
    text = (ROOT / "docs" / "agents.md").read_text()
    block = re.search(r"```json\n(\{.*?\})\n```", text, re.S)
    assert block is not None
    server = json.loads(block.group(1))["mcpServers"]["lethe"]
    assert server["command"] == "lethe" and server["args"] == ["mcp"]
    assert {"LETHE_TOKEN", "LETHE_DATA_DIR"} <= set(server["env"])
