"""Who is signed in: the session cookie, the caller behind it, and the CSRF check.

Every console request resolves its caller the same way: the session cookie names a row
of ``console_sessions`` (``vault.access.sessions``), the row names a token id, and the
token row, read again on every request, gives the ``Caller`` (so revoking a token ends
its sessions at once). The page's API route then decides, through ``api.http.auth.permit``
(the API's own check and rate limit), whether that caller may see it or act.

Cookies: ``lethe_console`` (the session id) and, before sign-in, ``lethe_console_pre``
(the sign-in form's double-submit CSRF value); both HttpOnly, SameSite=Strict, path
``/console``, and Secure when the request came over TLS. Each form of a signed-in page
carries the session's CSRF token (``csrf_token``); a POST without the right one is refused
before anything is read or changed.

Exceptions: ``SignInRequired`` (the handler redirects to the sign-in page),
``OutOfScope`` (403) and ``ApiProblem`` (429) from ``permit``, ``CsrfRefused`` (403).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request
from starlette.datastructures import FormData, State
from starlette.responses import Response

from lethe.api.bootstrap import Container
from lethe.api.http.auth import permit
from lethe.api.http.logging import request_context
from lethe.vault.access.sessions import csrf_token
from lethe.vault.errors import OutOfScope, Unauthenticated, VaultError
from lethe.vault.model import Caller

SESSION_COOKIE = "lethe_console"
PRE_SESSION_COOKIE = "lethe_console_pre"
COOKIE_PATH = "/console"


class SignInRequired(Exception):
    """No live session: the browser is sent to the sign-in page."""


class CsrfRefused(VaultError):
    status = 403
    title = "Form refused"


@dataclass(frozen=True)
class User:
    """The signed-in person: their caller (scope from the token), name and CSRF token."""

    caller: Caller
    name: str
    session_id: str

    @property
    def csrf(self) -> str:
        return csrf_token(self.session_id)


def api_state(request: Request) -> State:
    """The main app's state (the console is mounted as a sub-application)."""
    state: State = request.app.state.api.state
    return state


def container(request: Request) -> Container:
    c: Container = api_state(request).container
    return c


def current_user(request: Request) -> User:
    """The signed-in user, or ``SignInRequired``; no role check (see ``viewing``/``acting``)."""
    c = container(request)
    session_id = request.cookies.get(SESSION_COOKIE)
    try:
        session = c.sessions.resume(session_id)
        caller = c.tokens.caller_by_id(session.token_id)
    except Unauthenticated:
        raise SignInRequired from None
    ctx = request_context(request.scope)
    if ctx is not None:
        ctx.token_id = caller.principal
    info = c.tokens.info(caller.principal)
    name = info.display_name or f"{caller.role.value} {caller.principal[:8]}"
    assert session_id is not None  # resume refused a missing id
    return User(caller, name, session_id)


def viewing(route: str) -> Callable[[Request], User]:
    """A dependency for a page that shows what the API route ``route`` would return."""

    def dependency(request: Request) -> User:
        user = current_user(request)
        permit(api_state(request), user.caller, route)
        return user

    return dependency


@dataclass(frozen=True)
class Act:
    """A checked form post: who acts and the fields they sent."""

    user: User
    form: FormData

    def text(self, name: str) -> str | None:
        """A field's trimmed text, or None when absent or blank."""
        value = self.form.get(name)
        if not isinstance(value, str):
            return None
        value = value.strip()
        return value or None


def acting(route: str) -> Callable[[Request], Awaitable[Act]]:
    """A dependency for a form post that does what the API route ``route`` does: the
    session, the role, then the CSRF token are checked before the handler runs."""

    async def dependency(request: Request) -> Act:
        act = await signed_in_form(request)
        permit(api_state(request), act.user.caller, route)
        return act

    return dependency


async def signed_in_form(request: Request) -> Act:
    """A form post by a signed-in user carrying the session's CSRF token (any role: sign-out)."""
    user = current_user(request)
    form = await request.form()
    sent = form.get("csrf_token")
    if not isinstance(sent, str) or not hmac.compare_digest(sent, user.csrf):
        raise CsrfRefused("the form had no valid CSRF token; reload the page and try again")
    return Act(user, form)


def set_cookie(request: Request, response: Response, name: str, value: str, max_age: int | None) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def clear_cookie(request: Request, response: Response, name: str) -> None:
    response.delete_cookie(
        name, path=COOKIE_PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


def refuse_role(caller: Caller) -> OutOfScope:
    return OutOfScope(f"a {caller.role.value} token cannot use the console")
