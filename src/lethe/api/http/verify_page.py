"""``/verify``: the erasure certificate verifier that needs no install, one self-contained HTML file.

It runs ``lethe verify``'s checks (``vault.audit.verify``) in the browser with WebCrypto
(Ed25519, SHA-256, HMAC): canonical form, signature, the signed checkpoint, each step's
inclusion proof and logged event, step order, evidence, tenant and subject. It loads and
sends nothing (its own CSP says so), so an auditor can save it (``/verify?download=1``)
and open it from disk, offline. Served without authentication: it holds no data. Beside
it, ``/verify/lethe_verify-<version>-py3-none-any.whl`` is the command-line verifier as a
wheel of its own (``api.verifier_wheel``).

Exceptions: none.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

from lethe.api.verifier_wheel import NAME, build_wheel

PAGE = Path(__file__).with_name("verify.html")
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)


def install_verifier(app: FastAPI) -> None:
    @app.get(f"/verify/{NAME}", include_in_schema=False)
    def verifier_wheel() -> Response:
        """The ``lethe-verify`` wheel (``pip install`` it; needs cryptography and rfc8785 only)."""
        return Response(
            build_wheel(),
            media_type="application/zip",
            headers={"Content-Disposition": f'attachment; filename="{NAME}"'},
        )

    @app.get("/verify", include_in_schema=False)
    def verifier(download: bool = False) -> HTMLResponse:
        headers = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"}
        if download:
            headers["Content-Disposition"] = 'attachment; filename="lethe-verify.html"'
        return HTMLResponse(PAGE.read_text(encoding="utf-8"), headers=headers)
