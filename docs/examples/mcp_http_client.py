"""Lethe's MCP tools over Streamable HTTP, with the official SDK's client and a Lethe token.

    pip install 'lethe-vault[mcp]'
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
        await lethe.call_tool("remember", {
            "subject_id": "customer-1001", "kind": "preference", "content": "Prefers email",
            "provenance": {"source_type": "user_statement", "source_ref": "chat-7/turn-3"},
        })
        recalled = await lethe.call_tool("recall", {"query": "email", "subject_id": "customer-1001"})
        print([item["content"] for item in recalled.structured_content["items"]])


asyncio.run(main())
