"""Erasure certificates: what was done for a right-to-forget request, signed and provable.

A certificate is one RFC 8785 canonical JSON document (format ``FORMAT``) holding the
request, its ``result`` (v3: ``erased``, ``nothing_held`` or ``partial``, decided by the
evidence through ``certificate_format.result_of``, with what is ``missing`` named), the
subject commitment, every step with its time and evidence, what remains
and why, backup coverage, a signed checkpoint of the audit log, and for every step's
audit event its canonical bytes, leaf index and inclusion proof. An Ed25519 signature
by the log's key covers ``SIGNATURE_DOMAIN`` followed by the canonical document without
its ``signature`` member; ``vault.verify_certificate`` checks it all offline.

The certificate is issued by the erasure job's ``reported`` step (``certificate_work``),
which runs after every other step. That step's own audit event is appended after the
certificate exists, so it cannot be inside the certificate it produces: a certificate
covers the steps up to the one before ``reported``, whatever they are (``compacted``
included, when that step is installed before it). The ``reported`` event records the
report id and the certificate's SHA-256, so the log itself commits to the certificate.

Issuing is idempotent per job (a rerun after a crash returns the stored certificate),
and fails closed: the issuer verifies its own certificate before storing it.

Exceptions:
- ``StepFailed`` (from ``vault.erasure``): the certificate cannot be issued now (a
  preceding step is not recorded, the log refused to sign, or self-verification
  failed); the job stays where it is and the runner retries.
- ``NotFound`` (404): unknown report, or another tenant's.
- ``OutOfScope`` (403): the caller's role may not read reports.
- ``StoreUnavailable`` (503): the database is down.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.keys.signing import Ed25519Signer
from lethe.vault.audit.certificate_format import (
    FORMAT,
    KEY,
    KEYED_SCHEME,
    NOTHING_HELD,
    REQUEST_SUBJECT_REF,
    SIGNATURE_DOMAIN,
    result_of,
    signed_bytes,
)
from lethe.vault.audit.checkpoint import key_id
from lethe.vault.audit.log import AuditLog, b64
from lethe.vault.audit.refused_wording import with_refusals
from lethe.vault.audit.step_names import Step
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.canonical import canonical_json
from lethe.vault.clock import iso, utcnow
from lethe.vault.erasure import repository as erasure_repo
from lethe.vault.erasure import residue
from lethe.vault.erasure.model import ErasureJob, ErasureStep
from lethe.vault.erasure.steps import StepContext, StepFailed, StepFn
from lethe.vault.errors import LogInconsistent, NotFound, OutOfScope
from lethe.vault.model import Caller, Role
from lethe.vault.store.events import canonical_row
from lethe.vault.store.tables import backups, erasure_final_reports, erasure_reports, events
from lethe.vault.store.tenancy import for_caller, maintenance_job

__all__ = [
    "MAX_CONSISTENCY_PROOFS",
    "CertifiedStep",
    "ErasureReport",
    "ErasureReports",
    "build_certificate",
    "certificate_work",
    "sign_certificate",
]

MAX_CONSISTENCY_PROOFS = 32

VERIFY_COMMAND = (
    "lethe verify <certificate.json> --public-key <issuer-public-key.pem> "
    "[--subject-id <subject id> --verification-code <code given when the request was filed>] "
    "[--checkpoint <older checkpoint>]"
)
KEYED_SCHEME_TEXT = (
    "hex(HMAC-SHA256(key=verification code (25 base32 characters, upper case, no dashes), "
    "'lethe-subject-commitment/v2\\n' || u32be(len(UTF-8(tenant_id))) || UTF-8(tenant_id) || "
    "UTF-8(NFC(subject_id))))"
)
SALTED_SCHEME_TEXT = "hex(SHA-256(salt || UTF-8(tenant_id) || UTF-8(NFC(subject_id))))"

WHAT_REMAINS: tuple[tuple[str, str], ...] = (
    (
        "memory ids",
        "Random identifiers that keep the audit trail and supersession history referentially "
        "intact; they carry no content.",
    ),
    (
        "tenant, agent, purpose, kind",
        "Scope and retention accounting: which agent held what category of memory for which "
        "purpose. They describe the record, not its content.",
    ),
    (
        "statuses and timestamps",
        "Accountability (GDPR Art. 5(2)): when each memory was written, changed and forgotten.",
    ),
    (
        "subject_ref",
        "A keyed HMAC of the subject id under the tenant's secret pepper. It keeps the erasure "
        "fence (refusing new writes about the subject) and legal holds working. It is "
        "pseudonymous, not anonymous: whoever holds the pepper and a candidate subject id can "
        "recompute it.",
    ),
    (
        "content_hmac",
        "An HMAC of each content under a key derived from the subject's data key. With that key "
        "destroyed it is an unlinkable commitment: it cannot be recomputed or dictionary-attacked.",
    ),
    (
        "ciphertext digests",
        "SHA-256 of each ciphertext. Audit events commit to the digest rather than to the "
        "ciphertext, so dead ciphertext can be dropped and the log still verifies.",
    ),
    (
        "the audit tree",
        "Leaf hashes of every event and signed checkpoints. They are what makes this "
        "certificate verifiable; events hold metadata and digests, never plaintext.",
    ),
)

OTHER_PROCESSES = "other processes' caches"


def other_processes(steps: Sequence[ErasureStep]) -> dict[str, str] | None:
    """The ``what_remains`` entry for the plaintext other processes had cached, with the bound
    the key's destruction recorded (``keys.key_copies``); None if it recorded none."""
    evidence = next((s.evidence for s in steps if s.step == Step.KEY_DESTROYED), {})
    copies = evidence.get("key_copies")
    bound = copies.get("plaintext_bound_seconds") if isinstance(copies, dict) else None
    if not isinstance(bound, int | float):
        return None
    return {
        "item": OTHER_PROCESSES,
        "why": (
            "Keys, vectors and results cached by other processes: never used again, freed "
            f"within {bound:g} s of caching."
        ),
    }


