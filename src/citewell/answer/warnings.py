"""The warnings an answer carries about its turn (codes are part of the interface).

- ``NO_MATCHING_RESOURCES``: nothing was retrieved because no searchable resource matches
  the filters, the folder or the workspace;
- ``RESOURCES_PROCESSING``: the answer cites nothing while uploads are still being processed;
- the code of a :class:`~citewell.errors.GenerationError` (``LLM_UNAVAILABLE``,
  ``LLM_BAD_RESPONSE``) with ``fallback`` naming the generator that answered instead,
  when the chosen one failed before its answer began;
- ``ANSWER_TRUNCATED``: the generator's answer was cut at a length limit (the endpoint's
  ``finish_reason`` ``length``, or citewell's own cap of an endpoint writing past
  ``max_tokens``); its last sentence may be unfinished.
Retrieval's own (``DENSE_UNAVAILABLE``, ``EMBEDDINGS_INCOMPLETE``) come from
:mod:`citewell.answer.retrieval`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import CitewellError
from ..models import Message, Notice, Passage
from ..store.base import Store
from .turn import Turn


def turn_warnings(store: Store, workspace_id: str, turn: Turn, passages: Sequence[Passage],
                  message: Message) -> list[Notice]:
    """``NO_MATCHING_RESOURCES`` when nothing was retrieved and nothing in scope is
    searchable; ``RESOURCES_PROCESSING`` when the answer cites nothing while uploads of
    the workspace are still processing."""
    out: list[Notice] = []
    if not passages and not store.count_resources(workspace_id, conditions=turn.conditions, under=turn.under):
        what = "matches the filters" if turn.conditions else (
            "is in that folder" if turn.under else "is in the workspace")
        out.append(Notice(
            code="NO_MATCHING_RESOURCES",
            message=f"no searchable resource {what} (check filter values with citewell resources --json; "
                    "files without a text layer are not searchable)"))
    if not message.references and turn.question:
        processing = store.total_resources(workspace_id, statuses=["processing"])
        if processing:
            out.append(Notice(
                code="RESOURCES_PROCESSING", processing=processing,
                message=f"{processing} uploaded file{'s are' if processing > 1 else ' is'} still being "
                        "processed and not searchable yet; ask again once ready"))
    return out


def fallback_warning(error: CitewellError, fallback: str) -> Notice:
    """The warning of an answer written by ``fallback`` because the chosen generator
    failed with ``error`` before its answer began."""
    return Notice(code=error.code, fallback=fallback,
                  message=f"{error.message}; this answer was written by the {fallback} generator instead")


def truncation_warning(reason: str) -> Notice:
    """The ``ANSWER_TRUNCATED`` warning of an answer cut short; ``reason``: why
    (:attr:`~citewell.generate.base.GenerationResult.truncated`)."""
    return Notice(code="ANSWER_TRUNCATED", message=reason)


__all__ = ["fallback_warning", "truncation_warning", "turn_warnings"]
