"""The work of the core steps of an erasure job: tombstone, derived purge, key destruction,
verification.

A step does its work and returns its evidence; the runner (``ErasureService``) records
both. ``StepSpec`` is the shape every step takes: its name, its work and how the runner
treats it (a legal hold checked first, the status a job waits in when it fails); the whole
pipeline, these steps and those of other modules (``compaction_run``, the certificate's),
is declared in ``erasure.pipeline``. A step receives a ``StepContext``: the job as it
stands, the names of the job's steps in order, and ``StepDeps``, only what steps may use
(store, KMS, keyring, event log, clock), never the service itself.

Exceptions: ``StepFailed``, control flow only (see ``vault.errors``): a step raises it to
say "not now", and the runner records the message as the job's ``last_error``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.keys.key_copies import inventory
from lethe.keys.protocol import DestructionReceipt, KeyManager, KmsError, KmsUnavailable
from lethe.vault.audit.step_evidence import (
    DerivedPurgedEvidence,
    KeyDestroyedEvidence,
    TombstonedEvidence,
    VerifiedEvidence,
)
from lethe.vault.audit.step_names import Step
from lethe.vault.clock import iso
from lethe.vault.custody import plaintext_expiry
from lethe.vault.custody.keyring import DESTROYED, SubjectKeyring, key_name
from lethe.vault.erasure import refusals, vector_samples
from lethe.vault.erasure import repository as erasure_repo
from lethe.vault.erasure.forgetting import purge_derived, tombstone_subject
from lethe.vault.erasure.model import ERASURE_STEP, ErasureJob
from lethe.vault.memory import repository as memory_repo
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.tables import backups


class StepFailed(Exception):
    """A step could not finish now; the job keeps its status and the runner retries."""


@dataclass(frozen=True)
class StepDeps:
    """What erasure steps may use; built once by ``ErasureService`` from what it was given."""

    uow: UnitOfWork
    kms: KeyManager
    keyring: SubjectKeyring
    log: EventLog
    clock: Callable[[], datetime]
    refusal_window: timedelta = refusals.REFUSAL_WINDOW  # how long a KMS's refusal is asked again


@dataclass(frozen=True)
class StepContext:
    """What a step function gets: the job, its dependencies, and every step name in order."""

    job: ErasureJob
    deps: StepDeps
    step_names: tuple[Step, ...]


# A step does its work and returns its evidence. Steps that run inside one DB
# transaction get ``conn``; steps with outside effects (the KMS) get ``None`` and
# open their own transactions.
StepFn = Callable[[StepContext, Connection | None], dict[str, Any]]


@dataclass(frozen=True)
class StepSpec:
    """A step, as the runner treats it.

    ``applies`` (None: always) says whether a job has it at all (the residue hunt runs only
    for requests with identifiers attached). ``checks_holds``: a legal hold placed after the
    request blocks the job before this step runs (the first destructive one).
    ``waiting_status``: the status a job takes while this step cannot finish (None: it keeps
    the one it has), so a KMS outage shows as ``key_destruction_pending``.
    """

    name: Step
    run: StepFn
    transactional: bool = True
    applies: Callable[[Connection, ErasureJob], bool] | None = None
    checks_holds: bool = False
    waiting_status: str | None = None

    def applies_to(self, uow: UnitOfWork, job: ErasureJob) -> bool:
        """Whether ``job`` has this step at all."""
        if self.applies is None:
            return True
        with uow.read() as conn:
            return self.applies(conn, job)


def record_step(
    conn: Connection, log: EventLog, job: ErasureJob, step: Step, now: datetime, evidence: dict[str, Any]
) -> None:
    """A step's ``erasure.step`` event (its evidence in the log the certificate proves) and
    its row in ``erasure_steps``, in the caller's transaction. The event carries the subject
    reference the request's received event carries (per request, ``erasure.request_ref``)."""
    ev = log.append(
        conn,
        Event(
            ERASURE_STEP,
            job.tenant_id,
            {"request_id": job.id, "step": step.value, "evidence": evidence},
            subject_ref=job.event_subject_ref or erasure_repo.event_ref(conn, job),
            occurred_at=iso(now),
        ),
    )
    erasure_repo.insert_step(conn, job.id, step, now, ev.seq, evidence)


