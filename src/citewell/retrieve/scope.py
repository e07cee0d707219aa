"""The question analysis of a retrieval that was not handed one.

The answering pipeline analyses a question once per turn and hands the analysis to every
stage (:mod:`citewell.question.analysis`). A retriever called on its own (the library's
:class:`~citewell.retrieve.bm25.BM25Retriever` with a plain question) reads it here: with
the domain pack that the scope's resources call for (:func:`citewell.domains.active_domain`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..domains import active_domain
from ..question.analysis import QuestionAnalysis, analyse
from ..store.base import Condition, Store

__all__ = ["analysis_for"]


def analysis_for(store: Store, workspace_id: str, question: str, conditions: Sequence[Condition] = (),
                 under: str | None = None) -> QuestionAnalysis:
    """The :class:`~citewell.question.analysis.QuestionAnalysis` of ``question`` with the
    domain pack of the scope (``conditions``, folder ``under``) of ``workspace_id``."""
    resources = store.scope_resources(workspace_id, conditions=conditions, under=under)
    return analyse(question, domain=active_domain(resources))