RESIDUE_STATEMENT = (
    "Other subjects' memories were looked up by the identifiers attached to the request, "
    "through the keyed search index only (no memory was decrypted to search): a memory is "
    "found when every word of an identifier is posted on it, as the index posts words (exact, "
    "lower-cased; any order). What the index does not hold (another spelling, a word of one "
    "character, memories that left retrieval) is not found. Counts are as of this certificate: "
    "memories still awaiting a reviewer are shown as pending."
)

NOT_COMPACTED = (
    "dead ciphertext in the event log",
    "No compaction step ran before this certificate: the subject's ciphertext remains in the "
    "append-only event log, encrypted under the destroyed key and unreadable by anyone.",
)

BACKUP_STATEMENT = (
    "Backups hold the database only, never the key dir or the KMS. The subject's content in "
    "any backup, including those listed (taken before the forget event), is ciphertext under "
    "the key generation(s) destroyed by this request, so it is unreadable; restoring such a "
    "backup re-applies the ledger of forgotten subjects, so the subject is not resurrected. "
    "Copies made outside Lethe and the KMS's own backups or snapshots are not covered."
)


NOTHING_HELD_BACKUP_STATEMENT = (
    "Lethe held no memory and no key of this subject when the request was carried out, so no "
    "Lethe backup holds their content; restoring a backup re-applies the ledger of forgotten "
    "subjects, so new memories about them stay refused. Copies made outside Lethe are not covered."
)
# what a request that found nothing leaves: the fence and the record of the request itself
NOTHING_HELD_REMAINS: tuple[tuple[str, str], ...] = (
    (
        "subject_ref",
        "A keyed HMAC of the subject id under the tenant's secret pepper. It keeps the erasure "
        "fence (refusing new writes about the subject) working. It is pseudonymous, not "
        "anonymous: whoever holds the pepper and a candidate subject id can recompute it.",
    ),
    (
        "the audit tree",
        "Leaf hashes of every event and signed checkpoints: the record that this request was "
        "received and carried out, which makes this certificate verifiable.",
    ),
)

KEY_DESTRUCTION_STATEMENT = (
    "mode 'immediate': the KMS destroyed the key when asked (local KMS, Transit hard delete); "
    "'scheduled': the KMS made it unusable at once and destroys its material when the waiting "
    "window closes (pending_until; irrecoverable_after; cancellable says whether it can still be "
    "called off), after which a final certificate, chained to this one by its SHA-256, follows. "
    "key_copies lists every copy of the key material and its fate: NIST SP 800-88 counts "
    "cryptographic erase as Purge only when every copy of the key is destroyed."
)


