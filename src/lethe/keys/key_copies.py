"""Which copies of a subject's key material existed, and what became of each.

NIST SP 800-88 counts cryptographic erase as Purge only if every copy of the key that
could decrypt the data is destroyed; a certificate that says "key destroyed" must
therefore name the copies. Envelope encryption gives four kinds: the key-encryption
key at the KMS, the wrapped data keys (in the store and in every backup, useless
without the KEK), plaintext data keys cached in memory, and whatever the KMS itself
keeps (its snapshots, replicas, soft-deleted versions). ``inventory`` lists them with
their fate, from facts the caller measured; it claims Purge only when the KEK is
destroyed immediately and no plaintext copy can outlive the cache.

Exceptions: none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lethe.keys.protocol import DestructionReceipt


def inventory(
    *,
    backend: str,
    receipts: Sequence[DestructionReceipt],
    wrapped_in_store: int,
    backups_before: int,
    cache_ttl_seconds: float,
    sweep_seconds: float,
    refused: int = 0,
) -> dict[str, Any]:
    """The copies of the subject's key material and the fate of each, with the verdict.
    ``sweep_seconds``: how long past its TTL a process may still hold a cached key (the
    caller's sweep of expired plaintext). ``refused``: key generations the KMS refused to
    destroy (they are live at the KMS: no Purge is claimed)."""
    scheduled = [r for r in receipts if r.scheduled and not r.material_destroyed]
    bound = float(cache_ttl_seconds + sweep_seconds)
    none = "none: the subject had no key"  # a request that found nothing claims no destruction
    if refused:
        kek_fate = f"{refused} generation(s) NOT destroyed: the KMS refused, and still holds them usable" + (
            f"; {len(receipts)} other generation(s) destroyed" if receipts else ""
        )
    elif not receipts:
        kek_fate = none
    elif scheduled:
        until = max(r.pending_until or r.destroyed_at for r in scheduled)
        kek_fate = f"unusable now; destruction scheduled by the KMS, material destroyed by {until}" + (
            " (still cancellable at the KMS)" if any(r.cancellable for r in scheduled) else ""
        )
    elif backend == "local":
        kek_fate = (
            "deleted from the keystore (SQLite secure_delete, WAL truncated, VACUUM), "
            "keystore files scanned: no wrapped key bytes found"
            if all(r.material_destroyed for r in receipts)
            else "deleted from the keystore, but its bytes were found in a keystore file"
        )
    else:
        kek_fate = "hard-deleted at the KMS (not soft-deleted) and read back absent"
    copies = [
        {
            "copy": f"key-encryption key at the KMS ({backend})",
            "count": len(receipts) + refused,
            "fate": kek_fate,
        },
        {
            "copy": "wrapped data keys in the store",
            "count": wrapped_in_store,
            "fate": (
                "kept; those of the refused generation(s) still unwrap at the KMS"
                if refused
                else "kept, marked destroyed: ciphertext under the destroyed key-encryption key"
            )
            if wrapped_in_store
            else none,
        },
        {
            "copy": "wrapped data keys in Lethe backups taken before the erasure",
            "count": backups_before,
            "fate": "unchanged; those of the refused generation(s) still unwrap at the KMS"
            if refused
            else "unchanged and useless: backups never contain the key dir or the KMS",
        },
        {
            "copy": "plaintext data keys in DEK caches",
            "count": None,
            "fate": none
            if not receipts and not wrapped_in_store
            else (
                f"revoked in the erasing process{'' if refused else ' before destruction'}; "
                "other processes never use theirs "
                "(every read checks the key's state first) and drop them, with the vectors and search "
                f"results they opened, within {bound:g} s of caching "
                f"(the {cache_ttl_seconds:g} s TTL and one {sweep_seconds:g} s sweep); "
                + (
                    "a refused key stays revoked in Lethe, but the KMS can still unwrap it"
                    if refused
                    else "a destroyed key can never be unwrapped again"
                )
            ),
        },
        {
            "copy": "the KMS's own snapshots, replicas and backups"
            if backend != "local"
            else "remnants below the keystore (copy-on-write filesystems, SSD firmware, host snapshots)",
            "count": None,
            "fate": "outside Lethe's reach: expire them under the KMS or host operator's policy",
        },
    ]
    purge = not scheduled and not refused and all(r.material_destroyed for r in receipts)
    return {
        "copies": copies,
        # How long after caching another process may hold plaintext (keys, and what they opened);
        # an integer when whole: canonical JSON keeps floats to the few that need them.
        "plaintext_bound_seconds": int(bound) if bound.is_integer() else bound,
        "nist_sp_800_88_purge": purge,
        "condition": (
            "cryptographic erase counts as Purge (NIST SP 800-88) when every copy of the key that can "
            "decrypt the data is destroyed: the KMS's key here, with the copies outside Lethe's reach "
            "listed above left to their operators"
        ),
    }
