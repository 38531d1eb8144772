"""Agent sessions: an agent marks its own session tainted (``vault.memory.agent_sessions``).

Exceptions: core errors propagate to the problem handlers (see ``vault.errors``).
"""

from __future__ import annotations

from fastapi import APIRouter

from lethe.api.http.auth import CallerDep
from lethe.api.http.problems import problem_responses
from lethe.api.http.routes.deps import ContainerDep, SessionId
from lethe.api.http.schemas.sessions import SessionOut, TaintIn

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


@router.post(
    "/{session_id}/taint",
    name="taint_session",
    response_model=SessionOut,
    responses=problem_responses(401, 403, 413, 422, 429, 503),
)
def taint_session(
    session_id: SessionId, body: TaintIn, caller: CallerDep, container: ContainerDep
) -> SessionOut:
    """Mark the caller's session tainted: its later writes are quarantined whatever their source.
    The session is the caller's own (another agent's same id is another session)."""
    return SessionOut.from_domain(container.agent_sessions.mark(caller, session_id, body.reason))
