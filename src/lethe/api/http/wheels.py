"""``/wheels/lethe_vault-<version>-py3-none-any.whl``: this server's own ``lethe-vault`` wheel.

Served without authentication (it holds code, no data), so an agent developer who has only
the server's address installs the client that matches it:
``pip install "lethe-vault[client] @ $LETHE/wheels/lethe_vault-<version>-py3-none-any.whl"``
(``api.client_wheel`` says why a direct URL and never the bare name).

Exceptions: none.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import Response

from lethe.api.client_wheel import ROUTE, served_wheel, wheel_name


def install_wheels(app: FastAPI) -> None:
    name = wheel_name()

    @app.get(f"{ROUTE}/{name}", include_in_schema=False)
    def client_wheel() -> Response:
        """The ``lethe-vault`` wheel (``pip install "lethe-vault[client] @ <this URL>"``)."""
        return Response(
            served_wheel(),
            media_type="application/zip",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )
