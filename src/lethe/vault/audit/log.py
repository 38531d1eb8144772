"""The audit log: the ``events`` table seen as an RFC 9162 Merkle tree with signed heads.

``SqlLeafSource`` (``vault.audit.leaves``) reads the stored leaf hashes (leaf ``i`` is
event ``seq = i + 1``); ``AuditLog`` keeps one ``MerkleTree`` over it per process, so roots and proofs stay
fast at millions of events, and signs tree heads as C2SP checkpoints.

Two guarantees:
- ``checkpoint`` never signs a head it has not checked: the rows appended since the
  last checkpoint must hash to their stored leaves, and the new tree must be provably
  consistent (RFC 9162 consistency proof) with the latest stored, signed checkpoint.
  A rewritten history therefore cannot be laundered into a fresh signature.
- ``verify_log`` trusts nothing cached: it recomputes every leaf from its row, checks
  that sequence numbers are dense, and recomputes the root at every stored checkpoint's
  size, naming the first index that fails.

Exceptions:
- ``LogInconsistent`` (a ``VaultError``, 409): ``checkpoint`` refused to sign because
  the log contradicts itself or an earlier checkpoint (a gap, a row that no longer
  matches its leaf, a shrunken log, a root that does not extend the signed one, or a
  stored checkpoint that does not verify under this log's key).
- ``InvalidCommand`` (422): a proof was asked for a size or index that does not exist.
- ``StoreUnavailable`` (503): the database is down (from ``UnitOfWork``).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.keys.signing import Ed25519Signer
from lethe.vault.audit.checkpoint import (
    Checkpoint,
    CheckpointError,
    key_id,
    parse_and_verify,
    sign_checkpoint,
    vkey,
)
from lethe.vault.audit.leaves import RootAccumulator, SqlChunkRoots, SqlLeafSource, leaf_rows, row_matches
from lethe.vault.clock import iso, utcnow
from lethe.vault.errors import InvalidCommand, LogInconsistent
from lethe.vault.merkle import (
    AuditTreeError,
    InvalidTreeRequest,
    MerkleTree,
    perfect_root,
    verify_consistency,
)
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import checkpoints, events

__all__ = [
    "AuditLog",
    "LogVerification",
    "PublicKeyInfo",
    "StoredCheckpoint",
    "public_key_info",
]

_T = TypeVar("_T")


@dataclass(frozen=True)
class StoredCheckpoint:
    """A row of ``checkpoints``: the signed note and the head it signs."""

    tree_size: int
    root: bytes
    note: str
    signed_at: str


@dataclass(frozen=True)
class PublicKeyInfo:
    """What an auditor pins: the PEM, plus the signed-note key id and verifier key."""

    origin: str
    pem: str
    key_id: str  # hex of the 4-byte signed-note key id (depends on the origin)
    vkey: str
    fingerprint: str  # hex SHA-256 of the raw 32-byte public key


@dataclass(frozen=True)
class LogVerification:
    """The outcome of ``verify_log``.

    ``first_bad_index`` is the leaf index (``seq - 1``) of the first row that is
    missing, out of place or no longer matches its leaf. When every row matches its
    stored leaf but a signed root does not (someone rewrote rows *and* their leaf
    hashes), the rewrite can only be located between two checkpoints: ``bad_range``
    is then ``[start, end)`` and ``first_bad_index`` is None.
    """

    ok: bool
    tree_size: int
    checkpoints_checked: int
    latest_checkpoint_size: int | None
    first_bad_index: int | None = None
    bad_range: tuple[int, int] | None = None
    problem: str | None = None


def public_key_info(signer: Ed25519Signer, origin: str) -> PublicKeyInfo:
    """The public half of ``signer`` as auditors pin it, for the log ``origin``."""
    raw = signer.public_key_raw()
    return PublicKeyInfo(
        origin=origin,
        pem=signer.public_key_pem().decode("ascii"),
        key_id=key_id(origin, raw).hex(),
        vkey=vkey(origin, raw),
        fingerprint=hashlib.sha256(raw).hexdigest(),
    )


def _verify_note(note: str, public_key_raw: bytes) -> Checkpoint:
    """A stored note, verified under this log's key and the origin it names."""
    origin = note.split("\n", 1)[0]
    return parse_and_verify(note, origin, public_key_raw)


