"""Structured JSON logs: one line per request, and nothing a log should not hold.

A request line carries method, route *template* (``/v1/memories/{memory_id}``, never
the raw path or query string), status, duration, request id and token id. Content,
subject ids and tokens are never logged: they are not in the request line, exception
messages (which could quote them) are reduced to the exception type and its frames,
and uvicorn's access log (which prints raw paths) is switched off.

``RequestContextMiddleware`` is the outermost layer: it assigns the request id, writes
the request line, and turns an exception that escaped every handler into a bare 500
problem so no server component prints its message. A request whose client hung up before
it was answered (mid-body, say) is logged with status 499, "client closed request", not
500 (tests/api/test_connection_limits.py).

Exceptions: none raised; errors are logged by type only.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
import traceback
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lethe.api.http.problems import problem_response

ACCESS = logging.getLogger("lethe.access")
log = logging.getLogger("lethe.api")

SCOPE_KEY = "lethe.request"
# The status an access line gives a request whose client hung up before it was answered
# (nginx's "client closed request"): not a 5xx, which would page someone for a client's act.
CLIENT_CLOSED = 499
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")
# Only these record attributes are copied into a line: a stray ``extra`` cannot leak.
FIELDS = (
    "method",
    "route",
    "status",
    "duration_ms",
    "request_id",
    "token_id",
    "task",
    "error",
    "count",
    "remaining",
    "url",
)


class JsonFormatter(logging.Formatter):
    """One JSON object per line; exception messages dropped, types and frames kept."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            # SQLAlchemy's arguments can be statement parameters: keep its template only.
            "msg": record.msg if record.name.startswith("sqlalchemy") else record.getMessage(),
        }
        for name in FIELDS:
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line["exc_type"] = type(exc).__name__
            frames = traceback.extract_tb(exc.__traceback__)[-8:]
            line["exc_frames"] = [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}:{f.name}" for f in frames]
        return json.dumps(line, default=str)


def configure_logging(level: str = "INFO") -> None:
    """Route every logger (ours and uvicorn's) to one JSON handler on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
    access = logging.getLogger("uvicorn.access")  # prints raw paths and query strings
    access.handlers.clear()
    access.propagate = False
    access.disabled = True


@dataclass
class RequestContext:
    """Per-request facts the outer middleware logs; auth fills in ``token_id``."""

    request_id: str
    token_id: str | None = None
    client_closed: bool = False  # the client hung up before the request was answered


def request_context(scope: Scope) -> RequestContext | None:
    return scope.get(SCOPE_KEY)


def _incoming_request_id(scope: Scope) -> str:
    for k, v in scope.get("headers", ()):
        if k == b"x-request-id":
            value = v.decode("latin-1")
            if _REQUEST_ID.match(value):
                return value
    return uuid.uuid4().hex


class RequestContextMiddleware:
    """Request id, one access line per request, and a last-resort 500 problem."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ctx = RequestContext(_incoming_request_id(scope))
        scope[SCOPE_KEY] = ctx
        status: int | None = None  # no response sent: the client hung up, or an error
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", ctx.request_id.encode())]
            await send(message)

        start = time.perf_counter()
        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            log.error("unhandled error", exc_info=exc, extra={"request_id": ctx.request_id})
            status = status or 500
            if not started:
                response = problem_response(
                    500, "Internal error", "the server could not complete the request", scope.get("path", "")
                )
                await response(scope, receive, send_with_id)
        finally:
            route = scope.get("route")
            ACCESS.info(
                "request",
                extra={
                    "method": scope.get("method"),
                    "route": getattr(route, "path", None),
                    "status": status or (CLIENT_CLOSED if ctx.client_closed else 500),
                    "duration_ms": round((time.perf_counter() - start) * 1000, 3),
                    "request_id": ctx.request_id,
                    "token_id": ctx.token_id,
                },
            )
