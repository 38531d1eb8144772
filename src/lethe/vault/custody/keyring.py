"""Per-subject data keys: created through the KMS, stored wrapped, cached briefly.

KMS round trips stay off the per-record path: a subject's data key is unwrapped once
and then served from a bounded, short-TTL cache. Forgetting revokes a (tenant,
subject, generation) in this process before the key is destroyed, and a revoked
generation can never be cached again, so a read that was already in flight cannot
put the old key back.

The key rows and the fence are read and written by ``custody.key_repository``.

Exceptions: ``SubjectForgotten`` (the subject's key generation is destroyed or fenced),
``StoreUnavailable`` (the KMS is unreachable), ``KeyUnavailable`` (the key is gone).
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.keys.protocol import KeyDestroyed, KeyManager, KmsError, KmsUnavailable, UnwrapFailed
from lethe.vault.clock import utcnow
from lethe.vault.custody import key_repository as keys
from lethe.vault.custody import plaintext_expiry

# The key states and the write verdicts, named here too for the callers that read them with
# the keyring.
from lethe.vault.custody.key_repository import ACTIVE as ACTIVE
from lethe.vault.custody.key_repository import DESTROYED as DESTROYED
from lethe.vault.custody.key_repository import FORGOTTEN as FORGOTTEN
from lethe.vault.custody.key_repository import STALE as STALE
from lethe.vault.custody.key_repository import WRITABLE as WRITABLE
from lethe.vault.custody.opened_vectors import OpenedVectors
from lethe.vault.errors import KeyUnavailable, StoreUnavailable, SubjectForgotten
from lethe.vault.store import scope_changes
from lethe.vault.store.db import UnitOfWork


@dataclass(frozen=True)
class SubjectKey:
    generation: int
    data_key: bytes


def key_name(tenant_id: str, subject_ref: str, generation: int) -> str:
    """A KMS key name that carries no subject identifier (only hashes)."""
    tenant = hashlib.sha256(tenant_id.encode()).hexdigest()[:16]
    return f"lethe-{tenant}-{subject_ref[:40]}-g{generation}"


class DekCache:
    """Bounded LRU with TTL; revoked generations are refused forever. An expired key leaves
    memory within one sweep, asked for or not (``custody.plaintext_expiry``)."""

    def __init__(
        self,
        max_entries: int = 10_000,
        ttl_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max = max_entries
        self._ttl = ttl_seconds
        self._clock = clock
        self._data: OrderedDict[tuple[str, str, int], tuple[float, bytes]] = OrderedDict()
        self._revoked: set[tuple[str, str, int]] = set()
        self._newest: dict[tuple[str, str], int] = {}  # (tenant, subject) -> newest cached generation
        self._lock = threading.Lock()
        plaintext_expiry.watch(self)  # an idle process drops expired keys too

    def get(self, k: tuple[str, str, int]) -> bytes | None:
        with self._lock:
            return self._get(k)

    def newest(self, tenant_id: str, subject_ref: str) -> tuple[int, bytes] | None:
        """The newest cached generation of the subject's key and its data key, if cached.

        A hint, not the truth: the store may hold a newer generation, or this one may have
        been destroyed by another process. The write path checks it under its write lock.
        """
        with self._lock:
            generation = self._newest.get((tenant_id, subject_ref))
            if generation is None:
                return None
            dek = self._get((tenant_id, subject_ref, generation))
            return None if dek is None else (generation, dek)

    def put(self, k: tuple[str, str, int], dek: bytes) -> None:
        with self._lock:
            if k in self._revoked:
                return
            self._data[k] = (self._clock() + self._ttl, dek)
            self._data.move_to_end(k)
            subject = k[:2]
            if self._newest.get(subject, 0) < k[2]:
                self._newest[subject] = k[2]
            while len(self._data) > self._max:
                self._drop(next(iter(self._data)))  # the least recently used

    def revoke(self, tenant_id: str, subject_ref: str, generation: int) -> None:
        with self._lock:
            k = (tenant_id, subject_ref, generation)
            self._revoked.add(k)
            self._drop(k)

    def drop_expired(self) -> int:
        """Drop every data key past its TTL (``custody.plaintext_expiry``); how many."""
        with self._lock:
            now = self._clock()
            gone = [k for k, (expires, _) in self._data.items() if expires < now]
            for k in gone:
                self._drop(k)
            return len(gone)

    def _get(self, k: tuple[str, str, int]) -> bytes | None:
        hit = self._data.get(k)
        if hit is None:
            return None
        if hit[0] < self._clock():
            self._drop(k)
            return None
        self._data.move_to_end(k)
        return hit[1]

    def _drop(self, k: tuple[str, str, int]) -> None:
        """Take ``k`` out of the cache, and forget it as its subject's newest generation."""
        self._data.pop(k, None)
        if self._newest.get(k[:2]) == k[2]:
            del self._newest[k[:2]]

    def __len__(self) -> int:
        return len(self._data)

    @property
    def ttl_seconds(self) -> float:
        """How long a plaintext data key may stay cached (the longest another process keeps one)."""
        return self._ttl


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _kms_call(fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    try:
        return fn(*args, **kwargs)
    except KmsUnavailable as exc:
        raise StoreUnavailable("key management service unavailable") from exc
    except (KeyDestroyed, UnwrapFailed) as exc:
        raise KeyUnavailable("the subject's key is not available") from exc
    except KmsError as exc:
        raise StoreUnavailable("key management service refused the request") from exc


class SubjectKeyring:
    """Each subject's data keys: created through the KMS, stored wrapped, served from ``DekCache``.

    Exceptions: ``SubjectForgotten`` (409, the subject is fenced or its key generation
    destroyed), ``KeyUnavailable`` (404, a generation is destroyed or does not unwrap),
    ``StoreUnavailable`` (503, the KMS or the database cannot be reached or refused).
    """

    def __init__(
        self,
        kms: KeyManager,
        uow: UnitOfWork,
        cache: DekCache | None = None,
        opened: OpenedVectors | None = None,
    ) -> None:
        self.kms = kms
        self.uow = uow
        self.cache = cache if cache is not None else DekCache()  # an empty cache is falsy (len 0)
        # Vectors opened with these keys, dropped and refused with them (``custody.opened_vectors``).
        self.opened = opened if opened is not None else OpenedVectors(ttl_seconds=self.cache.ttl_seconds)

    def current(self, conn: Connection, tenant_id: str, subject_ref: str) -> sa.Row[Any] | None:
        """The newest key row of the subject (any state), or None."""
        return keys.newest(conn, tenant_id, subject_ref)

    def generations(self, conn: Connection, tenant_id: str, subject_ref: str) -> list[Any]:
        """Every key row of the subject (any state), oldest generation first."""
        return keys.generations(conn, tenant_id, subject_ref)

    def active_keys(self, conn: Connection) -> list[Any]:
        """Every key row the store holds as live (any tenant, any subject)."""
        return keys.active_keys(conn)

    def mark_destroyed(self, conn: Connection, key_names: list[str], at: datetime) -> None:
        """Record that the KMS destroyed these keys (rows still marked live only). Every scope
        of their tenants gets a new change token in the same transaction: a scope a process
        keeps with vectors opened under such a key is read again by the next search anywhere
        (``store.scope_changes``), and reading it again finds the key gone."""
        if not key_names:
            return
        for tenant_id in keys.mark_destroyed(conn, key_names, at):
            scope_changes.tenant_changed(conn, tenant_id, uuid.uuid4().hex)

    def is_fenced(self, conn: Connection, tenant_id: str, subject_ref: str) -> bool:
        return keys.is_fenced(conn, tenant_id, subject_ref)

    def writable(self, conn: Connection, tenant_id: str, subject_ref: str, generation: int) -> str:
        """Whether a write sealed under ``generation`` may commit, asked in the write's own
        transaction (one statement): ``WRITABLE``; ``FORGOTTEN`` (the subject is fenced);
        ``STALE`` (not fenced, but this generation is not the subject's active newest one:
        a key served from the cache must be fetched again and the write retried; for a key
        just fetched, the subject was forgotten meanwhile)."""
        return keys.writable(conn, tenant_id, subject_ref, generation)

    def cached_for_write(self, tenant_id: str, subject_ref: str) -> SubjectKey | None:
        """The newest generation of the subject's key this process holds, if any: no store,
        no KMS (``key_for_write(cached=True)``'s first step, with its caller's duty)."""
        hit = self.cache.newest(tenant_id, subject_ref)
        return None if hit is None else SubjectKey(*hit)

    def key_for_write(self, tenant_id: str, subject_ref: str, cached: bool = False) -> SubjectKey:
        """The subject's live key, created on first use. KMS calls happen outside DB transactions.

        With ``cached`` (an opt-in: the caller takes on the check), the newest generation this
        process holds in its DEK cache is served without a read transaction; the write must then
        ask ``writable`` under its write lock (``MemoryService.write`` does), and on ``STALE``
        call again uncached.
        """
        if cached:
            hit = self.cached_for_write(tenant_id, subject_ref)
            if hit is not None:
                return hit
        with self.uow.read() as conn:
            if self.is_fenced(conn, tenant_id, subject_ref):
                raise SubjectForgotten("this subject was forgotten; a privacy officer must reinstate it")
            row = self.current(conn, tenant_id, subject_ref)
        if row is not None and row.state == ACTIVE:
            return SubjectKey(
                row.generation,
                self._unwrap(tenant_id, subject_ref, row.generation, row.key_name, row.wrapped_dek),
            )
        generation = 1 if row is None else row.generation + 1
        name = key_name(tenant_id, subject_ref, generation)
        _kms_call(self.kms.create_key, name)
        dk = _kms_call(self.kms.generate_data_key, name)
        with self.uow.write() as conn:
            existing = self.current(conn, tenant_id, subject_ref)
            if existing is not None and existing.generation >= generation:
                # Another writer created this generation first: use theirs.
                if existing.state != ACTIVE:
                    raise SubjectForgotten("this subject was forgotten; a privacy officer must reinstate it")
                winner = existing
            else:
                keys.add_generation(
                    conn, tenant_id, subject_ref, generation, name, self.kms.backend, dk.wrapped, utcnow()
                )
                winner = None
        if winner is not None:
            return SubjectKey(
                winner.generation,
                self._unwrap(tenant_id, subject_ref, winner.generation, winner.key_name, winner.wrapped_dek),
            )
        self.cache.put((tenant_id, subject_ref, generation), dk.plaintext)
        return SubjectKey(generation, dk.plaintext)

    def key_for_read(
        self, tenant_id: str, subject_ref: str, generation: int, name: str, wrapped: bytes, state: str
    ) -> bytes:
        """The data key of one generation; ``KeyUnavailable`` once it is destroyed."""
        if state != ACTIVE:
            self.cache.revoke(tenant_id, subject_ref, generation)
            self.opened.revoke((tenant_id, subject_ref, generation))
            raise KeyUnavailable("the subject's key is not available")
        return self._unwrap(tenant_id, subject_ref, generation, name, wrapped)

    def _unwrap(self, tenant_id: str, subject_ref: str, generation: int, name: str, wrapped: bytes) -> bytes:
        k = (tenant_id, subject_ref, generation)
        dek = self.cache.get(k)
        if dek is None:
            dek = _kms_call(self.kms.unwrap_data_key, name, wrapped)
            self.cache.put(k, dek)
        return dek

    def revoke(self, tenant_id: str, subject_ref: str, generation: int) -> None:
        self.cache.revoke(tenant_id, subject_ref, generation)
        self.opened.revoke((tenant_id, subject_ref, generation))
