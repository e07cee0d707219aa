"""Entity routes of the chats profile (seed 000): what an entity reference ``{type, id}``
resolves to (chats envelope; bare objects).

- ``GET /v1/datasets/{dataset_id}``: a posts file of the workspace;
- ``GET /v1/research_previews/{research_preview_id}``: the pointer to a turn (its
  assistant message, pending or not);
- patterns (``GET /v1/patterns/{pattern_id}``) are served by :mod:`.agents`, which makes them.

``chat`` resolves at ``GET /v1/chats/{chat_id}`` and ``resource`` at
``GET /v1/resources/{resource_id}``. An id of another workspace answers exactly like an
unknown id.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ...errors import NotFoundError
from ...models import Message, Resource
from ...store.base import iso_utc
from ..deps import Context, context
from ..schemas import DatasetOut, ResearchPreviewOut
from .common import error_docs

router = APIRouter(tags=["entities"])


def dataset_json(resource: Resource) -> dict[str, Any]:
    """A posts resource as a dataset: ``{id, title, file_name, post_count, status, error,
    warnings, size_bytes, sha256, metadata, custom_metadata, created_at, updated_at}``
    (times ISO 8601 UTC with ``Z``; ``post_count`` = its posts, as extraction counted them:
    a long post is several chunks but one post)."""
    posts = (resource.metadata or {}).get("post_count")
    return {
        "id": resource.id, "title": resource.title, "file_name": resource.file_name,
        "post_count": posts if isinstance(posts, int) else resource.chunk_count, "status": resource.status,
        "error": resource.error.model_dump(mode="json") if resource.error is not None else None,
        "warnings": [w.model_dump(mode="json") for w in resource.warnings],
        "size_bytes": resource.size_bytes, "sha256": resource.sha256, "metadata": resource.metadata,
        "custom_metadata": resource.custom_metadata,
        "created_at": iso_utc(resource.created_at), "updated_at": iso_utc(resource.updated_at),
    }


def research_preview_json(message: Message, question: str | None) -> dict[str, Any]:
    """The pointer to a turn: ``{id, chat_id, status, question, message_id, created_at}``
    (``id`` = ``message_id`` = the assistant message's id)."""
    return {"id": message.id, "chat_id": message.chat_id, "status": message.status, "question": question,
            "message_id": message.id, "created_at": iso_utc(message.created_at)}


@router.get("/v1/datasets/{dataset_id}", response_model=DatasetOut, responses=error_docs("chats"),
            summary="Get a dataset (a posts file)")
def get_dataset(dataset_id: str, ctx: Context = Depends(context)) -> dict[str, Any]:
    """One posts file of the workspace; 404 ``NOT_FOUND`` for an unknown id, another
    workspace's, or a resource that is not a posts file."""
    try:
        resource = ctx.engine.resource(dataset_id)
    except NotFoundError:
        resource = None
    if resource is None or resource.kind != "post":
        raise NotFoundError(f"no dataset {dataset_id}")
    return dataset_json(resource)


@router.get("/v1/research_previews/{research_preview_id}", response_model=ResearchPreviewOut,
            responses=error_docs("chats"), summary="Get a research preview (the pointer to a turn)")
def get_research_preview(research_preview_id: str, ctx: Context = Depends(context)) -> dict[str, Any]:
    """The turn whose assistant message is ``research_preview_id``: its chat, status
    (pending, settled, failed) and question. 404 ``NOT_FOUND`` for an unknown id, a user
    message, or a message of another workspace (or, acting for a user, of another user)."""
    try:
        message = ctx.engine.message(research_preview_id, user_id=ctx.user_id)
    except NotFoundError:
        message = None
    if message is None or message.role != "assistant" or message.chat_id is None:
        raise NotFoundError(f"no research_preview {research_preview_id}")
    question = None
    for earlier in ctx.engine.history(message.chat_id, user_id=ctx.user_id):
        if earlier.id == message.id:
            break
        if earlier.role == "user":
            question = earlier.text
    return research_preview_json(message, question)


__all__ = ["dataset_json", "research_preview_json", "router"]
