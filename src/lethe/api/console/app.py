"""The console application, mounted at ``/console`` inside the API's app.

Wiring: the sub-application gets the API app (``state.api``) for its container, token
service and rate limiters; every response carries a strict Content-Security-Policy (no
script at all, styles and images only from this server, forms only to it, no framing)
and ``Cache-Control: no-store``. Errors become HTML pages, not problem JSON: a missing or
expired session goes to the sign-in page, a core error shows its title and detail with
its HTTP status.

Sign-in exchanges a token for a session (``vault.access.sessions``): a token that is not
valid is charged to the client address like a failed API authentication, and a token
whose role may open no page (agent, operator) gets no session.

Exceptions: none escape; see the handlers in ``create_console``.
"""

from __future__ import annotations

import math
import secrets
from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, Form, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.base import RequestResponseEndpoint

from lethe.api.console import admin, auditor, officer, reviewer, webhooks
from lethe.api.console.pages import home_for, may_use_console
from lethe.api.console.render import page
from lethe.api.console.session import (
    PRE_SESSION_COOKIE,
    SESSION_COOKIE,
    Act,
    SignInRequired,
    User,
    api_state,
    clear_cookie,
    container,
    current_user,
    refuse_role,
    set_cookie,
    signed_in_form,
)
from lethe.api.http.auth import client_address
from lethe.api.http.problems import ApiProblem
from lethe.vault.errors import Unauthenticated, VaultError

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
STATIC = Path(__file__).parent / "static"


def mount_console(app: FastAPI) -> None:
    """Serve the console at ``/console`` (``/console`` itself redirects to its home)."""
    console = create_console(app)

    @app.get("/console", include_in_schema=False)
    def console_root() -> RedirectResponse:
        return RedirectResponse("/console/", status_code=307)

    app.mount("/console", console, name="console")


def _signed_in_or_none(request: Request) -> User | None:
    try:
        return current_user(request)
    except (SignInRequired, VaultError):
        return None


def create_console(api: FastAPI) -> FastAPI:
    console = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    console.state.api = api

    @console.middleware("http")
    async def security_headers(request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @console.exception_handler(SignInRequired)
    async def _sign_in(request: Request, exc: SignInRequired) -> Response:
        response = RedirectResponse("/console/sign-in", status_code=303)
        if SESSION_COOKIE in request.cookies:
            clear_cookie(request, response, SESSION_COOKIE)
        return response

    @console.exception_handler(VaultError)
    async def _vault(request: Request, exc: VaultError) -> Response:
        return page(
            request, _signed_in_or_none(request), "error.html", exc.status, title=exc.title, detail=exc.detail
        )

    @console.exception_handler(ApiProblem)
    async def _api(request: Request, exc: ApiProblem) -> Response:
        response = page(request, None, "error.html", exc.status, title=exc.title, detail=exc.detail)
        response.headers.update(exc.headers or {})
        return response

    @console.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        fields = ", ".join(str(e.get("loc", ["?"])[-1]) for e in exc.errors())
        detail = f"these fields are missing or not valid: {fields}"
        return page(
            request, _signed_in_or_none(request), "error.html", 422, title="Invalid form", detail=detail
        )

    @console.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        title = "Not found" if exc.status_code == 404 else "Refused"
        detail = "there is no such page" if exc.status_code == 404 else str(exc.detail)
        return page(
            request, _signed_in_or_none(request), "error.html", exc.status_code, title=title, detail=detail
        )

    console.mount("/static", StaticFiles(directory=STATIC), name="console-static")

    @console.get("/")
    def home(request: Request) -> RedirectResponse:
        user = current_user(request)
        return RedirectResponse(home_for(user.caller.role), status_code=303)

    @console.get("/sign-in")
    def sign_in_form(request: Request) -> Response:
        if _signed_in_or_none(request) is not None:
            return RedirectResponse("/console/", status_code=303)
        return _sign_in_page(request)

    @console.post("/sign-in")
    def sign_in(
        request: Request,
        token: Annotated[str, Form(max_length=200)] = "",
        csrf_token: Annotated[str, Form(max_length=200)] = "",
    ) -> Response:
        expected = request.cookies.get(PRE_SESSION_COOKIE, "")
        if not expected or not secrets.compare_digest(csrf_token, expected):
            return _sign_in_page(request, 403, "The form expired or did not come from this page; try again.")
        state = api_state(request)
        address = client_address(request)
        if not state.tokens.accepted(token.strip()):
            state.auth_failure_limiter.check(address)  # 429 past the limit, before any lookup
        try:
            caller = state.tokens.authenticate(token.strip())
        except Unauthenticated:
            state.auth_failure_limiter.charge(address)
            return _sign_in_page(request, 401, "That token is not valid (unknown, expired or revoked).")
        if not may_use_console(caller.role):
            raise refuse_role(caller)
        session_id = container(request).sessions.open(caller)
        response = RedirectResponse("/console/", status_code=303)
        max_age = math.ceil(state.settings.console_session_max_seconds)  # 0 would delete the cookie
        set_cookie(request, response, SESSION_COOKIE, session_id, max_age)
        clear_cookie(request, response, PRE_SESSION_COOKIE)
        return response

    @console.post("/sign-out")
    async def sign_out(request: Request, act: Annotated[Act, Depends(signed_in_form)]) -> Response:
        container(request).sessions.close(act.user.session_id)
        response = RedirectResponse("/console/sign-in", status_code=303)
        clear_cookie(request, response, SESSION_COOKIE)
        return response

    for module in (officer, reviewer, auditor, admin, webhooks):
        console.include_router(module.router)
    return console


def _sign_in_page(request: Request, status: int = 200, error: str | None = None) -> Response:
    pre = secrets.token_urlsafe(32)
    response = page(request, None, "sign_in.html", status, pre_csrf=pre, error=error)
    set_cookie(request, response, PRE_SESSION_COOKIE, pre, 3600)
    return response
