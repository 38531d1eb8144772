"""The agent session through each way in (SQLite and PostgreSQL): the Python client's
``session_id``, ``LetheStore``'s ``session_id``, and the MCP server's (the ``Lethe-Session``
header of ``/mcp``, ``LETHE_SESSION`` for ``lethe mcp``). Each taints a session, writes in
it, and finds the write quarantined by the taint, while the same write in another session is not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from inspect import signature
from pathlib import Path
from typing import Any

import httpx
import pytest

from lethe.api.server.stdio import stdio_session
from lethe.client import AsyncLetheClient, LetheClient, Provenance
from lethe.integrations.langgraph import LetheStore
from lethe.vault.errors import InvalidCommand
from tests.api.conftest import Api, Served, bearer, serve_with_tokens
from tests.api.mcp_clients import call, over_http, over_stdio

ID_KEY = "a-store-id-key-of-sixteen-bytes+"
PAGE = Provenance("web_page", "https://evil.example/page", url="https://evil.example/page")
SAID = Provenance("user_statement", "turn-1")


def client(api: Api, session_id: str | None = None) -> AsyncLetheClient:
    token = api.mint()
    transport = httpx.ASGITransport(app=api.app)
    return AsyncLetheClient("http://lethe.test", token, transport=transport, session_id=session_id)


def test_the_clients_session_id_is_sent_with_its_writes(api: Api) -> None:
    async def scenario() -> tuple[str, str, str, dict[str, Any]]:
        async with client(api, "conv-client") as tainted, client(api) as plain:
            await tainted.write_memory("alice", "support", "fact", "a web page says so", PAGE)
            later = await tainted.write_memory("alice", "support", "fact", "Alice likes tea", SAID)
            control = await plain.write_memory("alice", "support", "fact", "Alice likes tea", SAID)
            # Per call too, and the taint route.
            state = await plain.taint_session("conv-marked", "read an untrusted mail")
            marked = await plain.write_memory(
                "alice", "support", "fact", "Alice likes milk", SAID, session_id="conv-marked"
            )
            return later.status, control.status, marked.status, state

    later, control, marked, state = asyncio.run(scenario())
    assert later == "quarantined" and control == "active" and marked == "quarantined"
    assert state["tainted"] is True and state["taint"]["cause"] == "marked"


def test_lethe_stores_session_id_is_sent_with_its_puts(api: Api) -> None:
    def store(session_id: str) -> LetheStore:
        # From issue 54 item 1 on, the store's source type is a required setting.
        said = {"source_type": "user_statement"} if "source_type" in signature(LetheStore).parameters else {}
        return LetheStore(
            aclient=client(api),
            purpose="support",
            agent_id="a1",
            id_key=ID_KEY,
            session_id=session_id,
            **said,
        )

    async def scenario() -> tuple[Any, Any]:
        tainted, clean = store("conv-store"), store("conv-clean")
        await tainted.with_provenance(PAGE).aput(("alice", "fact"), "page", {"text": "from the web"})
        await tainted.aput(("alice", "fact"), "tea", {"text": "Alice likes tea"})
        await clean.aput(("alice", "fact"), "milk", {"text": "Alice likes milk"})
        return await tainted.aget(("alice", "fact"), "tea"), await clean.aget(("alice", "fact"), "milk")

    tea, milk = asyncio.run(scenario())
    assert tea is None  # quarantined by the session's taint: absent until promoted
    assert milk is not None and milk.value == {"text": "Alice likes milk"}


def test_lethe_mcp_takes_its_session_from_lethe_session_or_makes_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LETHE_SESSION", "desk-7")
    assert stdio_session() == "desk-7"
    monkeypatch.delenv("LETHE_SESSION")
    first, second = stdio_session(), stdio_session()
    assert first.startswith("mcp-") and first != second
    monkeypatch.setenv("LETHE_SESSION", "not a session")
    with pytest.raises(InvalidCommand):
        stdio_session()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = serve_with_tokens(tmp_path_factory.mktemp("mcp-sessions"))
    yield s
    s.server.stop()


def session_taint(served: Served, memory_id: str) -> Any:
    """The review queue's session taint of a memory (None: in the queue untainted, or not in it)."""
    with httpx.Client(base_url=served.url, headers=bearer(served.tokens["reviewer"]), timeout=30) as http:
        r = http.get(f"/v1/review-queue/{memory_id}")
    assert r.status_code in (200, 404), r.text
    return r.json()["session_taint"] if r.status_code == 200 else None


async def remember(mcp: Any, content: str) -> str:
    """``remember`` a memory; its id. The provenance names a source type only where the tool
    still takes one (from issue 54 item 1 on, the server decides it and refuses the model's)."""
    [tool] = [t for t in (await mcp.list_tools()).tools if t.name == "remember"]
    provenance: dict[str, Any] = {"source_ref": "turn-1"}
    defs = tool.input_schema.get("$defs", {})
    if "source_type" in defs.get("ProvenanceArg", {}).get("properties", {}):
        provenance["source_type"] = "user_statement"
    arguments = {"subject_id": "alice", "kind": "fact", "content": content, "provenance": provenance}
    return (await call(mcp, "remember", **arguments))["id"]


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_mcp_tools_carry_the_agent_session(
    served: Served, transport: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = served.tokens["agent"]
    session = f"conv-mcp-{transport}"
    with LetheClient(served.url, token, timeout=30) as rest:
        rest.taint_session(session, "the host read an untrusted page")

    def connect(session_id: str | None) -> Any:
        if transport == "http":
            headers = {"Lethe-Session": session_id} if session_id else {}
            return over_http(served.url, token, headers)
        if session_id:
            served.server.env["LETHE_SESSION"] = session_id
        else:
            served.server.env.pop("LETHE_SESSION", None)
        return over_stdio(served, token, tmp_path / "mcp.stderr")

    async def write(session_id: str | None) -> str:
        async with connect(session_id) as mcp:
            return await remember(mcp, "Alice likes tea")

    in_session, elsewhere = asyncio.run(write(session)), asyncio.run(write(None))
    assert session_taint(served, in_session)["cause"] == "marked"
    assert session_taint(served, elsewhere) is None
