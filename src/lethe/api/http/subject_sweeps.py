"""How fast one token, and one tenant, may name subjects it has not named recently.

The erasure fence refuses writes about a forgotten subject, so a write is an oracle: an
agent writing one note per candidate id learns which candidate is forgotten by its refusal
(docs/verifying-erasure.md, "What the fence tells a tenant's own callers"). The refusal
itself must stay (it is what keeps the forgotten subject's memories from coming back), so
what is limited is the sweep: each subject id a token writes about (or a privacy officer
exports) that it has not named within the window counts once against the token's limit and
once against its tenant's; naming the same subjects again costs nothing. Past either limit
the request is a 429 before anything is read, and the throttling is logged with the token
id, tenant and which limit, never the subject id.

Counts live in the rate limiter's storage (``RateLimiter``: per process, or shared through
Redis by every node); the "named recently" marks are keyed by a truncated HMAC of the folded
subject id under a tenant key derived from the pepper, so the storage holds no subject id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from lethe.api.http.auth import RateLimiter
from lethe.keys.envelope import keyed_digest
from lethe.vault.audit.certificate_format import fold_subject_id
from lethe.vault.model import Caller

log = logging.getLogger("lethe.api")

TOKEN, TENANT = "token", "tenant"


class SubjectSweeps:
    """Distinct subjects named per token and per tenant, in the token limit's window."""

    def __init__(
        self,
        per_token: str,
        per_tenant: str,
        tenant_key: Callable[[str], bytes],
        storage_uri: str = "memory://",
    ) -> None:
        self.token = RateLimiter(per_token, "naming new subjects (this token)", storage_uri)
        self.tenant = RateLimiter(per_tenant, "naming new subjects (this tenant)", storage_uri)
        # A subject is "named recently" for the token limit's window: one mark per window.
        window = int(self.token.item.get_expiry())
        self.seen = RateLimiter(f"1 per {window} seconds", "subject named", storage_uri)
        self.tenant_key = tenant_key

    def charge(self, caller: Caller, subject_id: str) -> None:
        """Count ``subject_id`` if this token has not named it in the window; 429 past a limit."""
        mark = f"{caller.principal}|{self._digest(caller.tenant_id, subject_id)}"
        if not self.seen.admits(mark):
            return  # named within the window: no new candidate
        for limiter, scope, key in (
            (self.token, TOKEN, caller.principal),
            (self.tenant, TENANT, caller.tenant_id),
        ):
            if not limiter.admits(key):
                log.warning(
                    "subject sweep throttled",
                    extra={"limit": scope, "principal": caller.principal, "tenant": caller.tenant_id},
                )
                limiter.refuse(key)
        self.token.charge(caller.principal)
        self.tenant.charge(caller.tenant_id)
        self.seen.hit(mark)  # a concurrent request naming the same subject marked it too: fine

    def _digest(self, tenant_id: str, subject_id: object) -> str:
        text = fold_subject_id(subject_id) if isinstance(subject_id, str) else ""
        return keyed_digest(self.tenant_key(tenant_id), text.encode())[:32]