def missing_parts(
    steps: Sequence[dict[str, Any]], missing: Sequence[tuple[str, int | None]]
) -> list[dict[str, Any]]:
    """The parts a ``partial`` certificate could not certify, each with why, in words."""
    receipts = {
        r.get("generation"): r
        for s in steps
        if s.get("name") == Step.KEY_DESTROYED
        for r in (s.get("evidence") or {}).get("receipts", [])
        if isinstance(r, dict)
    }
    out = []
    for part, generation in missing:
        if part == KEY:
            why = "memories were held, but no key generation of the subject is in the evidence"
        else:
            r = receipts.get(generation, {})
            when = r.get("irrecoverable_after") or r.get("pending_until")
            why = (
                f"key generation {generation}: the KMS ({r.get('backend') or 'unknown'}) made it unusable "
                "but has not confirmed its material destroyed"
                + (f" (its waiting window ends {when})" if when else "")
            )
        out.append({"part": part, "generation": generation, "why": why})
    return out


def key_destruction(steps: Sequence[ErasureStep]) -> dict[str, Any]:
    """What the certificate says about the key's destruction, from the logged evidence."""
    evidence = next((s.evidence for s in steps if s.step == Step.KEY_DESTROYED), {})
    receipts = [r for r in evidence.get("receipts", []) if isinstance(r, dict)]
    scheduled = [
        r for r in receipts if r.get("destruction") == "scheduled" and not r.get("material_destroyed")
    ]
    closed = any(s.step == Step.KEY_IRRECOVERABLE for s in steps)
    pending = [r["pending_until"] for r in scheduled if r.get("pending_until")]
    after = [r["irrecoverable_after"] for r in receipts if r.get("irrecoverable_after")]
    return {
        "mode": "scheduled" if scheduled else "immediate",
        "pending_until": max(pending) if pending else None,
        "irrecoverable_after": max(after) if after else None,
        "cancellable": any(r.get("cancellable") is True for r in scheduled) and not closed,
        "window_closed": not scheduled or closed,
        "key_copies": evidence.get("key_copies"),
        "statement": KEY_DESTRUCTION_STATEMENT,
    }


@dataclass(frozen=True)
class ErasureReport:
    """A stored certificate: ``document`` is its canonical JSON, byte for byte as signed."""

    id: str
    job_id: str
    tenant_id: str
    issued_at: str
    document: bytes

    def parsed(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.document)  # Lethe's own canonical JSON: an object
        return doc

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.document).hexdigest()


@dataclass(frozen=True)
class CertifiedStep:
    step: ErasureStep
    event: bytes
    proof: list[bytes]