def tombstone(ctx: StepContext, conn: Connection | None) -> dict[str, Any]:
    assert conn is not None
    deps, job = ctx.deps, ctx.job
    vector_samples.hold(job.id, memory_repo.sealed_vectors(conn, job.tenant_id, job.subject_ref))
    ev = tombstone_subject(conn, deps.log, deps.keyring, job.tenant_id, job.subject_ref, job.id)
    return TombstonedEvidence(
        event_seq=ev.seq,
        key_generation=ev.generation,
        memories_forgotten=ev.memories_forgotten,
        index_entries_before=ev.index_entries_before,
        index_entries_after=ev.index_entries_after,
        sealed_vectors_before=ev.sealed_vectors_before,
        sealed_vectors_after=ev.sealed_vectors_after,
    ).to_dict()


def purge_summaries(ctx: StepContext, conn: Connection | None) -> dict[str, Any]:
    """Tombstone summaries built from any forgotten memory, transitively, whoever their subject."""
    assert conn is not None
    job = ctx.job
    own = memory_repo.count_index(conn, job.tenant_id, job.subject_ref)
    purge = purge_derived(conn, ctx.deps.log, job.tenant_id, job.subject_ref, job.id, ctx.deps.clock())
    vector_samples.hold(job.id, list(purge.sealed))
    return DerivedPurgedEvidence(
        derived_tombstoned=len(purge.ids),
        derived_ids=purge.ids,
        index_entries_before=own + purge.index_entries_removed,
        index_entries_after=memory_repo.count_index(conn, job.tenant_id, job.subject_ref, purge.ids),
        sealed_vectors_purged=purge.sealed_vectors_removed,
        sealed_vectors_after=memory_repo.count_vectors(conn, job.tenant_id, job.subject_ref, purge.ids),
    ).to_dict()


def destroy_keys(ctx: StepContext, _: Connection | None) -> dict[str, Any]:
    """Destroy every live generation of the subject's key at the KMS, then record it: each
    receipt with its waiting window (immediate, or scheduled by the KMS), and the inventory
    of every copy of the key material and its fate (``keys.key_copies``)."""
    deps, job = ctx.deps, ctx.job
    with deps.uow.read() as conn:
        gens = deps.keyring.generations(conn, job.tenant_id, job.subject_ref)
        backups_before = conn.execute(sa.select(sa.func.count()).select_from(backups)).scalar_one()
    receipts, refused = [], []
    done: list[DestructionReceipt] = []
    final = refusals.window_closed(job, deps.clock(), deps.refusal_window)
    for g in gens:
        deps.keyring.revoke(job.tenant_id, job.subject_ref, g.generation)
        if g.state == DESTROYED:
            continue
        try:
            r = deps.kms.destroy_key(g.key_name)
        except KmsUnavailable as exc:
            raise StepFailed("KMS unavailable; key destruction pending") from exc
        except KmsError as exc:
            if not final:
                raise StepFailed(f"KMS refused key destruction ({type(exc).__name__})") from exc
            refused.append(_refused(ctx, g, type(exc).__name__))
            continue
        if not r.key_unusable:
            if not final:
                raise StepFailed("the KMS did not make the key unusable")
            refused.append(_refused(ctx, g, "key left usable"))
            continue
        with deps.uow.write() as conn:
            deps.keyring.mark_destroyed(conn, [g.key_name], deps.clock())
        done.append(r)
        receipts.append(
            {
                "generation": g.generation,
                "key_ref": key_label(job, g.generation, g.key_name),
                "backend": r.backend,
                "destroyed_at": r.destroyed_at,
                "key_unusable": r.key_unusable,
                "material_destroyed": r.material_destroyed,
                "already_destroyed": r.already_destroyed,
                "details": r.details,
                **r.window(),
            }
        )
    scheduled = [r for r in done if r.scheduled and not r.material_destroyed]
    return KeyDestroyedEvidence(
        kms_backend=deps.kms.backend,
        keys_destroyed=len(receipts),
        receipts=receipts,
        # generations the KMS refused to destroy past the refusal window (``erasure.refusals``)
        refused=refused or None,
        destruction="scheduled" if scheduled else "immediate",
        key_copies=inventory(
            backend=deps.kms.backend,
            receipts=done,
            wrapped_in_store=len(gens),
            backups_before=int(backups_before),
            cache_ttl_seconds=deps.keyring.cache.ttl_seconds,
            sweep_seconds=plaintext_expiry.SWEEP_SECONDS,
            refused=len(refused),
        ),
        key_config={"exportable": False, "plaintext_backup_allowed": False},
        dek_cache="revoked in this process; other processes refuse theirs and drop them on expiry",
    ).to_dict()


