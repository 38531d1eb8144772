"""What a certificate says when the KMS refused to destroy a key: nothing it did not do.

A certificate is worded for the usual case, a destroyed key ("ciphertext under the
destroyed key; unreadable"). When the ``key_destroyed`` step logged generations the KMS
refused to destroy past Lethe's window (``erasure.refusals``), those sentences would be
false. ``with_refusals`` rewrites them from the evidence: each missing part says what the
KMS refused, since when and that Lethe stopped asking (``final``: no later certificate
supplies it); what remains names the live key at the KMS; backups and the uncompacted log
are said readable to whoever can use that key. A certificate without refusals passes
through unchanged.

Exceptions: none.
"""

from __future__ import annotations

from typing import Any

from lethe.vault.audit.step_names import Step

REFUSED_BACKUP_STATEMENT = (
    "Backups hold the database only, never the key dir or the KMS. The subject's content in any "
    "backup taken before the forget event is ciphertext; under the key generation(s) the KMS refused "
    "to destroy it stays readable to whoever can use those keys at the KMS. Restoring such a backup "
    "re-applies the ledger of forgotten subjects, so the subject is not resurrected in Lethe. Copies "
    "made outside Lethe and the KMS's own backups or snapshots are not covered."
)
REFUSED_CONTENT = "ciphertext; under a key the KMS refused to destroy, readable to whoever can use it there"


def refused_of(steps: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """The refusals the ``key_destroyed`` step logged, by generation."""
    for s in steps:
        ev = s.get("evidence")
        if s.get("name") == Step.KEY_DESTROYED and isinstance(ev, dict):
            return {r.get("generation"): r for r in ev.get("refused") or [] if isinstance(r, dict)}
    return {}


def duration(seconds: Any) -> str:
    """A window in words: days, hours or seconds, whichever is whole."""
    s = int(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool) else 0
    if s and s % 86400 == 0:
        return f"{s // 86400} day(s)"
    if s and s % 3600 == 0:
        return f"{s // 3600} hour(s)"
    return f"{s} s"


def still_held(compacted: bool) -> str:
    """Where the subject's ciphertext still is, which a refused key can decrypt."""
    return (
        "any backup taken before the erasure (the database files were compacted)"
        if compacted
        else "the event log and any backup taken before the erasure"
    )


def refused_why(r: dict[str, Any], compacted: bool) -> str:
    """Why a refused generation is missing, in words, from its logged refusal."""
    return (
        f"key generation {r.get('generation')}: the KMS ({r.get('backend') or 'unknown'}) refused to "
        f"destroy it ({r.get('error')}) each time Lethe asked, from {r.get('asked_since')} until "
        f"{r.get('gave_up_at')}, when Lethe's window of {duration(r.get('window_seconds'))} closed and it "
        f"stopped asking. The key is still usable at the KMS: the subject's ciphertext in "
        f"{still_held(compacted)} stays readable to whoever can use it there. This is the final "
        "certificate of this request: no later one supplies this part"
    )


def with_refusals(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every sentence a refusal makes false rewritten from the evidence."""
    steps = document.get("steps") or []
    refused = refused_of(steps)
    missing = [{**m, "final": m.get("generation") in refused} for m in document.get("missing") or []]
    if not refused:
        return {**document, "missing": missing} if missing else document
    compacted = any(isinstance(s, dict) and s.get("name") == Step.COMPACTED for s in steps)
    missing = [
        {**m, "why": refused_why(refused[m.get("generation")], compacted)} if m["final"] else m
        for m in missing
    ]
    gens = ", ".join(str(g) for g in sorted(refused))
    remains = [
        {
            "item": f"key generation(s) {gens} at the KMS",
            "why": (
                "The KMS refused to destroy them past Lethe's window. Lethe no longer uses them (revoked, "
                "the subject fenced, their memories forgotten and out of search), but whoever can use "
                "them at the KMS can still decrypt the subject's ciphertext that remains."
            ),
        },
        *(_reworded(r) for r in document.get("what_remains") or []),
    ]
    coverage = dict(document.get("backup_coverage") or {})
    coverage["statement"] = REFUSED_BACKUP_STATEMENT
    coverage["backups_before_forget"] = [
        {**b, "subject_content": REFUSED_CONTENT} for b in coverage.get("backups_before_forget") or []
    ]
    return {
        **document,
        "missing": missing,
        "what_remains": remains,
        "backup_coverage": coverage,
        "key_destruction": {
            **(document.get("key_destruction") or {}),
            "refused_generations": sorted(refused),
        },
    }


def _reworded(item: dict[str, Any]) -> dict[str, Any]:
    """A what-remains entry whose reason assumed the key destroyed, said as it is."""
    name, why = item.get("item"), str(item.get("why") or "")
    if name == "content_hmac":
        why = (
            "An HMAC of each content under a key derived from the subject's data key. Where that key "
            "was destroyed it is an unlinkable commitment; under a generation the KMS refused to "
            "destroy it can still be recomputed by whoever can use that key."
        )
    elif name == "dead ciphertext in the event log":
        why = (
            "No compaction step ran before this certificate: the subject's ciphertext remains in the "
            "append-only event log; under a generation the KMS refused to destroy it is readable to "
            "whoever can use that key at the KMS."
        )
    return {**item, "why": why}
