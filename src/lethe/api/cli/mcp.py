"""``lethe mcp``: serve the MCP tools over stdio (see ``api.server.stdio``)."""

from __future__ import annotations

import os

import anyio
import typer

from lethe.api.cli.common import ExitCode, fail, load_settings
from lethe.vault.errors import VaultError
from lethe.vault.model import SourceType

app = typer.Typer()


@app.command()
def mcp(
    user_channel: SourceType | None = typer.Option(
        None,
        "--user-channel",
        help="Serve a user channel: every memory the model stores is recorded as this source type "
        "(the token must be allowed to assert it). Default (or LETHE_MCP_USER_CHANNEL): what the "
        "model stores is its own inference, quarantined until a reviewer promotes it.",
    ),
) -> None:
    """Serve Lethe's MCP tools over stdio for a desktop host; the token is read from LETHE_TOKEN."""
    token = os.environ.get("LETHE_TOKEN", "")
    if not token:
        fail("set LETHE_TOKEN to the agent's (or officer's, or auditor's) Lethe token", ExitCode.SETUP)
    try:
        from lethe.api.server.stdio import serve_stdio
    except ImportError:
        fail("the MCP SDK is not installed: install the mcp extra (docs/agents.md)", ExitCode.SETUP)
    from lethe.api.http.logging import configure_logging

    settings = load_settings()
    if user_channel is not None:
        settings = settings.model_copy(update={"mcp_user_channel": user_channel})
    configure_logging(settings.log_level)  # JSON on stderr: stdout is the protocol's
    try:
        refusal = anyio.run(serve_stdio, settings, token)
    except VaultError as exc:
        fail(f"{exc.title}: {exc.detail}", ExitCode.SETUP)
    if refusal is not None:
        fail(refusal, ExitCode.SETUP)
