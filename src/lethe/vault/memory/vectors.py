"""The semantic index: each memory's embedding, sealed under its subject's data key.

Writes embed the content (outside the write transaction: no lock is held while a model
runs) and store the vector only as ciphertext (``custody.sealing.seal_vector``) in
``memory_vectors``, next to the index entry it lives and dies with. Search opens the
vectors of the caller's scope only, with the keys it already caches, and scores them in
memory (``memory.search``). Nothing here logs or writes a plaintext vector.
"""

from __future__ import annotations

from collections.abc import Sequence

from lethe.vault.custody.sealing import seal_vector
from lethe.vault.memory.embedding import Embedder, model_id


class VectorIndex:
    """Embeds and seals for one configured embedder; with none, every call is a no-op."""

    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder
        self.model = model_id(embedder) if embedder is not None else None

    def embed(self, texts: Sequence[str]) -> list[bytes] | None:
        """Little-endian float32 bytes of each text's vector, or None without an embedder.

        One text per call: a batch pads its texts to one length, which moves the floats a
        little, and a memory must get the same vector on a write, a bulk import and a
        reindex (``replay --check`` and search results compare equal). Batching saved
        under a tenth on the golden set (``lethe bench``)."""
        if self.embedder is None or not texts:
            return None
        return [self.embedder.embed([t])[0].astype("<f4").tobytes() for t in texts]

    def row(
        self,
        dek: bytes,
        tenant_id: str,
        subject_ref: str,
        memory_id: str,
        version: int,
        key_generation: int,
        vector: bytes,
    ) -> dict[str, object]:
        """The ``memory_vectors`` row of one memory: its vector sealed, never in clear."""
        assert self.model is not None
        return {
            "tenant_id": tenant_id,
            "memory_id": memory_id,
            "subject_ref": subject_ref,
            "key_generation": key_generation,
            "version": version,
            "model": self.model,
            "sealed": seal_vector(dek, tenant_id, subject_ref, memory_id, version, self.model, vector),
        }
