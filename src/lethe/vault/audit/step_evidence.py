"""Each erasure step's evidence as a typed, frozen record: one contract for the steps that
write it, the certificate that embeds it and the verifier that reads it.

A record's ``from_dict`` checks the type of every field this version knows (an integer is
never a boolean) and keeps the fields it does not know in ``extra``; ``to_dict`` gives back
the same JSON object, so the evidence stored in ``erasure_steps``, logged in the
``erasure.step`` events and embedded in certificates is unchanged by passing through a
record (a certificate issued before these types existed verifies after them). A field is
required only where every version of Lethe wrote it; the others are None when absent and
left out again by ``to_dict``. Lists of objects (receipts, probes) stay JSON objects, each
checked to be one.

Part of the standalone verifier (``vault.audit.verify``): standard library only.

Exceptions: ``EvidenceMalformed`` (a ``ValueError``) from ``from_dict``: the evidence is not
an object, lacks a required field or has one of the wrong type; the verifier turns it into
a failed check.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Self

from lethe.vault.audit.step_names import Step

OBJECTS = "a list of objects"  # the kind of a field holding a list of JSON objects


class EvidenceMalformed(ValueError):
    """A step's evidence is not what its record says, with the field named."""


_KINDS: dict[type, dict[str, tuple[Any, bool]]] = {}


def _kinds(cls: type[StepEvidence]) -> dict[str, tuple[Any, bool]]:
    """Each field's JSON kind (from its annotation) and whether it is required (no default)."""
    if cls in _KINDS:
        return _KINDS[cls]
    hints = typing.get_type_hints(cls)
    out: dict[str, tuple[Any, bool]] = {}
    for f in fields(cls):
        if f.name == "extra":
            continue
        kinds = [k for k in typing.get_args(hints[f.name]) or (hints[f.name],) if k is not type(None)]
        kind = typing.get_origin(kinds[0]) or kinds[0]
        if kind is list and typing.get_origin(typing.get_args(kinds[0])[0]) is dict:
            kind = OBJECTS
        out[f.name] = (kind, f.default is MISSING)
    _KINDS[cls] = out
    return out


