"""A KMS that refuses to destroy a key, past the window Lethe gives it.

A KMS that cannot be reached is an outage: the job waits in ``key_destruction_pending``
and the runner asks again on every pass, for as long as it takes (nothing is claimed
meanwhile). A KMS that answers and says no (its policy denies the delete, it rejects the
request, it leaves the key usable) is a refusal: the runner asks again on every pass
until the *refusal window* (``LETHE_ERASURE_KMS_REFUSAL_WINDOW_SECONDS``, seven days by
default) has passed since the key's destruction became due (the ``derived_purged``
step). A refusal past the window is final: the ``key_destroyed`` step records each
refused generation under ``refused`` (no receipt, as nothing was destroyed), the
``verified`` step probes it and says so, and the job ends in a certificate whose
``result`` is ``partial`` naming each refused generation: the final certificate of the
request, as Lethe stops asking.

Exceptions: none.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from lethe.vault.audit.step_names import Step
from lethe.vault.clock import iso
from lethe.vault.erasure.model import ErasureJob

REFUSAL_WINDOW = timedelta(days=7)


def due_since(job: ErasureJob) -> datetime:
    """When the key's destruction became due: the step before it completed."""
    step = next((s for s in job.steps if s.step == Step.DERIVED_PURGED), None)
    return step.completed_at if step is not None else job.received_at


def window_closed(job: ErasureJob, now: datetime, window: timedelta) -> bool:
    """True once a refusal is final: the window since the destruction became due has passed."""
    return now >= due_since(job) + window


def refusal(
    *,
    generation: int,
    key_ref: str,
    backend: str,
    error: str,
    job: ErasureJob,
    now: datetime,
    window: timedelta,
) -> dict[str, Any]:
    """The evidence of one refused generation (the KMS's error class, never its message:
    a message may carry names an auditor need not see)."""
    return {
        "generation": generation,
        "key_ref": key_ref,
        "backend": backend,
        "error": error,
        "asked_since": iso(due_since(job)),
        "gave_up_at": iso(now),
        "window_seconds": int(window.total_seconds()),
    }


def refused_generations(job: ErasureJob) -> set[int]:
    """Generations whose destruction the KMS refused past the window (key_destroyed evidence)."""
    for step in job.steps:
        if step.step == Step.KEY_DESTROYED:
            return {r["generation"] for r in step.evidence.get("refused", []) if isinstance(r, dict)}
    return set()
