"""The audit log as auditors see it: the public key they pin, Merkle proofs (base64 hashes), the KPIs."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from lethe.api.http.schemas.common import Out
from lethe.vault.audit.forks import AuditFork
from lethe.vault.audit.log import PublicKeyInfo


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class PublicKeyOut(BaseModel):
    origin: str = Field(description="The checkpoint origin line, also the signed-note key name.")
    pem: str = Field(description="Ed25519 public key, SubjectPublicKeyInfo PEM.")
    key_id: str = Field(description="Hex of the 4-byte signed-note key id.")
    vkey: str = Field(description="The signed-note verifier key: name+keyid+base64(0x01||key).")
    fingerprint_sha256: str = Field(description="Hex SHA-256 of the raw 32-byte public key.")

    @classmethod
    def from_domain(cls, info: PublicKeyInfo) -> PublicKeyOut:
        return cls(
            origin=info.origin,
            pem=info.pem,
            key_id=info.key_id,
            vkey=info.vkey,
            fingerprint_sha256=info.fingerprint,
        )


class InclusionProofOut(BaseModel):
    index: int
    tree_size: int
    leaf_hash: str = Field(description="Base64 of the leaf hash at index.")
    root: str = Field(description="Base64 of the root of the tree of tree_size (compare with a checkpoint).")
    proof: list[str] = Field(description="RFC 9162 inclusion path, base64 hashes, leaf to root.")

    @classmethod
    def from_hashes(
        cls, index: int, tree_size: int, leaf: bytes, root: bytes, proof: Sequence[bytes]
    ) -> InclusionProofOut:
        proof_b64 = [b64(h) for h in proof]
        return cls(index=index, tree_size=tree_size, leaf_hash=b64(leaf), root=b64(root), proof=proof_b64)


class ConsistencyProofOut(BaseModel):
    first: int
    second: int
    first_root: str
    second_root: str
    proof: list[str] = Field(description="RFC 9162 consistency proof, base64 hashes.")

    @classmethod
    def from_hashes(
        cls, first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
    ) -> ConsistencyProofOut:
        return cls(
            first=first,
            second=second,
            first_root=b64(first_root),
            second_root=b64(second_root),
            proof=[b64(h) for h in proof],
        )


class ReappliedErasureOut(BaseModel):
    tenant_id: str
    request_id: str


class AuditForkOut(BaseModel):
    """Where a restore of an older backup forked the audit log, and what it re-applied."""

    id: str
    backup_id: str
    restored_at: str
    fork_tree_size: int = Field(description="Events 1..fork_tree_size are common to both branches.")
    abandoned_tree_size: int = Field(description="The size the abandoned branch had reached.")
    abandoned_checkpoints: list[str] = Field(
        description="Signed checkpoint notes of the abandoned branch (sizes above fork_tree_size); "
        "they still verify under the log key, as do certificates anchored to them."
    )
    reapplied: list[ReappliedErasureOut] = Field(
        description="Erasures of the caller's tenant re-applied to the restored snapshot."
    )
    event_seq: int = Field(description="The backup.restored event on the new branch.")

    @classmethod
    def from_domain(cls, fork: AuditFork) -> AuditForkOut:
        return cls(
            id=fork.id,
            backup_id=fork.backup_id,
            restored_at=fork.restored_at,
            fork_tree_size=fork.fork_tree_size,
            abandoned_tree_size=fork.abandoned_tree_size,
            abandoned_checkpoints=fork.abandoned_checkpoints,
            reapplied=[
                ReappliedErasureOut(tenant_id=r.tenant_id, request_id=r.request_id) for r in fork.reapplied
            ],
            event_seq=fork.event_seq,
        )


class AuditForkList(BaseModel):
    """The audit log's forks, oldest first."""

    items: list[AuditForkOut]


class KpisOut(Out):
    """The attributed-memory KPIs of the auditor's tenant (``vault.oversight.kpis``): counts,
    shares and durations from metadata, never content. A share or duration is null when
    there is nothing to measure yet."""

    tenant_id: str
    computed_at: datetime
    live_memories: int = Field(description="Active and quarantined memories.")
    attribution_complete: int
    attribution_complete_share: float | None = Field(description="Writer, source type and ref, standing.")
    median_age_seconds: float | None = Field(description="Median age of the live memories.")
    expiry_due: int = Field(description="Memories whose expiry (plus the grace) has passed.")
    expired_on_time: int
    expired_on_time_share: float | None
    erasures_completed: int
    deletion_lag_p50_seconds: float | None = Field(description="Request received to last copy removed.")
    deletion_lag_p95_seconds: float | None
    retractions: int = Field(description="Retraction ledger entries (retraction.* events).")
    memories_retracted: int
    derived_retracted: int
    open_requests: int = Field(description="Erasure requests not yet completed.")
    overdue_requests: int = Field(description="Open requests past their due date.")
