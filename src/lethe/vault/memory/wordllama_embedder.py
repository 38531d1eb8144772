"""The default embedder: WordLlama (l2_supercat, 256-d), from the weights inside its wheel.

WordLlama pools token embeddings taken from a large language model's input layer: numpy
only, about 0.1 ms a text on one core, and its weights and tokenizer ship in the package.
It is loaded with its own package folder as the cache and downloads disabled, so a fresh
offline machine embeds the same as any other, and a missing file is an error at start-up,
never a request to a model hub. (Measured against an int8 ONNX all-MiniLM-L6-v2 on the
golden recall set: MiniLM recalls more paraphrases but costs about 13 ms a text, most of
the search budget, and no single package ships both its model and its tokenizer.)

Its token matrix is read from the weights file through a memory map, not held as the
float32 copy WordLlama makes (32 MB in every server process): a text reads only its tokens'
rows, widened from float16 to float32, which is exact, so the vectors are the same bits.

Exceptions: ``ImportError`` without the ``semantic`` extra; ``FileNotFoundError`` if the
package lost its weights; ``ValueError`` if the weights file is not the one described here.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import wordllama
from wordllama import WordLlama

CONFIG, DIMS = "l2_supercat", 256
WEIGHTS = Path(wordllama.__file__).parent / "weights" / f"{CONFIG}_{DIMS}.safetensors"
TENSOR = "embedding.weight"


class TokenRows:
    """A safetensors float16 matrix, memory-mapped read-only; indexing returns float32 rows
    (what WordLlama's lookup ``embedding[input_ids]`` needs), so only the pages of the rows
    a text uses are ever read, and processes share them through the page cache."""

    def __init__(self, path: Path, tensor: str = TENSOR) -> None:
        if path.suffix != ".safetensors":  # only ever a model file inside a package, never a store
            raise ValueError(f"{path.name}: not a safetensors file")
        with path.open("rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(size))
        spec = header[tensor]
        if spec["dtype"] != "F16" or len(spec["shape"]) != 2:
            raise ValueError(f"{path.name}: expected a 2-d float16 {tensor}")
        start, _ = spec["data_offsets"]
        shape = tuple(spec["shape"])
        self._rows = np.memmap(path, dtype="<f2", mode="r", offset=8 + size + start, shape=shape)
        self.shape = self._rows.shape

    def __getitem__(self, ids: Any) -> npt.NDArray[np.float32]:
        return self._rows[ids].astype(np.float32)


class WordLlamaEmbedder:
    """``Embedder`` over WordLlama; normalised rows, so a dot product is the cosine."""

    name = f"wordllama-{CONFIG}-{DIMS}"
    dims = DIMS

    def __init__(self) -> None:
        self.version = version("wordllama")
        self._model = WordLlama.load(
            config=CONFIG, dim=DIMS, cache_dir=Path(wordllama.__file__).parent, disable_download=True
        )
        self._model.embedding = TokenRows(WEIGHTS)  # frees the float32 copy (see the module)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        rows = np.ascontiguousarray(self._model.embed(list(texts), norm=False), dtype=np.float32)
        # WordLlama's own ``norm=True`` is this division without the guard: the empty text,
        # the one text with no token, would be 0/0, a vector of NaN that ranks nothing.
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        rows /= np.where(norms > 0, norms, np.float32(1))
        return rows
