"""Every route of the API as a :class:`Call`: method, path, parameters and how the answer
becomes a typed result. The sync and async clients send the same calls, so a route is
described once, here.

Envelopes are unwrapped by the profile's reader: sessions/resources ``{"status": "ok",
"data": …}``, analytics ``{"error": null, "payload": …}`` (except ``GET /v1/references``,
a bare ``{"references": …}`` as seed 004 declares it), chats bare objects.
"""

from __future__ import annotations

import json
import mimetypes
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import TypeAdapter

from .types import (
    AgentRun,
    AlertsPage,
    AskAccepted,
    Chat,
    ChatMessage,
    ChatMessagesPage,
    Dataset,
    Deleted,
    MentionsPage,
    Pattern,
    PatternList,
    PresignedUrl,
    Reference,
    ResearchPreview,
    Resource,
    ResourceList,
    Session,
    SessionMessages,
    TrackingAgent,
    TrackingAgentList,
    Turn,
)

T = TypeVar("T")

FileInput = str | os.PathLike[str] | bytes | IO[bytes]
TimeInput = str | date | datetime


@dataclass
class Call(Generic[T]):
    """One request and the reader of its answer: ``parse(json_body)``, or with ``raw``
    ``parse(the answer's bytes)`` (a download, an HTML page, an image)."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: dict[str, Any] | None = None
    json: Any = None
    files: Any = None
    data: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bool = False


def seg(value: str) -> str:
    """``value`` as one path segment (everything but unreserved characters escaped)."""
    return quote(str(value), safe="")


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _data(body: Any) -> dict[str, Any]:
    """Sessions envelope ``{"status": "ok", "data": …}`` → ``data``."""
    return body["data"]


def _payload(body: Any) -> dict[str, Any]:
    """Analytics envelope ``{"error": null, "payload": …}`` → ``payload``."""
    return body["payload"]


_REFERENCES = TypeAdapter(list[Reference])
_CHATS = TypeAdapter(list[Chat])


def iso(value: TimeInput | None) -> str | None:
    """A date or datetime as ISO 8601 text (text is passed through)."""
    if value is None or isinstance(value, str):
        return value
    return value.isoformat()


# -- sessions ---------------------------------------------------------------------------------

def create_session(title: str | None) -> Call[Session]:
    """``POST /v1/sessions``."""
    return Call("POST", "/v1/sessions", lambda b: Session.model_validate(_data(b)["session"]),
                json={"title": title} if title is not None else {})


def get_session(session_id: str) -> Call[Session]:
    """``GET /v1/sessions/{session_id}``."""
    return Call("GET", f"/v1/sessions/{seg(session_id)}", lambda b: Session.model_validate(_data(b)["session"]))


def session_messages(session_id: str, offsets: str | None) -> Call[SessionMessages]:
    """``GET /v1/sessions/{session_id}/messages``."""
    return Call("GET", f"/v1/sessions/{seg(session_id)}/messages",
                lambda b: SessionMessages.model_validate(_data(b)), params=_params(offsets=offsets))


def ask_session(session_id: str, content: str, resource_ids: Iterable[str] | None, image_url: str | None,
                offsets: str | None) -> Call[Turn]:
    """``POST /v1/sessions/{session_id}/messages``."""
    body: dict[str, Any] = {"content": content}
    if resource_ids is not None:
        body["resource_ids"] = list(resource_ids)
    body.update(_params(image_url=image_url, offsets=offsets))
    return Call("POST", f"/v1/sessions/{seg(session_id)}/messages", lambda b: Turn.model_validate(_data(b)),
                json=body)


# -- resources --------------------------------------------------------------------------------

@contextmanager
def upload(file: FileInput, filename: str | None, metadata: Mapping[str, Any] | None,
           content_type: str | None) -> Iterator[Call[Resource]]:
    """``POST /v1/resources`` (multipart ``file`` and ``metadata`` JSON text). A path is
    opened for the call (and streamed, not read whole); bytes and binary file objects need
    ``filename`` unless the object has a ``name``."""
    handle: IO[bytes] | bytes
    if isinstance(file, (str, os.PathLike)):
        path = Path(file)
        name = filename or path.name
        handle = path.open("rb")
    elif isinstance(file, (bytes, bytearray, memoryview)):
        if not filename:
            raise TypeError("upload(bytes) needs filename=")
        name, handle = filename, bytes(file)
    else:
        name = filename or Path(str(getattr(file, "name", "") or "")).name
        if not name:
            raise TypeError("upload(file object) needs filename= (the object has no name)")
        handle = file
    media_type = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
    form = {"metadata": json.dumps(dict(metadata), ensure_ascii=False)} if metadata is not None else None
    try:
        yield Call("POST", "/v1/resources", lambda b: Resource.model_validate(_data(b)["resource"]),
                   files={"file": (name, handle, media_type)}, data=form)
    finally:
        if isinstance(file, (str, os.PathLike)) and not isinstance(handle, bytes):
            handle.close()


def list_resources(limit: int | None, offset: int | None, status: str | Iterable[str] | None) -> Call[ResourceList]:
    """``GET /v1/resources`` (``status`` repeatable)."""
    statuses = [status] if isinstance(status, str) else list(status) if status is not None else None
    return Call("GET", "/v1/resources", lambda b: ResourceList.model_validate(_data(b)),
                params=_params(limit=limit, offset=offset, status=statuses or None))


def get_resource(resource_id: str) -> Call[Resource]:
    """``GET /v1/resources/{resource_id}``."""
    return Call("GET", f"/v1/resources/{seg(resource_id)}",
                lambda b: Resource.model_validate(_data(b)["resource"]))


def delete_resource(resource_id: str) -> Call[Deleted]:
    """``DELETE /v1/resources/{resource_id}``."""
    return Call("DELETE", f"/v1/resources/{seg(resource_id)}", lambda b: Deleted.model_validate(_data(b)))


def download(resource_id: str) -> Call[bytes]:
    """``GET /v1/resources/{resource_id}/content``: the original bytes."""
    return Call("GET", f"/v1/resources/{seg(resource_id)}/content", lambda b: b, raw=True)


# -- references (analytics) -------------------------------------------------------------------

def references(chat_message_id: str, offsets: str | None) -> Call[list[Reference]]:
    """``GET /v1/references?chat_message_id=``: a bare ``{"references": [...], "text"}`` (seed 004)."""
    return Call("GET", "/v1/references", lambda b: _REFERENCES.validate_python(b["references"]),
                params=_params(chat_message_id=chat_message_id, offsets=offsets))


def conversation_references(conversation_id: str, offsets: str | None) -> Call[list[Reference]]:
    """``GET /v2/analytics/conversations/{conversation_id}/references``."""
    return Call("GET", f"/v2/analytics/conversations/{seg(conversation_id)}/references",
                lambda b: _REFERENCES.validate_python(_payload(b)["references"]), params=_params(offsets=offsets))


def stream_body(query: str, conversation_id: str | None, filters: Any, offsets: str | None,
                policy: str | None) -> dict[str, Any]:
    """The body of ``POST /v2/analytics/sse``."""
    return {"query": query, **_params(conversation_id=conversation_id, filters=filters, offsets=offsets,
                                      policy=policy)}


STREAM_PATH = "/v2/analytics/sse"


# -- documents and the viewer (seeds 003/004) --------------------------------------------------

def presigned_url(document_id: str, expires_in: int | None) -> Call[PresignedUrl]:
    """``GET /v1/presigned_url?document_id=&expires_in=``."""
    return Call("GET", "/v1/presigned_url", lambda b: PresignedUrl.model_validate(_payload(b)),
                params=_params(document_id=document_id, expires_in=expires_in))


def _viewer_params(citation_idx: int | str, chat_message_id: str | None, conversation_id: str | None,
                   **more: Any) -> dict[str, Any]:
    return _params(chat_message_id=chat_message_id, conversation_id=conversation_id,
                   citation_idx=str(citation_idx), **more)


def viewer(citation_idx: int | str, chat_message_id: str | None, conversation_id: str | None) -> Call[str]:
    """``GET /rms/viewer``: the HTML page of one citation."""
    return Call("GET", "/rms/viewer", lambda raw: raw.decode("utf-8"),
                params=_viewer_params(citation_idx, chat_message_id, conversation_id), raw=True,
                headers={"Accept": "text/html"})


def viewer_page(citation_idx: int | str, chat_message_id: str | None, conversation_id: str | None,
                page: int | None, boxes: bool | None) -> Call[bytes]:
    """``GET /rms/viewer/page``: a cited PDF page as PNG bytes."""
    extra = _params(page=page, boxes=None if boxes is None else ("true" if boxes else "false"))
    return Call("GET", "/rms/viewer/page", lambda raw: raw,
                params=_viewer_params(citation_idx, chat_message_id, conversation_id, **extra), raw=True,
                headers={"Accept": "image/png"})


# -- chats (seed 000) -------------------------------------------------------------------------

def ask(question: str, chat_id: str | None, filters: Any, offsets: str | None,
        policy: str | None) -> Call[AskAccepted]:
    """``POST /v1/ask`` (202)."""
    return Call("POST", "/v1/ask", AskAccepted.model_validate,
                json={"question": question, **_params(chat_id=chat_id, filters=filters, offsets=offsets,
                                                      policy=policy)})


def get_message(chat_id: str, message_id: str, offsets: str | None) -> Call[ChatMessage]:
    """``GET /v1/chats/{chat_id}/messages/{message_id}``."""
    return Call("GET", f"/v1/chats/{seg(chat_id)}/messages/{seg(message_id)}", ChatMessage.model_validate,
                params=_params(offsets=offsets))


def chat_messages(chat_id: str, limit: int | None, after: str | None, offsets: str | None) -> Call[ChatMessagesPage]:
    """``GET /v1/chats/{chat_id}/messages``."""
    return Call("GET", f"/v1/chats/{seg(chat_id)}/messages", ChatMessagesPage.model_validate,
                params=_params(limit=limit, after=after, offsets=offsets))


def chats() -> Call[list[Chat]]:
    """``GET /v1/chats``."""
    return Call("GET", "/v1/chats", lambda b: _CHATS.validate_python(b["chats"]))


def get_chat(chat_id: str) -> Call[Chat]:
    """``GET /v1/chats/{chat_id}``."""
    return Call("GET", f"/v1/chats/{seg(chat_id)}", Chat.model_validate)


def _ref(item: Any) -> dict[str, Any]:
    """One ``post_refs`` item; the dataset whose copy is wanted when the item names one
    (``dataset_id``, or a reference's ``resource_id``: each posts file keeps its own copy)."""
    if isinstance(item, Mapping):
        ref = {"source": item["source"], "id": str(item["id"])}
        dataset = item.get("dataset_id") or item.get("resource_id")
    elif hasattr(item, "source") and hasattr(item, "id"):
        ref = {"source": item.source, "id": str(item.id)}
        dataset = getattr(item, "dataset_id", None) or getattr(item, "resource_id", None)
    else:
        source, post_id = item
        ref, dataset = {"source": source, "id": str(post_id)}, None
    if isinstance(dataset, str) and dataset:
        ref["dataset_id"] = dataset
    return ref


def mentions_by_refs(refs: Iterable[Any]) -> Call[MentionsPage]:
    """``POST /v1/mentions`` ``{post_refs}``: refs as ``(source, id)`` pairs, ``{source, id,
    dataset_id?}`` mappings, or objects with ``source`` and ``id`` (a :class:`ChatReference`,
    whose ``resource_id`` names the dataset whose copy of the post it cites)."""
    return Call("POST", "/v1/mentions", MentionsPage.model_validate,
                json={"post_refs": [_ref(item) for item in refs]})


def mentions(source: str | None, query: str | None, created_after: TimeInput | None,
             created_before: TimeInput | None, dataset_id: str | None, limit: int | None,
             cursor: str | None) -> Call[MentionsPage]:
    """``POST /v1/mentions`` with the list query."""
    return Call("POST", "/v1/mentions", MentionsPage.model_validate,
                json=_params(source=source, query=query, created_after=iso(created_after),
                             created_before=iso(created_before), dataset_id=dataset_id, limit=limit, cursor=cursor))


# -- entities ---------------------------------------------------------------------------------

def dataset(dataset_id: str) -> Call[Dataset]:
    """``GET /v1/datasets/{dataset_id}``."""
    return Call("GET", f"/v1/datasets/{seg(dataset_id)}", Dataset.model_validate)


def research_preview(research_preview_id: str) -> Call[ResearchPreview]:
    """``GET /v1/research_previews/{research_preview_id}``."""
    return Call("GET", f"/v1/research_previews/{seg(research_preview_id)}", ResearchPreview.model_validate)


def pattern(pattern_id: str) -> Call[Pattern]:
    """``GET /v1/patterns/{pattern_id}``."""
    return Call("GET", f"/v1/patterns/{seg(pattern_id)}", Pattern.model_validate)


def patterns(limit: int | None, offset: int | None) -> Call[PatternList]:
    """``GET /v1/patterns``."""
    return Call("GET", "/v1/patterns", PatternList.model_validate,
                params={k: v for k, v in (("limit", limit), ("offset", offset)) if v is not None})


def create_agent(fields: dict[str, Any]) -> Call[TrackingAgent]:
    """``POST /v1/tracking_agents`` (fields that are None are left out)."""
    return Call("POST", "/v1/tracking_agents", TrackingAgent.model_validate,
                json={k: v for k, v in fields.items() if v is not None})


def tracking_agents() -> Call[TrackingAgentList]:
    """``GET /v1/tracking_agents``."""
    return Call("GET", "/v1/tracking_agents", TrackingAgentList.model_validate)


def tracking_agent(agent_id: str) -> Call[TrackingAgent]:
    """``GET /v1/tracking_agents/{agent_id}``."""
    return Call("GET", f"/v1/tracking_agents/{seg(agent_id)}", TrackingAgent.model_validate)


def update_agent(agent_id: str, fields: dict[str, Any]) -> Call[TrackingAgent]:
    """``PATCH /v1/tracking_agents/{agent_id}`` (fields that are None are left out)."""
    return Call("PATCH", f"/v1/tracking_agents/{seg(agent_id)}", TrackingAgent.model_validate,
                json={k: v for k, v in fields.items() if v is not None})


def delete_agent(agent_id: str) -> Call[dict[str, Any]]:
    """``DELETE /v1/tracking_agents/{agent_id}``: ``{id, deleted}``."""
    return Call("DELETE", f"/v1/tracking_agents/{seg(agent_id)}", dict)


def run_agent(agent_id: str) -> Call[AgentRun]:
    """``POST /v1/tracking_agents/{agent_id}/run``."""
    return Call("POST", f"/v1/tracking_agents/{seg(agent_id)}/run", AgentRun.model_validate)


def alerts(agent_id: str, limit: int | None, before: str | None, offsets: str | None) -> Call[AlertsPage]:
    """``GET /v1/tracking_agents/{agent_id}/messages``."""
    params = {k: v for k, v in (("limit", limit), ("before", before), ("offsets", offsets)) if v is not None}
    return Call("GET", f"/v1/tracking_agents/{seg(agent_id)}/messages", AlertsPage.model_validate, params=params)


__all__ = ["STREAM_PATH", "Call", "FileInput", "TimeInput", "iso", "seg", "stream_body"]