def _has_kind(value: Any, kind: Any) -> bool:
    if kind is OBJECTS:
        return isinstance(value, list) and all(isinstance(x, dict) for x in value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


@dataclass(frozen=True)
class StepEvidence:
    """The shape every record shares: ``STEP`` names its step, ``extra`` keeps what this
    version does not know (by keyword only)."""

    STEP: ClassVar[Step]
    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True)

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """The record of ``data``; ``EvidenceMalformed`` naming the first field that is not."""
        where = cls.STEP.value
        if not isinstance(data, dict):
            raise EvidenceMalformed(f"{where}: the evidence is not an object")
        values: dict[str, Any] = {}
        kinds = _kinds(cls)
        for name, (kind, required) in kinds.items():
            if name not in data:
                if required:
                    raise EvidenceMalformed(f"{where}: the evidence has no {name}")
                continue
            if not _has_kind(data[name], kind):
                raise EvidenceMalformed(f"{where}: the evidence's {name} has the wrong type")
            values[name] = data[name]
        extra = {k: v for k, v in data.items() if k not in kinds}
        return cls(**values, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, with the unknown fields as they came."""
        out: dict[str, Any] = {}
        for name, (_, required) in _kinds(type(self)).items():
            value = getattr(self, name)
            if value is not None or required:
                out[name] = value
        return {**out, **self.extra}


@dataclass(frozen=True)
class ReceivedEvidence(StepEvidence):
    STEP: ClassVar[Step] = Step.RECEIVED
    legal_basis: str
    due_at: str


@dataclass(frozen=True)
class TombstonedEvidence(StepEvidence):
    STEP: ClassVar[Step] = Step.TOMBSTONED
    event_seq: int | None = None  # the ``subject.forgotten`` event's
    key_generation: int | None = None
    memories_forgotten: int | None = None
    index_entries_before: int | None = None
    index_entries_after: int | None = None
    sealed_vectors_before: int | None = None
    sealed_vectors_after: int | None = None


@dataclass(frozen=True)
class DerivedPurgedEvidence(StepEvidence):
    STEP: ClassVar[Step] = Step.DERIVED_PURGED
    derived_tombstoned: int | None = None
    derived_ids: list[str] | None = None
    index_entries_before: int | None = None
    index_entries_after: int | None = None
    sealed_vectors_purged: int | None = None
    sealed_vectors_after: int | None = None


@dataclass(frozen=True)
class KeyDestroyedEvidence(StepEvidence):
    """The KMS's receipts (and refusals past Lethe's window), the copies of the key
    material and their fate (``keys.key_copies``)."""

    STEP: ClassVar[Step] = Step.KEY_DESTROYED
    kms_backend: str | None = None
    keys_destroyed: int | None = None
    receipts: list[dict[str, Any]] | None = None
    refused: list[dict[str, Any]] | None = None
    destruction: str | None = None  # "immediate" or "scheduled"
    key_copies: dict[str, Any] | None = None
    key_config: dict[str, Any] | None = None
    dek_cache: str | None = None

    def scheduled_receipts(self) -> list[dict[str, Any]]:
        """The receipts whose destruction the KMS scheduled rather than did."""
        return [
            r
            for r in self.receipts or []
            if r.get("destruction") == "scheduled" and not r.get("material_destroyed")
        ]


@dataclass(frozen=True)
class VerifiedEvidence(StepEvidence):
    STEP: ClassVar[Step] = Step.VERIFIED
    key_probes: list[dict[str, Any]] | None = None
    retrievable_memories: int | None = None
    projection_rows_with_ciphertext: int | None = None
    index_entries: int | None = None
    sealed_vectors: int | None = None
    erasure_fence: bool | None = None


@dataclass(frozen=True)
class ReportedEvidence(StepEvidence):
    STEP: ClassVar[Step] = Step.REPORTED
    report_id: str
    checkpoint_tree_size: int
    certificate_sha256: str


@dataclass(frozen=True)
class KeyIrrecoverableEvidence(StepEvidence):
    """The KMS's word that the material of every scheduled key is destroyed, and the first
    certificate the final one follows."""

    STEP: ClassVar[Step] = Step.KEY_IRRECOVERABLE
    receipts: list[dict[str, Any]]
    previous_report_id: str
    previous_certificate_sha256: str


# Compaction's and the residue hunt's evidence are nested reports the certificate embeds
# whole; their records type the top level and keep the rest as objects.
@dataclass(frozen=True)
class CompactedEvidence(StepEvidence):
    STEP: ClassVar[Step] = Step.COMPACTED
    events_rewritten: int | None = None
    projection_rows_rewritten: int | None = None
    batches: int | None = None
    bytes_before: int | None = None
    bytes_after: int | None = None
    bytes_reclaimed: int | None = None
    reclaim: dict[str, Any] | None = None
    scan: dict[str, Any] | None = None
    row_check: dict[str, Any] | None = None
    vector_scan: dict[str, Any] | None = None


@dataclass(frozen=True)
class ResidueHuntedEvidence(StepEvidence):
    STEP: ClassVar[Step] = Step.RESIDUE_HUNTED
    residue: str | None = None  # "retract" or "review"
    identifiers: int | None = None
    found: int | None = None


RECORDS: dict[Step, type[StepEvidence]] = {
    r.STEP: r
    for r in (
        ReceivedEvidence,
        TombstonedEvidence,
        DerivedPurgedEvidence,
        KeyDestroyedEvidence,
        VerifiedEvidence,
        ResidueHuntedEvidence,
        CompactedEvidence,
        ReportedEvidence,
        KeyIrrecoverableEvidence,
    )
}
