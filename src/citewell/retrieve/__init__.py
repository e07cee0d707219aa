"""Retrieval: question → ranked passages, always scoped to one workspace and filtered."""

from __future__ import annotations

from .base import Retriever
from .bm25 import BM25Retriever
from .filters import parse_filters
from .query import question_terms

__all__ = ["BM25Retriever", "Retriever", "parse_filters", "question_terms"]
