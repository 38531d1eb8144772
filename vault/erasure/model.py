"""The erasure workflow's domain objects: jobs, their steps, legal holds, reinstatements.

Plain dataclasses and the names of steps and statuses, shared by the service, the steps,
compaction and the certificate; no storage here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

DUE_AFTER = timedelta(days=30)  # GDPR Art. 12(3): one month
RECEIVED, TOMBSTONED, DERIVED_PURGED = "received", "tombstoned", "derived_purged"
KEY_PENDING, KEY_DESTROYED, VERIFIED = "key_destruction_pending", "key_destroyed", "verified"
BLOCKED = "blocked"
CORE_STEPS = (TOMBSTONED, DERIVED_PURGED, KEY_DESTROYED, VERIFIED)

ERASURE_STEP = "erasure.step"
LEGAL_HOLD_PLACED = "legal_hold.placed"
LEGAL_HOLD_LIFTED = "legal_hold.lifted"


@dataclass(frozen=True)
class ErasureStep:
    step: str
    completed_at: datetime
    event_seq: int
    evidence: dict[str, Any]


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
    subject_commitment: str = ""
    commitment_salt: str = ""


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


@dataclass(frozen=True)
class Reinstatement:
    tenant_id: str
    generation: int
    reinstated_at: datetime


def subject_commitment(salt: bytes, tenant_id: str, subject_id: str) -> str:
    """SHA-256(salt || tenant || subject_id): lets a certificate name the subject to
    whoever already knows the id, and to nobody else. ``subject_id`` is NFC already."""
    return hashlib.sha256(salt + tenant_id.encode() + subject_id.encode()).hexdigest()
