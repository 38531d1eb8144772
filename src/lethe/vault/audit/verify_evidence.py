"""The verifier's checks of what a certificate's evidence supports: ``evidence`` (keys
unusable, probes showing them destroyed, nothing retrievable), v3's ``result`` (the stated
class and missing parts are those the evidence shows), v2's ``key_destruction`` summary,
and a final certificate's ``chain`` to the first.

Part of the standalone verifier (``vault.audit.verify``): standard library and the
verifier's pure helpers only.

Exceptions: ``CheckFailed``, one failed check (the verifier records it, never lets it out).
"""

from __future__ import annotations

import hashlib
from typing import Any

from lethe.vault.audit.certificate_format import (
    CheckFailed,
    field_of,
    refused_generations,
    result_of,
    step_name,
    steps_of,
)
from lethe.vault.audit.step_evidence import (
    EvidenceMalformed,
    KeyDestroyedEvidence,
    TombstonedEvidence,
    VerifiedEvidence,
)
from lethe.vault.audit.step_names import Step


def check_evidence(doc: dict[str, Any]) -> str:
    by_name: dict[str, dict[str, Any]] = {}
    for i, step in enumerate(steps_of(doc)):
        evidence = field_of(step, "evidence", dict)
        if not evidence:
            raise CheckFailed(f"step {step_name(step, i)} carries no evidence")
        by_name[step_name(step, i)] = evidence
    try:  # a record that cannot be read is a failed check, never an exception
        tomb = TombstonedEvidence.from_dict(by_name.get(Step.TOMBSTONED, {}))
        destroyed = KeyDestroyedEvidence.from_dict(by_name.get(Step.KEY_DESTROYED, {}))
        verified = VerifiedEvidence.from_dict(by_name.get(Step.VERIFIED, {}))
    except EvidenceMalformed as exc:
        raise CheckFailed(str(exc)) from exc
    if tomb.index_entries_after != 0:
        raise CheckFailed("tombstoned: search index entries remained after the tombstone")
    receipts = destroyed.receipts
    if receipts is None or destroyed.keys_destroyed != len(receipts):
        raise CheckFailed("key_destroyed: the receipts do not match the number of keys destroyed")
    if any(r.get("key_unusable") is not True for r in receipts):
        raise CheckFailed("key_destroyed: a receipt does not show the key unusable")
    scheduled = {
        r.get("generation")
        for r in receipts
        if r.get("destruction") == "scheduled" and r.get("material_destroyed") is not True
    }
    refused = destroyed.refused or []  # a list of objects, or ``from_dict`` failed
    refused_gens = {r.get("generation") for r in refused}
    if refused_gens & {r.get("generation") for r in receipts}:
        raise CheckFailed("key_destroyed: a generation has both a receipt and a refusal")
    probes = verified.key_probes
    if probes is None or any(not _probe_ok(p, scheduled, refused_gens) for p in probes):
        raise CheckFailed("verified: a key probe does not show the key destroyed")
    check_key_destruction(doc, destroyed.to_dict(), scheduled)
    counts = {
        "retrievable_memories": verified.retrievable_memories,
        "projection_rows_with_ciphertext": verified.projection_rows_with_ciphertext,
        "index_entries": verified.index_entries,
    }
    for key, count in counts.items():
        if count != 0:
            raise CheckFailed(f"verified: {key} is not 0")
    if verified.erasure_fence is not True:
        raise CheckFailed("verified: the erasure fence is not up")
    if not receipts and not probes:
        return "no key to destroy; nothing retrievable, no index entries"
    if refused:
        done = f", {len(receipts)} other(s) destroyed" if receipts else ""
        return f"{len(refused)} key(s) refused by the KMS{done}; {len(probes)} probe(s) say which"
    return f"{len(receipts)} key(s) destroyed, {len(probes)} probe(s) show them gone"


