"""A step's evidence as labelled rows in words, for people (the console, the HTML certificate).

The evidence an erasure step records (``erasure.steps``, ``erasure.compaction``) is JSON
made for machines and for the verifier: nested objects, booleans, nulls. People read it
here as rows, each a label and a value in words: counts with their before and after, each
key generation's receipt with its KMS window, each copy of the key material with its fate,
each scan with what it looked for and what it found. Nothing is dropped: a key this
module does not know is shown under its own name in words, so a new piece of evidence is
never hidden. The exact JSON stays the record; a rendering sits beside it, never instead.

Exceptions: none (any JSON value can be shown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lethe.vault.erasure.legal_bases import words as basis_words

# Labels for the evidence keys the steps record; anything else is its key in words.
LABELS: dict[str, str] = {
    "legal_basis": "Legal basis",
    "due_at": "Due",
    "event_seq": "Audit event",
    "key_generation": "Key generation",
    "memories_forgotten": "Memories forgotten",
    "index_entries": "Search index entries",
    "sealed_vectors": "Sealed vectors",
    "derived_tombstoned": "Other subjects' summaries tombstoned",
    "derived_ids": "Those summaries",
    "sealed_vectors_purged": "Their sealed vectors removed",
    "sealed_vectors_after": "Sealed vectors left",
    "index_entries_after": "Search index entries left",
    "kms_backend": "KMS",
    "keys_destroyed": "Key generations destroyed",
    "receipts": "Destruction receipts",
    "destruction": "Destruction",
    "key_copies": "Copies of the key material",
    "key_config": "Key configuration",
    "dek_cache": "Data-key caches",
    "key_probes": "Key probes",
    "retrievable_memories": "Memories still retrievable",
    "projection_rows_with_ciphertext": "Rows still holding ciphertext",
    "erasure_fence": "Erasure fence up",
    "events_rewritten": "Events rewritten (ciphertext removed)",
    "projection_rows_rewritten": "Memory rows rewritten",
    "batches": "Batches",
    "bytes_reclaimed": "Bytes reclaimed",
    "reclaim": "Space reclaimed",
    "scan": "Ciphertext scan",
    "row_check": "Row check",
    "vector_scan": "Sealed-vector scan",
    "report_id": "Certificate",
    "checkpoint_tree_size": "Audit log size at the checkpoint",
    "certificate_sha256": "Certificate SHA-256",
    "plaintext_bound_seconds": "Plaintext keys gone from every process within",
    "nist_sp_800_88_purge": "Counts as NIST SP 800-88 Purge",
    "condition": "On condition that",
    "wal_truncated": "WAL emptied",
    "wal_checkpoint": "WAL checkpoint",
    "secure_delete": "secure_delete on",
    "vacuum": "VACUUM",
    "rows_still_holding_them": "Rows still holding them",
    "slices_found": "Slices found",
    "ciphertexts_scanned": "Ciphertexts sampled for the byte scan",
    "events_that_held_ciphertext": "Events that held ciphertext",
    "events_still_holding_ciphertext": "Events still holding ciphertext",
    "key_present": "Key present at the KMS",
    "unwrap_failed": "Unwrapping fails",
    "pending_until": "Destruction scheduled for",
    "irrecoverable_after": "Irrecoverable after",
    "cancellable": "Still cancellable at the KMS",
    "key_unusable": "Key unusable",
    "material_destroyed": "Key material destroyed",
    "already_destroyed": "Already destroyed before",
    "destroyed_at": "Destroyed at",
    "key_ref": "Key reference",
    "exportable": "Exportable",
    "plaintext_backup_allowed": "Plaintext backup allowed",
    "wrapped_key_bytes_found": "Wrapped key bytes found in its files",
    "files_scanned": "Files scanned",
    "performed": "Performed",
    "lookup": "Looked up in",
    "identifiers": "Identifiers attached (kept only as keyed hashes)",
    "residue": "Chosen for what they find",
    "found": "Other subjects' memories found",
    "memory_ids": "Those memories",
    "retracted": "Retracted",
    "derived_retracted": "Summaries built on them retracted",
    "queued_for_review": "Queued for a reviewer's decision",
    "retraction_id": "Retraction",
    "refused": "Destruction refused by the KMS",
    "error": "What the KMS answered",
    "asked_since": "Asked since",
    "gave_up_at": "Stopped asking at",
    "window_seconds": "Lethe's window",
}
# Pairs shown on one row as "before → after".
_PAIRS = (
    ("index_entries_before", "index_entries_after", "Search index entries"),
    ("sealed_vectors_before", "sealed_vectors_after", "Sealed vectors"),
    ("bytes_before", "bytes_after", "Store size in bytes"),
)
_SECONDS = {"plaintext_bound_seconds", "window_seconds"}


@dataclass(frozen=True)
class EvidenceRow:
    """One labelled line; ``depth`` nests the rows of a receipt, a copy or a scan."""

    label: str
    value: str
    depth: int = 0


def label_of(key: str) -> str:
    """The label people read for an evidence key."""
    return LABELS.get(key) or key.replace("_", " ").capitalize()


def words(value: Any) -> str:
    """A scalar (or a list of scalars) in words: yes/no, none, numbers with separators."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,g}"
    if isinstance(value, str):
        return _time(value) if _is_time(value) else value
    if isinstance(value, Sequence):
        return ", ".join(words(v) for v in value) if value else "none"
    return str(value)


