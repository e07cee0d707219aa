"""A small OpenAI-compatible server for tests, on 127.0.0.1, speaking the real wire format.

``POST /v1/chat/completions`` with ``stream: true`` answers ``text/event-stream`` with
HTTP/1.1 chunked framing: one ``data: {chat.completion.chunk}`` event per scripted piece,
a last chunk with ``finish_reason``, a usage chunk (``choices: []``, ``usage``) when the
request asked for it with ``stream_options.include_usage``, then ``data: [DONE]``.
Without ``stream`` it answers one ``chat.completion`` (the judge). ``POST
/v1/embeddings`` answers deterministic vectors. Every request body is recorded.

Each request takes the next scripted :class:`Reply` (FIFO); with none left it answers
500 ``no scripted reply`` so a test that asks more than it scripted fails loudly.
Replies: :class:`Stream` (pieces, delays, ``: ping`` comments, a dropped connection or
malformed JSON after some pieces, no ``finish_reason`` or ``[DONE]``), :class:`Status`
(an HTTP error, optionally with ``Retry-After``), :class:`Completion` (one non-streamed
answer).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Stream:
    """A streamed answer: ``pieces`` (delta contents), sent ``repeat`` times over;
    ``delay`` seconds before each; ``first_delay`` before the response headers;
    ``pings``: seconds of SSE comment lines (``: ping``, one every ``ping_every`` s) sent
    before piece ``ping_at`` (a keep-alive that carries no chunk); ``drop_after``: close
    the connection abruptly after that many pieces; ``malformed_after``: send a broken JSON
    event after that many pieces; ``finish``: the last chunk's ``finish_reason`` (None: no
    such chunk, and no usage chunk); ``done``: end with ``data: [DONE]`` (False: the body
    just ends, cleanly framed); ``usage``: (prompt, completion) tokens for the usage chunk."""

    pieces: list[str]
    delay: float = 0.0
    first_delay: float = 0.0
    drop_after: int | None = None
    malformed_after: int | None = None
    usage: tuple[int, int] = (120, 30)
    model: str = "fake-model"
    repeat: int = 1
    pings: float = 0.0
    ping_every: float = 0.2
    ping_at: int = 0
    finish: str | None = "stop"
    done: bool = True


@dataclass
class Status:
    """An HTTP error answer (JSON error body), with ``Retry-After`` when given."""

    code: int
    message: str = "error"
    retry_after: float | None = None


@dataclass
class Completion:
    """A non-streamed chat completion whose message content is ``content``."""

    content: str


Reply = Stream | Status | Completion


@dataclass
class FakeLLM:
    """The server's script and record (see the module docstring)."""

    replies: deque = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    closed_early: list[bool] = field(default_factory=list)  # a streamed reply the client hung up on
    base_url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        with self.lock:
            self.replies.extend(replies)

    def next_reply(self) -> Reply | None:
        with self.lock:
            return self.replies.popleft() if self.replies else None

    @property
    def chats(self) -> list[dict[str, Any]]:
        """The chat-completion request bodies received, in order."""
        return [r for r, p in zip(self.requests, self.paths) if p.endswith("/chat/completions")]


def _chunk(content: str | None, *, finish: str | None = None, model: str = "fake-model") -> dict[str, Any]:
    delta: dict[str, Any] = {} if content is None else {"content": content}
    return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def vector(text: str, dim: int = 8) -> list[float]:
    """A deterministic unit vector for ``text`` (the fake embeddings)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [(b - 127.5) for b in digest[:dim]]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeLLM

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _write_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        fake = self.fake
        with fake.lock:
            fake.requests.append(body)
            fake.paths.append(self.path)
        if self.path.endswith("/embeddings"):
            inputs = body.get("input")
            inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
            self._json(200, {"object": "list", "model": body.get("model"),
                             "data": [{"object": "embedding", "index": i, "embedding": vector(t)}
                                      for i, t in enumerate(inputs)],
                             "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})
            return
        reply = fake.next_reply()
        if reply is None:
            self._json(500, {"error": {"message": "no scripted reply", "type": "server_error"}})
            return
        if isinstance(reply, Status):
            headers = {"Retry-After": f"{reply.retry_after:g}"} if reply.retry_after is not None else None
            self._json(reply.code, {"error": {"message": reply.message, "type": "error", "code": reply.code}},
                       headers)
            return
        if isinstance(reply, Completion):
            self._json(200, {"id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                             "model": body.get("model"),
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": reply.content}}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}})
            return
        self._stream(reply, body)

    def _stream(self, reply: Stream, body: dict[str, Any]) -> None:
        time.sleep(reply.first_delay)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self._write_chunk("data: " + json.dumps({**_chunk(None, model=reply.model),
                                                    "choices": [{"index": 0, "delta": {"role": "assistant"},
                                                                 "finish_reason": None}]}) + "\n\n")
            for i, piece in enumerate(reply.pieces * reply.repeat):
                if reply.pings and i == reply.ping_at:
                    until = time.monotonic() + reply.pings
                    while time.monotonic() < until:
                        self._write_chunk(": ping\n\n")
                        time.sleep(reply.ping_every)
                if reply.drop_after is not None and i == reply.drop_after:
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)  # abrupt: no terminating chunk
                    return
                if reply.malformed_after is not None and i == reply.malformed_after:
                    self._write_chunk('data: {"id": "chatcmpl-test", "choices": [{"delta": {"content": "x"\n\n')
                time.sleep(reply.delay)
                self._write_chunk("data: " + json.dumps(_chunk(piece, model=reply.model)) + "\n\n")
            if reply.finish is not None:
                self._write_chunk("data: " + json.dumps(_chunk(None, finish=reply.finish, model=reply.model))
                                  + "\n\n")
            if reply.finish is not None and (body.get("stream_options") or {}).get("include_usage"):
                p, c = reply.usage
                self._write_chunk("data: " + json.dumps({"id": "chatcmpl-test", "object": "chat.completion.chunk",
                                                         "created": 0, "model": reply.model, "choices": [],
                                                         "usage": {"prompt_tokens": p, "completion_tokens": c,
                                                                   "total_tokens": p + c}}) + "\n\n")
            if reply.done:
                self._write_chunk("data: [DONE]\n\n")
            else:
                self.close_connection = True
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            with self.fake.lock:
                self.fake.closed_early.append(True)
            self.close_connection = True


class LLMServer:
    """Runs a :class:`FakeLLM` on 127.0.0.1 (a free port) in a thread; use as a context
    manager: ``with LLMServer() as fake: fake.base_url``."""

    def __init__(self) -> None:
        self.fake = FakeLLM()
        handler = type("Handler", (_Handler,), {"fake": self.fake})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.fake.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self.fake

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)
