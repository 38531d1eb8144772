"""The certificate document: built from a job's certified steps, then signed.

``build_certificate`` makes the unsigned document (plain JSON values only, format
``certificate_format.FORMAT``); ``sign_certificate`` adds the Ed25519 signature over
``SIGNATURE_DOMAIN`` and the canonical document and returns its canonical bytes.

Exceptions: none of its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lethe.keys.signing import Ed25519Signer
from lethe.vault.audit.certificate_format import (
    FORMAT,
    KEYED_SCHEME,
    NOTHING_HELD,
    REQUEST_SUBJECT_REF,
    SIGNATURE_DOMAIN,
    result_of,
    signed_bytes,
)
from lethe.vault.audit.checkpoint import key_id
from lethe.vault.audit.log import b64
from lethe.vault.audit.refused_wording import with_refusals
from lethe.vault.audit.step_names import Step
from lethe.vault.canonical import canonical_json
from lethe.vault.clock import iso
from lethe.vault.erasure.model import ErasureJob, ErasureStep
from lethe.vault.oversight.certificate_wording import (
    BACKUP_STATEMENT,
    KEYED_SCHEME_TEXT,
    NOT_COMPACTED,
    NOTHING_HELD_BACKUP_STATEMENT,
    NOTHING_HELD_REMAINS,
    RESIDUE_STATEMENT,
    SALTED_SCHEME_TEXT,
    VERIFY_COMMAND,
    WHAT_REMAINS,
    key_destruction,
    missing_parts,
    other_processes,
)


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