class AuditLog:
    """Signed checkpoints, proofs and full verification over the ``events`` table.

    One instance per process: its ``MerkleTree`` caches completed subtrees. The cache
    is safe because leaves are append-only; ``verify_log`` never uses it, so a row
    edited behind this process's back is still found.

    Exceptions: ``LogInconsistent`` (409, ``sign``/``checkpoint`` refused: the log
    contradicts itself or a signed checkpoint), ``InvalidCommand`` (422, a proof or leaf
    for a size or index that does not exist), ``StoreUnavailable`` (503). ``verify_log``
    reports problems in its result instead of raising.
    """

    def __init__(self, uow: UnitOfWork, signer: Ed25519Signer, origin: str, clock: Any = utcnow) -> None:
        self.uow = uow
        self._signer = signer
        self._public_raw = signer.public_key_raw()
        self.origin = origin
        key_id(origin, self._public_raw)  # validates the origin as a signed-note key name
        self._clock = clock
        self._source = SqlLeafSource(uow.engine)
        self._tree = MerkleTree(self._source, stored=SqlChunkRoots(uow.engine))

    # -- keys ---------------------------------------------------------------------------

    def public_key(self) -> PublicKeyInfo:
        return public_key_info(self._signer, self.origin)

    # -- tree heads and proofs ------------------------------------------------------------

    def size(self) -> int:
        return self._tree.size()

    def root(self, tree_size: int) -> bytes:
        return self._call_tree(self._tree.root, tree_size)

    def leaf_hash(self, index: int) -> bytes:
        """The stored leaf hash at ``index`` (event ``seq = index + 1``)."""
        if not isinstance(index, int) or index < 0:
            raise InvalidCommand(f"leaf index {index!r} is not a non-negative integer")
        hashes = self._source.leaf_hashes(index, index + 1)
        if len(hashes) != 1:
            raise InvalidCommand(f"there is no leaf at index {index}")
        return hashes[0]

    def inclusion_proof(self, index: int, tree_size: int) -> list[bytes]:
        """The RFC 9162 inclusion path of leaf ``index`` in the tree of ``tree_size``."""
        return self._call_tree(self._tree.inclusion_proof, index, tree_size)

    def consistency_proof(self, first: int, second: int) -> list[bytes]:
        """The RFC 9162 proof that the tree of ``second`` extends the tree of ``first``."""
        return self._call_tree(self._tree.consistency_proof, first, second)

    def _call_tree(self, fn: Callable[..., _T], *args: int) -> _T:
        try:
            return fn(*args)
        except InvalidTreeRequest as exc:
            raise InvalidCommand(str(exc)) from exc

    # -- stored checkpoints ----------------------------------------------------------------

    def latest(self) -> StoredCheckpoint | None:
        """The stored checkpoint of the largest tree (not re-verified)."""
        with self.uow.read() as conn:
            return self._latest(conn)

    def stored(self, limit: int | None = None, below: int | None = None) -> list[StoredCheckpoint]:
        """Stored checkpoints, newest first (optionally only sizes below ``below``)."""
        q = sa.select(checkpoints).order_by(checkpoints.c.tree_size.desc())
        if below is not None:
            q = q.where(checkpoints.c.tree_size < below)
        if limit is not None:
            q = q.limit(limit)
        with self.uow.read() as conn:
            return [_stored(r) for r in conn.execute(q)]

    def _latest(self, conn: Connection) -> StoredCheckpoint | None:
        row = conn.execute(sa.select(checkpoints).order_by(checkpoints.c.tree_size.desc()).limit(1)).first()
        return _stored(row) if row is not None else None

    # -- signing -------------------------------------------------------------------------------

    def checkpoint(self) -> str:
        """Sign the current tree head and return the signed note (see ``sign``)."""
        return self.sign().note

    def sign(self) -> StoredCheckpoint:
        """Sign, store and return a checkpoint of the current tree.

        Refuses (``LogInconsistent``) unless the rows added since the latest stored
        checkpoint match their leaves and the new tree provably extends that checkpoint.
        If the tree has not grown, returns the latest checkpoint (after re-checking it).
        The expensive work (reading and hashing new rows and leaves) happens before the
        write lock is taken; under the lock only what was appended meanwhile is checked.
        """
        latest = self.latest()
        warm_size = self._safe_size()
        checked_from = latest.tree_size if latest is not None else 0
        if warm_size > checked_from:
            with self.uow.read() as conn:
                self._check_rows(conn, checked_from, warm_size)
            self._safe_root(warm_size)  # fills the tree's cache outside the lock
        with self.uow.write() as conn:
            n = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(events.c.seq), 0))).scalar_one())
            latest = self._latest(conn)
            if latest is not None:
                self._check_stored(latest)
                if latest.tree_size > n:
                    raise LogInconsistent(
                        f"the log has {n} events but a checkpoint was signed at size {latest.tree_size}"
                    )
            start = latest.tree_size if latest is not None else 0
            # Rows (checked_from, warm_size] were checked before the lock was taken.
            unchecked_from = max(start, warm_size) if start >= checked_from else start
            if n > unchecked_from:
                self._check_rows(conn, unchecked_from, n)
            root = self._safe_root(n)
            if latest is not None:
                proof = self._call_tree(self._tree.consistency_proof, latest.tree_size, n)
                if not verify_consistency(latest.tree_size, n, latest.root, root, proof):
                    raise LogInconsistent(
                        f"the tree of size {n} is not consistent with the checkpoint signed at size "
                        f"{latest.tree_size} on {latest.signed_at}: history was rewritten; refusing to sign"
                    )
                if n == latest.tree_size:
                    self._keep_chunk_roots(conn, n)
                    return latest
            note = sign_checkpoint(Checkpoint(self.origin, n, root), self.origin, self._signer)
            signed_at = iso(self._clock())
            conn.execute(checkpoints.insert().values(tree_size=n, root=root, note=note, signed_at=signed_at))
            self._keep_chunk_roots(conn, n)
            return StoredCheckpoint(n, root, note, signed_at)

    def _keep_chunk_roots(self, conn: Connection, signed_size: int) -> None:
        """Store the roots of the chunks completed below a signed size (checked by that signing)."""
        chunk = self._tree.chunk
        done = SqlChunkRoots.stored_count(conn, chunk)
        upto = signed_size // chunk
        if upto > done:
            SqlChunkRoots.save(conn, chunk, done, self._tree.completed_chunk_roots(done, upto))

    def _safe_size(self) -> int:
        try:
            return self._tree.size()
        except AuditTreeError as exc:
            raise LogInconsistent(f"the event log cannot be read as a tree: {exc}") from exc

    def _safe_root(self, size: int) -> bytes:
        try:
            return self._tree.root(size)
        except AuditTreeError as exc:
            raise LogInconsistent(f"the event log cannot be read as a tree: {exc}") from exc

    def _check_stored(self, cp: StoredCheckpoint) -> None:
        try:
            parsed = _verify_note(cp.note, self._public_raw)
        except CheckpointError as exc:
            raise LogInconsistent(
                f"the checkpoint stored at size {cp.tree_size} does not verify under this log's key: {exc}"
            ) from exc
        if parsed.size != cp.tree_size or parsed.root != cp.root:
            raise LogInconsistent(f"the checkpoint stored at size {cp.tree_size} disagrees with its note")

    def _check_rows(self, conn: Connection, after: int, upto: int) -> None:
        """Rows ``after < seq <= upto`` exist, are dense and hash to their stored leaves."""
        expected = after + 1
        for row in leaf_rows(conn, after, upto):
            if row.seq != expected:
                raise LogInconsistent(f"event log gap: leaf index {expected - 1} is missing")
            if not row_matches(row):
                raise LogInconsistent(f"leaf index {expected - 1} no longer matches its event row")
            expected += 1
        if expected != upto + 1:
            raise LogInconsistent(f"event log gap: leaf index {expected - 1} is missing")

    # -- full verification ---------------------------------------------------------------------

    def verify_log(self) -> LogVerification:
        """Recompute every leaf and every signed root from the rows; name the first bad index.

        Checks, in index order: every stored checkpoint verifies under this log's key
        and agrees with its columns; ``seq`` runs 1, 2, 3, ... without gaps; each row's
        canonical bytes hash to its stored leaf; the root recomputed at each stored
        checkpoint's size equals the signed root; no checkpoint is larger than the log.
        """
        with self.uow.read() as conn:
            stored = [
                _stored(r) for r in conn.execute(sa.select(checkpoints).order_by(checkpoints.c.tree_size))
            ]
            n = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(events.c.seq), 0))).scalar_one())
            latest_size = stored[-1].tree_size if stored else None

            def result(**kw: Any) -> LogVerification:
                return LogVerification(
                    tree_size=n, checkpoints_checked=len(stored), latest_checkpoint_size=latest_size, **kw
                )

            for cp in stored:
                try:
                    self._check_stored(cp)
                except LogInconsistent as exc:
                    return result(ok=False, problem=exc.detail)

            pending = list(stored)
            acc = RootAccumulator()
            previous_good = 0
            chunk = self._tree.chunk
            chunk_roots = SqlChunkRoots.all(conn, chunk)
            chunk_leaves: list[bytes] = []

            def check_roots() -> LogVerification | None:
                nonlocal previous_good
                while pending and pending[0].tree_size == acc.count:
                    cp = pending.pop(0)
                    if acc.root() != cp.root:
                        return result(
                            ok=False,
                            bad_range=(previous_good, cp.tree_size),
                            problem=(
                                f"every row matches its stored leaf, but the root of the first "
                                f"{cp.tree_size} leaves differs from the checkpoint signed on "
                                f"{cp.signed_at}: rows and leaf hashes were rewritten somewhere in "
                                f"leaf indices [{previous_good}, {cp.tree_size})"
                            ),
                        )
                    previous_good = cp.tree_size
                return None

            if (failure := check_roots()) is not None:
                return failure
            for row in leaf_rows(conn, None, n):
                index = acc.count
                if row.seq != index + 1:
                    what = "missing" if row.seq > index + 1 else f"followed by a row with seq {row.seq}"
                    return result(
                        ok=False,
                        first_bad_index=index,
                        problem=f"leaf index {index} (seq {index + 1}) is {what}: the log is not dense",
                    )
                if not row_matches(row):
                    return result(
                        ok=False,
                        first_bad_index=index,
                        problem=f"leaf index {index} (seq {index + 1}): the event row does not hash "
                        "to its stored leaf (edited, moved or replaced)",
                    )
                acc.add(bytes(row.leaf_hash))
                chunk_leaves.append(bytes(row.leaf_hash))
                if len(chunk_leaves) == chunk:
                    stored_root = chunk_roots.pop(index // chunk, None)
                    if stored_root is not None and stored_root != perfect_root(chunk_leaves):
                        return result(
                            ok=False,
                            bad_range=(index + 1 - chunk, index + 1),
                            problem=f"the stored root of leaves [{index + 1 - chunk}, {index + 1}) does not "
                            "match the leaves (the tree cache was altered)",
                        )
                    chunk_leaves = []
                if (failure := check_roots()) is not None:
                    return failure
            if chunk_roots:
                first = min(chunk_roots) * chunk
                return result(
                    ok=False,
                    first_bad_index=first,
                    problem=f"a tree-cache root is stored for leaves from index {first}, which the log "
                    "does not hold",
                )
            if pending:
                cp = pending[0]
                return result(
                    ok=False,
                    first_bad_index=acc.count,
                    problem=f"the log ends after {acc.count} events but a checkpoint was signed at size "
                    f"{cp.tree_size} on {cp.signed_at}: leaf index {acc.count} onwards is missing",
                )
            return result(ok=True)


def _stored(row: Any) -> StoredCheckpoint:
    return StoredCheckpoint(int(row.tree_size), bytes(row.root), row.note, row.signed_at)


def b64(data: bytes) -> str:
    """Standard base64 text of ``data`` (how hashes travel in JSON)."""
    return base64.b64encode(data).decode("ascii")
