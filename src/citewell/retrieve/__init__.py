"""Retrieval: question → ranked passages, always scoped to one workspace and filtered.

BM25 (the store's full-text index) fills a candidate pool, :class:`Reranker` reorders it;
:mod:`citewell.retrieve.terms` is the term analysis shared with the extractive generator.
"""

from __future__ import annotations

from .base import Retriever
from .bm25 import BM25Retriever
from .filters import parse_filters
from .query import question_terms, search_terms
from .rerank import Reranker

__all__ = ["BM25Retriever", "Reranker", "Retriever", "parse_filters", "question_terms", "search_terms"]