def check_result(doc: dict[str, Any]) -> str:
    """v3: the stated class, and the parts said missing, are those the evidence supports."""
    stated = field_of(doc, "result", str)
    missing = field_of(doc, "missing", list)
    derived, parts = result_of(steps_of(doc))
    if stated != derived:
        raise CheckFailed(f"the certificate says {stated!r} but its evidence shows {derived!r}")
    named = []
    refused = refused_generations(steps_of(doc))
    for i, m in enumerate(missing):
        why = field_of(m, "why", str, f"missing[{i}].")
        if not why.strip():
            raise CheckFailed(f"missing[{i}] does not say why")
        named.append((field_of(m, "part", str, f"missing[{i}]."), m.get("generation")))
        # "final" (no later certificate will supply it) only where the KMS's refusal is logged
        if "final" in m and m["final"] is not (m.get("generation") in refused):
            raise CheckFailed(f"missing[{i}] is said final or not against the logged refusals")
    if named != parts:
        raise CheckFailed("the parts said missing are not those the evidence shows not done")
    if derived == "partial":
        return f"partial: {len(parts)} part(s) missing, each named"
    return derived


def check_key_destruction(doc: dict[str, Any], destroyed: dict[str, Any], scheduled: set[Any]) -> None:
    """v2's ``key_destruction`` summary says what the logged receipts say."""
    summary = doc.get("key_destruction")
    if summary is None:
        return
    if not isinstance(summary, dict):
        raise CheckFailed("key_destruction is not an object")
    mode = "scheduled" if scheduled else "immediate"
    if summary.get("mode") != mode or destroyed.get("destruction", mode) != mode:
        raise CheckFailed(
            f"key_destruction: the receipts show {mode} destruction, not {summary.get('mode')!r}"
        )
    if summary.get("key_copies") != destroyed.get("key_copies"):
        raise CheckFailed("key_destruction: the key copies differ from the logged inventory")
    closed = summary.get("window_closed")
    if mode == "immediate" and closed is not True:
        raise CheckFailed("key_destruction: an immediate destruction has no open window")
    if mode == "scheduled" and closed is True:
        final = next((st for st in steps_of(doc) if st.get("name") == Step.KEY_IRRECOVERABLE), None)
        evidence = final.get("evidence") if isinstance(final, dict) else None
        receipts = evidence.get("receipts") if isinstance(evidence, dict) else None
        if not receipts or any(
            not isinstance(r, dict) or r.get("material_destroyed") is not True for r in receipts
        ):
            raise CheckFailed(
                f"key_destruction: the window is said closed but no {Step.KEY_IRRECOVERABLE} step shows "
                "the key material destroyed"
            )


def check_chain(doc: dict[str, Any], previous: bytes | None) -> str:
    """A final certificate names the first by its SHA-256, as its logged steps do."""
    sup = field_of(doc, "supersedes", dict)
    report_id = field_of(sup, "report_id", str, "supersedes.")
    digest = field_of(sup, "certificate_sha256", str, "supersedes.")
    by_name = {step_name(st, i): st.get("evidence") for i, st in enumerate(steps_of(doc))}
    reported = by_name.get(Step.REPORTED)
    if not isinstance(reported, dict) or (
        reported.get("report_id"),
        reported.get("certificate_sha256"),
    ) != (
        report_id,
        digest,
    ):
        raise CheckFailed("the logged reported step names another first certificate")
    final = by_name.get(Step.KEY_IRRECOVERABLE)
    if not isinstance(final, dict) or final.get("previous_certificate_sha256") != digest:
        raise CheckFailed(f"the logged {Step.KEY_IRRECOVERABLE} step names another first certificate")
    if previous is not None:
        if hashlib.sha256(bytes(previous)).hexdigest() != digest:
            raise CheckFailed("the first certificate given is not the one this certificate follows")
        return f"follows certificate {report_id} (SHA-256 {digest[:16]}…, the one given)"
    return f"follows certificate {report_id} (SHA-256 {digest[:16]}…)"


# what only the auditor knows ---------------------------------------------------------------


def _probe_ok(probe: Any, scheduled: set[Any], refused: set[Any]) -> bool:
    """Destroyed; or (its destruction scheduled by the KMS) unusable and pending; or (the KMS
    refused its destruction, as the key_destroyed step logged) said refused. The last two
    make the result ``partial``, which the ``result`` check holds the certificate to."""
    if not isinstance(probe, dict):
        return False
    if probe.get("destroyed") is True:
        return True
    if probe.get("refused") is True:
        return probe.get("generation") in refused
    return (
        probe.get("pending") is True
        and probe.get("unwrap_failed") is True
        and probe.get("generation") in scheduled
    )
