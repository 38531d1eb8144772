"""The audit tree: RFC 9162 (RFC 6962) Merkle tree math over the event log.

Each event is one leaf; storage keeps its 32-byte leaf hash, SHA-256(0x00 || event),
and this module turns those into tree heads (roots) and the two proofs auditors ask
for: an inclusion proof (this event is in the log of that size) and a consistency
proof (the log of size ``second`` extends the log of size ``first``, nothing
rewritten). The proofs and roots are byte for byte those of RFC 9162 section 2.1, so
standard transparency-log tooling verifies them.

``MerkleTree`` reads leaf hashes through the small ``LeafSource`` port (the
``events`` table in production, a list in tests). Because the log is append-only, the
hash of a complete, aligned subtree never changes; the tree caches every complete
chunk of ``chunk`` leaves and every complete aligned subtree above those, so after
the first call a root or proof costs a few dictionary-sized lookups plus hashing at
most one partial chunk, even at millions of leaves.

``verify_inclusion`` and ``verify_consistency`` need no storage: they are the
algorithms of RFC 9162 sections 2.1.3.2 and 2.1.4.2, for auditors working offline.
They answer True or False and never raise, whatever they are fed.

Exceptions:
- ``AuditTreeError``: base class of the errors below.
- ``InvalidTreeRequest`` (also a ``ValueError``): the caller asked for something that
  does not exist: a tree size beyond the leaves stored, a leaf index not below the
  tree size, ``first > second``, or a negative or non-integer size or index.
- ``LeafSourceError``: the leaf source broke its contract (a negative size, or not
  exactly the requested number of 32-byte hashes); a storage bug, never the caller's.
- ``ValueError`` from the constructor: ``chunk`` is not a positive power of two.
Errors raised by the leaf source itself (e.g. the database is down) propagate as is.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "AuditTreeError",
    "ChunkRootStore",
    "InvalidTreeRequest",
    "LeafSource",
    "LeafSourceError",
    "MerkleTree",
    "leaf_hash",
    "node_hash",
    "perfect_root",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"
_sha256 = hashlib.sha256

EMPTY_ROOT: bytes = _sha256(b"").digest()
"""The root of the empty tree: SHA-256 of the empty string (RFC 9162 section 2.1.1)."""

# How many chunks one read from the source may cover while filling the cache: bounds
# the memory (and a database query) to 64 * 256 leaf hashes at a time.
_FETCH_CHUNKS = 64


class AuditTreeError(Exception):
    """Base class of the audit tree's errors."""


class InvalidTreeRequest(AuditTreeError, ValueError):
    """The requested tree size, index or size pair does not exist in this log."""


class LeafSourceError(AuditTreeError):
    """The leaf source returned something other than what it was asked for."""


