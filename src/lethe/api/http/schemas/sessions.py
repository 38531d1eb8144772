"""Agent sessions: the taint request, a session's state, a taint as reviewers and agents see it."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from lethe.api.http.schemas.common import Out, Strict
from lethe.vault.memory.agent_sessions import MAX_TAINT_REASON


class TaintIn(Strict):
    reason: str = Field(
        min_length=1,
        max_length=MAX_TAINT_REASON,
        description="Why the session is tainted; kept in clear beside its writes, so never memory content.",
    )


class SessionTaintOut(Out):
    """Why a session is tainted: ``wrote_web_page``/``wrote_tool_result`` (with the memory it
    wrote), ``served_untrusted`` (with the memory a search served it) or ``marked`` (with the
    caller's reason); never content."""

    cause: str
    tainted_at: datetime
    memory_id: str | None = None
    reason: str | None = None


class SessionOut(Out):
    """A session's state: tainted, why, and until when (its expiry moves with each write)."""

    session_id: str
    tainted: bool
    taint: SessionTaintOut | None
    expires_at: datetime | None
