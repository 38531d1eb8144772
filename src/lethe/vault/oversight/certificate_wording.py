"""What an erasure certificate says in words, and the parts of it built from the evidence.

The statements (what remains and why, backup coverage, key destruction, the residue hunt),
the verify command printed in every certificate, and the summaries the certificate builds
from the logged evidence: ``key_destruction``, ``missing_parts`` (why each part of a
``partial`` certificate is missing), ``other_processes`` (the plaintext other processes
cached, with its bound).

Exceptions: none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lethe.vault.audit.certificate_format import KEY
from lethe.vault.audit.step_evidence import KeyDestroyedEvidence
from lethe.vault.audit.step_names import Step
from lethe.vault.erasure.model import ErasureStep

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
    copies = _key_destroyed(steps).key_copies
    bound = copies.get("plaintext_bound_seconds") if copies is not None else None
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
    evidence = _key_destroyed(steps)
    receipts = evidence.receipts or []
    scheduled = evidence.scheduled_receipts()
    closed = any(s.step == Step.KEY_IRRECOVERABLE for s in steps)
    pending = [r["pending_until"] for r in scheduled if r.get("pending_until")]
    after = [r["irrecoverable_after"] for r in receipts if r.get("irrecoverable_after")]
    return {
        "mode": "scheduled" if scheduled else "immediate",
        "pending_until": max(pending) if pending else None,
        "irrecoverable_after": max(after) if after else None,
        "cancellable": any(r.get("cancellable") is True for r in scheduled) and not closed,
        "window_closed": not scheduled or closed,
        "key_copies": evidence.key_copies,
        "statement": KEY_DESTRUCTION_STATEMENT,
    }


def _key_destroyed(steps: Sequence[ErasureStep]) -> KeyDestroyedEvidence:
    """The ``key_destroyed`` step's evidence (empty if the job has none yet)."""
    evidence = next((s.evidence for s in steps if s.step == Step.KEY_DESTROYED), {})
    return KeyDestroyedEvidence.from_dict(evidence)
