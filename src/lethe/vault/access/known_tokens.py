"""What a process remembers of the tokens it authenticated, and the read that keeps it honest.

A token's role, tenant, agent, purposes and expiry never change after it is minted; only its
revocation does, and revocation takes effect at once on every node (``docs/console.md``).
So a process may keep those facts of a token it looked up, by the token's hash, and skip
the lookup on a hot request (a search, a write), provided the request's own statements read
the revocation before it answers or changes anything: ``TOKEN_LIVE`` is the column a
statement adds for that (the search's scope-token statement, the write transaction's
checks; its value bound as ``token_id``), ``check_not_revoked`` the statement sent where
there is none to fold it into. A request whose statement starts after the revocation's
commit is refused, as one whose lookup did: nothing it read is answered, nothing it would
write is written.

Exceptions: ``Unauthenticated`` (401) from ``confirm`` and ``check_not_revoked`` when the token
was revoked (or is gone).
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy.engine import Connection

from lethe.vault.access import token_repository

# The column a statement adds to read a token's revocation, named here for its readers.
from lethe.vault.access.token_repository import TOKEN_LIVE as TOKEN_LIVE
from lethe.vault.errors import Unauthenticated

CAPACITY = 4096  # tokens a process keeps (a few hundred bytes each); the oldest go first
REFUSAL = "a valid bearer token is required"  # the one 401 every refused token gets


class KnownTokens:
    """Facts of tokens by their SHA-256 (hex): whatever the caller stores, at most ``capacity``."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._facts: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, digest: str) -> Any | None:
        return self._facts.get(digest)

    def remember(self, digest: str, facts: Any) -> None:
        if self.capacity <= 0:
            return
        with self._lock:
            self._facts.pop(digest, None)
            while len(self._facts) >= self.capacity:
                del self._facts[next(iter(self._facts))]  # insertion order: the oldest first
            self._facts[digest] = facts

    def forget(self, digest: str) -> None:
        with self._lock:
            self._facts.pop(digest, None)

    def __len__(self) -> int:
        return len(self._facts)


def check_not_revoked(conn: Connection, token_id: str) -> None:
    """Refuse (``Unauthenticated``) a revoked or deleted token: one statement, for a read
    that has none to fold ``TOKEN_LIVE`` into."""
    confirm(token_repository.token_live(conn, token_id))


def confirm(live: Any) -> None:
    """Refuse (``Unauthenticated``) unless ``live``, a ``TOKEN_LIVE`` value, says unrevoked."""
    if live is None:
        raise Unauthenticated(REFUSAL)
