"""The chats profile (seed 000): a message as ``text`` with ``[N]`` markers and a flat
``references[]``.

Shape of :func:`render_message` (JSON-ready)::

    {"id": str | None, "chat_id": str | None, "role": str,
     "text": str,                      # Message.text: markers [N], rule 5 escapes
     "references": [Ref, ...],         # numbered sources by citation, then entities
     "status": "pending" | "settled" | "failed",
     "warnings": [{"code", "message", ...}, ...],
     "created_at": "2026-08-05T10:02:14.480Z",
     "error": {"code", "message"}}    # only on a failed turn (status "failed")

A post reference is ``{type: "post", source, id, citation, start_index, end_index}``
(seed 000) plus the canonical additive fields (``occurrences``, ``offset_unit``, and
when the workspace knows the post ``chunk_id``, ``resource_id``, ``resource_title``,
``chunk_index``, ``text``, ``text_type``, ``metadata``); a passage reference is
``{type: "chunk", id, citation, start_index, end_index}`` with ``id`` = its ``chunk_id``
(every seed 000 reference has an ``id``) and the same canonical fields; an entity
reference is ``{type, id}``. Absent (None) fields are omitted. ``citation`` is an int
(seed 000). ``text[start_index:end_index] == f"[{citation}]"`` in ``offset_unit``.
"""

from __future__ import annotations

from typing import Any

from citewell.cite.offsets import convert_offsets
from citewell.models import ENTITY_TYPES, Message, Reference
from citewell.store.base import iso_utc

_LEAD = ("type", "source", "id", "citation", "start_index", "end_index")


def render_reference(ref: Reference) -> dict[str, Any]:
    """One ``references[]`` entry; seed fields first, then the canonical additive ones
    (a passage's ``id`` is its ``chunk_id``)."""
    if ref.type in ENTITY_TYPES or ref.citation is None:
        return {"type": ref.type, "id": ref.id}
    data = ref.model_dump(mode="json", exclude_none=True)
    if ref.type == "chunk" and data.get("id") is None and ref.chunk_id is not None:
        data["id"] = ref.chunk_id  # seed 000: every reference has an id; a passage's is its chunk's
    out = {key: data.pop(key) for key in _LEAD if key in data}
    out.update(data)
    return out


def render_message(message: Message, *, offsets: str | None = None) -> dict[str, Any]:
    """The seed 000 shape of ``message`` (see the module docstring).

    ``offsets`` (``codepoint``, ``utf16``, ``utf8``): convert every offset to that unit
    first (rule 3); None keeps the message's own. Raises ``ValueError`` for an unknown unit.
    """
    if offsets is not None and offsets != message.offset_unit:
        message = convert_offsets(message, offsets)
    out: dict[str, Any] = {
        "id": message.id,
        "chat_id": message.chat_id,
        "role": message.role,
        "text": message.text,
        "references": [render_reference(r) for r in message.references],
        "status": message.status,
        "warnings": [w.model_dump(mode="json") for w in message.warnings],
        "created_at": iso_utc(message.created_at),
    }
    error = (message.model_extra or {}).get("error")
    if isinstance(error, dict):  # a failed turn's {code, message}
        out["error"] = error
    extra = message.model_extra or {}
    # additive: who wrote the answer, how much is grounded; for an alert, its agent and how many mentions matched
    for key in ("generation", "grounded_coverage", "tracking_agent_id", "mention_count"):
        if extra.get(key) is not None:
            out[key] = extra[key]
    return out


__all__ = ["render_message", "render_reference"]