def _refused(ctx: StepContext, g: Any, error: str) -> dict[str, Any]:
    """A generation whose destruction the KMS refused past the window: logged, and
    (elsewhere) warned about, as an operator must look at the KMS."""
    deps = ctx.deps
    return refusals.refusal(
        generation=g.generation,
        key_ref=key_label(ctx.job, g.generation, g.key_name),
        backend=deps.kms.backend,
        error=error,
        job=ctx.job,
        now=deps.clock(),
        window=deps.refusal_window,
    )


def key_label(job: ErasureJob, generation: int, name: str) -> str:
    """What a receipt names a key by. Its KMS name embeds the stable ``subject_ref``, so for a
    request whose events carry a per-request reference (``erasure.request_ref``) it is the
    name's form under that reference instead (the final certificate finds the KMS name again
    by generation); for earlier requests, the KMS name itself."""
    if not job.event_subject_ref or job.event_subject_ref == job.subject_ref:
        return name
    return key_name(job.tenant_id, job.event_subject_ref, generation)


def probe_and_verify(ctx: StepContext, conn: Connection | None) -> dict[str, Any]:
    """Probe, don't assume: every key gone, nothing retrievable, no index entries."""
    assert conn is not None
    deps, job = ctx.deps, ctx.job
    gens = deps.keyring.generations(conn, job.tenant_id, job.subject_ref)
    pending = _scheduled_generations(job)
    refused = refusals.refused_generations(job)
    probes = []
    for g in gens:
        try:
            p = deps.kms.probe(g.key_name, g.wrapped_dek)
        except KmsError as exc:
            raise StepFailed(f"KMS probe failed ({type(exc).__name__})") from exc
        probes.append(
            {
                "generation": g.generation,
                "unwrap_failed": p.unwrap_failed,
                "key_present": p.key_present,
                "destroyed": p.destroyed,
                # unusable, its material awaiting the KMS's scheduled destruction
                "pending": not p.destroyed and p.unwrap_failed and g.generation in pending,
                # the KMS refused its destruction past the window: probed, said, not retried
                **({"refused": True} if g.generation in refused and not p.destroyed else {}),
            }
        )
    retrievable = memory_repo.count_unforgotten(conn, job.tenant_id, job.subject_ref)
    with_ciphertext = memory_repo.count_with_ciphertext(conn, job.tenant_id, job.subject_ref)
    index_entries = memory_repo.count_index(conn, job.tenant_id, job.subject_ref)
    sealed_vectors = memory_repo.count_vectors(conn, job.tenant_id, job.subject_ref)
    fenced = deps.keyring.is_fenced(conn, job.tenant_id, job.subject_ref)
    failures = [
        f"generation {p['generation']} key still usable"
        for p in probes
        if not (p["destroyed"] or p["pending"] or p.get("refused"))
    ]
    if retrievable:
        failures.append(f"{retrievable} memories still retrievable")
    if with_ciphertext:
        failures.append(f"{with_ciphertext} projection rows still hold ciphertext")
    if index_entries:
        failures.append(f"{index_entries} search index entries remain")
    if sealed_vectors:
        failures.append(f"{sealed_vectors} sealed vectors remain")
    if not fenced:
        failures.append("erasure fence is not up")
    if failures:
        raise StepFailed("verification failed: " + "; ".join(failures))
    return VerifiedEvidence(
        key_probes=probes,
        retrievable_memories=retrievable,
        projection_rows_with_ciphertext=with_ciphertext,
        index_entries=index_entries,
        sealed_vectors=sealed_vectors,
        erasure_fence=fenced,
    ).to_dict()


def _scheduled_generations(job: ErasureJob) -> set[int]:
    """Generations whose destruction the KMS scheduled rather than did (key_destroyed receipts)."""
    for step in job.steps:
        if step.step == Step.KEY_DESTROYED:
            return {
                r["generation"] for r in KeyDestroyedEvidence.from_dict(step.evidence).scheduled_receipts()
            }
    return set()
