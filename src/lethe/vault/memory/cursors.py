"""Opaque page cursors over memories: a versioned prefix and the last memory's id, base64url.

Shared by the review queue and an agent's own-records listing. The prefix is versioned per
listing (``rq1:``, ``own1:``), so a cursor of one listing is refused by the other and the
encoding can change without misreading old cursors. A cursor is a position, not a capability:
each listing still checks that the memory it names is one the caller may page past.
"""

from __future__ import annotations

import base64
import binascii

from lethe.vault.errors import InvalidCommand

_INVALID = "cursor is not valid: start again without it"
_MAX_ID = 64


def cursor_after(prefix: str, memory_id: str) -> str:
    """The cursor of the page that follows ``memory_id``."""
    return base64.urlsafe_b64encode(f"{prefix}{memory_id}".encode()).decode().rstrip("=")


def memory_id_of(prefix: str, cursor: str) -> str:
    """The memory id a cursor of this listing names; ``InvalidCommand`` (422) otherwise."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    if not text.startswith(prefix) or not 0 < len(text) - len(prefix) <= _MAX_ID:
        raise InvalidCommand(_INVALID)
    return text[len(prefix) :]
