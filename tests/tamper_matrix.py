"""The tamper matrix: ways to alter an erasure certificate, shared by every verifier's tests.

Each entry edits a genuine certificate. ``stale`` edits keep the old signature (anyone
can make them); ``resigned`` ones are signed again with the issuer's key, as a dishonest
holder of that key could, so only the checks against the embedded log catch them. A
verifier passes the matrix when it fails exactly the checks ``lethe verify`` fails.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lethe.keys.signing import Ed25519Signer
from lethe.vault.canonical import canonical_json
from lethe.vault.oversight.certificate import sign_certificate


@dataclass(frozen=True)
class Tamper:
    name: str
    change: Callable[[dict[str, Any]], None] | None = None
    resign: bool = False
    raw: Callable[[bytes], bytes] | None = None  # an edit of the bytes themselves

    def apply(self, document: bytes, signer: Ed25519Signer, origin: str) -> bytes:
        if self.raw is not None:
            return self.raw(document)
        doc = json.loads(document)
        assert self.change is not None
        self.change(doc)
        return sign_certificate(doc, signer, origin) if self.resign else canonical_json(doc)


def _step(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in doc["steps"] if s["name"] == name)


def _flip_signature(raw: bytes) -> bytes:
    value = json.loads(raw)["signature"]["value"]
    sig = bytearray(base64.b64decode(value))
    sig[5] ^= 1
    return raw.replace(value.encode(), base64.b64encode(bytes(sig)))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = doc
        for key in parents:
            node = _step(node, key[5:]) if key.startswith("step:") else node[key]
        node[last] = value

    return change


def _drop_step(name: str) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["steps"] = [s for s in doc["steps"] if s["name"] != name]

    return change


def _swap_steps(doc: dict[str, Any]) -> None:
    doc["steps"][1], doc["steps"][2] = doc["steps"][2], doc["steps"][1]


def _other_proof_hash(doc: dict[str, Any]) -> None:
    _step(doc, "tombstoned")["inclusion_proof"][0] = base64.b64encode(b"\x00" * 32).decode()


def _other_root(doc: dict[str, Any]) -> None:
    lines = doc["checkpoint"]["note"].split("\n")
    lines[2] = base64.b64encode(b"\x01" * 32).decode()
    doc["checkpoint"]["note"] = "\n".join(lines)


TAMPERS: list[Tamper] = [
    Tamper("flipped signature bit", raw=_flip_signature),
    Tamper("not canonical (a space added)", raw=lambda b: b.replace(b'{"', b'{ "', 1)),
    Tamper("duplicate member", raw=lambda b: b.replace(b'{"', b'{"format":"x","', 1)),
    Tamper("not JSON", raw=lambda b: b[:-1]),
    Tamper("legal basis changed", _set("request.legal_basis", "none")),
    Tamper("legal basis changed, re-signed", _set("request.legal_basis", "none"), resign=True),
    Tamper("reference changed, re-signed", _set("request.reference", "DSR-other"), resign=True),
    Tamper(
        "memories forgotten changed, re-signed",
        _set("step:tombstoned.evidence.memories_forgotten", 0),
        resign=True,
    ),
    Tamper(
        "nothing retrievable claimed falsely, re-signed",
        _set("step:verified.evidence.retrievable_memories", 1),
        resign=True,
    ),
    Tamper("key destruction dropped, re-signed", _drop_step("key_destroyed"), resign=True),
    Tamper("steps reordered, re-signed", _swap_steps, resign=True),
    Tamper("leaf index changed, re-signed", _set("step:tombstoned.leaf_index", 0), resign=True),
    Tamper(
        "step time changed, re-signed",
        _set("step:verified.completed_at", "2020-01-01T00:00:00.000000Z"),
        resign=True,
    ),
    Tamper("inclusion proof hash changed, re-signed", _other_proof_hash, resign=True),
    Tamper("checkpoint root changed, re-signed", _other_root, resign=True),
    Tamper("tenant changed, re-signed", _set("tenant_id", "t2"), resign=True),
    Tamper("subject ref changed, re-signed", _set("subject.subject_ref", "0" * 64), resign=True),
    Tamper("commitment changed, re-signed", _set("subject.commitment", "0" * 64), resign=True),
    Tamper(
        "issued before completion, re-signed", _set("issued_at", "2020-01-01T00:00:00.000000Z"), resign=True
    ),
    Tamper("issuer key id changed, re-signed", _set("issuer.key_id", "00000000"), resign=True),
    Tamper("unknown format, re-signed", _set("format", "lethe-erasure-certificate/v9"), resign=True),
    Tamper("field of the wrong type, re-signed", _set("request.due_at", 5), resign=True),
    # v3: a result class the evidence does not support (only the result check can catch it)
    Tamper("result claimed nothing_held, re-signed", _set("result", "nothing_held"), resign=True),
    Tamper(
        "a made-up missing part, re-signed",
        _set("missing", [{"part": "key_material", "generation": 1, "why": "made up"}]),
        resign=True,
    ),
    Tamper("unknown result, re-signed", _set("result", "forgotten"), resign=True),
]
