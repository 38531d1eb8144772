"""A real ``lethe serve`` and Debian's headless Chromium, driven by Playwright for Python.

One server per session (SQLite, the local KMS, a fast erasure runner) with a named token
per role, minted over HTTP by the first-run admin token. Each test gets a fresh browser
context (its own cookies) on one Chromium started with a fresh profile; every request a
page makes is recorded, and a test fails if any went anywhere but the server.

Chromium comes from Debian (``scripts/test.sh`` installs it): Playwright's own browser
download is not reachable from here. Without it the browser tests skip, except under CI,
where they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_serve import Server, start_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# ReDoc's attribution asks its vendor's CDN for a logo; the /redoc page's CSP refuses it unsent.
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
ROLES = {
    "privacy_officer": {
        "role": "privacy_officer",
        "display_name": "Dana Officer",
        "email": "dana@example.org",
    },
    "reviewer": {"role": "reviewer", "display_name": "Rui Reviewer"},
    "auditor": {"role": "auditor", "display_name": "Ada Auditor"},
    "agent": {"role": "agent", "agent_id": "support-bot", "purposes": ["support"]},
}


@dataclass
class Console:
    """The running server, a token per role, and an HTTP client for setting scenes up."""

    server: Server
    tokens: dict[str, str]

    @property
    def url(self) -> str:
        return self.server.url

    def http(self, role: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, timeout=30, headers={"Authorization": f"Bearer {self.tokens[role]}"}
        )


@pytest.fixture(scope="package")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    tmp = tmp_path_factory.mktemp("console")
    env = {"LETHE_ERASURE_INTERVAL_SECONDS": "0.3", "LETHE_RATE_LIMIT": "100000/minute"}
    server = start_server(tmp, env)
    try:
        tokens = {"admin": server.first_admin_token()}
        with httpx.Client(
            base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {tokens['admin']}"}
        ) as h:
            for name, body in ROLES.items():
                r = h.post("/v1/admin/tokens", json=body)
                assert r.status_code == 201, r.text
                tokens[name] = r.json()["token"]
        yield Console(server, tokens)
    finally:
        server.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: scripts/test.sh installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # launch() gives Chromium a fresh temporary profile (user-data dir) and removes it after.
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class Visit:
    """A browser context on the console, and every URL its pages requested."""

    context: Any
    page: Any
    base: str
    requested: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # refused by the page's CSP: never sent

    def go(self, path: str) -> Any:
        return self.page.goto(self.base + path)

    def sign_in(self, token: str) -> None:
        self.go("/console/sign-in")
        self.page.get_by_label("Token").fill(token)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.wait_for_load_state()

    def outside(self) -> list[str]:
        local = (self.base + "/", "blob:" + self.base + "/", "data:", "about:")
        return [u for u in self.requested if not u.startswith(local) and u not in self.blocked]


@pytest.fixture
def visit(browser: Any, console: Console) -> Iterator[Visit]:
    """A fresh context (no cookies); afterwards, no page may have reached past the server."""
    context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    v = Visit(context, context.new_page(), console.url)
    context.on("request", lambda request: v.requested.append(request.url))
    context.on("requestfailed", lambda r: v.blocked.append(r.url) if r.failure == "csp" else None)
    yield v
    context.close()
    assert v.requested, "the test made no request"
    assert v.outside() == [], f"requests outside the server: {v.outside()}"
    tried = [u for u in v.blocked if u != REDOC_LOGO]
    assert tried == [], f"the pages tried to load (their CSP refused): {tried}"


def screenshot_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "docs" / "console"
