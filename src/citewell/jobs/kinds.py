"""The kinds of jobs a citewell server or worker runs (payload in brackets; what each
does: :mod:`citewell.jobs`).

- ``extract`` ``{resource_id}``: :class:`~citewell.jobs.extraction.ExtractHandler`;
- ``reindex`` ``{resource_id}``: :class:`~citewell.jobs.extraction.ReindexHandler`;
- ``embed`` ``{resource_id}`` (null: the whole workspace):
  :class:`~citewell.jobs.embedding.EmbedHandler`;
- ``turn`` (:func:`~citewell.answer.turn.turn_payload`, and ``stream``):
  :class:`~citewell.jobs.turns.TurnHandler`.

Every payload may carry ``request_id``, the request that queued it (:mod:`citewell.jobs.traced`).
"""

from __future__ import annotations

#: Kinds of jobs (module docstring).
EXTRACT, REINDEX, EMBED, TURN = "extract", "reindex", "embed", "turn"
#: Everything an upload may still be waiting for.
UPLOAD_KINDS = (EXTRACT, REINDEX, EMBED)

__all__ = ["EMBED", "EXTRACT", "REINDEX", "TURN", "UPLOAD_KINDS"]
