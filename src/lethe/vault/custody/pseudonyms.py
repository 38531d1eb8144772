"""Pseudonymous references: subject refs, search-term hashes, source hashes and agent session refs.

Both are keyed HMACs under a secret that lives with the keys, not in the database,
so a stolen database cannot be dictionary-attacked for subject ids (emails, phone
numbers) or for the words of a memory.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from lethe.keys.envelope import create_secret_file, keyed_digest

_WORD = re.compile(r"\w+", re.UNICODE)

# The recipe of the blind index, recorded beside it (``memory.reindex``): change either
# function below and its version must change too, or old entries would silently not match.
TOKENISER = "nfc-lower-unicode-words-min2"
TOKENISER_VERSION = 1
TERM_HASH = "hmac-sha256-tenant-terms-hex16"
TERM_HASH_VERSION = 1
# A memory's ``source_ref`` is indexed as one more posting of its index row (so it is written,
# dropped and rebuilt with the others): a keyed hash under its own tenant key, "s" and 32 hex
# digits, which no query term (16 hex digits) can equal. A memory written before sources
# were sealed has no such posting (``memory.repository.from_source`` finds it by its row).


def create_pepper(path: Path) -> bool:
    """Create the 0600 pepper file once; False if it already exists."""
    return create_secret_file(path)


class Pseudonymizer:
    def __init__(self, secret: bytes) -> None:
        if len(secret) < 32:
            raise ValueError("pepper must be at least 32 bytes")
        self._secret = secret
        self._tenant_keys: dict[tuple[str, str], bytes] = {}

    @classmethod
    def from_file(cls, path: Path) -> Pseudonymizer:
        return cls(Path(path).read_bytes())

    def _tenant_key(self, tenant_id: str, use: str) -> bytes:
        k = (tenant_id, use)
        if k not in self._tenant_keys:
            self._tenant_keys[k] = bytes.fromhex(keyed_digest(self._secret, f"{use}|{tenant_id}".encode()))
        return self._tenant_keys[k]

    def tenant_secret(self, tenant_id: str, use: str) -> bytes:
        """A 32-byte key of this tenant for one use (e.g. sealing a filing's code), never stored."""
        return self._tenant_key(tenant_id, use)

    def subject_ref(self, tenant_id: str, subject_id: str) -> str:
        """HMAC-SHA256(tenant pepper, NFC(subject_id)), hex."""
        return self.unnormalised_subject_ref(tenant_id, unicodedata.normalize("NFC", subject_id))

    def unnormalised_subject_ref(self, tenant_id: str, subject_id: str) -> str:
        """The ref of the id exactly as given: how stores before NFC normalisation keyed it."""
        return keyed_digest(self._tenant_key(tenant_id, "subject"), subject_id.encode())

    def session_ref(self, tenant_id: str, agent_id: str, session_id: str) -> str:
        """HMAC-SHA256(tenant pepper, agent id | session id), hex: an agent session's key in the
        database (``memory.agent_sessions``), so a copy of the table names no session id."""
        return keyed_digest(self._tenant_key(tenant_id, "session"), f"{agent_id}|{session_id}".encode())

    def term_hashes(self, tenant_id: str, text: str) -> set[str]:
        """Blind-index terms: truncated keyed hashes of the lower-cased words (NFC)."""
        key = self._tenant_key(tenant_id, "terms")
        words = _WORD.findall(unicodedata.normalize("NFC", text).lower())
        return {keyed_digest(key, w.encode())[:16] for w in words if len(w) > 1}

    def source_hash(self, tenant_id: str, source_ref: str) -> str:
        """The blind-index entry of a provenance ``source_ref`` (exact bytes; retraction by
        source looks memories up by it): the value itself is never stored in clear."""
        return "s" + keyed_digest(self._tenant_key(tenant_id, "sources"), source_ref.encode())[:32]
