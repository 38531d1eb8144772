"""The erasure pipeline, declared once: every step of a job in order, how the runner treats
each, and the work after each pass of the runner.

received -> tombstoned -> derived_purged -> key_destroyed -> verified -> residue_hunted
(only for requests with identifiers attached) -> compacted -> reported. A legal hold is
checked before ``tombstoned``, the first step that destroys anything; a job whose
``key_destroyed`` cannot finish (a KMS outage) waits in ``key_destruction_pending``; a job
is complete at the last step it has. The runner (``ErasureService``) reads these from the
steps (``StepSpec``), never from their names.

The work of ``compacted`` and ``reported`` comes from the modules that own it (a
``Compactor``; the certificate issuer, injected by the composition root so this package
needs nothing above it); without them the pipeline ends after ``residue_hunted`` (the
bench's "core steps only" and unit tests).

Exceptions: ``ValueError`` from ``Pipeline`` for steps out of the declared order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lethe.vault.audit.step_names import Step
from lethe.vault.erasure.compaction import Compactor
from lethe.vault.erasure.compaction_step import compaction_work
from lethe.vault.erasure.model import KEY_PENDING
from lethe.vault.erasure.residue_step import has_identifiers, hunt_residue
from lethe.vault.erasure.steps import (
    StepFn,
    StepSpec,
    destroy_keys,
    probe_and_verify,
    purge_summaries,
    tombstone,
)

# Every step a job can run, in the order it runs them (``received`` is recorded on filing,
# ``key_irrecoverable`` after the certificate, when a KMS's waiting window closes).
ORDER: tuple[Step, ...] = (
    Step.TOMBSTONED,
    Step.DERIVED_PURGED,
    Step.KEY_DESTROYED,
    Step.VERIFIED,
    Step.RESIDUE_HUNTED,
    Step.COMPACTED,
    Step.REPORTED,
)


@dataclass(frozen=True)
class Pipeline:
    """The steps a job runs, in order, and the work the runner does after each pass over
    the jobs (e.g. issuing final certificates when a KMS's waiting window closes)."""

    steps: tuple[StepSpec, ...]
    after_run: tuple[Callable[[], object], ...] = ()

    def __post_init__(self) -> None:
        positions = [ORDER.index(s.name) for s in self.steps]
        if positions != sorted(set(positions)):
            raise ValueError("erasure steps out of the declared order, or repeated")

    @property
    def names(self) -> tuple[Step, ...]:
        return tuple(s.name for s in self.steps)

    @property
    def final_step(self) -> Step:
        """The last step every job has (the residue hunt is not one)."""
        return next(s.name for s in reversed(self.steps) if s.applies is None)


def core_steps() -> tuple[StepSpec, ...]:
    """tombstoned -> derived_purged -> key_destroyed -> verified -> residue_hunted."""
    return (
        StepSpec(Step.TOMBSTONED, tombstone, checks_holds=True),
        StepSpec(Step.DERIVED_PURGED, purge_summaries),
        StepSpec(Step.KEY_DESTROYED, destroy_keys, transactional=False, waiting_status=KEY_PENDING),
        StepSpec(Step.VERIFIED, probe_and_verify),
        StepSpec(Step.RESIDUE_HUNTED, hunt_residue, applies=has_identifiers),
    )


def erasure_pipeline(
    compactor: Compactor | None = None,
    certify: StepFn | None = None,
    after_run: Sequence[Callable[[], object]] = (),
) -> Pipeline:
    """The whole pipeline: the core steps, then ``compacted`` (with a ``compactor``) and
    ``reported`` (with ``certify``, the certificate issuer's step work), both outside a
    transaction (they take their own: compaction in batches, the log's signing lock)."""
    steps = list(core_steps())
    if compactor is not None:
        steps.append(StepSpec(Step.COMPACTED, compaction_work(compactor), transactional=False))
    if certify is not None:
        steps.append(StepSpec(Step.REPORTED, certify, transactional=False))
    return Pipeline(tuple(steps), tuple(after_run))
