"""RFC 9457 problem details: the one shape of every error the HTTP API returns.

Core errors (``VaultError``) carry their own status, title and detail; request
validation errors become a 422 listing the failing fields without echoing what was
sent (it may be memory content or a subject id); Starlette's HTTP errors (unknown
route, wrong method) keep their status. Anything else is a 500 whose body and log say
nothing about the request.

Exceptions: ``ApiProblem`` is raised by api/ code for errors that are about HTTP rather
than the vault (body too large, rate limited); it is rendered like any other problem.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from lethe.api.http.metrics import Metrics
from lethe.vault.errors import VaultError

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger("lethe.api")


class FieldError(BaseModel):
    loc: list[str | int] = Field(description="Where in the request the error is, e.g. ['body', 'kind'].")
    msg: str
    type: str


class Problem(BaseModel):
    """RFC 9457 problem details (``application/problem+json``)."""

    type: str = Field(description="A URI naming the kind of problem.")
    title: str
    status: int
    detail: str
    instance: str = Field(description="The path of the request that failed.")
    errors: list[FieldError] | None = Field(default=None, description="Field errors, for status 422.")
    forbidden_class: str | None = Field(
        default=None,
        description="The data policy's class the write's text falls in (422); never the text.",
    )


class ApiProblem(Exception):
    """An HTTP-level error raised in api/ (not a vault error)."""

    def __init__(
        self, status: int, title: str, detail: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.headers = dict(headers or {})


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "error"


def problem_response(
    status: int,
    title: str,
    detail: str,
    instance: str,
    *,
    errors: Sequence[dict[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": f"urn:lethe:problem:{_slug(title)}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": instance,
        **(extensions or {}),
    }
    if errors is not None:
        body["errors"] = list(errors)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=dict(headers or {}))


def _auth_headers(status: int, invalid: bool) -> dict[str, str]:
    if status != 401:
        return {}
    return {"WWW-Authenticate": 'Bearer error="invalid_token"' if invalid else "Bearer"}


def field_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """Pydantic errors reduced to location, message and type: never the input or its context."""
    out = []
    for e in errors:
        loc = [p if isinstance(p, int) else str(p) for p in e.get("loc", ())]
        out.append({"loc": loc, "msg": str(e.get("msg", "invalid")), "type": str(e.get("type", "invalid"))})
    return out


def install(app: FastAPI, metrics: Metrics) -> None:
    """Register the handlers that turn every error into a problem response (conflicts counted)."""

    @app.exception_handler(VaultError)
    async def _vault(request: Request, exc: VaultError) -> JSONResponse:
        metrics.count_problem(exc)
        invalid = request.headers.get("authorization") is not None
        return problem_response(
            exc.status,
            exc.title,
            exc.detail,
            request.url.path,
            headers=_auth_headers(exc.status, invalid),
            extensions=exc.extensions(),
        )

    @app.exception_handler(ApiProblem)
    async def _api(request: Request, exc: ApiProblem) -> JSONResponse:
        return problem_response(exc.status, exc.title, exc.detail, request.url.path, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = field_errors(exc.errors())
        if any(e["type"] == "json_invalid" for e in errors):
            title, detail = "Malformed JSON", "the request body is not valid JSON"
        else:
            title, detail = "Invalid request", f"{len(errors)} field error(s); see 'errors'"
        return problem_response(422, title, detail, request.url.path, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and isinstance(exc.__cause__, ValueError):
            # FastAPI's 400 for a body that is not even text (UnicodeDecodeError): malformed JSON.
            errors = [{"loc": ["body"], "msg": "the body is not UTF-8 JSON", "type": "json_invalid"}]
            return problem_response(
                422, "Malformed JSON", "the request body is not valid JSON", request.url.path, errors=errors
            )
        try:
            phrase = HTTPStatus(exc.status_code).phrase
        except ValueError:
            phrase = "Error"
        detail = exc.detail if isinstance(exc.detail, str) else phrase
        if exc.status_code == 404:
            detail = "no such resource"
        return problem_response(exc.status_code, phrase, detail, request.url.path, headers=exc.headers)


def problem_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the given error statuses (problem+json)."""
    descriptions = {
        400: "Bad request",
        401: "Missing, unknown, expired or revoked bearer token",
        403: "The token's role or scope does not allow this",
        404: "Unknown, or another tenant's (indistinguishable)",
        409: "Conflict: version, legal hold, erasure fence or idempotency key reuse",
        413: "Request body too large",
        422: "Invalid request",
        429: "Rate limited; see Retry-After",
        503: "Database or KMS unavailable",
    }
    ref = {"$ref": "#/components/schemas/Problem"}
    content = {PROBLEM_JSON: {"schema": ref}}
    return {c: {"description": descriptions.get(c, HTTPStatus(c).phrase), "content": content} for c in codes}
