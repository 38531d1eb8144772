"""MCP clients for the tests: the SDK's ``Client`` over Streamable HTTP or over stdio (``lethe mcp``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.api.conftest import Served
from tests.api.test_serve import lethe_command


@asynccontextmanager
async def over_http(url: str, token: str, extra: dict[str, str] | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}", **(extra or {})}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0))
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        yield client


@asynccontextmanager
async def over_stdio(served: Served, token: str, errlog: Path) -> AsyncIterator[Client]:
    """``lethe mcp`` as a desktop host spawns it: on the server's store, token in LETHE_TOKEN."""
    env = {k: v for k, v in served.server.env.items() if k.startswith("LETHE_")}
    command, *args = lethe_command()
    params = StdioServerParameters(command=command, args=[*args, "mcp"], env={**env, "LETHE_TOKEN": token})
    with errlog.open("a") as log:
        async with Client(stdio_client(params, errlog=log)) as client:
            yield client


def structured(result: Any) -> Any:
    """A tool result's structured content, failing the test with the error text if it failed."""
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def call(session: Client, tool: str, **arguments: Any) -> Any:
    """Call a tool that must succeed; its structured content."""
    return structured(await session.call_tool(tool, arguments))


def text_of(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def resource_json(result: Any) -> Any:
    return json.loads(result.contents[0].text)
