"""The erasure job's ``compacted`` step: the subject's dead ciphertext removed, and shown gone.

Exceptions: ``StepFailed`` when ciphertext or sealed vectors are still found after
compaction, or the byte scan cannot run; the runner records it and retries.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from lethe.vault.audit.step_evidence import DerivedPurgedEvidence
from lethe.vault.audit.step_names import Step
from lethe.vault.erasure import vector_samples
from lethe.vault.erasure.compaction import CompactionResult, Compactor
from lethe.vault.erasure.compaction_repository import ErasedScope
from lethe.vault.erasure.steps import StepContext, StepFailed, StepFn


def compaction_work(compactor: Compactor) -> StepFn:
    """The work of the erasure job's ``compacted`` step (``erasure.pipeline``): remove the
    subject's dead ciphertext, show it is gone.

    The byte scan samples the ciphertext that is still there before compacting it; a second
    scan (``vector_scan``) looks for the sealed vectors the job's earlier steps removed
    (``erasure.vector_samples``). If
    none is left to sample (a crash after an earlier attempt compacted it), the evidence
    says the scan was not performed and why; the row check is complete either way.
    """

    def run(ctx: StepContext, _: Connection | None) -> dict[str, Any]:
        job = ctx.job
        purge = [s.evidence for s in job.steps if s.step == Step.DERIVED_PURGED]
        derived = (DerivedPurgedEvidence.from_dict(purge[0]).derived_ids or []) if purge else []
        scope = ErasedScope(job.tenant_id, job.subject_ref, tuple(derived))
        ever = compactor.ciphertext_events(scope)
        present = compactor.dead_ciphertexts(scope=scope)
        vectors = vector_samples.take(job.id) or []  # deleted earlier in this job, held in memory
        result = compactor.compact(
            only_forgotten=True,
            scope=scope,
            reclaim=True,
            scan_for=present or None,
            vacuum=None,
            vectors=vectors or None,
        )
        vector_scan = _vector_evidence(result, len(vectors))
        still = compactor.ciphertext_events(scope, still_held=True)
        if still or result.scan.get("slices_found") or result.scan.get("rows_still_holding_them"):
            raise StepFailed("dead ciphertext is still present in the store after compaction")
        if vector_scan.get("slices_found"):
            raise StepFailed("sealed vectors of the subject are still present in the store after compaction")
        evidence = result.evidence()
        evidence["row_check"] = {
            "events_that_held_ciphertext": ever,
            "events_still_holding_ciphertext": still,
        }
        evidence["vector_scan"] = vector_scan
        if present:
            evidence["scan"]["performed"] = True
        else:
            evidence["scan"] = {
                "performed": False,
                "reason": (
                    "the subject had no ciphertext in the store"
                    if not ever
                    else "no byte scan evidence: the ciphertext had already been removed before this "
                    "step could sample it (an earlier attempt compacted it and was interrupted); "
                    "the row check is complete"
                ),
            }
        return evidence

    return run


def _vector_evidence(result: CompactionResult, removed: int) -> dict[str, Any]:
    """The byte scan's findings for the sealed vectors this job removed (``erasure.vector_samples``)."""
    scan = result.scan.pop("vector_scan", None)
    if scan is None:
        return {
            "performed": False,
            "sealed_vectors": 0,
            "reason": "no sealed vectors were removed by this job in this process",
        }
    if result.reclaim.get("vacuum_after_scan_found"):
        scan["vacuum_after_scan_found"] = True
    return {"performed": True, "sealed_vectors": removed, **scan}
