"""The ``events`` table read as Merkle leaves: the leaf source, and rows checked against leaves.

Leaf ``i`` is the event with ``seq = i + 1``; its stored ``leaf_hash`` is
SHA-256(0x00 || canonical event). ``SqlLeafSource`` serves stored leaves to the
``MerkleTree``; ``row_matches`` decides whether a row still hashes to its leaf (with a
fast path that avoids re-parsing the payload); ``leaf_rows`` walks rows in batches;
``RootAccumulator`` folds leaves into the tree head of every prefix in one pass. The
audit log (``vault.audit.log``) signs and verifies with them.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lethe.vault.merkle import EMPTY_ROOT, leaf_hash, node_hash
from lethe.vault.store.events import canonical_row
from lethe.vault.store.tables import events, merkle_chunk_roots

__all__ = ["RootAccumulator", "SqlLeafSource", "fast_canonical_row", "leaf_rows", "row_matches"]

_BATCH = 5000
# Everything a leaf commits to, and the stored leaf; never the (possibly large) ciphertext.
_ROW_COLUMNS = (
    events.c.seq,
    events.c.event_id,
    events.c.type,
    events.c.tenant_id,
    events.c.memory_id,
    events.c.subject_ref,
    events.c.occurred_at,
    events.c.payload,
    events.c.ciphertext_digest,
    events.c.leaf_hash,
)


class SqlLeafSource:
    """``LeafSource`` over ``events.leaf_hash``: leaf ``i`` is the event with ``seq = i + 1``.

    A gap in ``seq`` makes ``leaf_hashes`` return fewer hashes than asked, which the
    tree reports as ``LeafSourceError``: a damaged log fails closed.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def size(self) -> int:
        with self._engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(events.c.seq), 0))).scalar_one())

    def leaf_hashes(self, start: int, end: int) -> Sequence[bytes]:
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(events.c.leaf_hash)
                .where(events.c.seq > start, events.c.seq <= end)
                .order_by(events.c.seq)
            ).scalars()
            return [bytes(h) for h in rows]


