"""``/docs`` (Swagger UI) and ``/redoc`` served from files installed with Lethe, never a CDN.

Deployments of a privacy vault rarely reach the internet, and FastAPI's default pages
load their scripts from a CDN (and ReDoc its fonts from Google): offline they are blank.
The assets come from the ``fastapi-offline`` wheel (Swagger UI, Apache-2.0; ReDoc, MIT),
served under ``/static/docs``; the validator badge, which would call swagger.io, is off,
and a Content-Security-Policy keeps the pages from loading anything from another origin.

Exceptions: none; a missing asset is a 404 from ``StaticFiles``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/static/docs"
# ReDoc's bundle draws its vendor's logo from a CDN in every page's corner (no option turns it
# off): the CSP blocked it, and each load logged a refused request. The bundle is served with
# that address replaced by an empty inline image.
REDOC_JS_URL = "/static/redoc-offline.js"
REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = b"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"
# The pages may load nothing from elsewhere: ReDoc's attribution would otherwise fetch a
# logo from its vendor. Both need inline script and style, and ReDoc a worker from a blob.
DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; worker-src 'self' blob:; connect-src 'self'; font-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'"
)


def assets_dir() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


def install_docs(app: FastAPI, openapi_url: str = "/openapi.json") -> None:
    """Mount the assets and add ``/docs``, its OAuth2 redirect page and ``/redoc`` (not in the schema)."""
    app.mount(ASSETS_URL, StaticFiles(directory=assets_dir()), name="docs-assets")
    redirect_url = "/docs/oauth2-redirect"
    redoc_js: list[bytes] = []  # read on first use: most processes never serve /redoc

    @app.get(REDOC_JS_URL, include_in_schema=False)
    def redoc_bundle() -> Response:
        if not redoc_js:
            redoc_js.append(
                (assets_dir() / "redoc.standalone.js").read_bytes().replace(REDOC_LOGO, EMPTY_IMAGE)
            )
        return Response(redoc_js[0], media_type="text/javascript", headers={"Cache-Control": "max-age=3600"})

    @app.get("/docs", include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _confined(
            get_swagger_ui_html(
                openapi_url=f"{root}{openapi_url}",
                title=f"{app.title} - Swagger UI",
                oauth2_redirect_url=f"{root}{redirect_url}",
                swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
                swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
                swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
                swagger_ui_parameters={"validatorUrl": None},
            )
        )

    @app.get(redirect_url, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _confined(
            get_redoc_html(
                openapi_url=f"{root}{openapi_url}",
                title=f"{app.title} - ReDoc",
                redoc_js_url=f"{root}{REDOC_JS_URL}",
                redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
                with_google_fonts=False,
            )
        )


def _confined(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = DOCS_CSP
    return page