def _is_time(value: str) -> bool:
    return len(value) >= 19 and value[4] == "-" and value[10] == "T" and value[13] == ":"


def _time(value: str) -> str:
    """An ISO 8601 time as people read it, in UTC to the second."""
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return value
    if at.tzinfo is not None:
        at = at.astimezone(UTC)
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def _first_upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def evidence_rows(evidence: Mapping[str, Any]) -> list[EvidenceRow]:
    """Every key of a step's evidence as labelled rows in words, in the evidence's order."""
    return _rows(evidence, 0)


def _rows(evidence: Mapping[str, Any], depth: int) -> list[EvidenceRow]:
    out: list[EvidenceRow] = []
    paired = {k for pair in _PAIRS for k in pair[:2] if pair[0] in evidence and pair[1] in evidence}
    done: set[str] = set()
    for key, value in evidence.items():
        if key in done:
            continue
        if key in paired:
            before, after, label = next(p for p in _PAIRS if key in p[:2])
            out.append(EvidenceRow(label, f"{words(evidence[before])} → {words(evidence[after])}", depth))
            done |= {before, after}
            continue
        out += _row(key, value, depth)
    return out


def _row(key: str, value: Any, depth: int) -> list[EvidenceRow]:
    label = label_of(key)
    if key == "key_copies" and isinstance(value, Mapping):
        return _key_copies(value, depth)
    if key in _SECONDS and isinstance(value, int | float):
        return [EvidenceRow(label, f"{words(value)} s", depth)]
    if key == "legal_basis" and isinstance(value, str):  # people read the words, not the code
        return [EvidenceRow(label, basis_words(value), depth)]
    if key == "event_seq" and isinstance(value, int):
        return [EvidenceRow(label, f"#{value}", depth)]
    if isinstance(value, Mapping):
        if not value:
            return [EvidenceRow(label, "none", depth)]
        return [EvidenceRow(label, "", depth), *_rows(value, depth + 1)]
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and any(isinstance(v, Mapping) for v in value)
    ):
        rows = [EvidenceRow(label, f"{len(value)}", depth)]
        for i, item in enumerate(value, 1):
            rows += _item(item, i, depth + 1)
        return rows
    return [EvidenceRow(label, words(value), depth)]


def _item(item: Any, number: int, depth: int) -> list[EvidenceRow]:
    """One element of a list of objects (a receipt, a probe): a heading row, then its fields."""
    if not isinstance(item, Mapping):
        return [EvidenceRow(f"{number}.", words(item), depth)]
    generation = item.get("generation")
    heading = f"Key generation {generation}" if isinstance(generation, int) else f"Item {number}"
    rest = {k: v for k, v in item.items() if k != "generation"}
    return [EvidenceRow(heading, "", depth), *_rows(rest, depth + 1)]


def _key_copies(value: Mapping[str, Any], depth: int) -> list[EvidenceRow]:
    """Each copy of the key material with its count and fate, then the verdict."""
    rows = [EvidenceRow(LABELS["key_copies"], "", depth)]
    for copy in value.get("copies") or ():
        if isinstance(copy, Mapping):
            count = copy.get("count")
            fate = words(copy.get("fate"))
            shown = fate if count is None else f"{words(count)}: {fate}"
            rows.append(EvidenceRow(_first_upper(str(copy.get("copy", "copy"))), shown, depth + 1))
    rest = {k: v for k, v in value.items() if k != "copies"}
    return rows + _rows(rest, depth + 1)
