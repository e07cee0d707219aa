"""The retriever interface: a question in, ranked passages out (best first).

Implementations: :class:`citewell.retrieve.bm25.BM25Retriever` (SQLite FTS5),
:class:`citewell.retrieve.dense.DenseRetriever` (exact cosine over stored MiniLM vectors)
and :class:`citewell.retrieve.hybrid.HybridRetriever` (both fused: a convex combination of scores, or RRF).
"""

from __future__ import annotations

from typing import Protocol, Sequence

from ..models import Passage
from ..store.base import Condition


class Retriever(Protocol):
    """Ranks passages of one workspace for a question."""

    def retrieve(self, question: str, *, k: int, conditions: Sequence[Condition] = (),
                 under: str | None = None) -> list[Passage]:
        """Top ``k`` passages of ready resources matching ``conditions`` (and under folder
        ``under`` when given), best first, with 1-based ``rank`` and a ``score``."""
        ...
