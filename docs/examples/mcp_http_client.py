"""Lethe's MCP tools over Streamable HTTP, with the official SDK's client and a Lethe token.

What a model stores through MCP is its own claim: recorded as agent_inference and kept in
quarantine until a reviewer promotes it (unless the server was started for a user channel,
LETHE_MCP_USER_CHANNEL). A model that names a source_type is refused.

    pip install "lethe-vault[mcp] @ $LETHE_URL/wheels/lethe_vault-0.1.0-py3-none-any.whl"
    LETHE_URL=http://127.0.0.1:8080 LETHE_TOKEN=<agent token> python mcp_http_client.py
"""

import asyncio
import os

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, token = os.environ["LETHE_URL"], os.environ["LETHE_TOKEN"]
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as lethe,
    ):
        print([tool.name for tool in (await lethe.list_tools()).tools])  # per role
        memory = {"subject_id": "customer-2002", "kind": "preference", "content": "Prefers email"}
        stored = await lethe.call_tool("remember", {**memory, "provenance": {"source_ref": "chat-7/turn-3"}})
        print(stored.structured_content["status"])  # quarantined: awaiting a reviewer
        recalled = await lethe.call_tool("recall", {"query": "email", "subject_id": "customer-2002"})
        print([item["content"] for item in recalled.structured_content["items"]])  # [] until promoted
        claimed = {"source_type": "user_statement", "source_ref": "chat-7/turn-3"}
        refused = await lethe.call_tool("remember", {**memory, "provenance": claimed})
        print(refused.is_error)  # True: a model does not decide a memory's trust


asyncio.run(main())
