"""The MCP server through the SDK's own client, over Streamable HTTP (``/mcp`` of a real
``lethe serve``) and over stdio (``lethe mcp`` spawned on the same store).

The same scenario runs on both: tools listed per role; an agent's ``remember`` naming a
source type is refused, and what it remembers without one is its own inference,
quarantined and not recalled; a reviewer's promotion over HTTP makes it recallable; an
agent's ``request_erasure`` is refused by the HTTP API's own policy; an officer's
erasure completes and recall then finds nothing; an auditor reads the certificate as a
tool result and as a resource. Over HTTP, a missing or wrong token is a 401 pointing at
the protected-resource metadata, and a role with no tools a 403 ``insufficient_scope``.
No content, subject id or token reaches a log.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lethe.client import LetheClient
from tests.api.conftest import Served, serve_with_tokens
from tests.api.mcp_clients import call, over_http, over_stdio, resource_json, text_of
from tests.api.test_serve import lethe_command

pytestmark = pytest.mark.slow

TOOLS = {
    "agent": {"remember", "recall", "get_memory"},
    "privacy_officer": {"request_erasure", "erasure_status", "get_certificate"},
    "auditor": {"erasure_status", "get_certificate"},
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = serve_with_tokens(tmp_path_factory.mktemp("mcp"))
    yield s
    s.server.stop()


@pytest.fixture(params=["http", "stdio"])
def connect(request: pytest.FixtureRequest, served: Served, tmp_path: Path):  # type: ignore[no-untyped-def]
    """role -> an MCP client session for that role's token, over the transport under test."""
    errlog = tmp_path / "lethe-mcp.stderr"

    def session(role: str):  # type: ignore[no-untyped-def]
        token = served.tokens[role]
        return over_http(served.url, token) if request.param == "http" else over_stdio(served, token, errlog)

    session.transport = request.param  # type: ignore[attr-defined]
    session.errlog = errlog  # type: ignore[attr-defined]
    return session


def test_the_seed_scenario_over_mcp(served: Served, connect) -> None:  # type: ignore[no-untyped-def]
    subject = f"mcp-{uuid.uuid4().hex[:8]}@example.com"
    content = f"CANARY-{uuid.uuid4().hex} likes green tea"

    async def scenario() -> None:
        for role, expected in TOOLS.items():
            async with connect(role) as mcp:
                assert {t.name for t in (await mcp.list_tools()).tools} == expected
        async with connect("agent") as agent:
            tools = {t.name: t for t in (await agent.list_tools()).tools}
            assert tools["recall"].annotations.read_only_hint is True
            assert tools["remember"].annotations.destructive_hint is False
            assert tools["remember"].output_schema["properties"]["status"]["type"] == "string"
            assert (await agent.list_resources()).resources == []  # agents read no certificates
            assert (await agent.list_resource_templates()).resource_templates == []
            said = {"source_ref": "session-1/turn-1"}  # no source type: the model does not decide it
            claimed = {"source_type": "user_statement", **said}
            memory = {"subject_id": subject, "kind": "preference", "content": content}
            refused = await agent.call_tool("remember", {**memory, "provenance": claimed})
            assert refused.is_error and "source_type is not accepted" in text_of(refused)
            stored = await call(agent, "remember", **memory, provenance=said)
            assert stored["status"] == "quarantined"
            assert stored["provenance"]["source_type"] == "agent_inference"
            assert (await call(agent, "recall", query="tea", subject_id=subject))["items"] == []

            with LetheClient(served.url, served.tokens["reviewer"]) as reviewer:  # promotion over HTTP
                reviewer.promote_memory(stored["id"], stored["version"])
            recalled = await call(agent, "recall", query="tea", subject_id=subject)
            assert [i["id"] for i in recalled["items"]] == [stored["id"]]
            got = await call(agent, "get_memory", memory_id=stored["id"])
            assert got["content"] == content

            refused = await agent.call_tool("request_erasure", {"subject_id": subject, "legal_basis": "x"})
            assert refused.is_error and "403 Out of scope" in text_of(refused)

        async with connect("privacy_officer") as officer:
            accepted = await call(
                officer, "request_erasure", subject_id=subject, legal_basis="gdpr-art17-1a", reference="DSR-9"
            )
            deadline = time.monotonic() + 60
            status = {"request_id": accepted["id"]}
            while (job := await call(officer, "erasure_status", **status))["completed_at"] is None:
                assert time.monotonic() < deadline, job
                await asyncio.sleep(0.3)
            assert job["status"] == "reported" and job["report_id"]
        async with connect("agent") as agent:
            recalled = await call(agent, "recall", query="tea", subject_id=subject)
            assert recalled["items"] == []
            gone = await agent.call_tool("get_memory", {"memory_id": stored["id"]})
            assert gone.is_error and "404" in text_of(gone)
        async with connect("auditor") as auditor:
            certificate = await call(auditor, "get_certificate", report_id=job["report_id"])
            assert certificate["request"]["id"] == accepted["id"]
            templates = (await auditor.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["lethe://certificates/{report_id}"]
            read = await auditor.read_resource(f"lethe://certificates/{job['report_id']}")
            assert resource_json(read) == certificate
            checkpoint = await auditor.read_resource("lethe://audit/checkpoint")
            assert checkpoint.contents[0].text.count("\n") >= 3

    asyncio.run(scenario())
    logs = served.server.lines()
    if connect.errlog.exists():
        logs += connect.errlog.read_text().splitlines()
    canaries = [content, subject, *served.tokens.values()]  # the first admin's too: it is never printed
    assert [line for line in logs for c in canaries if c in line] == []


def test_a_missing_or_wrong_token_is_a_401_pointing_at_the_resource_metadata(served: Served) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    metadata_url = f"{served.url}/.well-known/oauth-protected-resource/mcp"
    for headers in ({}, {"Authorization": "Bearer lethe_" + "x" * 43}, {"Authorization": "Basic x"}):
        r = httpx.post(f"{served.url}/mcp", json=init, headers=headers, timeout=30)  # loads the SDK
        assert r.status_code == 401
        challenge = r.headers["www-authenticate"]
        assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
    for url in (metadata_url, f"{served.url}/.well-known/oauth-protected-resource"):
        doc = httpx.get(url, timeout=30).json()
        assert doc["resource"] == f"{served.url}/mcp" and doc["scopes_supported"] == ["mcp"]
        assert doc["bearer_methods_supported"] == ["header"] and doc["authorization_servers"]
    reviewer = {"Authorization": f"Bearer {served.tokens['reviewer']}"}
    r = httpx.post(f"{served.url}/mcp", json=init, headers=reviewer, timeout=30)
    assert r.status_code == 403 and 'error="insufficient_scope"' in r.headers["www-authenticate"]


def test_lethe_mcp_refuses_a_bad_token_or_a_role_without_tools(served: Served) -> None:
    import subprocess

    for token, message in (
        ("lethe_" + "x" * 43, "not a valid Lethe token"),
        (served.tokens["reviewer"], "a reviewer token has no MCP tools"),
    ):
        env = {**served.server.env, "LETHE_TOKEN": token}
        r = subprocess.run(
            [*lethe_command(), "mcp"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert r.returncode == 2 and message in r.stderr and token not in r.stderr
