"""References (seeds 003/004): ``/v1/references`` and
``/v2/analytics/conversations/{conversation_id}/references``.

Success shapes follow each route's seed: ``GET /v1/references`` answers seed 004's
``ReferencesResponse``, ``{"references": [...], "text": ...}`` at the top level (``text``
additive); the conversation route answers seed 003's ``{"error": null, "payload":
{"references": [...], ...}}``. Errors of both are the analytics envelope
(``ApiErrorResponse``: ``{"error": {code, msg, message}, "payload": null}``).

Every numbered reference of a message as an RMSReference
(:func:`citewell.profiles.analytics.render_references`); a user message has none. A
message id of any profile works (they are the same stored messages). Each reference carries
an additive ``viewer_url``: a signed link (no key needed, one to two hours) to the viewer
that shows the citation in place (:mod:`citewell.web.routes.viewer`), and an
``external_url`` that is never null (:mod:`citewell.web.reflinks`).

A conversation's references are numbered across the whole conversation: ``citation_idx``
(and ``id``) is ``"1"``, ``"2"`` … over every answer's references in order
(:func:`~citewell.profiles.analytics.conversation_citations`), so each names one
reference and ``/rms/viewer?conversation_id=&citation_idx=`` shows exactly it; each keeps
its own message's numbering in the additive ``citation`` (the ``[N]`` of that message's
text) and ``chat_message_id``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from ...engine import Engine
from ...errors import NotFoundError
from ...models import Mention, Message, Resource
from ...profiles.analytics import render_references
from ..deps import Context, context
from .. import rules
from ..errors import ApiError
from ..reflinks import ReferenceLinks
from ..schemas import ConversationReferencesResponse, OffsetUnit, ReferencesResponse
from .common import error_docs, payload

router = APIRouter(tags=["references"])

_OFFSETS = Query("codepoint", description="Unit of start_index/end_index/occurrences: codepoint, utf16 or utf8.")


class _Lookup:
    """Resources and posts of one request's references, each read once."""

    def __init__(self, engine: Engine, links: ReferenceLinks | None = None) -> None:
        self.engine = engine
        self.links = links  # the signed viewer_url and external_url of each reference
        self.resources: dict[str, Resource] = {}
        #: (source, id, dataset id) → the post as that dataset holds it (each keeps its own copy)
        self.mentions: dict[tuple[str, str, str | None], Mention] = {}
        self._missing: set[str] = set()

    def references(self, message: Message, offsets: str, *, chat_message_id: str | None = None) -> list[dict[str, Any]]:
        """The RMSReferences of ``message`` (``[]`` for a user or system message)."""
        if message.role != "assistant":
            return []
        for ref in message.references:
            rid = ref.resource_id
            if rid and rid not in self.resources and rid not in self._missing:
                try:
                    self.resources[rid] = self.engine.resource(rid)
                except NotFoundError:  # deleted since: the reference renders from its own copy
                    self._missing.add(rid)
        cited = [(r.source, r.id, r.resource_id) for r in message.references if r.type == "post" and r.source and r.id]
        posts = [key for key in dict.fromkeys(cited) if key not in self.mentions]
        if posts:
            found = self.engine.store.mentions(self.engine.workspace_id, [(s, i) for s, i, _ in posts],
                                               dataset_ids=[d for _, _, d in posts])
            self.mentions.update({key: m for key, m in zip(posts, found) if m is not None})
        links, message_id = self.links, message.id
        # a post is numbered once per message: its (source, id) names the cited dataset's copy here
        mentions = {(s, i): self.mentions[(s, i, d)] for s, i, d in cited if (s, i, d) in self.mentions}
        return render_references(message, self.resources, mentions, chat_message_id=chat_message_id,
                                 offsets=offsets,
                                 links=(lambda r: links.complete(r, message_id)) if links and message_id else None)


@router.get("/v1/references", response_model=ReferencesResponse, response_model_exclude_unset=True,
            responses=error_docs("analytics"),
            summary="References of a chat message")
def message_references(request: Request,
                       chat_message_id: str = Query(..., description="A message id (any profile).",
                                                    json_schema_extra={"pattern": rules.NONBLANK}),
                       offsets: OffsetUnit = _OFFSETS, ctx: Context = Depends(context)) -> dict[str, Any]:
    """The evidence references of one message, in citation order, and the message ``text``
    (with its ``[N]`` markers) that their offsets index, as seed 004's ``ReferencesResponse``
    (no envelope on success). 400 ``CHAT_MESSAGE_ID_MISSING`` without an id; 404 for an
    unknown (or foreign) id."""
    if not chat_message_id.strip():
        raise ApiError("chat_message_id is required", code="CHAT_MESSAGE_ID_MISSING")
    message = ctx.engine.message(chat_message_id, user_id=ctx.user_id)
    lookup = _Lookup(ctx.engine, ReferenceLinks(request, ctx.engine, ctx.who.key_id or ""))
    return {"references": lookup.references(message, offsets), "text": message.text}


@router.get("/v2/analytics/conversations/{conversation_id}/references", response_model=ConversationReferencesResponse,
            response_model_exclude_unset=True,
            responses=error_docs("analytics"), summary="References of a conversation")
def conversation_references(request: Request, conversation_id: str, offsets: OffsetUnit = _OFFSETS,
                            ctx: Context = Depends(context)) -> dict[str, Any]:
    """The references of every assistant message of a conversation (a session), message by
    message in order, numbered across the conversation (``citation_idx``/``id`` ``"1"``,
    ``"2"`` …, the index ``/rms/viewer?conversation_id=&citation_idx=`` takes), each with
    additive ``chat_message_id`` and ``citation`` (its ``[N]`` in that message), and each
    message's ``text`` (``messages``) that the offsets index."""
    ctx.engine.get_chat(conversation_id, user_id=ctx.user_id)
    lookup = _Lookup(ctx.engine, ReferenceLinks(request, ctx.engine, ctx.who.key_id or ""))
    references: list[dict[str, Any]] = []
    messages: list[dict[str, str]] = []
    for message in ctx.engine.history(conversation_id, user_id=ctx.user_id):
        if message.role == "assistant" and message.id:
            references.extend(lookup.references(message, offsets, chat_message_id=message.id))
            messages.append({"chat_message_id": message.id, "text": message.text})
    for index, reference in enumerate(references, start=1):  # the order of conversation_citations
        reference["id"] = reference["citation_idx"] = str(index)
    return payload({"references": references, "messages": messages})


__all__ = ["router"]
