"""A KMS that schedules key destruction, for testing the waiting-window mechanics.

Cloud KMSs (and Vault/OpenBao with soft delete) do not destroy a key when asked: they
make it unusable and destroy its material after a waiting period, cancellable until
then. This wrapper gives a real backend (the local KMS) that behaviour: ``destroy_key``
disables the key and schedules the real destruction ``window`` later; a later
``destroy_key`` after the window performs it and reports the material destroyed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from lethe.keys.protocol import DataKey, DestructionReceipt, KeyDestroyed, KeyInfo, KeyManager, ProbeResult
from lethe.vault.clock import iso, utcnow


class SchedulingKms:
    backend = "scheduling-test"

    def __init__(self, inner: KeyManager, window: timedelta, clock: Callable[[], datetime] = utcnow) -> None:
        self.inner, self.window, self.clock = inner, window, clock
        self.pending: dict[str, datetime] = {}

    def _usable(self, name: str) -> None:
        if name in self.pending:
            raise KeyDestroyed("the key is scheduled for destruction")

    def create_key(self, name: str) -> KeyInfo:
        self._usable(name)
        return self.inner.create_key(name)

    def generate_data_key(self, name: str) -> DataKey:
        self._usable(name)
        return self.inner.generate_data_key(name)

    def unwrap_data_key(self, name: str, wrapped: bytes) -> bytes:
        self._usable(name)
        return self.inner.unwrap_data_key(name, wrapped)

    def destroy_key(self, name: str) -> DestructionReceipt:
        now = self.clock()
        until = self.pending.get(name)
        first = until is None
        if until is None:
            until = self.pending[name] = now + self.window
        window = {"scheduled": True, "pending_until": iso(until), "irrecoverable_after": iso(until)}
        if now < until:
            return DestructionReceipt(
                name,
                self.backend,
                iso(now),
                key_unusable=True,
                material_destroyed=False,
                already_destroyed=not first,
                details={"schedule": "disabled; destroyed after the window"},
                cancellable=True,
                **window,
            )
        done = self.inner.destroy_key(name)
        return DestructionReceipt(
            name,
            self.backend,
            done.destroyed_at,
            key_unusable=True,
            material_destroyed=done.material_destroyed,
            already_destroyed=not first,
            details=done.details,
            cancellable=False,
            **window,
        )

    def probe(self, name: str, wrapped: bytes) -> ProbeResult:
        until = self.pending.get(name)
        if until is not None and self.clock() < until:
            return ProbeResult(name, self.backend, unwrap_failed=True, key_present=True)
        return self.inner.probe(name, wrapped)

    def health(self) -> None:
        self.inner.health()

    def close(self) -> None:
        self.inner.close()
