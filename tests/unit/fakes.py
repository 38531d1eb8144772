"""Test doubles for the core's ports, fast enough for unit tests (no server, no files).

``FakeKms`` keeps its keys in a dict and wraps data keys with the same AEAD recipe the
core uses, so it passes the KMS contract suite (``tests/unit/test_fakes.py``) and the
core cannot tell it from a real backend; ``down`` simulates an outage. ``FakeClock`` is
a settable clock for TTLs and deadlines.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from lethe.keys.envelope import DecryptionFailed, aead_unwrap, aead_wrap
from lethe.keys.protocol import (
    DataKey,
    DestructionReceipt,
    KeyDestroyed,
    KeyInfo,
    KmsUnavailable,
    ProbeResult,
    UnwrapFailed,
)


class FakeKms:
    """A ``KeyManager`` in memory. ``down = True`` makes every call fail as an outage would."""

    backend = "fake"

    def __init__(self) -> None:
        self.keys: dict[str, bytes] = {}
        self.destroyed: set[str] = set()
        self.down = False
        self.calls: list[str] = []

    def _call(self, op: str) -> None:
        self.calls.append(op)
        if self.down:
            raise KmsUnavailable("the fake KMS is down")

    def _key(self, name: str) -> bytes:
        if name not in self.keys:
            raise KeyDestroyed("no such key")
        return self.keys[name]

    def create_key(self, name: str) -> KeyInfo:
        self._call("create_key")
        if name in self.destroyed:
            raise KeyDestroyed("a destroyed key is never created again")
        created = name not in self.keys
        self.keys.setdefault(name, os.urandom(32))
        return KeyInfo(name, self.backend, exportable=False, plaintext_backup_allowed=False, created=created)

    def generate_data_key(self, name: str) -> DataKey:
        self._call("generate_data_key")
        plaintext = os.urandom(32)
        return DataKey(plaintext, aead_wrap(self._key(name), plaintext, name.encode()))

    def unwrap_data_key(self, name: str, wrapped: bytes) -> bytes:
        self._call("unwrap_data_key")
        kek = self._key(name)
        try:
            return aead_unwrap(kek, wrapped, name.encode())
        except DecryptionFailed:
            raise UnwrapFailed("the wrapped data key does not unwrap under this key") from None

    def destroy_key(self, name: str) -> DestructionReceipt:
        self._call("destroy_key")
        already = name in self.destroyed
        self.keys.pop(name, None)
        self.destroyed.add(name)
        now = datetime.now(UTC).isoformat()
        return DestructionReceipt(name, self.backend, now, True, True, already)

    def probe(self, name: str, wrapped: bytes) -> ProbeResult:
        self._call("probe")
        try:
            self.unwrap_data_key(name, wrapped)
            failed = False
        except (KeyDestroyed, UnwrapFailed):
            failed = True
        return ProbeResult(name, self.backend, unwrap_failed=failed, key_present=name in self.keys)

    def health(self) -> None:
        self._call("health")

    def close(self) -> None:
        """Nothing to release."""


class FakeClock:
    """A clock that stands still until told to move: ``clock()`` for datetimes, ``clock.monotonic()``
    for the seconds a TTL cache counts."""

    def __init__(self, start: datetime = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)) -> None:
        self.now = start
        self.seconds = 1000.0

    def __call__(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return self.seconds

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
        self.seconds += seconds
