"""The embedder port: how the core turns text into vectors, whatever model does it.

An ``Embedder`` names its model (``name``), the version of its weights and code
(``version``) and its width (``dims``), and maps texts to L2-normalised float32 rows. The
triple is the model id (``model_id``) that every stored vector carries and binds in its
AAD: a vector made by another model or version is never compared with the query's, it is
re-embedded by ``lethe reindex``.

Which model runs is a setting (``LETHE_EMBEDDING_MODEL``); ``load_embedder`` resolves it.
The embedding library is an optional extra (``lethe-vault[semantic]``): without it, or with
the setting ``none``, there is no embedder, search stays lexical, and ``load_embedder``
says why in one line (readiness and ``lethe bench`` show it).

Exceptions: ``ValueError`` for a model name this release does not know.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DEFAULT_MODEL = "wordllama-l2_supercat-256"
NONE = "none"
MODELS = (DEFAULT_MODEL,)
MISSING_EXTRA = "semantic recall is off (lexical only): install the semantic extra (scripts/run.sh does)"


@runtime_checkable
class Embedder(Protocol):
    """Texts in, one L2-normalised float32 row of ``dims`` per text out; zeros for a text
    with nothing to embed (never NaN: a NaN score sorts apart from every other)."""

    name: str
    version: str
    dims: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


def model_id(e: Embedder) -> str:
    """What a stored vector names as its maker: model, version and width."""
    return f"{e.name}@{e.version}/{e.dims}"


@dataclass(frozen=True)
class EmbedderChoice:
    """The configured embedder, or None and the one-line reason why search is lexical."""

    embedder: Embedder | None
    status: str


@functools.cache
def load_embedder(model: str) -> EmbedderChoice:
    """The embedder the setting names; ``none`` or a missing extra give lexical-only search.
    Loaded once per process (weights are read-only and shared)."""
    if model == NONE:
        return EmbedderChoice(None, "semantic recall is off (LETHE_EMBEDDING_MODEL=none): lexical only")
    if model not in MODELS:
        raise ValueError(f"unknown embedding model {model!r}; known: {', '.join((*MODELS, NONE))}")
    try:
        from lethe.vault.memory.wordllama_embedder import WordLlamaEmbedder
    except ImportError:
        return EmbedderChoice(None, MISSING_EXTRA)
    e = WordLlamaEmbedder()
    return EmbedderChoice(e, f"semantic recall on: {model_id(e)}")
