"""The erasure workflow's domain objects: jobs, their steps, legal holds, reinstatements.

Plain dataclasses and the names of statuses (the steps' names are ``audit.step_names.Step``),
shared by the service, the steps, compaction and the certificate; no storage here. A job's
deadline (``due_at``, ``days_left``, ``overdue``, extensions, a paused clock) follows
``erasure.deadlines``.
Who acted is stored as a principal id (``requested_by``, ``placed_by``, ``extended_by``);
the ``*_name`` fields carry that principal's display name, resolved when the record is
loaded (``vault.access.principals``), or None.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lethe.vault.audit.certificate_format import KEYED_SCHEME, SALTED_SCHEME

# A job's status is the last step it recorded (``Step``), or one of these two:
KEY_PENDING = "key_destruction_pending"  # the KMS could not destroy the key yet; the runner retries
BLOCKED = "blocked"  # a legal hold placed after the request stopped it before anything was destroyed

ERASURE_STEP = "erasure.step"
LEGAL_HOLD_PLACED = "legal_hold.placed"
LEGAL_HOLD_LIFTED = "legal_hold.lifted"
ERASURE_EXTENDED = "erasure.extended"
ERASURE_PAUSED = "erasure.paused"
ERASURE_RESUMED = "erasure.resumed"


@dataclass(frozen=True)
class ErasureStep:
    step: str
    completed_at: datetime
    event_seq: int
    evidence: dict[str, Any]


@dataclass(frozen=True)
class ErasureExtension:
    """One extension of the deadline (Art. 12(3)): how long, why, and when the subject was told."""

    number: int
    months: int
    reason: str
    subject_notified_at: datetime
    extended_at: datetime
    extended_by: str
    event_seq: int
    extended_by_name: str | None = None


@dataclass(frozen=True)
class ErasureJob:
    id: str
    tenant_id: str
    status: str
    legal_basis: str
    reference: str | None
    requested_by: str
    received_at: datetime
    due_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    last_error: str | None
    report_id: str | None
    steps: list[ErasureStep]
    overdue: bool
    subject_ref: str = field(repr=False, default="")
    # The subject reference the request's own audit events (received, every step) carry:
    # for requests filed since certificates stopped naming the stable ``subject_ref``, a
    # per-request one (``erasure.request_ref``); for earlier requests ``subject_ref``.
    event_subject_ref: str = field(repr=False, default="")
    subject_commitment: str = ""
    commitment_salt: str = ""
    days_left: int | None = None  # whole days before due_at; negative once overdue; None when done
    paused: bool = False  # the deadline clock is stopped (identity verification); the runner waits
    paused_at: datetime | None = None
    paused_seconds: int = 0  # how long the clock stood still in earlier pauses
    extension_months: int = 0
    extended_until: datetime | None = None
    extensions: tuple[ErasureExtension, ...] = ()
    identity_verification_ref: str | None = None
    requested_by_name: str | None = None
    # The final certificate, once a KMS's scheduled key destruction has taken effect
    final_report_id: str | None = None
    # Set only on the job ``ErasureService.request`` returns: the code keying the subject
    # commitment, shown once to the officer for the data subject; never stored in clear (a
    # filing with an idempotency key keeps it sealed for 24 hours: ``erasure.filings``).
    verification_code: str | None = field(repr=False, default=None)
    # True on the job ``request`` returns for a retried idempotency key: the first filing's.
    replayed: bool = False

    @property
    def commitment_scheme(self) -> str:
        """How ``subject_commitment`` was made: keyed by the verification code, or (requests
        filed before codes existed) salted with ``commitment_salt``."""
        return SALTED_SCHEME if self.commitment_salt else KEYED_SCHEME


@dataclass(frozen=True)
class LegalHold:
    id: str
    tenant_id: str
    reason: str
    reference: str | None
    placed_by: str
    placed_at: datetime
    lifted_at: datetime | None
    subject_ref: str = field(repr=False, default="")
    placed_by_name: str | None = None


@dataclass(frozen=True)
class Reinstatement:
    tenant_id: str
    generation: int
    reinstated_at: datetime


def subject_commitment(salt: bytes, tenant_id: str, subject_id: str) -> str:
    """SHA-256(salt || tenant || subject_id), the commitment of requests filed before
    verification codes (anyone holding salt and commitment can test guesses; new requests
    use ``certificate_format.keyed_subject_commitment``). ``subject_id`` is NFC already."""
    return hashlib.sha256(salt + tenant_id.encode() + subject_id.encode()).hexdigest()
