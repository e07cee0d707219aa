"""The answering pipeline shared by the library, the CLI and every HTTP profile.

- :mod:`~citewell.answer.turn`: :func:`prepare_turn` validates a question into a
  :class:`Turn` (follow-ups, image-only questions); :class:`PendingTurn`;
- :mod:`~citewell.answer.retrieval`: :class:`Retrieval`, the retriever of a mode and the
  embeddings a question needs first;
- :mod:`~citewell.answer.scope`: the scope check between retrieval and generation;
- :mod:`~citewell.answer.pipeline`: :class:`AnswerPipeline`, generator → expander →
  sentence gate → streaming citer → support, warnings, storage;
- :mod:`~citewell.answer.gate`: :class:`SentenceGate`, sentence checks of a model's own
  prose while it streams;
- :mod:`~citewell.answer.history`: a chat's earlier turns;
- :mod:`~citewell.answer.warnings`: the turn-level warnings.
"""

from .pipeline import AnswerPipeline, failure, user_message, whole_message_events, with_preview
from .retrieval import Retrieval
from .scope import SCOPE_CHECKS, Abstention, ScopeCheck, scope_abstention
from .turn import OFFSET_UNITS, POLICIES, PendingTurn, Turn, prepare_turn

__all__ = ["OFFSET_UNITS", "POLICIES", "SCOPE_CHECKS", "Abstention", "AnswerPipeline", "PendingTurn", "Retrieval",
           "ScopeCheck", "Turn", "failure", "prepare_turn", "scope_abstention", "user_message",
           "whole_message_events", "with_preview"]
