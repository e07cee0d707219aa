"""BM25 retrieval over the store's full-text index (SQLite FTS5 in the embedded store)."""

from __future__ import annotations

from typing import Sequence

from ..models import Passage
from ..store.base import Condition, Store
from .query import question_terms


class BM25Retriever:
    """Ranks a workspace's chunks by BM25 over their text and their resource's title.

    ``store`` is any :class:`~citewell.store.base.Store`; ``workspace_id`` scopes every
    search. Any question term may match (OR); BM25 weighs rare terms up.
    """

    def __init__(self, store: Store, workspace_id: str) -> None:
        self.store = store
        self.workspace_id = workspace_id

    def retrieve(self, question: str, *, k: int, conditions: Sequence[Condition] = (),
                 under: str | None = None) -> list[Passage]:
        """Top ``k`` passages for ``question`` (see :class:`~citewell.retrieve.base.Retriever`)."""
        terms = question_terms(question)
        if not terms or k <= 0:
            return []
        return self.store.search_text(self.workspace_id, terms, limit=k, conditions=conditions, under=under)
