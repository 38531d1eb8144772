"""Sealing memory content and its embedding for one subject, and opening stored rows.

The envelope plaintext carries the subject id next to the content, so the subject id
exists in clear nowhere in the database; it also carries the memory's origin (its
provenance ``source_ref``, ``turn``, ``tool``, ``url`` and ``document_ref``: a profile URL
names the person), so those die with the subject's key too. The event of the write carries
the same ciphertext, so replay reproduces them; the event payload commits to them only by a
keyed digest (``origin_commitment``). The AAD binds tenant, subject ref, memory id
and version: ciphertext moved to another row, tenant or version does not open.

A memory's embedding is personal data too (an embedding inverts back to most of a short
text), so it is sealed under the same subject data key, with its own AAD that also binds
the model id: a vector opens only for the memory, version and model it was made for, and
destroying the subject's key shreds it with the content. Vectors are opened as raw
little-endian float32 bytes; the caller scores them in memory and never writes them.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.keys.envelope import (
    DecryptionFailed,
    decrypt_for_subject,
    decrypt_many_for_subject,
    derive_key,
    encrypt_for_subject,
)
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.errors import KeyUnavailable
from lethe.vault.store.in_list import one_of
from lethe.vault.store.tables import memory_vectors, subject_keys


def aad(tenant_id: str, subject_ref: str, memory_id: str, version: int) -> bytes:
    return f"lethe/v1|{tenant_id}|{subject_ref}|{memory_id}|{version}".encode()


def seal(
    dek: bytes,
    tenant_id: str,
    subject_ref: str,
    memory_id: str,
    version: int,
    subject_id: str,
    content: str,
    origin: dict[str, str] | None = None,
) -> bytes:
    """AES-256-GCM of the subject id, the content and the origin (``Provenance.origin``)."""
    doc: dict[str, Any] = {"s": subject_id, "c": content}
    if origin:
        doc["p"] = origin
    body = json.dumps(doc, separators=(",", ":")).encode()
    return encrypt_for_subject(dek, body, aad(tenant_id, subject_ref, memory_id, version))


def origin_commitment(dek: bytes, origin: dict[str, str]) -> str:
    """The keyed digest an event commits to a memory's origin by: keyed by the subject's data
    key like ``content_hmac``, so it dies with the key (an unkeyed hash of a URL is guessable)."""
    body = json.dumps(origin, sort_keys=True, separators=(",", ":")).encode()
    return hmac.digest(derive_key(dek, b"lethe origin-hmac v1"), body, "sha256").hex()


class Opened(NamedTuple):
    """A memories row opened: the subject id, the content and the sealed origin fields (empty
    for a memory written before origins were sealed: its ``source_ref`` is in its row)."""

    subject_id: str
    content: str
    origin: dict[str, str]


def vector_aad(tenant_id: str, subject_ref: str, memory_id: str, version: int, model: str) -> bytes:
    return vector_aad_prefix(tenant_id, subject_ref) + f"{memory_id}|{version}|{model}".encode()


def vector_aad_prefix(tenant_id: str, subject_ref: str) -> bytes:
    """What every vector AAD of one subject starts with (a search builds it once per subject)."""
    return f"lethe/vector/v1|{tenant_id}|{subject_ref}|".encode()


def seal_vector(
    dek: bytes, tenant_id: str, subject_ref: str, memory_id: str, version: int, model: str, vector: bytes
) -> bytes:
    """AES-256-GCM of a vector's float32 bytes under the subject's data key."""
    return encrypt_for_subject(dek, vector, vector_aad(tenant_id, subject_ref, memory_id, version, model))


def unseal(dek: bytes, row: Any) -> Opened:
    """The opened envelope of a memories row; ``DecryptionFailed`` if not authentic."""
    body = decrypt_for_subject(
        dek, row.ciphertext, aad(row.tenant_id, row.subject_ref, row.id, row.sealed_version)
    )
    doc = json.loads(body)
    return Opened(doc["s"], doc["c"], doc.get("p") or {})


def open_rows(
    conn: Connection, keyring: SubjectKeyring, rows: Sequence[Any]
) -> dict[tuple[str, str], Opened]:
    """Decrypt many rows with one key lookup per (subject, generation), keyed by
    (tenant_id, id): a memory id alone does not name one memory.

    Rows whose key is destroyed or whose bytes do not authenticate are left out: the
    caller treats them as absent, never as an error that could leak which one failed.
    """
    wanted = {(r.tenant_id, r.subject_ref, r.key_generation) for r in rows if r.ciphertext is not None}
    return _open_with(subject_deks(conn, keyring, wanted), rows)


def open_rows_with_keys(keyring: SubjectKeyring, rows: Sequence[Any]) -> dict[tuple[str, str], Opened]:
    """``open_rows`` for rows read together with their key row (``key_name``, ``wrapped_dek``,
    ``key_state``, None where it has none: ``memory.repository.by_ids_with_keys``): no key lookup
    of its own, and the key's state comes from the same statement, so the same snapshot,
    as the ciphertext. A hot read (search, get) saves a round trip."""
    keys = {
        (r.tenant_id, r.subject_ref, r.key_generation): (r.key_name, r.wrapped_dek, r.key_state)
        for r in rows
        if r.ciphertext is not None and r.key_state is not None
    }
    return _open_with(_deks(keyring, keys), rows)


def _open_with(
    deks: dict[tuple[str, str, int], bytes | None], rows: Sequence[Any]
) -> dict[tuple[str, str], Opened]:
    out: dict[tuple[str, str], Opened] = {}
    for r in rows:
        dek = deks.get((r.tenant_id, r.subject_ref, r.key_generation))
        if r.ciphertext is None or dek is None:
            continue
        try:
            out[(r.tenant_id, r.id)] = unseal(dek, r)
        except DecryptionFailed:
            continue
    return out


def open_vectors(conn: Connection, keyring: SubjectKeyring, rows: Sequence[Any]) -> dict[str, bytes]:
    """The float32 bytes of sealed vectors, keyed by memory id (rows of any tenant: tenant_id,
    subject_ref, key_generation, memory_id, version, model, sealed), read from the rows
    given, never from a cache. One key lookup per (subject, generation); a vector whose key
    is gone or whose bytes or binding do not authenticate is left out."""
    deks = subject_deks(conn, keyring, {(r.tenant_id, r.subject_ref, r.key_generation) for r in rows})
    out: dict[str, bytes] = {}
    for r in rows:
        dek = deks.get((r.tenant_id, r.subject_ref, r.key_generation))
        if dek is None:
            continue
        context = vector_aad(r.tenant_id, r.subject_ref, r.memory_id, r.version, r.model)
        try:
            out[r.memory_id] = decrypt_for_subject(dek, r.sealed, context)
        except DecryptionFailed:
            continue
    return out


def scope_vectors(
    conn: Connection,
    keyring: SubjectKeyring,
    tenant_id: str,
    model: str,
    wanted: Sequence[tuple[str, str, int, int]],
    read_sealed: SealedReader | None = None,
    reuse: Reuse | None = None,
) -> dict[str, bytes]:
    """The opened vectors of one tenant's memories, given as (memory_id, subject_ref, key
    generation, sealed version), for ``model``; keyed by memory id. Every subject key's
    state is read in ``conn`` first: a destroyed (or missing) key opens nothing and drops
    what ``keyring.opened`` held for it. Vectors cached for a live key are served from
    there or, next, from ``reuse`` (a stale copy of a kept scope, given each wanted row);
    the rest are read (``read_sealed``, given the missing ids; by default by id),
    opened (one AEAD context per subject key, the AAD's common prefix built once) and
    cached. A vector whose key, version or bytes do not match is left out, as
    ``open_rows`` leaves out content."""
    by_key: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for memory_id, ref, gen, version in wanted:
        by_key.setdefault((ref, gen), []).append((memory_id, version))
    deks = subject_deks(conn, keyring, {(tenant_id, ref, gen) for ref, gen in by_key})
    out: dict[str, bytes] = {}
    missing: dict[str, tuple[str, int, int]] = {}
    for (ref, gen), memories in by_key.items():
        key = (tenant_id, ref, gen)
        if deks.get(key) is None:
            keyring.opened.discard(key)  # and the scopes kept with it
            continue
        cached = keyring.opened.get(key)
        for memory_id, version in memories:
            vector = cached.get((memory_id, version, model))
            if vector is None and reuse is not None:
                vector = reuse(memory_id, ref, gen, version)
            if vector is None:
                missing[memory_id] = (ref, gen, version)
            else:
                out[memory_id] = vector
    if missing:
        reader = read_sealed or (lambda ids: sealed_by_id(conn, tenant_id, model, ids))
        out.update(_open_missing(keyring, tenant_id, model, missing, deks, reader(list(missing))))
    return out


SealedReader = Callable[[list[str]], Iterable[tuple[str, str, int, int, bytes]]]
"""Given memory ids, their (memory_id, subject_ref, key_generation, version, sealed) rows."""
Reuse = Callable[[str, str, int, int], bytes | None]
"""Given (memory_id, subject_ref, key_generation, version) of a live key, the vector opened
before for exactly that memory version and key, or None."""


def sealed_by_id(
    conn: Connection, tenant_id: str, model: str, ids: list[str]
) -> Iterator[tuple[str, str, int, int, bytes]]:
    """The sealed vectors of these memories, read by primary key, 500 ids a statement."""
    v = memory_vectors
    for i in range(0, len(ids), 500):
        yield from conn.execute(
            sa.select(v.c.memory_id, v.c.subject_ref, v.c.key_generation, v.c.version, v.c.sealed).where(
                v.c.tenant_id == tenant_id, v.c.model == model, v.c.memory_id.in_(ids[i : i + 500])
            )
        )


def _open_missing(
    keyring: SubjectKeyring,
    tenant_id: str,
    model: str,
    missing: dict[str, tuple[str, int, int]],
    deks: dict[tuple[str, str, int], bytes | None],
    rows: Iterable[tuple[str, str, int, int, bytes]],
) -> dict[str, bytes]:
    """Open the sealed vectors of ``missing`` (memory id -> subject_ref, generation, version)
    among ``rows`` and cache them under their subject key."""
    groups: dict[tuple[str, int], list[tuple[str, int, bytes]]] = {}
    for memory_id, ref, gen, version, blob in rows:
        if missing.get(memory_id) == (ref, gen, version):  # the memory's own version and key
            groups.setdefault((ref, gen), []).append((memory_id, version, blob))
    out: dict[str, bytes] = {}
    for (ref, gen), group in groups.items():
        dek = deks.get((tenant_id, ref, gen))
        if dek is None:
            continue
        prefix = vector_aad_prefix(tenant_id, ref)
        items = [(blob, prefix + f"{mid}|{ver}|{model}".encode()) for mid, ver, blob in group]
        opened = [
            (g, plain)
            for g, plain in zip(group, decrypt_many_for_subject(dek, items), strict=True)
            if plain is not None
        ]
        keyring.opened.put((tenant_id, ref, gen), (((g[0], g[1], model), plain) for g, plain in opened))
        out.update((g[0], plain) for g, plain in opened)
    return out


def subject_deks(
    conn: Connection, keyring: SubjectKeyring, wanted: set[tuple[str, str, int]]
) -> dict[tuple[str, str, int], bytes | None]:
    """The data key of each (tenant, subject, generation); None where it is destroyed or gone."""
    keys = _key_rows(conn, wanted)
    return _deks(keyring, {k: (kr.key_name, kr.wrapped_dek, kr.state) for k, kr in keys.items()})


def _deks(
    keyring: SubjectKeyring, keys: dict[tuple[str, str, int], tuple[str, bytes, str]]
) -> dict[tuple[str, str, int], bytes | None]:
    """Each key row's data key (name, wrapped key, state); None where it is not active."""
    deks: dict[tuple[str, str, int], bytes | None] = {}
    for k, (name, wrapped, state) in keys.items():
        try:
            deks[k] = keyring.key_for_read(k[0], k[1], k[2], name, wrapped, state)
        except KeyUnavailable:
            deks[k] = None
    return deks


# A tenant's key rows of some subjects (every generation; the caller keeps those it wants),
# built once: building an OR of one AND per key was a tenth of a search's CPU.
_KEYS_OF = sa.select(subject_keys).where(
    subject_keys.c.tenant_id == sa.bindparam("tenant"),
    one_of(subject_keys.c.subject_ref, "refs"),
)


def _key_rows(conn: Connection, wanted: Iterable[tuple[str, str, int]]) -> dict[tuple[str, str, int], Any]:
    wanted = set(wanted)
    refs_of: dict[str, set[str]] = {}
    for t, s, _ in wanted:
        refs_of.setdefault(t, set()).add(s)
    result: dict[tuple[str, str, int], Any] = {}
    for tenant, subjects in refs_of.items():
        refs = sorted(subjects)
        for i in range(0, len(refs), 500):
            for row in conn.execute(_KEYS_OF, {"tenant": tenant, "refs": refs[i : i + 500]}):
                key = (row.tenant_id, row.subject_ref, row.generation)
                if key in wanted:
                    result[key] = row
    return result
