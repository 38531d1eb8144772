"""The ``residue_hunted`` erasure step: runs the residue hunt (``erasure.residue``) for a
request with identifiers attached, after ``verified`` and before the certificate.

Its evidence (in the step's audit event and the certificate) holds counts and the found
memories' ids, never an identifier or a term hash. A request without identifiers has no
such step (``StepSpec.applies``: ``has_identifiers``), so its certificate is as before.

Exceptions: none of its own (a database failure surfaces as ``StoreUnavailable``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from lethe.vault.erasure import residue
from lethe.vault.erasure.model import ErasureJob
from lethe.vault.erasure.steps import StepContext


def has_identifiers(conn: Connection, job: ErasureJob) -> bool:
    return residue.load(conn, job.id) is not None


def hunt_residue(ctx: StepContext, conn: Connection | None) -> dict[str, Any]:
    assert conn is not None
    attached = residue.load(conn, ctx.job.id)
    assert attached is not None  # the step applies only then
    return residue.act(conn, ctx.deps.log, ctx.job, attached, ctx.deps.clock())
