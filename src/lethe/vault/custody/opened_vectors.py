"""Opened vectors, cached with the data key that opened them and never longer.

A search scores every vector of its scope; opening a thousand sealed vectors (reading
their ciphertext and one AEAD open each) was a third of a search. This cache keeps the
float32 bytes a process opened, grouped by the (tenant, subject, key generation) whose
data key opened them, under the same rules as ``keyring.DekCache``:
- an entry lives at most the DEK cache's TTL from when it was opened (and leaves memory
  within one sweep after, used or not: ``custody.plaintext_expiry``), and the whole
  cache holds at most ``max_vectors`` vectors (least recently used subjects go first);
- revoking a key generation (forget, in this process, before the key is destroyed)
  drops its vectors and refuses them forever, like its key;
- a caller uses an entry only after reading the key's state in its own transaction
  (``sealing.subject_deks``): a key destroyed by another node is seen there, and that
  subject's entries are dropped unused. So a cached vector is never scored after its
  key is gone, and never held longer than the data key that could reopen it.
Entries are keyed by memory id, sealed version and model, exactly what the vector's AAD
binds: a new version or another model misses, and is opened from its ciphertext.

It also keeps whole scopes as a search ranks them (``memory.ranked_scope``: the ranking
columns and the opened vectors as one matrix), each under the scope's change token
(``store.scope_changes``) and the subject keys whose vectors it holds: served only while
the token a search reads is the same, within the TTL, and dropped with any of its keys
(revoked or found gone). A kept scope is the one copy of its vectors: keeping it drops
its keys' cached vectors, and when the scope changes the search that reads it again reuses
the stale copy's vectors (``kept_copy``) for the rows whose memory, version and key are
unchanged, after reading each key's state in its own transaction as for a cached vector;
the new copy replaces the stale one and expires no later than it. Holding each vector
once, a worker keeps twice the rows in the same memory, and a write to a kept scope costs
its next search one AEAD open, not one per row.
Kept scopes and cached vectors count against one bound; the vectors go first, least
recently used subject first, then kept scopes: one at random among the three quarters less
recently used. Least recently used alone fails scopes searched in turn that do not all fit
(each keep then evicts the scope the next search needs: 16 scopes of about 3,200 rows in a
50,000 bound served 42-61 searches/s, every one a cold read); a random choice leaves most
of them kept, and sparing the most recent quarter keeps the scopes searched most (in a
simulation, as many hits as least recently used when one scope takes half the searches).
Plaintext vectors stay in this process's memory: never written, logged or shared.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import NamedTuple

from lethe.vault.custody import plaintext_expiry

KeyId = tuple[str, str, int]  # (tenant_id, subject_ref, generation)
VectorId = tuple[str, int, str]  # (memory_id, sealed version, model)
ScopeId = tuple[object, ...]


class _Kept(NamedTuple):
    """A kept scope: until when, under which change token and keys, how many rows."""

    expires: float
    token: str
    keys: frozenset[KeyId]
    scope: object
    rows: int


class Copy(NamedTuple):
    """A kept scope as a read that replaces it sees it: the copy, and when its vectors expire."""

    scope: object
    expires: float


class OpenedVectors:
    """Bounded, TTL'd, revocable cache of opened vectors per subject key (see the module)."""

    def __init__(
        self,
        max_vectors: int = 40_000,
        ttl_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._max = max_vectors
        self._rng = rng or random.Random()
        self._ttl = ttl_seconds
        self._clock = clock
        self._data: OrderedDict[KeyId, tuple[float, dict[VectorId, bytes]]] = OrderedDict()
        self._count = 0
        self._revoked: set[KeyId] = set()
        self._scopes: OrderedDict[tuple[object, ...], tuple[float, frozenset[KeyId]]] = OrderedDict()
        self._kept: OrderedDict[ScopeId, _Kept] = OrderedDict()
        self._kept_rows = 0
        self._lock = threading.Lock()
        if max_vectors > 0:
            plaintext_expiry.watch(self)  # an idle process drops expired vectors and scopes too

    @property
    def capacity(self) -> int:
        """How many vectors the cache may hold (0: none)."""
        return self._max

    def get(self, key: KeyId) -> dict[VectorId, bytes]:
        """The vectors cached for one subject key (a copy of the mapping; empty if none)."""
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return {}
            if hit[0] < self._clock():
                self._drop(key)
                return {}
            self._data.move_to_end(key)
            return dict(hit[1])

    def put(self, key: KeyId, vectors: Iterable[tuple[VectorId, bytes]]) -> None:
        """Add vectors opened with ``key``'s data key (refused for a revoked key, or with a
        cache of size 0); an entry's clock starts when its first vector is cached."""
        if self._max <= 0:
            return
        with self._lock:
            if key in self._revoked:
                return
            hit = self._data.get(key)
            if hit is None or hit[0] < self._clock():
                if hit is not None:
                    self._drop(key)
                hit = (self._clock() + self._ttl, {})
                self._data[key] = hit
            before = len(hit[1])
            hit[1].update(vectors)
            self._count += len(hit[1]) - before
            self._data.move_to_end(key)
            self._evict()

    def discard(self, key: KeyId) -> None:
        """Drop one subject key's vectors and the kept scopes that hold any (its key was
        found gone); they may be cached again only if the key is active again, which a
        destroyed key never is."""
        with self._lock:
            self._drop(key)
            self._drop_scopes_of(key)

    def revoke(self, key: KeyId) -> None:
        """Drop one subject key's vectors and kept scopes, and refuse them from now on (forget)."""
        with self._lock:
            self._revoked.add(key)
            self._drop(key)
            self._drop_scopes_of(key)

    def kept_scope(self, scope: ScopeId, token: str) -> object | None:
        """The scope kept under ``token`` (see the module), or None: never kept, expired, or
        kept under another token (the scope changed since: the read that replaces it may
        take vectors from the stale copy, ``kept_copy``; an expired one is dropped)."""
        with self._lock:
            hit = self._live_kept(scope)
            if hit is None or hit.token != token:
                return None
            self._kept.move_to_end(scope)
            return hit.scope

    def kept_copy(self, scope: ScopeId) -> Copy | None:
        """The copy of a scope kept under any token, with when its vectors expire; None if
        none is kept within its TTL. The read that replaces a stale copy takes vectors from
        it, each only after its key's state is read (``sealing.scope_vectors``), and keeps
        what it builds no later than ``expires`` (``keep_scope(not_after=...)``). The copy
        stays until then, so that searches of the scope in flight together all use it."""
        with self._lock:
            hit = self._live_kept(scope)
            return None if hit is None else Copy(hit.scope, hit.expires)

    def keep_scope(
        self,
        scope: ScopeId,
        token: str,
        kept: object,
        keys: Iterable[KeyId],
        rows: int,
        not_after: float | None = None,
    ) -> None:
        """Keep a scope read under ``token`` whose vectors were opened with ``keys`` (and
        some taken from a copy expiring at ``not_after``), in place of its keys' cached
        vectors; refused with a cache of size 0, for a scope of more rows than half the
        bound, or when one of its keys was revoked meanwhile."""
        if self._max <= 0:
            return
        keys = frozenset(keys)
        with self._lock:
            self._drop_kept(scope)  # the copy it replaces, kept or not
            if rows > self._max // 2 or keys & self._revoked:
                return
            # No longer than the vectors it was built from: a vector lives a TTL from its opening.
            expires = min(
                [
                    self._clock() + self._ttl,
                    *(self._data[k][0] for k in keys if k in self._data),
                    *([] if not_after is None else [not_after]),
                ]
            )
            for k in keys:  # the scope's matrix holds them now
                self._drop(k)
            self._kept[scope] = _Kept(expires, token, keys, kept, rows)
            self._kept_rows += rows
            self._evict()

    def scope_is_warm(self, scope: tuple[object, ...]) -> bool:
        """Whether a search read this scope's vectors within the TTL and the cache still
        holds every subject key's vectors it cached then (a hint: a cold scope reads its
        ciphertext with its rows in one pass, a warm one reads rows only and its misses by a
        second statement, so a scope whose vectors were pushed out must count as cold)."""
        if self._max <= 0:
            return False
        with self._lock:
            hit = self._scopes.get(scope)
            now = self._clock()
            if hit is None or hit[0] < now:
                return False
            for key in hit[1]:
                entry = self._data.get(key)
                if entry is None or entry[0] < now:
                    return False
            return True

    def note_scope(self, scope: tuple[object, ...], keys: Iterable[KeyId]) -> None:
        """Remember that a search just read this scope's vectors and cached them under ``keys``."""
        if self._max <= 0:
            return
        with self._lock:
            self._scopes[scope] = (self._clock() + self._ttl, frozenset(keys))
            self._scopes.move_to_end(scope)
            while len(self._scopes) > 4096:
                self._scopes.popitem(last=False)

    def drop_expired(self) -> int:
        """Drop every vector and kept scope (with the results it keeps) past its TTL
        (``custody.plaintext_expiry``); how many vectors and scope rows were dropped."""
        with self._lock:
            now = self._clock()
            before = self._count + self._kept_rows
            for key in [k for k, (expires, _) in self._data.items() if expires < now]:
                self._drop(key)
            for scope in list(self._kept):
                self._live_kept(scope)  # drops it if expired
            return before - self._count - self._kept_rows

    @property
    def kept_scopes(self) -> int:
        """How many scopes are kept (each with its vectors and the results it keeps)."""
        return len(self._kept)

    def _drop(self, key: KeyId) -> None:
        hit = self._data.pop(key, None)
        if hit is not None:
            self._count -= len(hit[1])

    def _live_kept(self, scope: ScopeId) -> _Kept | None:
        """The scope's kept copy within its TTL (an expired one is dropped); under the lock."""
        hit = self._kept.get(scope)
        if hit is not None and hit.expires < self._clock():
            self._drop_kept(scope)
            return None
        return hit

    def _drop_kept(self, scope: ScopeId) -> None:
        hit = self._kept.pop(scope, None)
        if hit is not None:
            self._kept_rows -= hit.rows

    def _drop_scopes_of(self, key: KeyId) -> None:
        for scope in [s for s, hit in self._kept.items() if key in hit.keys]:
            self._drop_kept(scope)

    def _evict(self) -> None:
        """Within the bound: vectors first (least recently used subject first), then kept
        scopes (one at random among the three quarters less recently used, see the module)."""
        while self._count + self._kept_rows > self._max and self._data:
            self._drop(next(iter(self._data)))
        while self._kept_rows > self._max and self._kept:
            older = list(itertools.islice(self._kept, max(1, len(self._kept) * 3 // 4)))
            self._drop_kept(self._rng.choice(older))

    def __len__(self) -> int:
        """How many vectors are cached (apart from those kept scopes hold)."""
        return self._count

    @property
    def held(self) -> int:
        """How many vectors the process holds: cached, and in kept scopes (one per row)."""
        return self._count + self._kept_rows