def leaf_hash(data: bytes) -> bytes:
    """SHA-256(0x00 || data): the hash of one leaf (domain-separated from nodes)."""
    return _sha256(_LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right): the hash of an interior node."""
    return _sha256(_NODE_PREFIX + left + right).digest()


@runtime_checkable
class LeafSource(Protocol):
    """Where the tree reads leaf hashes: one 32-byte hash per log entry, append-only.

    A leaf once stored must never change or disappear; the tree caches on that.
    """

    def size(self) -> int:
        """The number of leaves stored now."""
        ...

    def leaf_hashes(self, start: int, end: int) -> Sequence[bytes]:
        """The leaf hashes with indices in ``[start, end)``, in order."""
        ...


@runtime_checkable
class ChunkRootStore(Protocol):
    """Roots of completed chunks kept across restarts, so the tree need not reread every leaf.

    Only a cache: the tree trusts a stored root as far as the signed checkpoints it is then
    checked against (a wrong one makes the next consistency check fail).
    """

    def chunk_roots(self, chunk: int, first: int, end: int) -> Sequence[bytes]:
        """Stored roots of chunks ``first, first + 1, ...`` below ``end`` (of ``chunk`` leaves), in
        order, stopping at the first one not stored."""
        ...


def perfect_root(hashes: Sequence[bytes]) -> bytes:
    """Root of a perfect subtree whose leaf hashes are ``hashes`` (power-of-two count)."""
    return _hash_full(hashes)


def _hash_full(hashes: Sequence[bytes]) -> bytes:
    """Root of a perfect subtree whose leaf hashes are ``hashes`` (power-of-two count)."""
    level = list(hashes)
    sha, prefix = _sha256, _NODE_PREFIX
    while len(level) > 1:
        it = iter(level)
        level = [sha(prefix + a + b).digest() for a, b in zip(it, it, strict=True)]
    return level[0]


def _split(n: int) -> int:
    """The largest power of two strictly less than ``n`` (n >= 2), RFC 9162 2.1.1."""
    return 1 << ((n - 1).bit_length() - 1)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class MerkleTree:
    """Roots and proofs over a ``LeafSource``, with a cache of completed subtrees.

    Thread-safe: one instance may serve concurrent requests.
    """

    def __init__(self, source: LeafSource, chunk: int = 256, stored: ChunkRootStore | None = None) -> None:
        if not _is_count(chunk) or chunk < 1 or chunk & (chunk - 1):
            raise ValueError("chunk must be a positive power of two")
        self._source = source
        self._stored = stored
        self._chunk = chunk
        self._chunk_bits = chunk.bit_length() - 1
        # _levels[j][i] is the hash of leaves [i * chunk * 2**j, (i + 1) * chunk * 2**j).
        self._levels: list[list[bytes]] = [[]]
        # The leaves of the chunk read last: proofs touch several small subtrees of
        # the same (often partial) chunk, which this saves reading again.
        self._memo_chunk = -1
        self._memo_leaves: list[bytes] = []
        self._lock = threading.RLock()

    # -- public API -------------------------------------------------------------------

    def size(self) -> int:
        """The number of leaves in the source now."""
        return self._source_size()

    def root(self, tree_size: int | None = None) -> bytes:
        """MTH of the first ``tree_size`` leaves (default: all leaves stored)."""
        with self._lock:
            if tree_size is None:
                tree_size = self._source_size()
            self._prepare(tree_size)
            if tree_size == 0:
                return EMPTY_ROOT
            return self._subtree(0, tree_size, tree_size)

    def inclusion_proof(self, index: int, tree_size: int) -> list[bytes]:
        """PATH(index, D[tree_size]) of RFC 9162 2.1.3.1, ordered leaf to root."""
        with self._lock:
            self._prepare(tree_size)
            if not _is_count(index) or index >= tree_size:
                raise InvalidTreeRequest(f"leaf index {index!r} is not below the tree size {tree_size}")
            top_down: list[bytes] = []
            start, end = 0, tree_size
            while end - start > 1:
                k = _split(end - start)
                if index < start + k:
                    top_down.append(self._subtree(start + k, end, tree_size))
                    end = start + k
                else:
                    top_down.append(self._complete(start, k, tree_size))
                    start += k
            top_down.reverse()
            return top_down

    def consistency_proof(self, first: int, second: int) -> list[bytes]:
        """PROOF(first, D[second]) of RFC 9162 2.1.4.1, ordered leaf to root.

        Empty when ``first`` is 0 or equals ``second``: there is nothing to prove.
        """
        with self._lock:
            self._prepare(second)
            if not _is_count(first) or first > second:
                raise InvalidTreeRequest(f"first size {first!r} must be between 0 and second size {second}")
            if first == 0 or first == second:
                return []
            top_down: list[bytes] = []
            start, end, m, whole = 0, second, first, True
            while end - start != m:
                k = _split(end - start)
                if m <= k:
                    top_down.append(self._subtree(start + k, end, second))
                    end = start + k
                else:
                    top_down.append(self._complete(start, k, second))
                    start += k
                    m -= k
                    whole = False
            if not whole:
                top_down.append(self._subtree(start, end, second))
            top_down.reverse()
            return top_down

    # -- internals --------------------------------------------------------------------

    def _source_size(self) -> int:
        size = self._source.size()
        if not _is_count(size):
            raise LeafSourceError(f"leaf source reported an invalid size {size!r}")
        return size

    def _prepare(self, tree_size: object) -> None:
        """Check that ``tree_size`` exists and cache every complete chunk below it."""
        if not _is_count(tree_size):
            raise InvalidTreeRequest(f"tree size {tree_size!r} is not a non-negative integer")
        assert isinstance(tree_size, int)
        stored = self._source_size()
        if tree_size > stored:
            raise InvalidTreeRequest(f"tree size {tree_size} exceeds the {stored} leaves stored")
        chunk = self._chunk
        needed = tree_size // chunk
        level0 = self._levels[0]
        if self._stored is not None and len(level0) < needed:
            for value in self._stored.chunk_roots(chunk, len(level0), needed):
                if len(value) != HASH_SIZE:
                    raise LeafSourceError("a stored chunk root is not 32 bytes")
                self._append_chunk_root(bytes(value))
        while len(level0) < needed:
            first = len(level0)
            last = min(needed, first + _FETCH_CHUNKS)
            leaves = self._read(first * chunk, last * chunk)
            for offset in range(0, len(leaves), chunk):
                self._append_chunk_root(_hash_full(leaves[offset : offset + chunk]))

    @property
    def chunk(self) -> int:
        """Leaves per cached chunk."""
        return self._chunk

    def completed_chunk_roots(self, first: int, end: int) -> list[bytes]:
        """Cached roots of chunks ``[first, end)`` (every one must be cached already)."""
        with self._lock:
            level0 = self._levels[0]
            if end > len(level0):
                raise InvalidTreeRequest(f"chunk {end - 1} is not cached")
            return level0[first:end]

    def _append_chunk_root(self, value: bytes) -> None:
        """Add one completed chunk and every aligned subtree it completes above it."""
        levels = self._levels
        levels[0].append(value)
        j = 0
        while len(levels[j]) % 2 == 0:
            if len(levels) == j + 1:
                levels.append([])
            levels[j + 1].append(node_hash(levels[j][-2], levels[j][-1]))
            j += 1

    def _read(self, start: int, end: int) -> list[bytes]:
        """Leaf hashes ``[start, end)`` from the source, checked."""
        raw = self._source.leaf_hashes(start, end)
        leaves = [h if type(h) is bytes else _as_bytes(h) for h in raw]
        if len(leaves) != end - start:
            raise LeafSourceError(f"asked for leaves [{start}, {end}), got {len(leaves)} hashes")
        for h in leaves:
            if len(h) != HASH_SIZE:
                raise LeafSourceError("leaf source returned a hash that is not 32 bytes")
        return leaves

    def _chunk_leaves(self, chunk_index: int, need_end: int, tree_size: int) -> list[bytes]:
        """The leaves of chunk ``chunk_index``, at least up to absolute index ``need_end``."""
        base = chunk_index * self._chunk
        if self._memo_chunk != chunk_index or base + len(self._memo_leaves) < need_end:
            end = min(base + self._chunk, max(tree_size, need_end))
            self._memo_leaves = self._read(base, end)
            self._memo_chunk = chunk_index
        return self._memo_leaves

    def _complete(self, start: int, size: int, tree_size: int) -> bytes:
        """Hash of the complete aligned subtree of ``size`` (a power of two) at ``start``."""
        assert size & (size - 1) == 0 and start % size == 0 and start + size <= tree_size
        if size >= self._chunk:
            bits = size.bit_length() - 1
            return self._levels[bits - self._chunk_bits][start >> bits]
        chunk_index = start >> self._chunk_bits
        leaves = self._chunk_leaves(chunk_index, start + size, tree_size)
        offset = start - (chunk_index << self._chunk_bits)
        return _hash_full(leaves[offset : offset + size])

    def _subtree(self, start: int, end: int, tree_size: int) -> bytes:
        """MTH(D[start:end]) for a range arising in the RFC recursion (start aligned)."""
        pieces: list[bytes] = []
        while True:
            n = end - start
            if n & (n - 1) == 0:
                pieces.append(self._complete(start, n, tree_size))
                break
            k = _split(n)
            pieces.append(self._complete(start, k, tree_size))
            start += k
        result = pieces.pop()
        while pieces:
            result = node_hash(pieces.pop(), result)
        return result


def _as_bytes(value: object) -> bytes:
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise LeafSourceError(f"leaf source returned {type(value).__name__}, not bytes")


# -- offline verification (RFC 9162 2.1.3.2 and 2.1.4.2) ------------------------------


def _hash_arg(value: object) -> bytes | None:
    """``value`` as a 32-byte hash, or None if it is not one."""
    if isinstance(value, bytes | bytearray) and len(value) == HASH_SIZE:
        return bytes(value)
    return None


def _proof_arg(proof: object) -> list[bytes] | None:
    """``proof`` as a list of 32-byte hashes, or None if any element is not one."""
    if not isinstance(proof, list | tuple):
        return None
    hashes = [_hash_arg(p) for p in proof]
    if any(h is None for h in hashes):
        return None
    return [h for h in hashes if h is not None]


def verify_inclusion(
    leaf_hash: bytes, index: int, tree_size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """True if ``proof`` shows leaf ``leaf_hash`` at ``index`` in the tree ``root``.

    RFC 9162 section 2.1.3.2, step by step. Malformed input gives False. The proof
    binds the leaf to ``root``; take (``tree_size``, ``root``) together from a verified
    checkpoint, since a path along the tree's left edge can also fit a smaller size.
    """
    leaf = _hash_arg(leaf_hash)
    expected = _hash_arg(root)
    path = _proof_arg(proof)
    if leaf is None or expected is None or path is None:
        return False
    if not _is_count(index) or not _is_count(tree_size):
        return False
    # 1. If leaf_index is greater than or equal to tree_size, fail.
    if index >= tree_size:
        return False
    # 2. Set fn to leaf_index and sn to tree_size - 1.  3. Set r to hash.
    fn, sn, r = index, tree_size - 1, leaf
    # 4. For each value p in the inclusion_path array:
    for p in path:
        # a. If sn is 0, then stop the iteration and fail the proof verification.
        if sn == 0:
            return False
        # b. If LSB(fn) is set, or if fn is equal to sn, then:
        if fn & 1 or fn == sn:
            # i. Set r to HASH(0x01 || p || r).
            r = node_hash(p, r)
            # ii. If LSB(fn) is not set, right-shift fn and sn equally until either
            # LSB(fn) is set or fn is 0.
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            # Otherwise: set r to HASH(0x01 || r || p).
            r = node_hash(r, p)
        # c. Finally, right-shift both fn and sn one time.
        fn >>= 1
        sn >>= 1
    # 5. Verified if sn is 0 and r equals the root hash.
    return sn == 0 and r == expected


def verify_consistency(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
) -> bool:
    """True if ``proof`` shows the tree ``second_root`` extends the tree ``first_root``.

    RFC 9162 section 2.1.4.2 for ``0 < first < second``. The RFC leaves two edges
    undefined; here, as in transparency-dev/merkle, equal sizes need an empty proof
    and equal roots, and ``first == 0`` needs an empty proof (and, stricter than
    transparency-dev, ``first_root`` must be the empty tree's root). Malformed input
    gives False.
    """
    root1 = _hash_arg(first_root)
    root2 = _hash_arg(second_root)
    path = _proof_arg(proof)
    if root1 is None or root2 is None or path is None:
        return False
    if not _is_count(first) or not _is_count(second) or first > second:
        return False
    if first == second:
        return not path and root1 == root2
    if first == 0:
        return not path and root1 == EMPTY_ROOT
    # 1. If consistency_path is an empty array, stop and fail the proof verification.
    if not path:
        return False
    # 2. If first is an exact power of 2, then prepend first_hash to consistency_path.
    if first & (first - 1) == 0:
        path = [root1, *path]
    # 3. Set fn to first - 1 and sn to second - 1.
    fn, sn = first - 1, second - 1
    # 4. If LSB(fn) is set, right-shift fn and sn equally until LSB(fn) is not set.
    while fn & 1:
        fn >>= 1
        sn >>= 1
    # 5. Set both fr and sr to the first value in the consistency_path array.
    fr = sr = path[0]
    # 6. For each subsequent value c in the consistency_path array:
    for c in path[1:]:
        # a. If sn is 0, then stop the iteration and fail the proof verification.
        if sn == 0:
            return False
        # b. If LSB(fn) is set, or if fn is equal to sn, then:
        if fn & 1 or fn == sn:
            # i. Set fr to HASH(0x01 || c || fr).  ii. Set sr to HASH(0x01 || c || sr).
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            # iii. If LSB(fn) is not set, right-shift fn and sn equally until either
            # LSB(fn) is set or fn is 0.
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            # Otherwise: set sr to HASH(0x01 || sr || c).
            sr = node_hash(sr, c)
        # c. Finally, right-shift both fn and sn one time.
        fn >>= 1
        sn >>= 1
    # 7. Verified if fr equals first_hash, sr equals second_hash and sn is 0.
    return fr == root1 and sr == root2 and sn == 0
