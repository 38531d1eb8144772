"""Page one of an erasure certificate, in plain language: what happened, to whom, how, when.

One source for the HTML and the PDF. It reads only the certificate (and the verification
result, and optionally the officer's display name, which a certificate never contains:
records keep token ids). The outcome follows the certificate's result class (v3's
``result``; for v1 and v2, the class their evidence supports, ``result_of``):
- **Erased**: verified, every key generation of the subject destroyed and the
  verification step found nothing readable;
- **Erased with exceptions**: erased, but something is worth knowing (ciphertext not yet
  removed from the database files, ...);
- **Nothing held**: Lethe held no memory and no key of the subject; the request is
  recorded and certified as such, and no sentence says a key was destroyed;
- **Partial**: some part could not be done yet (a KMS keeping key material through its
  waiting window, ...), or will not be (a KMS that refused a key's destruction past Lethe's
  window: its sentences say the key still works at the KMS), each named;
- **Not erased**: the key destruction or its verification is missing or failed;
- **Not verified**: the certificate does not verify; nothing in it should be relied on.

Exceptions: none; missing fields read as absent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lethe.vault.audit.certificate_format import NOTHING_HELD, PARTIAL, RESULTS, CheckFailed, result_of
from lethe.vault.audit.refused_wording import refused_of, still_held
from lethe.vault.audit.step_names import Step
from lethe.vault.audit.verify import VerificationResult
from lethe.vault.erasure.legal_bases import words as legal_basis_words
from lethe.vault.oversight.render_kit import as_list, as_object

STEP_NAMES: dict[str, str] = {
    Step.RECEIVED: "Request received",
    Step.TOMBSTONED: "Memories marked forgotten and taken out of search",
    Step.DERIVED_PURGED: "Summaries built on them removed",
    Step.KEY_DESTROYED: "The subject's encryption key destroyed",
    Step.VERIFIED: "Checked: nothing readable remains",
    Step.RESIDUE_HUNTED: "Other people's memories that name them looked up",
    Step.COMPACTED: "Leftover ciphertext removed from the database files",
    Step.REPORTED: "Certificate issued",
}
KMS_NAMES = {
    "local": "Lethe's local key store",
    "vault": "HashiCorp Vault / OpenBao Transit",
}
# the steps of a request that found nothing: no sentence may claim what did not happen
NOTHING_STEP_NAMES: dict[str, str] = {
    Step.TOMBSTONED: "No memories to mark forgotten; new writes about the subject refused",
    Step.DERIVED_PURGED: "No summaries built on them",
    Step.KEY_DESTROYED: "No encryption key existed: none to destroy",
    Step.VERIFIED: "Checked: nothing readable is held",
    Step.COMPACTED: "Database files compacted",
}
# a partial request's key: unusable, its destruction not confirmed (the final certificate says so)
PARTIAL_STEP_NAMES: dict[str, str] = {
    Step.KEY_DESTROYED: "The subject's encryption key made unusable; its destruction pending"
}
# a key the KMS refused to destroy past Lethe's window: said so, and that Lethe stopped asking
REFUSED_STEP_NAMES: dict[str, str] = {
    Step.KEY_DESTROYED: (
        "The key manager refused to destroy the subject's encryption key; Lethe stopped asking"
    ),
    Step.VERIFIED: "Checked: nothing readable through Lethe; the refused key still works at the key manager",
}
ERASED, WITH_EXCEPTIONS, NOTHING_HELD_OUTCOME, PARTIAL_OUTCOME, NOT_ERASED, NOT_VERIFIED = (
    "Erased",
    "Erased with exceptions",
    "Nothing held",
    "Partial",
    "Not erased",
    "Not verified",
)


@dataclass
class Summary:
    result: str  # the result class (erased, nothing_held, partial), or "" if none can be read
    outcome: str
    exceptions: list[str]
    intro: str
    request: list[tuple[str, str]]
    erased: list[tuple[str, str]]
    method: str
    timeline: list[tuple[str, str]]
    remains: list[tuple[str, str]]
    backups: str
    verify: list[str] = field(default_factory=list)
    erased_title: str = "What was erased"


def _evidence(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    steps = as_list(doc.get("steps"))
    return {str(s.get("name")): (as_object(s.get("evidence"))) for s in steps if isinstance(s, dict)}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _when(value: Any) -> str:
    """'2026-12-01 08:13 UTC' from an RFC 3339 timestamp (the exact one is in the appendix)."""
    if not isinstance(value, str) or len(value) < 16:
        return "-"
    return f"{value[:10]} {value[11:16]} UTC"


_SENTENCE_END = re.compile(r"(?<!Art)(?<!e\.g)(?<!i\.e)\.\s+(?=[A-Z])")


def _first_sentence(text: Any) -> str:
    """The first sentence (the appendix has the rest); 'Art. 5(2)' does not end one."""
    if not isinstance(text, str):
        return "-"
    end = _SENTENCE_END.search(text)
    return text if end is None else text[: end.start() + 1]


def residue_row(doc: dict[str, Any]) -> tuple[str, str] | None:
    """The residue hunt's counts in words (requests filed with identifiers only): pending
    decisions are said to be pending, never done."""
    counts = doc.get("residue")
    if not isinstance(counts, dict):
        return None
    found, retracted = _int(counts.get("found")), _int(counts.get("retracted"))
    kept, pending = len(as_list(counts.get("kept"))), _int(counts.get("pending_review"))
    parts = [f"{retracted} retracted"]
    if counts.get("residue") == "review":
        parts += [f"{kept} kept with a reviewer's reason", f"{pending} awaiting a reviewer's decision"]
    return ("Other people's memories naming them", f"{found} found: {', '.join(parts)}")


def result_class(doc: dict[str, Any]) -> str:
    """The certificate's result class: v3 states it (the verifier checks it against the
    evidence); for v1 and v2 it is the class their evidence supports. "" if unreadable."""
    stated = doc.get("result")
    if isinstance(stated, str) and stated in RESULTS:
        return stated
    try:
        return result_of([s for s in as_list(doc.get("steps")) if isinstance(s, dict)])[0]
    except CheckFailed:
        return ""


def outcome(doc: dict[str, Any], result: VerificationResult) -> tuple[str, list[str]]:
    """The verdict a reader needs first, and the exceptions that qualify it."""
    if not result.ok:
        first = result.first_failure
        why = f"the check '{first.name}' failed: {first.detail}" if first else "no check ran"
        return NOT_VERIFIED, [why]
    ev = _evidence(doc)
    if Step.KEY_DESTROYED not in ev or Step.VERIFIED not in ev:
        return NOT_ERASED, ["the certificate records no key destruction and verification"]
    cls = result_class(doc)
    if cls == NOTHING_HELD:
        return NOTHING_HELD_OUTCOME, []
    if cls == PARTIAL:
        missing = [str(m.get("why")) for m in as_list(doc.get("missing")) if isinstance(m, dict)]
        return PARTIAL_OUTCOME, missing or ["a part of the erasure could not be confirmed (see the appendix)"]
    exceptions: list[str] = []
    verified = ev[Step.VERIFIED]
    if _int(verified.get("retrievable_memories")) or _int(verified.get("projection_rows_with_ciphertext")):
        return NOT_ERASED, ["the verification step still found readable memories"]
    for receipt in ev[Step.KEY_DESTROYED].get("receipts") or []:
        if isinstance(receipt, dict) and receipt.get("material_destroyed") is False:
            gen = receipt.get("generation", "?")
            exceptions.append(
                f"key generation {gen} is unusable now, but the key manager keeps its material until a "
                "waiting period ends (see the key_destroyed evidence in the appendix)"
            )
    scan = (ev.get(Step.COMPACTED) or {}).get("scan") or {}
    if Step.COMPACTED not in ev:
        exceptions.append(
            "the leftover ciphertext was not yet removed from the database files; it is unreadable, "
            "because its key is destroyed"
        )
    elif _int(scan.get("slices_found")) or _int(scan.get("rows_still_holding_them")):
        exceptions.append(
            "the byte scan still found pieces of ciphertext in the database files; they are unreadable, "
            "because their key is destroyed"
        )
    return (WITH_EXCEPTIONS if exceptions else ERASED), exceptions


def summarise(
    doc: dict[str, Any], result: VerificationResult, requested_by_name: str | None = None
) -> Summary:
    verdict, exceptions = outcome(doc, result)
    request = as_object(doc.get("request"))
    ev = _evidence(doc)
    tenant = str(doc.get("tenant_id") or "-")
    officer = requested_by_name or str(request.get("requested_by") or "-")
    if requested_by_name and request.get("requested_by"):
        officer = f"{requested_by_name} (token {str(request['requested_by'])[:8]})"
    basis = str(request.get("legal_basis") or "-")
    completed = _when(request.get("completed_at"))
    cls = result_class(doc)
    nothing = cls == NOTHING_HELD
    refused = sorted(g for g in refused_of(as_list(doc.get("steps"))) if isinstance(g, int))
    filed_as = request.get("reference") or request.get("id") or "-"
    did = {
        NOTHING_HELD: (
            f"received a request to erase everything it held about one person (the data subject) in "
            f"the space '{tenant}', filed as {filed_as}, and found that it held nothing about them: no "
            f"memory and no encryption key. Nothing was erased because nothing was held; the request "
            f"is recorded and certified as such, and was closed on {completed}."
        ),
        PARTIAL: (
            f"carried out the request filed as {filed_as} to erase everything it held about one person "
            f"(the data subject) in the space '{tenant}' in part, by {completed}: what could not be "
            f"done {'' if refused else 'yet '}is named above."
        ),
    }.get(
        cls,
        f"erased everything it held about one person (the data subject) in the space '{tenant}', "
        f"at the request filed as {filed_as}, and finished on {completed}.",
    )
    intro = (
        f"This certificate records that Lethe, the memory vault of the organisation's AI assistants, "
        f"{did} It names the person only by a code: with their id and the verification code given "
        f"when the request was filed, anyone can check it is about them."
    )
    keys_label = {NOTHING_HELD: "Encryption keys", PARTIAL: "Encryption keys made unusable"}.get(
        cls, "Encryption keys destroyed"
    )
    tombstoned, derived = ev.get(Step.TOMBSTONED) or {}, ev.get(Step.DERIVED_PURGED) or {}
    keys = ev.get(Step.KEY_DESTROYED) or {}
    index_removed = sum(
        max(_int(e.get("index_entries_before")) - _int(e.get("index_entries_after")), 0)
        for e in (tombstoned, derived)
    )
    erased = [
        ("Memories", str(_int(tombstoned.get("memories_forgotten")))),
        ("Summaries built on them", str(_int(derived.get("derived_tombstoned")))),
        ("Search index entries", str(index_removed)),
        (keys_label, str(_int(keys.get("keys_destroyed")))),
    ]
    if refused:  # what the KMS did and what it refused, each counted from the receipts
        done = _int(keys.get("keys_destroyed"))
        erased[-1:] = [("Encryption keys destroyed", str(done))] if done else []
        erased.append(("Encryption keys the key manager refused to destroy", str(len(refused))))
    residue = residue_row(doc)
    if residue is not None:
        erased.append(residue)
    vectors = _int(tombstoned.get("sealed_vectors_before")) - _int(tombstoned.get("sealed_vectors_after"))
    if vectors > 0:
        erased.insert(2, ("Sealed embeddings", str(vectors)))
    window = as_object(doc.get("key_destruction"))
    pending = window.get("window_closed") is False
    kms = KMS_NAMES.get(str(keys.get("kms_backend")), str(keys.get("kms_backend") or "the key manager"))
    destroyed = (
        f"that key was made unusable in {kms}, which destroys its material when its waiting period "
        f"ends ({_when(window.get('irrecoverable_after'))}). It counts as the 'Purge' method of NIST SP "
        "800-88 Rev. 1 (cryptographic erase) only then: a final certificate, chained to this one, "
        "follows when the key manager confirms it"
        if pending
        else f"that key was destroyed in {kms}. This is the 'Purge' method of NIST SP 800-88 Rev. 1 "
        "(cryptographic erase)"
    )
    compacted = (
        " Lethe then removed the leftover ciphertext from the database files and checked them byte by byte."
        if Step.COMPACTED in ev
        else ""
    )
    if nothing:
        method = (
            "Nothing to erase: Lethe held no memory of this subject and no encryption key for them, so "
            "no key was destroyed. It checked that nothing about them is readable or in the search "
            "index, and put up the erasure fence: any new memory about this subject is refused until a "
            "privacy officer reinstates them."
        )
    elif refused:
        method = (
            "Cryptographic erase, not completed: each memory was stored encrypted under a key of this "
            f"subject alone, and {kms} refused to destroy key generation(s) "
            f"{', '.join(map(str, refused))} each time Lethe asked, until Lethe's window closed and it "
            "stopped asking. Lethe no longer uses those keys: the memories are marked forgotten and out "
            "of search, and new memories about the subject are refused. But whoever can use those keys at "
            f"the key manager can still decrypt the subject's ciphertext in {still_held('compacted' in ev)}. "
            "This is the final certificate of this request; it does not claim the erasure done."
        )
    elif cls == PARTIAL and not pending:
        method = (
            "Cryptographic erase, not completed: each memory was stored encrypted under a key of this "
            "subject alone, and the key manager has not confirmed every key generation destroyed (see "
            "what is missing above). Until it does, this certificate does not claim the erasure "
            f"done.{compacted}"
        )
    else:
        method = (
            "Cryptographic erase: each memory was stored encrypted under a key of this subject alone, and "
            f"{destroyed}. Without the key, every copy of the memories, in the database, its logs "
            f"and its backups, is unreadable.{compacted}"
        )
    steps = as_list(doc.get("steps"))
    names = {
        NOTHING_HELD: {**STEP_NAMES, **NOTHING_STEP_NAMES},
        PARTIAL: {**STEP_NAMES, **(REFUSED_STEP_NAMES if refused else PARTIAL_STEP_NAMES)},
    }.get(cls, STEP_NAMES)
    timeline = [
        (_when(s.get("completed_at")), names.get(str(s.get("name")), str(s.get("name"))))
        for s in steps
        if isinstance(s, dict)
    ]
    timeline.append((_when(doc.get("issued_at")), STEP_NAMES[Step.REPORTED]))
    remains_raw = as_list(doc.get("what_remains"))
    remains = [
        (str(i.get("item") or "-"), _first_sentence(i.get("why"))) for i in remains_raw if isinstance(i, dict)
    ]
    coverage = as_object(doc.get("backup_coverage"))
    before = coverage.get("backups_before_forget") or []
    backups = (
        f"{len(before)} backup(s) predate the erasure; "
        if before
        else "No recorded backup predates the erasure. "
    ) + (
        "Lethe held nothing of this subject, so no backup holds their content; restoring one keeps "
        "new memories about them refused."
        if nothing
        else "Backups hold the database only, never the keys: the subject's content in a backup is "
        "ciphertext, readable to whoever can use the keys the key manager refused to destroy; "
        "restoring one does not bring the subject back into Lethe."
        if refused
        else "Backups hold the database only, never the keys: the subject's content in any backup is "
        "unreadable, and restoring one does not bring the subject back."
    )
    report_id = str(doc.get("report_id") or "-")
    verify = [
        "You need the signed JSON certificate, the issuer's public key (lethe-public.pem, fingerprint "
        f"sha256:{(doc.get('issuer') or {}).get('public_key_sha256', '-')}), obtained independently, "
        "and Lethe's verifier (lethe verify). No server and no network are needed.",
        f"lethe verify erasure-certificate-{report_id}.json --public-key lethe-public.pem",
        "To check whom it is about, add: --subject-id 'ID' --verification-code 'CODE'",
    ]
    return Summary(
        result=cls,
        erased_title="What was found" if nothing else "What was erased",
        outcome=verdict,
        exceptions=exceptions,
        intro=intro,
        request=[
            ("Organisation space (tenant)", tenant),
            ("Request", f"{request.get('reference') or '-'} (id {request.get('id') or '-'})"),
            ("Filed by", officer),
            ("Legal basis", legal_basis_words(basis)),
            ("Received", _when(request.get("received_at"))),
            ("Due", _when(request.get("due_at"))),
            ("Completed", completed),
        ],
        erased=erased,
        method=method,
        timeline=timeline,
        remains=remains,
        backups=backups,
        verify=verify,
    )
