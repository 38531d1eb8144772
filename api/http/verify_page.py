"""``/verify``: the erasure certificate verifier that needs no install, one self-contained HTML file.

It runs ``lethe verify``'s checks (``vault.audit.verify``) in the browser with WebCrypto
(Ed25519, SHA-256, HMAC): canonical form, signature, the signed checkpoint, each step's
inclusion proof and logged event, step order, evidence, tenant and subject. It loads and
sends nothing (its own CSP says so), so an auditor can save it (``/verify?download=1``)
and open it from disk, offline. Served without authentication: it holds no data.

Exceptions: none.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

PAGE = Path(__file__).with_name("verify.html")
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)


def install_verifier(app: FastAPI) -> None:
    @app.get("/verify", include_in_schema=False)
    def verifier(download: bool = False) -> HTMLResponse:
        headers = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"}
        if download:
            headers["Content-Disposition"] = 'attachment; filename="lethe-verify.html"'
        return HTMLResponse(PAGE.read_text(encoding="utf-8"), headers=headers)