def build_certificate(
    *,
    report_id: str,
    issued_at: str,
    job: ErasureJob,
    origin: str,
    public_key_raw: bytes,
    checkpoint_note: str,
    steps: Sequence[CertifiedStep],
    consistency_proofs: Sequence[tuple[int, list[bytes]]],
    backups_before: Sequence[dict[str, Any]],
    supersedes: dict[str, Any] | None = None,
    residue_found: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The unsigned certificate document (plain JSON values only); ``supersedes`` (the
    first certificate's report id and SHA-256) makes it the final certificate;
    ``residue_found`` (``erasure.residue.outcomes``) adds the residue hunt's counts."""
    names = [r.step.step for r in steps]
    plain_steps = [{"name": r.step.step, "evidence": r.step.evidence} for r in steps]
    result, missing = result_of(plain_steps)
    nothing = result == NOTHING_HELD
    remains = [
        {"item": item, "why": why} for item, why in (NOTHING_HELD_REMAINS if nothing else WHAT_REMAINS)
    ]
    held = None if nothing else other_processes([r.step for r in steps])
    if held is not None:
        remains.append(held)
    if Step.COMPACTED not in names and not nothing:
        remains.append({"item": NOT_COMPACTED[0], "why": NOT_COMPACTED[1]})
    backup_statement = NOTHING_HELD_BACKUP_STATEMENT if nothing else BACKUP_STATEMENT
    document: dict[str, Any] = {
        "format": FORMAT,
        "result": result,
        "missing": missing_parts(plain_steps, missing),
        "report_id": report_id,
        "issued_at": issued_at,
        "issuer": {
            "origin": origin,
            "key_id": key_id(origin, public_key_raw).hex(),
            "public_key_sha256": hashlib.sha256(public_key_raw).hexdigest(),
        },
        "tenant_id": job.tenant_id,
        "request": {
            "id": job.id,
            "reference": job.reference,
            "legal_basis": job.legal_basis,
            "requested_by": job.requested_by,
            "received_at": iso(job.received_at),
            "completed_at": iso(steps[-1].step.completed_at),
            # as logged at receipt (the received event commits to it); an extension or a
            # stopped clock moved the job's due date later, each by its own audit event
            "due_at": next(s.evidence["due_at"] for s in job.steps if s.step == Step.RECEIVED),
        },
        "subject": _subject(job, _events_ref(steps)),
        "steps": [
            {
                "name": r.step.step,
                "completed_at": iso(r.step.completed_at),
                "evidence": r.step.evidence,
                "leaf_index": r.step.event_seq - 1,
                "event": b64(r.event),
                "inclusion_proof": [b64(h) for h in r.proof],
            }
            for r in steps
        ],
        "covers": (
            f"every step up to {names[-1]}; the step that issues this certificate ({Step.REPORTED}) "
            "is logged after it and so is not covered by it"
            if supersedes is None
            else f"every step up to {names[-1]}, the {Step.REPORTED} step of the first certificate included"
        ),
        "key_destruction": key_destruction([r.step for r in steps]),
        **({"supersedes": supersedes} if supersedes is not None else {}),
        **({"residue": {**residue_found, "statement": RESIDUE_STATEMENT}} if residue_found else {}),
        "what_remains": remains,
        "backup_coverage": {
            "statement": backup_statement,
            "backups_before_forget": [
                {**b, "subject_content": "none: Lethe held nothing of this subject"} if nothing else b
                for b in backups_before
            ],
        },
        "checkpoint": {"note": checkpoint_note},
        "consistency_proofs": [
            {"tree_size": size, "proof": [b64(h) for h in proof]} for size, proof in consistency_proofs
        ],
        "verification": {
            "command": VERIFY_COMMAND,
            "signature_domain": SIGNATURE_DOMAIN.decode().replace("\n", "\\n"),
        },
    }
    return with_refusals(document)  # a KMS's refusal rewrites what a destroyed key would say


def _events_ref(steps: Sequence[CertifiedStep]) -> str:
    """The subject reference the request's events carry (its received event's)."""
    ref = json.loads(steps[0].event).get("subject_ref")
    return ref if isinstance(ref, str) else ""


def _subject(job: ErasureJob, events_ref: str) -> dict[str, Any]:
    """The subject commitment: keyed by the request's verification code (no salt, no code:
    the certificate confirms no guess), or salted for requests filed before codes existed.
    With the per-request reference its events carry (``erasure.request_ref``), never the
    stable ``subject_ref`` an agent may have seen; requests filed before carry the stable one."""
    ref_key = "subject_ref" if events_ref == job.subject_ref else REQUEST_SUBJECT_REF
    subject: dict[str, Any] = {
        "commitment": job.subject_commitment,
        "commitment_scheme": job.commitment_scheme,
        ref_key: events_ref,
    }
    if job.commitment_scheme == KEYED_SCHEME:
        return {**subject, "scheme": KEYED_SCHEME_TEXT}
    return {**subject, "salt": job.commitment_salt, "scheme": SALTED_SCHEME_TEXT}


def sign_certificate(document: dict[str, Any], signer: Ed25519Signer, origin: str) -> bytes:
    """Add the Ed25519 signature and return the canonical bytes of the whole document."""
    unsigned = {k: v for k, v in document.items() if k != "signature"}
    signature = signer.sign(signed_bytes(unsigned))
    signed = {
        **unsigned,
        "signature": {
            "algorithm": "Ed25519",
            "key_id": key_id(origin, signer.public_key_raw()).hex(),
            "value": b64(signature),
        },
    }
    return canonical_json(signed)


class ErasureReports:
    """Issues, stores and serves erasure certificates.

    Exceptions: ``OutOfScope`` (403, a role that may not read reports), ``NotFound``
    (404, unknown report or another tenant's), ``StoreUnavailable`` (503). ``issue`` is
    the ``reported`` step's work and raises ``StepFailed`` when it cannot certify now.
    """

    def __init__(
        self, audit: AuditLog, signer: Ed25519Signer, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.audit = audit
        self.signer = signer
        self.clock = clock
        self._uow = audit.uow

    # -- reading --------------------------------------------------------------------------

    @for_caller
    def get(self, caller: Caller, report_id: str) -> ErasureReport:
        """A report of the caller's tenant, for privacy officers and auditors."""
        if caller.role not in (Role.PRIVACY_OFFICER, Role.AUDITOR):
            raise OutOfScope("this credential's role may not read erasure reports")
        report = self._load(report_id)
        if report.tenant_id != caller.tenant_id:
            raise NotFound("erasure report not found")
        return report

    @maintenance_job("report by id")
    def load(self, report_id: str) -> ErasureReport:
        """Any tenant's report, first or final (for the operator's CLI)."""
        return self._load(report_id)

    def _load(self, report_id: str) -> ErasureReport:
        with self._uow.read() as conn:
            row = conn.execute(sa.select(erasure_reports).where(erasure_reports.c.id == report_id)).first()
            if row is None:
                t = erasure_final_reports
                row = conn.execute(sa.select(t).where(t.c.id == report_id)).first()
        if row is None:
            raise NotFound("erasure report not found")
        return _report(row)

    def final_for_job(self, job_id: str) -> ErasureReport | None:
        t = erasure_final_reports
        with self._uow.read() as conn:
            row = conn.execute(sa.select(t).where(t.c.job_id == job_id)).first()
        return _report(row) if row is not None else None

    def for_job(self, job_id: str) -> ErasureReport | None:
        with self._uow.read() as conn:
            row = conn.execute(sa.select(erasure_reports).where(erasure_reports.c.job_id == job_id)).first()
        return _report(row) if row is not None else None

    # -- issuing ---------------------------------------------------------------------------

    def issue(self, job: ErasureJob, required_steps: Sequence[str] = ()) -> ErasureReport:
        """Certify ``job``'s recorded steps; idempotent per job.

        ``required_steps`` are the steps that must be recorded first (the reported step
        passes every step that precedes it). Raises ``StepFailed`` if one is missing,
        if the log refuses to sign, or if the certificate fails its own verification.
        """
        existing = self.for_job(job.id)
        if existing is not None:
            return existing
        recorded = [s.step for s in job.steps]
        missing = [name for name in (Step.RECEIVED, *required_steps) if name not in recorded]
        if missing:
            raise StepFailed(f"cannot certify: step(s) {', '.join(missing)} not recorded")
        report_id, issued_at, data = self._certify(job, None)
        with self._uow.write() as conn:
            row = conn.execute(sa.select(erasure_reports).where(erasure_reports.c.job_id == job.id)).first()
            if row is not None:
                return _report(row)  # another runner issued it first
            conn.execute(
                erasure_reports.insert().values(
                    id=report_id,
                    job_id=job.id,
                    tenant_id=job.tenant_id,
                    issued_at=issued_at,
                    document=data.decode("utf-8"),
                )
            )
            erasure_repo.set_report(conn, job.id, report_id)
        return ErasureReport(report_id, job.id, job.tenant_id, issued_at, data)

    def issue_final(self, job: ErasureJob, first: ErasureReport) -> ErasureReport:
        """The final certificate of a job whose ``key_irrecoverable`` step is recorded: every
        step, chained to ``first`` by its SHA-256; idempotent per job."""
        existing = self.final_for_job(job.id)
        if existing is not None:
            return existing
        if not any(s.step == Step.KEY_IRRECOVERABLE for s in job.steps):
            raise StepFailed(f"cannot issue the final certificate: {Step.KEY_IRRECOVERABLE} not recorded")
        supersedes = {"report_id": first.id, "certificate_sha256": first.sha256}
        report_id, issued_at, data = self._certify(job, supersedes)
        t = erasure_final_reports
        with self._uow.write() as conn:
            row = conn.execute(sa.select(t).where(t.c.job_id == job.id)).first()
            if row is not None:
                return _report(row)
            conn.execute(
                t.insert().values(
                    id=report_id,
                    job_id=job.id,
                    previous_report_id=first.id,
                    tenant_id=job.tenant_id,
                    issued_at=issued_at,
                    document=data.decode("utf-8"),
                )
            )
        return ErasureReport(report_id, job.id, job.tenant_id, issued_at, data)

    def _certify(self, job: ErasureJob, supersedes: dict[str, Any] | None) -> tuple[str, str, bytes]:
        """Sign a checkpoint, build, sign and self-verify the certificate of the job's steps."""
        try:
            head = self.audit.sign()
        except LogInconsistent as exc:
            raise StepFailed(f"the audit log refused to sign a checkpoint: {exc.detail}") from exc
        steps = sorted(job.steps, key=lambda s: s.event_seq)
        if steps[-1].event_seq > head.tree_size:
            raise StepFailed("the signed checkpoint does not cover every step")
        with self._uow.read() as conn:
            canonical = _canonical_events(conn, [s.event_seq for s in steps])
            before = _backups_before(conn, _forget_seq(steps))
            hunted = next((s for s in steps if s.step == Step.RESIDUE_HUNTED), None)
            found = (
                None
                if hunted is None
                else residue.outcomes(conn, job.tenant_id, hunted.evidence, hunted.event_seq)
            )
        size = head.tree_size
        records = [
            CertifiedStep(s, canonical[s.event_seq], self.audit.inclusion_proof(s.event_seq - 1, size))
            for s in steps
        ]
        consistency = [
            (cp.tree_size, self.audit.consistency_proof(cp.tree_size, head.tree_size))
            for cp in self.audit.stored(limit=MAX_CONSISTENCY_PROOFS, below=head.tree_size)
            if cp.tree_size > 0
        ]
        report_id = str(uuid.uuid4())
        issued_at = iso(self.clock())
        document = build_certificate(
            report_id=report_id,
            issued_at=issued_at,
            job=job,
            origin=self.audit.origin,
            public_key_raw=self.signer.public_key_raw(),
            checkpoint_note=head.note,
            steps=records,
            consistency_proofs=consistency,
            backups_before=before,
            supersedes=supersedes,
            residue_found=found,
        )
        data = sign_certificate(document, self.signer, self.audit.origin)
        check = verify_certificate(data, self.signer.public_key_pem(), tenant=job.tenant_id)
        if not check.ok:
            raise StepFailed(f"the certificate failed its own verification: {check.summary()}")
        return report_id, issued_at, data


def _report(row: Any) -> ErasureReport:
    return ErasureReport(row.id, row.job_id, row.tenant_id, row.issued_at, row.document.encode("utf-8"))


def _canonical_events(conn: Connection, seqs: Sequence[int]) -> dict[int, bytes]:
    """The canonical bytes of the events ``seqs``, recomputed from their rows."""
    rows = conn.execute(sa.select(events).where(events.c.seq.in_(list(seqs)))).all()
    found = {r.seq: canonical_row(r) for r in rows}
    missing = [s for s in seqs if s not in found]
    if missing:
        raise StepFailed(f"audit events {missing} are missing from the log")
    return found


def _forget_seq(steps: Sequence[ErasureStep]) -> int | None:
    """The seq of the ``subject.forgotten`` event (the tombstoned step records it)."""
    for s in steps:
        if s.step == Step.TOMBSTONED:
            seq = s.evidence.get("event_seq")
            return seq if isinstance(seq, int) else s.event_seq
    return None


def _backups_before(conn: Connection, forget_seq: int | None) -> list[dict[str, Any]]:
    """Backups whose log ends before the forget event: they still hold the subject's
    ciphertext (encrypted under the destroyed key)."""
    if forget_seq is None:
        return []
    rows = conn.execute(
        sa.select(backups.c.id, backups.c.created_at, backups.c.tree_size)
        .where(backups.c.tree_size < forget_seq)
        .order_by(backups.c.created_at, backups.c.id)
    ).all()
    return [
        {
            "id": r.id,
            "created_at": r.created_at,
            "tree_size": r.tree_size,
            "subject_content": "ciphertext under the destroyed key; unreadable",
        }
        for r in rows
    ]


def certificate_work(
    audit_log: AuditLog, signer: Ed25519Signer, reports: ErasureReports | None = None
) -> StepFn:
    """The work of the ``reported`` step (``erasure.pipeline``): issue the certificate for
    every step before it.

    Generic over what precedes it: the steps required are those the job has before this
    one (core steps, then e.g. ``compacted``). Its evidence names the report, the checkpoint
    size it is anchored to and the certificate's SHA-256. The pipeline declares it outside
    a transaction: signing a checkpoint takes the log's write lock itself.
    """
    service = reports or ErasureReports(audit_log, signer)

    def run(ctx: StepContext, _conn: Connection | None) -> dict[str, Any]:
        names = list(ctx.step_names)
        preceding = names[: names.index(Step.REPORTED)] if Step.REPORTED in names else names
        report = service.issue(ctx.job, preceding)
        note = report.parsed()["checkpoint"]["note"]
        return {
            "report_id": report.id,
            "checkpoint_tree_size": int(note.split("\n")[1]),
            "certificate_sha256": report.sha256,
        }

    return run
