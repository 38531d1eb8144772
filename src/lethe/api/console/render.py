"""Rendering console pages: one Jinja2 environment (autoescaped), the layout's context.

Exceptions: none of its own; a template error propagates (a bug, caught by the tests).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from lethe.api.console.pages import pages_for
from lethe.api.console.session import User, container
from lethe.vault.oversight.evidence_rows import evidence_rows

TEMPLATES = Path(__file__).parent / "templates"


def _when(value: datetime | str | None) -> str:
    """A timestamp as people read it: '2026-12-01 08:15 UTC'."""
    if value is None:
        return "-"
    if isinstance(value, str):
        written = value
        try:
            value = datetime.fromisoformat(written)
        except ValueError:
            return written
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _day(value: datetime | None) -> str:
    return "-" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d")


env = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
env.filters["when"] = _when
env.filters["day"] = _day
env.filters["words"] = lambda s: str(s).replace("_", " ")
env.filters["evidence_rows"] = evidence_rows
env.filters["pretty_json"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False)


def page(
    request: Request, user: User | None, template: str, status: int = 200, **context: Any
) -> HTMLResponse:
    """The template inside the layout, with the signed-in user's navigation and CSRF token."""
    nav = pages_for(user.caller.role) if user is not None else []
    html = env.get_template(template).render(
        user=user,
        nav=nav,
        path=request.url.path,
        csrf=user.csrf if user is not None else "",
        basis=container(request).erasure.legal_bases.words,  # people read a legal basis's words
        **context,
    )
    return HTMLResponse(html, status_code=status)
