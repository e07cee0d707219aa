"""Answer generation: question + ranked passages -> raw answer text with inline links.

- :class:`Generator`: the protocol every generator implements (``write(request)``);
  :class:`GenerationRequest` (question, query, history, passages with aliases, deadline),
  :class:`Generation` / :class:`GenerationResult` (pieces and metadata),
  :class:`~citewell.errors.GenerationError` (coded failures);
- :class:`ExtractiveGenerator`: the default, model-free generator; quotes the passage
  sentences (table rows) that best answer the question, each followed by
  ``[label](chunk:CHUNK_ID)``. :data:`NO_EVIDENCE_TEXT` is its whole answer when nothing
  retrieved answers the question.
- :func:`escape_quote` / :func:`unescape_quote`: the markdown escaping applied to quoted
  text and its exact inverse (support checks undo it); :func:`collapse_breaks`: the
  whitespace normalisation applied to quotes.
"""

from __future__ import annotations

from citewell.generate.base import (
    Generation,
    GenerationError,
    GenerationRequest,
    GenerationResult,
    Generator,
    HistoryTurn,
    alias_for,
    start_generation,
)
from citewell.generate.extractive import (
    NO_EVIDENCE_TEXT,
    ExtractiveGenerator,
    QuotedUnit,
    collapse_breaks,
    escape_quote,
    render_unit,
    unescape_quote,
)

__all__ = [
    "NO_EVIDENCE_TEXT",
    "ExtractiveGenerator",
    "Generation",
    "GenerationError",
    "GenerationRequest",
    "GenerationResult",
    "Generator",
    "HistoryTurn",
    "alias_for",
    "start_generation",
    "QuotedUnit",
    "collapse_breaks",
    "escape_quote",
    "render_unit",
    "unescape_quote",
]
