"""Turn preparation: a question and its arguments, validated before any work.

:func:`prepare_turn` checks every argument of an answering call (raising before anything
is retrieved or stored), resolves an image-only question (docs/architecture.md rule 11) and, in a
chat, rewrites a follow-up that refers back into a self-contained query that carries the
previous subject and filters. The result is a :class:`Turn`, what the pipeline answers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..cite.resolver import SourceResolver
from ..errors import UsageError
from ..generate.extractive import escape_quote
from ..ingest.image_text import image_text
from ..models import Message, Notice, utcnow
from ..retrieve import parse_filters
from ..question.analysis import QuestionAnalysis
from ..question.followup import followup_query, refers_back
from ..store.base import ChatRecord, ChatStore, Condition, Store
from ..validtext import valid_text
from .history import previous_question

OFFSET_UNITS = ("codepoint", "utf16", "utf8")
POLICIES = ("flag", "drop")
#: Words of an image's text used as the query of an image-only question.
IMAGE_QUERY_WORDS = 60
#: Longest question (code points): answering costs grow with its terms × the passages' sentences.
MAX_QUESTION_CHARS = 8000
NO_IMAGE_TEXT = ("The image has no text to search with (no text layer, and no OCR available), so no passage "
                 "can be cited as evidence.")


@dataclass(frozen=True)
class Turn:
    """A validated question and its arguments (see :meth:`citewell.Engine.ask`).

    ``query`` is what retrieval and the generator read (a follow-up carries the last
    turn's subject); ``filters`` the filters as given (JSON-able), kept on the user
    message for follow-ups; ``notes`` the retrieval warnings the answer carries;
    ``preface`` what the answer says first about an image-only question (rule 11);
    ``generator``: the generator asked for (``extractive``, ``llm``) or None for the
    engine's own; ``previous``: the chat's previous question when this one refers back to
    it (its subject is carried in ``query``); ``reading``: what retrieval read of the
    question and the scope (:class:`TurnReading`: the question analysis every later
    stage reads, and the scope check's facts).
    """

    question: str
    k: int
    conditions: list[Condition]
    corpus: str | os.PathLike[str] | None
    under: str | None
    offsets: str
    chat_id: str | None
    policy: str
    asked_at: datetime
    preface: str | None = None
    image_url: str | None = None
    query: str = ""
    filters: Any = None
    notes: list[Notice] = field(default_factory=list)
    generator: str | None = None
    previous: str | None = None
    reading: "TurnReading" = field(default_factory=lambda: TurnReading())


@dataclass
class TurnReading:
    """What retrieval read for a turn, once, for every later stage: ``analysis`` (the
    :class:`~citewell.question.analysis.QuestionAnalysis` of the turn's query, with the
    scope's domain pack) and ``facts`` (the :class:`citewell.scope.check.ScopeFacts` the
    scope check and relevance read); None until retrieval ran."""

    analysis: QuestionAnalysis | None = None
    facts: Any = None


@dataclass(frozen=True)
class PendingTurn:
    """A turn begun by :meth:`citewell.Engine.begin_turn`: its ``chat``, the stored
    ``user_message`` and the stored assistant ``message`` (status ``pending``) that
    :meth:`citewell.Engine.complete_turn` settles.

    ``research_preview``: the id of the chat's previous assistant message when that one
    was still pending as this turn began (an investigation in progress, seed 000); the
    settled message then carries the entity reference ``{type: "research_preview", id}``.
    """

    chat: ChatRecord
    user_message: Message
    message: Message
    turn: Turn
    research_preview: str | None = None


def turn_payload(pending: PendingTurn) -> dict[str, Any]:
    """What a worker of any process needs to answer a begun turn (a job's JSON payload):
    the stored messages' ids and the validated :class:`Turn` (its filters as given; the
    conditions are parsed again from them). :func:`pending_from_payload` reads it back."""
    turn = pending.turn
    return {"chat_id": pending.chat.id, "user_message_id": str(pending.user_message.id),
            "message_id": str(pending.message.id), "research_preview": pending.research_preview,
            "turn": {"question": turn.question, "k": turn.k, "offsets": turn.offsets, "chat_id": turn.chat_id,
                     "policy": turn.policy, "asked_at": turn.asked_at.isoformat(), "preface": turn.preface,
                     "image_url": turn.image_url, "query": turn.query, "filters": turn.filters,
                     "notes": [n.model_dump(mode="json") for n in turn.notes], "generator": turn.generator,
                     "previous": turn.previous}}


def pending_from_payload(store: ChatStore, workspace_id: str, payload: Mapping[str, Any],
                         read: Callable[[str], Message]) -> PendingTurn:
    """The :class:`PendingTurn` of a :func:`turn_payload`, read back in ``workspace_id``:
    ``read(message_id)`` returns a stored message (:meth:`citewell.Engine.message`).
    ``NotFoundError`` when the chat or a message is gone; ``INVALID_FILTER`` as
    :func:`~citewell.retrieve.parse_filters` (never for a payload this code wrote)."""
    t = payload["turn"]
    turn = Turn(question=t["question"], k=int(t["k"]), conditions=parse_filters(t.get("filters")), corpus=None,
                under=None, offsets=t["offsets"], chat_id=t.get("chat_id"), policy=t["policy"],
                asked_at=datetime.fromisoformat(t["asked_at"]), preface=t.get("preface"),
                image_url=t.get("image_url"), query=t.get("query") or t["question"], filters=t.get("filters"),
                notes=[Notice.model_validate(n) for n in t.get("notes") or []], generator=t.get("generator"),
                previous=t.get("previous"))
    chat = store.chat(workspace_id, payload["chat_id"])
    return PendingTurn(chat, read(payload["user_message_id"]), read(payload["message_id"]), turn,
                       payload.get("research_preview"))


def json_filters(filters: Iterable[str] | Mapping[str, Any] | None) -> Any:
    """Filters as given, in a JSON-able form (``parse_filters`` reads it back)."""
    if filters is None:
        return None
    if isinstance(filters, Mapping):
        return {str(k): (list(v) if isinstance(v, (list, tuple, set)) else v) for k, v in filters.items()}
    return [str(f) for f in filters]


def check_choices(offsets: str, policy: str) -> None:
    """``INVALID_REQUEST`` unless ``offsets`` is a unit of :data:`OFFSET_UNITS` and
    ``policy`` one of :data:`POLICIES`."""
    if offsets not in OFFSET_UNITS:
        raise UsageError(f"offsets must be one of {', '.join(OFFSET_UNITS)}")
    if policy not in POLICIES:
        raise UsageError(f"policy must be one of {', '.join(POLICIES)}")


def prepare_turn(store: Store, workspace_id: str, resolver: SourceResolver, question: str, *, k: int,
                 filters: Iterable[str] | Mapping[str, Any] | None, corpus: str | os.PathLike[str] | None,
                 offsets: str, chat_id: str | None, policy: str, image: str | os.PathLike[str] | None = None,
                 image_url: str | None = None, user_id: str | None = None, generator: str | None = None) -> Turn:
    """Validate a question's arguments before any work and return its :class:`Turn`.

    Raises ``INVALID_REQUEST`` (:class:`UsageError`) for an empty or too long question, a
    bad unit, policy or ``k``; ``INVALID_FILTER`` for bad filters; ``NOT_FOUND`` for a
    ``chat_id`` that is not a chat of this workspace (and user). An image-only question
    (``image`` and no question text) never retrieves with a placeholder word: the image's
    own text (text layer, or OCR when tesseract is installed) becomes the query and the
    answer says so; with no text, the turn answers that there is no evidence and
    retrieves nothing. In a chat, a question that refers back (:func:`refers_back`) is
    rewritten with the previous question (:func:`followup_query`) and, when it gives no
    filters, keeps the previous turn's.
    """
    check_choices(offsets, policy)
    preface: str | None = None
    if image_url is None and image is not None:
        image_url = str(Path(image).expanduser().resolve())
    image_url = valid_text(image_url) if image_url is not None else None
    if image is not None and (not question or not question.strip()):
        found = image_text(image)
        words = found.text.split()
        if words:
            question = " ".join(words[:IMAGE_QUERY_WORDS])
            shown = " ".join(words[:12]) + (" …" if len(words) > 12 else "")
            how = "text layer" if found.method == "text_layer" else "text recognised by OCR"
            preface = f"The question was taken from the image's {how}: \u201c{escape_quote(shown)}\u201d.\n\n"
        else:
            question, preface = "", NO_IMAGE_TEXT
    elif not question or not question.strip():
        raise UsageError("the question is empty")
    if k < 1:
        raise UsageError("k must be at least 1")
    conditions = parse_filters(filters)
    question = valid_text(question)
    if len(question) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is longer than {MAX_QUESTION_CHARS:,} characters")
    query = question
    carried: str | None = None
    if chat_id is not None:
        store.chat(workspace_id, chat_id, user_id=user_id)
        previous = previous_question(store, workspace_id, chat_id, resolver)
        if previous is not None and question and preface is None and refers_back(question):
            # the previous turn as it was read: a follow-up of a follow-up keeps the subject
            asked = str((previous.model_extra or {}).get("query") or previous.text)
            query, carried = followup_query(question, asked), asked
            kept = (previous.model_extra or {}).get("filters")
            if filters is None and kept:  # None: not given; [] or {}: explicitly none
                filters, conditions = kept, parse_filters(kept)
    under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
    return Turn(question, k, conditions, corpus, under, offsets, chat_id, policy, utcnow(),
                preface, image_url, query, json_filters(filters), generator=generator, previous=carried)


__all__ = ["IMAGE_QUERY_WORDS", "MAX_QUESTION_CHARS", "NO_IMAGE_TEXT", "OFFSET_UNITS", "POLICIES", "PendingTurn", "Turn",
           "TurnReading",
           "check_choices", "json_filters", "pending_from_payload", "prepare_turn", "turn_payload"]
