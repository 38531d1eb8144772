"""The KMS port: what Lethe needs from a key manager, and nothing more.

A backend holds one key-encryption key per (tenant, subject ref, generation), named
by the caller with an opaque name (never a subject identifier). It wraps and unwraps
256-bit data keys; it can destroy a key so that nothing it ever wrapped unwraps again,
and it can prove that afterwards.

Exceptions (all subclass ``KmsError``):
- ``KmsUnavailable``: the KMS cannot be reached or answered with a server error;
  retrying later may succeed.
- ``KeyDestroyed``: the named key was destroyed (or never existed); retrying never helps.
- ``KmsForbidden``: the KMS refused the call (credentials or policy); an operator must act.
- ``UnwrapFailed``: the key exists but the wrapped data key does not unwrap under it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class KmsError(Exception):
    """Base class of every error a KMS backend raises."""


class KmsUnavailable(KmsError):
    """The KMS cannot be reached now; the operation may be retried."""


class KeyDestroyed(KmsError):
    """The key is gone: destroyed, or never created."""


class KmsForbidden(KmsError):
    """The KMS refused the operation (token or policy)."""


class UnwrapFailed(KmsError):
    """The wrapped data key is not valid under the named key."""


@dataclass(frozen=True)
class DataKey:
    """A fresh data key: use ``plaintext`` now, store only ``wrapped``."""

    plaintext: bytes = field(repr=False)
    wrapped: bytes


@dataclass(frozen=True)
class KeyInfo:
    """How a key was created: the evidence that it cannot leave the KMS."""

    name: str
    backend: str
    exportable: bool
    plaintext_backup_allowed: bool
    created: bool  # False when the key already existed (create is idempotent)


@dataclass(frozen=True)
class DestructionReceipt:
    """What the backend did to destroy a key, kept as erasure evidence.

    ``key_unusable`` and ``material_destroyed`` are separate facts: a soft delete makes
    a key unusable while its material may still be restorable.

    Destruction is immediate (local KMS, Transit hard delete: ``scheduled`` False, the
    key irrecoverable from ``destroyed_at``) or scheduled by the KMS (a waiting period,
    a soft-deleted key): then ``pending_until`` says when the KMS will destroy the
    material, ``irrecoverable_after`` from when nothing can bring the key back, and
    ``cancellable`` whether the destruction can still be called off. Calling
    ``destroy_key`` again is how the status is read once the window has passed.
    """

    name: str
    backend: str
    destroyed_at: str
    key_unusable: bool
    material_destroyed: bool
    already_destroyed: bool
    details: dict[str, Any] = field(default_factory=dict)
    scheduled: bool = False
    pending_until: str | None = None
    irrecoverable_after: str | None = None  # None: from destroyed_at (immediate)
    cancellable: bool = False

    @property
    def mode(self) -> str:
        return "scheduled" if self.scheduled else "immediate"

    def window(self) -> dict[str, Any]:
        """The waiting window as erasure evidence records it."""
        return {
            "destruction": self.mode,
            "pending_until": self.pending_until,
            "irrecoverable_after": self.irrecoverable_after or self.destroyed_at,
            "cancellable": self.cancellable,
        }


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of trying to use a key after its destruction."""

    name: str
    backend: str
    unwrap_failed: bool
    key_present: bool
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def destroyed(self) -> bool:
        return self.unwrap_failed and not self.key_present


@runtime_checkable
class KeyManager(Protocol):
    """The port every KMS backend implements (``LocalKms``, ``VaultTransitKms``)."""

    backend: str

    def create_key(self, name: str) -> KeyInfo:
        """Create a non-exportable key; idempotent for an existing live key.

        Raises ``KeyDestroyed`` if the name belongs to a destroyed key: a destroyed
        key is never re-created under the same name.
        """
        ...

    def generate_data_key(self, name: str) -> DataKey:
        """Return a new random 256-bit data key and its wrapped form."""
        ...

    def unwrap_data_key(self, name: str, wrapped: bytes) -> bytes:
        """Return the plaintext data key for ``wrapped``."""
        ...

    def destroy_key(self, name: str) -> DestructionReceipt:
        """Destroy the key for good; idempotent (a second call reports ``already_destroyed``)."""
        ...

    def probe(self, name: str, wrapped: bytes) -> ProbeResult:
        """Show that ``wrapped`` no longer unwraps and the key is gone."""
        ...

    def health(self) -> None:
        """Return if the KMS is usable; raise ``KmsUnavailable`` otherwise."""
        ...

    def close(self) -> None:
        """Release connections and files; the backend is not used afterwards."""
        ...
