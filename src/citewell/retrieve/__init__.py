"""Retrieval: question → ranked passages, always scoped to one workspace and filtered.

BM25 (the store's full-text index) fills a candidate pool, :class:`Reranker` reorders it.
The term analysis it shares with the generator and the cite stage is :mod:`citewell.text`.
Dense retrieval (:mod:`~citewell.embed.minilm`, :mod:`~citewell.retrieve.dense`) and
the fusion of both (:mod:`~citewell.retrieve.hybrid`) are imported from their modules:
they need numpy, onnxruntime and tokenizers.
"""

from __future__ import annotations

from .base import Retriever
from .bm25 import BM25Retriever
from .filters import parse_filters
from .query import question_terms, search_terms
from .rerank import Reranker

__all__ = ["BM25Retriever", "Reranker", "Retriever", "parse_filters", "question_terms", "search_terms"]
