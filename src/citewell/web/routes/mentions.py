"""Mentions (seed 000): ``POST /v1/mentions`` (chats envelope).

Two forms of one route, never mixed (400 ``INVALID_REQUEST_BODY``):

- ``{post_refs: [{source, id, dataset_id?}, …]}`` → ``{mentions: [...], next_cursor:
  null}`` in the order asked; a ref that names no post of the workspace (unknown, or
  another workspace's: they answer alike) is ``{source, id, error: {code: "NOT_FOUND",
  message}}`` in its place, and the call itself succeeds. Each posts file keeps its own
  copy of a post: ``dataset_id`` (a reference's ``resource_id``) names the copy; without
  it the copy of the most recently added ready dataset holding the post is returned.
- a list query ``{source?, query?, created_after?, created_before?, dataset_id?, limit?,
  cursor?}`` → ``{mentions: [...], next_cursor}`` ordered by ``(created_at, source, id,
  dataset_id)`` (a post two datasets hold is listed once per dataset);
  ``next_cursor`` (opaque, URL-safe) continues after the last one, null on the last page.

A mention is the stored Mention whole: ``source``, ``id``, ``text``, ``url``, ``author``,
``created_at``, ``dataset_id``, ``chunk_id`` and every other field its source gave
(``score``, ``likes``, ``num_comments``, ``permalink`` …) as given.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, date, datetime
from typing import Any

from fastapi import APIRouter, Depends

from ...engine import Engine
from ...models import Mention
from ...retrieve.query import question_terms
from ..deps import Context, context
from ..errors import ApiError
from ..schemas import MentionsBody, MentionsPage
from .common import error_docs

router = APIRouter(tags=["mentions"])

DEFAULT_LIMIT = 50
_LIST_FIELDS = ("source", "query", "created_after", "created_before", "dataset_id", "limit", "cursor")


def mention_json(mention: Mention) -> dict[str, Any]:
    """The whole Mention as JSON (declared fields, then every field its source gave)."""
    return mention.model_dump(mode="json")


def mention_key(mention: Mention) -> tuple[str, str, str, str]:
    """The keyset paging key of a mention: ``(created_at or "", source lower-cased, id,
    dataset_id)``."""
    return (mention.created_at or "", mention.source.lower(), mention.id, mention.dataset_id or "")


def encode_cursor(key: tuple[str, ...]) -> str:
    """An opaque cursor for ``key``: URL-safe base64 (no padding) of its JSON."""
    raw = json.dumps(list(key), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, ...]:
    """The key a cursor of :func:`encode_cursor` holds (four strings; three in a cursor
    made before posts were kept per dataset); ``INVALID_REQUEST_BODY`` for anything else."""
    try:
        if len(cursor) > 4096:  # a key is three short strings
            raise ValueError("cursor too long")
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        key = None
    if not (isinstance(key, list) and len(key) in (3, 4) and all(isinstance(k, str) for k in key)):
        raise ApiError("cursor is not valid (pass next_cursor of the previous page as it is)",
                       code="INVALID_REQUEST_BODY")
    return tuple(key)


def _time_bound(name: str, value: str | None, *, end: bool) -> str | None:
    """An ISO 8601 date or date-time as the text stored ``created_at`` values compare
    with (UTC, ``Z``); a date alone as ``end`` bound covers that whole day.
    ``INVALID_REQUEST_BODY`` for anything else."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return f"{day.isoformat()}T24:00:00Z" if end else f"{day.isoformat()}T00:00:00Z"
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):
        raise ApiError(f"{name}: expected an ISO 8601 date or date-time such as 2022-01-31 or "
                       f"2022-01-31T12:00:00Z, got {value!r}", code="INVALID_REQUEST_BODY") from None
    return moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds") + "Z"


def mentions_by_refs(engine: Engine, body: MentionsBody) -> dict[str, Any]:
    """The ``post_refs`` form: ``{mentions, next_cursor: null}`` in the order asked (an unknown
    ref is an item with ``error``); shared with the MCP server."""
    refs = [(ref.source, str(ref.id)) for ref in body.post_refs or []]
    datasets = [ref.dataset_id for ref in body.post_refs or []]
    found = engine.store.mentions(engine.workspace_id, refs, dataset_ids=datasets) if refs else []
    out: list[dict[str, Any]] = []
    for (source, post_id), mention in zip(refs, found):
        if mention is None:
            out.append({"source": source, "id": post_id,
                        "error": {"code": "NOT_FOUND", "message": f"no post {source}:{post_id}"}})
        else:
            out.append(mention_json(mention))
    return {"mentions": out, "next_cursor": None}


def mentions_by_query(engine: Engine, body: MentionsBody) -> dict[str, Any]:
    """The list-query form: ``{mentions, next_cursor}`` (``INVALID_REQUEST_BODY`` for a bad date
    or cursor); shared with the MCP server."""
    limit = body.limit if body.limit is not None else DEFAULT_LIMIT
    after = decode_cursor(body.cursor) if body.cursor else None
    terms: list[str] = []
    if body.query is not None and body.query.strip():
        terms = question_terms(body.query)
        if not terms:  # a query without a word matches nothing
            return {"mentions": [], "next_cursor": None}
    page = engine.store.list_mentions(
        engine.workspace_id, source=body.source or None, terms=terms,
        created_after=_time_bound("created_after", body.created_after, end=False),
        created_before=_time_bound("created_before", body.created_before, end=True),
        dataset_id=body.dataset_id or None, limit=limit + 1, after=after)
    more = len(page) > limit
    page = page[:limit]
    return {"mentions": [mention_json(m) for m in page],
            "next_cursor": encode_cursor(mention_key(page[-1])) if more else None}


@router.post("/v1/mentions", response_model=MentionsPage, responses=error_docs("chats"),
             summary="Resolve posts by reference, or list them by query")
def mentions(body: MentionsBody | None = None, ctx: Context = Depends(context)) -> dict[str, Any]:
    """``post_refs`` → the mentions in the order asked (unknown refs as per-item
    ``NOT_FOUND`` errors); otherwise the list query, paged by ``cursor``. 400
    ``INVALID_REQUEST_BODY`` for both forms in one body, more than 200 refs, ``limit``
    outside 1–200, a bad date or a bad cursor."""
    body = body if body is not None else MentionsBody()
    if body.post_refs is not None:
        mixed = [name for name in _LIST_FIELDS if getattr(body, name) is not None]
        if mixed:
            raise ApiError(f"post_refs cannot be combined with the list query ({', '.join(mixed)})",
                           code="INVALID_REQUEST_BODY")
        return mentions_by_refs(ctx.engine, body)
    return mentions_by_query(ctx.engine, body)


__all__ = ["decode_cursor", "encode_cursor", "mention_json", "mention_key", "mentions_by_query", "mentions_by_refs",
           "router"]
