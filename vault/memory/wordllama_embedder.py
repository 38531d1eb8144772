"""The default embedder: WordLlama (l2_supercat, 256-d), from the weights inside its wheel.

WordLlama pools token embeddings taken from a large language model's input layer: numpy
only, about 0.1 ms a text on one core, and its weights and tokenizer ship in the package.
It is loaded with its own package folder as the cache and downloads disabled, so a fresh
offline machine embeds the same as any other, and a missing file is an error at start-up,
never a request to a model hub. (Measured against an int8 ONNX all-MiniLM-L6-v2 on the
golden recall set: MiniLM recalls more paraphrases but costs about 13 ms a text, most of
the search budget, and no single package ships both its model and its tokenizer.)

Exceptions: ``ImportError`` without the ``semantic`` extra; ``FileNotFoundError`` if the
package lost its weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import numpy as np
import numpy.typing as npt
import wordllama
from wordllama import WordLlama

CONFIG, DIMS = "l2_supercat", 256


class WordLlamaEmbedder:
    """``Embedder`` over WordLlama; normalised rows, so a dot product is the cosine."""

    name = f"wordllama-{CONFIG}-{DIMS}"
    dims = DIMS

    def __init__(self) -> None:
        self.version = version("wordllama")
        self._model = WordLlama.load(
            config=CONFIG, dim=DIMS, cache_dir=Path(wordllama.__file__).parent, disable_download=True
        )

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        rows = self._model.embed(list(texts), norm=True)
        return np.ascontiguousarray(rows, dtype=np.float32)
