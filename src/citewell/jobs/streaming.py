"""The producer of an answer stream: a turn's engine events recorded as client events.

A streamed turn (``POST /v2/analytics/sse``, or a ``turn`` job whose payload says
``stream``) runs as a job on a worker of any process (:class:`~citewell.jobs.turns.TurnHandler`).
:class:`TurnRecorder` runs its :meth:`Engine.stream_turn` and records every client event
with ``Store.append_events`` as it is produced (``seq`` 1, 2, 3 …): the store is the
source of truth, which every reader follows. A reader in this process also waits on the
message's in-process :class:`StreamChannel` (:func:`live_channel`), woken on every
recorded event. The reader, the event grammar and the synthetic events of a replay are
the HTTP API's (:mod:`citewell.web.routes.analytics`); this module only produces.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

from ..cite.offsets import OffsetMap
from ..cite.stream import Event
from ..engine import Engine, PendingTurn
from ..errors import NotFoundError
from ..models import Mention, Message, Passage, Reference, Resource
from ..profiles.analytics import render_reference, seed_text_type

log = logging.getLogger(__name__)

#: Longest ``text`` excerpt of a ``search_results`` item (characters, "…" included).
EXCERPT_CHARS = 300
#: The offset fields of a reference that a ``citation`` event leaves out.
OFFSET_KEYS = ("start_index", "end_index", "occurrences", "offset_unit")


# -- the in-process channel of a running stream ---------------------------------------------

class StreamChannel:
    """Progress of one message's stream in this process: the last recorded ``seq`` and
    whether the producer has finished. Readers on event loops wait on it without a thread
    (:meth:`waiter`); the producer thread wakes them (:meth:`publish`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.last_seq = 0
        self.finished = False
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def publish(self, seq: int | None = None, *, finished: bool = False) -> None:
        """Record that ``seq`` is stored (and/or that the producer has finished); wake readers."""
        with self._lock:
            if seq is not None:
                self.last_seq = max(self.last_seq, seq)
            self.finished = self.finished or finished
            waiters, self._waiters = self._waiters, set()
        for loop, event in waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that reader's loop has closed
                pass

    def waiter(self, after: int) -> asyncio.Event | None:
        """An event set at the next :meth:`publish`; None when there is news already
        (an event after ``after`` is stored, or the producer has finished)."""
        with self._lock:
            if self.last_seq > after or self.finished:
                return None
            event = asyncio.Event()
            self._waiters.add((asyncio.get_running_loop(), event))
            return event

    def forget(self, event: asyncio.Event) -> None:
        """Drop a waiter that stopped waiting (timed out or cancelled)."""
        with self._lock:
            self._waiters = {w for w in self._waiters if w[1] is not event}


_channels: dict[str, StreamChannel] = {}
_channels_lock = threading.Lock()


def live_channel(message_id: str) -> StreamChannel | None:
    """The channel of a stream still being produced in this process, or None."""
    with _channels_lock:
        channel = _channels.get(message_id)
    return channel if channel is not None and not channel.finished else None


# -- the producer: engine events → recorded client events -------------------------------------

def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, ending in "…" when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def search_result(passage: Passage) -> dict[str, Any]:
    """One item of a ``search_results`` event (its fields: the module docstring of
    :mod:`citewell.web.routes.analytics`, which serves it)."""
    chunk = passage.chunk
    meta = chunk.metadata or {}
    item: dict[str, Any] = {
        "rank": passage.rank, "chunk_id": chunk.id, "chunk_index": chunk.chunk_index,
        "document_id": chunk.resource_id, "document_name": passage.resource_title,
        "page": meta.get("page"), "text_type": seed_text_type(chunk.text_type), "chunk_text_type": chunk.text_type,
        "text": excerpt(chunk.text),
    }
    if passage.resource_kind == "transcript" or "start_time" in meta:
        item["start_time"], item["end_time"] = meta.get("start_time"), meta.get("end_time")
    return item


def citation_data(ref: Reference, resource: Resource | None, mention: Mention | None,
                   message_id: str) -> dict[str, Any]:
    """A ``citation`` event: the reference's RMSReference without offsets, ``citation`` (int)."""
    data = {k: v for k, v in render_reference(ref, resource, mention).items() if k not in OFFSET_KEYS}
    return {"citation": ref.citation, **data, "chat_message_id": message_id}


class CitationSources:
    """The resources and posts of one stream's citations, each read once."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._resources: dict[str, Resource | None] = {}

    def resource(self, resource_id: str | None) -> Resource | None:
        """The cited resource as stored now (None: unknown or deleted)."""
        if resource_id is None:
            return None
        if resource_id not in self._resources:
            try:
                self._resources[resource_id] = self.engine.resource(resource_id)
            except NotFoundError:
                self._resources[resource_id] = None
        return self._resources[resource_id]

    def mention(self, ref: Reference) -> Mention | None:
        """The post behind a post reference, or None."""
        if ref.type != "post" or not ref.source or not ref.id:
            return None
        (found,) = self.engine.mentions([(ref.source, ref.id)], dataset_ids=[ref.resource_id])
        return found


class TurnRecorder:
    """Runs one turn's :meth:`Engine.stream_turn` and records its client events.

    :meth:`start` (request thread) records ``conversation``; :meth:`run` (the turn's job,
    on a worker of any process) registers this process's channel, records the rest after
    the last recorded ``seq``, waking this process's readers after each, and closes the
    channel (:meth:`finish`). Readers in other processes follow the store.
    """

    def __init__(self, engine: Engine, pending: PendingTurn, offsets: str) -> None:
        self.engine, self.pending, self.offsets = engine, pending, offsets
        self.message_id = str(pending.message.id)
        self.conversation_id = pending.chat.id
        self.channel = StreamChannel()
        self.seq = 0
        self.text = ""  # the answer sent so far
        self._sources = CitationSources(engine)
        self._passages: dict[str, Passage] = {}

    def start(self) -> None:
        """Record the ``conversation`` event (seq 1)."""
        self._record([("conversation", {"conversation_id": self.conversation_id,
                                        "chat_message_id": self.message_id})])

    def run(self, engine: Engine, pending: PendingTurn) -> Message | None:
        """The worker job: stream the turn to its end, recording every client event after
        those recorded already. A recording failure closes the stream (the turn then
        settles failed as interrupted)."""
        recorded = engine.recorded_events(self.message_id)
        self.seq = max(self.seq, recorded[-1][0] if recorded else 0)
        with _channels_lock:
            _channels[self.message_id] = self.channel
        self.channel.publish(self.seq)
        stream = engine.stream_turn(pending)
        try:
            for event in stream:
                self._record(list(self._client_events(event)))
        except Exception:
            log.exception("streaming turn %s failed unexpectedly", self.message_id)
            stream.close()
        finally:
            self.finish()
        try:
            return engine.message(self.message_id)
        except NotFoundError:
            return None

    def finish(self) -> None:
        """Close the channel: readers stop waiting and read the rest from the store."""
        with _channels_lock:
            if _channels.get(self.message_id) is self.channel:
                del _channels[self.message_id]
        self.channel.publish(finished=True)

    def _record(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        if not events:
            return
        rows = []
        for name, data in events:
            self.seq += 1
            rows.append((self.seq, name, json.dumps({"event_name": name, **data}, ensure_ascii=False,
                                                    separators=(",", ":"))))
        self.engine.record_events(self.message_id, rows)
        self.channel.publish(self.seq)

    def _client_events(self, event: Event) -> Iterator[tuple[str, dict[str, Any]]]:
        """The client events of one engine event (their shapes: the module docstring of
        :mod:`citewell.web.routes.analytics`)."""
        data, ids = event.data, {"chat_message_id": self.message_id}
        if event.kind == "search_results":
            passages = [Passage.model_validate(p) for p in data["passages"]]
            self._passages = {p.chunk.id: p for p in passages}
            yield "search_results", {**ids, "results": [search_result(p) for p in passages]}
        elif event.kind == "citation":
            yield "citation", self._citation(data)
        elif event.kind == "delta":
            self.text += data["text"]
            yield "answer", {"delta": data["text"]}
        elif event.kind == "support":
            yield "support", self._support(data)
        elif event.kind == "reset":
            self.text = data["text"]
            yield "reset", {"text": data["text"]}
        elif event.kind == "done":
            message = data["message"]
            yield "done", {**ids, "conversation_id": self.conversation_id, "status": message["status"],
                           "grounded": bool(message.get("grounded")), "warnings": message.get("warnings") or [],
                           **{k: message[k] for k in ("generation", "grounded_coverage") if k in message}}
        elif event.kind == "error":
            yield "error", {**ids, "conversation_id": self.conversation_id, "code": data["code"],
                            "message": data["message"]}

    def _citation(self, data: dict[str, Any]) -> dict[str, Any]:
        passage = self._passages.get(data.get("chunk_id") or "")
        ref = Reference(type=data.get("type") or "chunk", citation=data["citation"], id=data.get("id"),
                        source=data.get("source"), chunk_id=data.get("chunk_id"),
                        resource_id=data.get("resource_id"), resource_title=data.get("resource_title"),
                        chunk_index=data.get("chunk_index"), text=data.get("text"),
                        text_type=passage.chunk.text_type if passage is not None else None,
                        metadata=data.get("metadata"))
        out = citation_data(ref, self._sources.resource(ref.resource_id), self._sources.mention(ref),
                            self.message_id)
        if data.get("update"):
            out["update"] = True
        return out

    def _support(self, data: dict[str, Any]) -> dict[str, Any]:
        start, end = data.get("start"), data.get("end")
        if self.offsets != "codepoint" and isinstance(start, int) and isinstance(end, int):
            omap = OffsetMap(self.text)
            start, end = omap.to_unit(start, self.offsets), omap.to_unit(end, self.offsets)
        return {"part_index": data.get("part_index"), "start": start, "end": end, "offset_unit": self.offsets,
                "citation": data.get("citation"), "chunk_id": data.get("chunk_id"), "support": data.get("support")}


def stream_job(engine: Engine, pending: PendingTurn) -> Message | None:
    """The job of a streamed turn queued by another process (its ``conversation`` event is
    recorded): stream the rest, recording every event (see :class:`TurnRecorder`)."""
    offsets = pending.turn.offsets
    return TurnRecorder(engine, pending, offsets).run(engine, pending)


__all__ = ["EXCERPT_CHARS", "OFFSET_KEYS", "CitationSources", "StreamChannel", "TurnRecorder",
           "citation_data", "excerpt", "live_channel", "search_result", "stream_job"]
