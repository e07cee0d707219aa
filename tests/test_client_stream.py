"""The client's answer streams: the SSE parser, and resume on reconnect against a fake server.

The fake server is a tiny Starlette app served by uvicorn on a free port in a thread. It
streams one scripted answer (``id: msg-1:<seq>``) and follows a plan per connection: send
everything, abort the connection after N events (uvicorn drops it mid chunked body), end
cleanly before ``done``, replay events already sent, or answer 503. It records every
request (method, query, ``Last-Event-ID``), so the tests check what the client sent on each
reconnect and that the caller sees every event exactly once.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from citewell.client import (
    AsyncClient,
    BadRequestError,
    Client,
    NotFoundError,
    SSEDecoder,
    StreamInterruptedError,
)
from citewell.client._sse import ServerSentEvent
from citewell.client._stream import StreamState
from citewell.client.types import (
    AnswerEvent,
    CitationEvent,
    ConversationEvent,
    DoneEvent,
    ErrorEvent,
    ResetEvent,
    SearchResultsEvent,
    StreamEvent,
)

# -- the parser ----------------------------------------------------------------------------------


def parse(*chunks: bytes) -> tuple[list[ServerSentEvent], SSEDecoder]:
    decoder = SSEDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)]
    events += decoder.close()
    return events, decoder


def test_parser_fields_comments_and_multiline_data() -> None:
    body = (b": a comment, then a keep-alive\n"
            b":\n"
            b"id: m:1\nevent: answer\ndata: {\"delta\":\ndata:  \"two spaces\"}\n\n"
            b"data:no space\n\n"
            b"data\n\n"                      # a field without a colon: data with an empty value
            b"event: ping\n\n"               # no data: not dispatched
            b"id: bad\x00id\ndata: x\n\n"      # an id with NUL is ignored
            b"retry: 1500\ndata: y\n\n"
            b"retry: 15x\nunknown: field\ndata: z\n\n")
    events, decoder = parse(body)
    assert events == [
        ServerSentEvent("answer", '{"delta":\n "two spaces"}', "m:1"),
        ServerSentEvent("message", "no space"),
        ServerSentEvent("message", ""),
        ServerSentEvent("message", "x"),
        ServerSentEvent("message", "y", retry=1500),
        ServerSentEvent("message", "z"),
    ]
    assert decoder.last_event_id == "m:1" and decoder.retry == 1500


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_parser_line_endings(newline: bytes) -> None:
    body = newline.join([b"id: 7", b"event: e", b"data: a", b"data: b", b"", b"data: c", b"", b""])
    events, _ = parse(body)
    assert events == [ServerSentEvent("e", "a\nb", "7"), ServerSentEvent("message", "c")]


def test_parser_bom_split_utf8_and_unterminated_event() -> None:
    body = "\ufeffdata: Grüße 😀\n\nid: 9\ndata: cut off".encode()
    events, decoder = parse(*[body[i:i + 1] for i in range(len(body))])
    assert events == [ServerSentEvent("message", "Grüße 😀")]
    # the last event never got its blank line: it is discarded, and so is its id
    assert decoder.last_event_id is None


def test_parser_cr_at_chunk_end_then_lf() -> None:
    events, _ = parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n")
    assert events == [ServerSentEvent("message", "a\nb")]


def test_parser_last_event_id_persists_and_is_set_at_dispatch() -> None:
    decoder = SSEDecoder("seed:1")
    assert decoder.feed(b"data: a\n\n") == [ServerSentEvent("message", "a")]  # no id of its own
    assert decoder.last_event_id == "seed:1"
    decoder.feed(b"id: m:2\ndata: b\n")
    assert decoder.last_event_id == "seed:1"  # not yet dispatched
    decoder.feed(b"\n")
    assert decoder.last_event_id == "m:2"


SAMPLE = ("retry: 10\r\n: hello\r\n"
          "id: m:1\r\nevent: conversation\r\ndata: {\"conversation_id\": \"c\"}\r\n\r\n"
          "id: m:2\nevent: answer\ndata: {\"delta\": \"Revenue \\u00e9 😀\"}\n\n"
          "id: m:3\revent: answer\rdata: line one\rdata: line two\r\r"
          "data\n\n"
          "id: m:4\nevent: done\ndata: {}\n\n").encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(SAMPLE)), max_size=20))
def test_parser_any_split_gives_the_same_events(cuts: list[int]) -> None:
    whole, _ = parse(SAMPLE)
    assert len(whole) == 5
    points = sorted(set(cuts))
    chunks = [SAMPLE[a:b] for a, b in zip([0, *points], [*points, len(SAMPLE)])]
    split, decoder = parse(*chunks)
    assert split == whole and decoder.last_event_id == "m:4"


# -- the stream state ------------------------------------------------------------------------------


def sse(seq: int, name: str, data: dict[str, Any], mid: str = "msg-1") -> ServerSentEvent:
    return ServerSentEvent(name, json.dumps({"event_name": name, **data}), f"{mid}:{seq}")


def test_state_types_dedupe_and_resume_headers() -> None:
    state = StreamState(max_retries=3, backoff=0.5, backoff_max=8.0)
    with pytest.raises(StreamInterruptedError):
        state.resume()  # nothing to resume from yet
    first = state.accept(sse(1, "conversation", {"conversation_id": "c-1"}))
    assert isinstance(first, ConversationEvent) and first.conversation_id == "c-1"
    assert (first.chat_message_id, first.seq) == ("msg-1", 1)
    results = state.accept(sse(2, "search_results", {"chat_message_id": "msg-1",
                                                      "results": [{"document_name": "a"}]}))
    assert isinstance(results, SearchResultsEvent) and results.results == [{"document_name": "a"}]
    assert state.accept(sse(2, "search_results", {})) is None  # a replayed event is dropped
    assert state.accept(sse(1, "conversation", {})) is None
    answer = state.accept(ServerSentEvent("message", json.dumps({"event_name": "answer", "delta": "Hi"}), "msg-1:3"))
    assert isinstance(answer, AnswerEvent) and answer.event == "answer" and answer.delta == "Hi"
    assert state.resume() == ({"chat_message_id": "msg-1"}, {"Last-Event-ID": "msg-1:3"})
    assert (state.text, state.conversation_id, state.duplicates, state.finished) == ("Hi", "c-1", 2, False)
    reset = state.accept(sse(4, "reset", {"text": "Hello"}))
    assert isinstance(reset, ResetEvent) and state.text == "Hello"
    error = state.accept(sse(5, "error", {"error": {"code": "SERVER_ERROR", "message": "boom"}}))
    assert isinstance(error, ErrorEvent) and (error.code, error.message) == ("SERVER_ERROR", "boom")
    assert state.finished


def test_state_backoff_doubles_to_the_cap_honours_retry_and_is_bounded() -> None:
    state = StreamState(max_retries=6, backoff=0.5, backoff_max=4.0)
    assert [state.delay("x", None) for _ in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert state.delay("x", 250) == 0.25  # the server's retry: (ms)
    with pytest.raises(StreamInterruptedError, match="7 time"):
        state.delay("x", None)
    state = StreamState(max_retries=2, backoff=0.5, backoff_max=4.0)
    state.delay("x", None)
    state.accept(sse(1, "answer", {"delta": "a"}))  # progress resets the budget
    assert state.failures == 0


def test_unknown_event_names_and_odd_data_survive() -> None:
    state = StreamState(max_retries=1, backoff=0.1, backoff_max=1.0)
    new = state.accept(ServerSentEvent("sparkle", json.dumps({"event_name": "sparkle", "x": 1}), "msg-1:1"))
    assert type(new) is StreamEvent and new.event == "sparkle" and new.x == 1 and new.data["x"] == 1
    odd = state.accept(ServerSentEvent("citation", json.dumps({"citation": "not a number"}), "msg-1:2"))
    assert isinstance(odd, CitationEvent) and odd.citation is None and odd.data == {"citation": "not a number"}
    text = state.accept(ServerSentEvent("answer", "plain text", None))
    assert isinstance(text, AnswerEvent) and text.data == {"text": "plain text"}


# -- a fake SSE server -----------------------------------------------------------------------------

SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("conversation", {"conversation_id": "conv-1"}),
    ("search_results", {"chat_message_id": "msg-1", "results": [{"document_name": "acme.txt", "page": None}]}),
    ("citation", {"citation": 1, "citation_idx": "1", "document_name": "acme.txt", "text": "Acme revenue was $12.4M.",
                  "chat_message_id": "msg-1"}),
    ("answer", {"delta": "Acme revenue was "}),
    ("answer", {"delta": "$12.4 million [1]"}),
    ("support", {"part": 0, "supported": True}),
    ("answer", {"delta": ". Grüße 😀"}),
    ("done", {"chat_message_id": "msg-1"}),
]
ANSWER = "Acme revenue was $12.4 million [1]. Grüße 😀"


def wire(seq: int, *, crlf: bool = False, comment: bool = False) -> bytes:
    """Event ``seq`` (1-based) of the script in SSE form (data split over two lines when
    it has several keys, to exercise multi-line data)."""
    name, data = SCRIPT[seq - 1]
    payload = json.dumps({"event_name": name, **data}, ensure_ascii=False)
    head, _, tail = payload.partition(", ")
    lines = [f"id: msg-1:{seq}", f"event: {name}", f"data: {head}{',' if tail else ''}"]
    if tail:
        lines.append(f"data: {tail}")
    if comment:
        lines.insert(0, ": keep-alive")
    nl = "\r\n" if crlf else "\n"
    return (nl.join(lines) + nl + nl).encode("utf-8")


@dataclass
class Plan:
    """What one connection does: ``send`` events (None: all that are left) then ``end``:
    "abort" (drop the connection), "eof" (end cleanly) or "done" (the script ran out);
    ``overlap`` replays that many already-delivered events first; ``status`` answers an
    error instead; ``chunk`` splits the bytes (1: byte by byte); ``crlf``, ``comment``."""

    send: int | None = None
    end: str = "abort"
    overlap: int = 0
    status: int | None = None
    chunk: int | None = None
    crlf: bool = False
    comment: bool = False
    retry_ms: int | None = None


@dataclass
class Fake:
    """The fake server's script of plans (one per connection, then "send all") and its log."""

    plans: list[Plan] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> Starlette:
        async def endpoint(request: Request) -> Response:
            body = await request.json() if request.method == "POST" else None
            last = request.headers.get("last-event-id")
            self.requests.append({"method": request.method, "query": dict(request.query_params), "body": body,
                                  "last_event_id": last, "accept": request.headers.get("accept"),
                                  "key": request.headers.get("x-api-key")})
            plan = self.plans.pop(0) if self.plans else Plan(end="done")
            if request.headers.get("x-api-key") != "k":
                return JSONResponse({"error": {"code": "INVALID_API_KEY", "msg": "bad key", "message": "bad key"},
                                     "payload": None}, status_code=401, headers={"X-Request-ID": "rid-401"})
            if request.method == "POST" and not (body or {}).get("query"):
                return JSONResponse({"error": {"code": "INVALID_REQUEST_BODY", "msg": "query is required",
                                               "message": "query is required"}, "payload": None},
                                    status_code=400, headers={"X-Request-ID": "rid-400"})
            if request.method == "GET" and request.query_params.get("chat_message_id") != "msg-1":
                return JSONResponse({"error": {"code": "NOT_FOUND", "msg": "no such message",
                                               "message": "no such message"}, "payload": None}, status_code=404)
            if plan.status is not None:
                return JSONResponse({"error": {"code": "SERVER_ERROR", "msg": "busy", "message": "busy"},
                                     "payload": None}, status_code=plan.status)
            start = int(last.rpartition(":")[2]) + 1 if last else 1
            start = max(1, start - plan.overlap)
            stop = len(SCRIPT) if plan.send is None else min(len(SCRIPT), start - 1 + plan.overlap + plan.send)

            async def events() -> Any:
                if plan.retry_ms is not None:
                    yield f"retry: {plan.retry_ms}\n\n".encode()
                for seq in range(start, stop + 1):
                    data = wire(seq, crlf=plan.crlf, comment=plan.comment)
                    step = plan.chunk or len(data)
                    for i in range(0, len(data), step):
                        yield data[i:i + step]
                        if plan.chunk:
                            await asyncio.sleep(0)
                if plan.end == "abort" and stop < len(SCRIPT):
                    raise ConnectionAbortedError("the fake server drops the connection")

            return StreamingResponse(events(), media_type="text/event-stream")

        return Starlette(routes=[Route("/v2/analytics/sse", endpoint, methods=["GET", "POST"])])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def fake() -> Iterator[tuple[Fake, str]]:
    """The fake server on a free port (uvicorn in a thread): ``(fake, base_url)``."""
    state = Fake()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(state.app(), host="127.0.0.1", port=port, log_level="critical",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(400):
            if server.started:
                break
            time.sleep(0.01)
        assert server.started, "the fake SSE server did not start"
        yield state, f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def client(base: str, **kw: Any) -> Client:
    return Client(base, "k", stream_backoff=0.01, stream_backoff_max=0.05, **kw)


def check_every_event_once(events: list[StreamEvent]) -> None:
    assert [e.id for e in events] == [f"msg-1:{i}" for i in range(1, len(SCRIPT) + 1)]
    assert [e.event for e in events] == [name for name, _ in SCRIPT]
    assert "".join(e.delta for e in events if isinstance(e, AnswerEvent)) == ANSWER
    kinds = [ConversationEvent, SearchResultsEvent, CitationEvent, AnswerEvent, AnswerEvent, StreamEvent,
             AnswerEvent, DoneEvent]
    assert all(isinstance(e, k) for e, k in zip(events, kinds, strict=True))


def test_a_whole_stream(fake: tuple[Fake, str]) -> None:
    server, base = fake
    with client(base) as cw, cw.stream("What was Acme revenue?", filters={"source": "x"}, offsets="utf16") as events:
        got = list(events)
        assert (events.conversation_id, events.chat_message_id, events.text) == ("conv-1", "msg-1", ANSWER)
        assert events.finished and events.reconnects == 0 and events.last_event_id == "msg-1:8"
    check_every_event_once(got)
    assert got[2].citation == 1 and got[2].text == "Acme revenue was $12.4M." and got[2].document_name == "acme.txt"
    [request] = server.requests
    assert request["method"] == "POST" and request["accept"] == "text/event-stream" and request["key"] == "k"
    assert request["body"] == {"query": "What was Acme revenue?", "filters": {"source": "x"}, "offsets": "utf16"}


def test_dropped_connections_resume_with_last_event_id(fake: tuple[Fake, str]) -> None:
    server, base = fake
    server.plans = [Plan(send=3), Plan(send=2), Plan(send=None, end="done")]
    with client(base) as cw:
        stream = cw.stream("q")
        got = list(stream)
    check_every_event_once(got)
    assert stream.reconnects == 2
    assert [(r["method"], r["query"].get("chat_message_id"), r["last_event_id"]) for r in server.requests] == [
        ("POST", None, None), ("GET", "msg-1", "msg-1:3"), ("GET", "msg-1", "msg-1:5")]


def test_a_clean_end_before_done_is_a_drop_too(fake: tuple[Fake, str]) -> None:
    server, base = fake
    server.plans = [Plan(send=4, end="eof"), Plan(send=0, end="eof"), Plan(end="done")]
    with client(base) as cw:
        got = list(cw.stream("q"))
    check_every_event_once(got)
    assert [r["last_event_id"] for r in server.requests] == [None, "msg-1:4", "msg-1:4"]


def test_replayed_events_are_delivered_once(fake: tuple[Fake, str]) -> None:
    server, base = fake
    server.plans = [Plan(send=5), Plan(overlap=3, end="done")]  # the resume repeats events 3, 4 and 5
    with client(base) as cw:
        stream = cw.stream("q")
        got = list(stream)
    check_every_event_once(got)
    assert stream._state.duplicates == 3


def test_byte_by_byte_crlf_and_comments(fake: tuple[Fake, str]) -> None:
    server, base = fake
    server.plans = [Plan(send=4, chunk=1, crlf=True, comment=True, retry_ms=1),
                    Plan(chunk=3, crlf=True, end="done")]
    with client(base) as cw:
        got = list(cw.stream("q"))
    check_every_event_once(got)


def test_the_retries_are_bounded(fake: tuple[Fake, str]) -> None:
    server, base = fake
    server.plans = [Plan(send=2)] + [Plan(send=0)] * 10  # every reconnect drops without a new event
    with client(base, max_stream_retries=3) as cw:
        got: list[StreamEvent] = []
        with pytest.raises(StreamInterruptedError) as caught:
            for event in cw.stream("q"):
                got.append(event)  # noqa: PERF402 - the events read before the error
    assert [e.id for e in got] == ["msg-1:1", "msg-1:2"]
    assert (caught.value.chat_message_id, caught.value.last_event_id) == ("msg-1", "msg-1:2")
    assert [r["method"] for r in server.requests] == ["POST", "GET", "GET", "GET"]
    # the caller may resume later from where it stopped
    server.plans = []
    with client(base) as cw:
        rest = list(cw.resume_stream("msg-1", caught.value.last_event_id))
    check_every_event_once(got + rest)
    assert server.requests[-1]["last_event_id"] == "msg-1:2"


def test_a_drop_before_the_first_id_is_not_resumed_nor_asked_again(fake: tuple[Fake, str]) -> None:
    server, base = fake
    server.plans = [Plan(send=0)]
    with client(base) as cw, pytest.raises(StreamInterruptedError, match="before its first event id"):
        list(cw.stream("q"))
    assert [r["method"] for r in server.requests] == ["POST"]


def test_a_503_on_resume_is_retried_but_errors_of_the_request_are_raised(fake: tuple[Fake, str]) -> None:
    server, base = fake
    server.plans = [Plan(send=3), Plan(status=503), Plan(end="done")]
    with client(base) as cw:
        check_every_event_once(list(cw.stream("q")))
        with pytest.raises(BadRequestError) as bad:
            list(cw.stream(""))
        assert (bad.value.code, bad.value.status_code, bad.value.request_id) == (
            "INVALID_REQUEST_BODY", 400, "rid-400")
        assert bad.value.message == "query is required"
        with pytest.raises(NotFoundError):
            list(cw.resume_stream("msg-unknown"))
    with Client(base, "wrong") as cw, pytest.raises(Exception) as denied:
        list(cw.stream("q"))
    assert type(denied.value).__name__ == "AuthenticationError" and denied.value.code == "INVALID_API_KEY"


def test_closing_a_stream_early_drops_the_connection(fake: tuple[Fake, str]) -> None:
    server, base = fake
    with client(base) as cw:
        with cw.stream("q") as events:
            first = next(events)
        assert first.event == "conversation"
        with pytest.raises(StopIteration):
            next(events)
    assert len(server.requests) == 1


def test_a_refused_connection_is_retried_then_reported() -> None:
    port = free_port()  # nothing listens there
    with client(f"http://127.0.0.1:{port}", max_stream_retries=2) as cw, \
            pytest.raises(StreamInterruptedError) as caught:
        list(cw.stream("q"))
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_async_stream_resumes_the_same_way(fake: tuple[Fake, str]) -> None:
    server, base = fake
    server.plans = [Plan(send=2), Plan(send=3, chunk=1, overlap=1), Plan(end="done")]

    async def run() -> tuple[list[StreamEvent], int]:
        async with AsyncClient(base, "k", stream_backoff=0.01) as cw, cw.stream("q") as events:
            got = [event async for event in events]
            return got, events.reconnects

    got, reconnects = asyncio.run(run())
    check_every_event_once(got)
    assert reconnects == 2
    assert [r["last_event_id"] for r in server.requests] == [None, "msg-1:2", "msg-1:5"]


def test_mock_transport_errors_mid_body() -> None:
    """httpx.MockTransport: a body that breaks with a read error after two events."""
    calls: list[httpx.Request] = []

    def broken(after: int) -> Iterator[bytes]:
        for seq in range(1, after + 1):
            yield wire(seq)
        raise httpx.ReadError("connection reset")

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if request.method == "POST":
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=broken(2))
        start = int(request.headers["last-event-id"].rpartition(":")[2]) + 1
        return httpx.Response(200, content=b"".join(wire(s) for s in range(start, len(SCRIPT) + 1)))

    with Client("http://fake", "k", transport=httpx.MockTransport(handler), stream_backoff=0.0) as cw:
        check_every_event_once(list(cw.stream("q")))
    assert [c.headers.get("last-event-id") for c in calls] == [None, "msg-1:2"]
    assert calls[1].url.params["chat_message_id"] == "msg-1"