class SqlChunkRoots:
    """``ChunkRootStore`` over ``merkle_chunk_roots``; ``save`` runs inside a write transaction."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def chunk_roots(self, chunk: int, first: int, end: int) -> Sequence[bytes]:
        t = merkle_chunk_roots
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(t.c.chunk_index, t.c.root)
                .where(t.c.chunk_size == chunk, t.c.chunk_index >= first, t.c.chunk_index < end)
                .order_by(t.c.chunk_index)
            ).all()
        out: list[bytes] = []
        for expected, row in enumerate(rows, start=first):
            if row.chunk_index != expected:
                break  # contiguous from ``first`` only
            out.append(bytes(row.root))
        return out

    @staticmethod
    def stored_count(conn: Connection, chunk: int) -> int:
        """How many chunks are stored (they are stored contiguously from 0)."""
        t = merkle_chunk_roots
        top = conn.execute(sa.select(sa.func.max(t.c.chunk_index)).where(t.c.chunk_size == chunk)).scalar()
        return 0 if top is None else int(top) + 1

    @staticmethod
    def save(conn: Connection, chunk: int, first: int, roots: Sequence[bytes]) -> None:
        if roots:
            conn.execute(
                merkle_chunk_roots.insert(),
                [{"chunk_size": chunk, "chunk_index": first + i, "root": r} for i, r in enumerate(roots)],
            )

    @staticmethod
    def all(conn: Connection, chunk: int) -> dict[int, bytes]:
        t = merkle_chunk_roots
        rows = conn.execute(sa.select(t.c.chunk_index, t.c.root).where(t.c.chunk_size == chunk))
        return {int(r.chunk_index): bytes(r.root) for r in rows}


_encode_string = json.encoder.encode_basestring  # the C escaper behind json.dumps(ensure_ascii=False)
_decoder = json.JSONDecoder()


def _jstr(value: str | None) -> bytes:
    """A string (or null) exactly as RFC 8785 writes it.

    Python's JSON string escaper (``ensure_ascii=False``) escapes the same characters in
    the same way as JCS: ``"``, ``\\``, and controls below U+0020 (short forms for
    \\b \\t \\n \\f \\r, lowercase ``\\u00xx`` otherwise); everything else stays UTF-8.
    """
    if value is None:
        return b"null"
    return _encode_string(value).encode("utf-8")


def _is_json_object(text: str) -> bool:
    """True if ``text`` is exactly one JSON object (nothing before or after it)."""
    try:
        value, end = _decoder.raw_decode(text)
    except ValueError:
        return False
    return end == len(text) and isinstance(value, dict)


def fast_canonical_row(row: Any) -> bytes:
    """The canonical event bytes of ``row``, assuming its stored payload is canonical.

    ``SqlEventLog`` stores the payload as its canonical JSON text, so the event's
    canonical bytes are a concatenation (members in JCS order) with that text inside,
    with no need to parse and re-serialise it (about eight times faster than
    ``canonical_row``). Callers must treat a mismatch as "unknown" and fall back to
    ``canonical_row``; a *match* against a stored leaf hash is sound (see
    ``row_matches``).
    """
    return b"".join(
        (
            b'{"ciphertext_digest":',
            _jstr(row.ciphertext_digest),
            b',"event_id":',
            _jstr(row.event_id),
            b',"memory_id":',
            _jstr(row.memory_id),
            b',"occurred_at":',
            _jstr(row.occurred_at),
            b',"payload":',
            row.payload.encode("utf-8"),
            b',"seq":',
            str(int(row.seq)).encode("ascii"),
            b',"subject_ref":',
            _jstr(row.subject_ref),
            b',"tenant_id":',
            _jstr(row.tenant_id),
            b',"type":',
            _jstr(row.type),
            b"}",
        )
    )


def row_matches(row: Any) -> bool:
    """True if the row, read as the system reads it, hashes to its stored leaf.

    Fast path: if the concatenation hashes to the stored leaf, it *is* the canonical
    event the leaf was made from (SHA-256 collision resistance); since the payload
    text is a complete JSON object, parsing the concatenation gives this row's values,
    so ``canonical_row(row)`` is those same bytes. Otherwise decide the slow way.
    """
    stored = bytes(row.leaf_hash)
    try:
        if leaf_hash(fast_canonical_row(row)) == stored and _is_json_object(row.payload):
            return True
    except (ValueError, TypeError, UnicodeError, AttributeError):
        pass
    try:
        return leaf_hash(canonical_row(row)) == stored
    except (ValueError, TypeError, UnicodeError, AttributeError):
        return False  # a payload that is not JSON, or fields that cannot be canonicalised


class RootAccumulator:
    """RFC 9162 tree heads of every prefix, in one pass and O(log n) memory.

    The stack holds the roots of the perfect subtrees of the binary decomposition of
    the leaves seen so far (largest first); MTH folds them right to left.
    """

    def __init__(self) -> None:
        self._stack: list[tuple[int, bytes]] = []
        self.count = 0

    def add(self, leaf: bytes) -> None:
        size, value = 1, leaf
        while self._stack and self._stack[-1][0] == size:
            _, left = self._stack.pop()
            value = node_hash(left, value)
            size *= 2
        self._stack.append((size, value))
        self.count += 1

    def root(self) -> bytes:
        if not self._stack:
            return EMPTY_ROOT
        result = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            result = node_hash(left, result)
        return result


def leaf_rows(conn: Connection, after: int | None, upto: int) -> Iterator[Any]:
    """Event rows with ``after < seq <= upto`` in seq order, in batches (no ciphertext).

    ``after=None`` has no lower bound, so rows moved to ``seq <= 0`` are seen too.
    """
    last = after
    while True:
        q = sa.select(*_ROW_COLUMNS).where(events.c.seq <= upto).order_by(events.c.seq).limit(_BATCH)
        if last is not None:
            q = q.where(events.c.seq > last)
        rows = conn.execute(q).all()
        if not rows:
            return
        yield from rows
        last = rows[-1].seq
