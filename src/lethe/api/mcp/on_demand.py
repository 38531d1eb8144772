"""``/mcp`` loaded on its first request: a node that no agent reaches over MCP never
imports the MCP SDK, which is about 20 MiB of every server process and 0.4 s of its start.

The paths (``/mcp`` and the RFC 9728 metadata) are routed from the start; the first
request to any of them imports ``api.mcp.http`` (in a worker thread, so the event loop
goes on serving), builds the server and starts its session manager in the app's lifespan.
Every later request goes straight to the SDK's routes. If the SDK is found but cannot be
loaded or started (a broken install), every request to those paths is a 503 problem until
the node restarts, and the cause is logged once: the rest of the API is unaffected.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import TaskGroup, TaskStatus
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from lethe.api.http.problems import ApiProblem
from lethe.api.settings import Settings

PATH = "/mcp"
METADATA = "/.well-known/oauth-protected-resource"
log = logging.getLogger("lethe.api")


def sdk_installed() -> bool:
    """Whether the MCP SDK (``lethe-vault[mcp]``) can be imported, without importing it."""
    return importlib.util.find_spec("mcp") is not None


def public_url(settings: Settings) -> str:
    """The URL clients reach the server at (``LETHE_PUBLIC_URL``), without a trailing slash."""
    return (settings.public_url or "http://127.0.0.1:8080").rstrip("/")


class OnDemandMcp:
    """Routes ``/mcp`` and its metadata to the SDK, loaded and started on first use."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        # RFC 9728 §3.1: the metadata of <public>/mcp lives at /.well-known/...<its path>
        self.paths = [PATH, METADATA + urlsplit(public_url(settings) + PATH).path, METADATA]
        self._routes: dict[str, Route] | None = None
        self._tasks: TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._failed = False

    def install(self) -> None:
        """Route the paths here (added last, as the SDK's own routes were)."""
        for path in self.paths:
            self.app.router.routes.append(Route(path, endpoint=_Forward(self, path), include_in_schema=False))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The app's lifespan: a started MCP server is stopped, and built anew next run."""
        self._lock = anyio.Lock()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                self._routes = None
                self._failed = False
                tasks.cancel_scope.cancel()

    async def forward(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand a request for ``path`` to the SDK's route for it, loading the SDK first."""
        routes = self._routes if self._routes is not None else await self._load()
        if routes is None:
            raise ApiProblem(
                503, "MCP unavailable", "The MCP endpoint could not be started on this node; see its log."
            )
        await routes[path].handle(scope, receive, send)

    async def _load(self) -> dict[str, Route] | None:
        if self._tasks is None or self._lock is None:
            raise RuntimeError("/mcp is served only while the app runs (its lifespan)")
        async with self._lock:
            if self._routes is None and not self._failed:
                try:
                    self._routes = await self._start(self._tasks)
                except Exception:  # a broken install: say why once (an import's traceback), 503 after
                    self._failed = True
                    log.exception("MCP SDK failed to load; /mcp answers 503 until this node restarts")
            return self._routes

    async def _start(self, tasks: TaskGroup) -> dict[str, Route]:
        http = await anyio.to_thread.run_sync(importlib.import_module, "lethe.api.mcp.http")
        mount = http.build_mcp(self.app, self.settings)
        routes = {r.path: r for r in mount.routes}
        if set(routes) != set(self.paths):  # the SDK moved its metadata: fail loudly
            raise RuntimeError(f"MCP routes {sorted(routes)} are not {sorted(self.paths)}")
        await tasks.start(self._serve, mount)
        return routes

    @staticmethod
    async def _serve(mount: Any, *, task_status: TaskStatus[None]) -> None:
        async with mount.running():
            task_status.started()
            await anyio.sleep_forever()


class _Forward:
    """The ASGI app routed at one path (an object, so Starlette passes it every method)."""

    def __init__(self, mcp: OnDemandMcp, path: str) -> None:
        self.mcp = mcp
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.mcp.forward(self.path, scope, receive, send)
