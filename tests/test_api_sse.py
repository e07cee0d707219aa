"""Streaming answers (issue 6, seeds 003/004): ``POST``/``GET /v2/analytics/sse`` through a
real uvicorn process, read with httpx streaming.

The server is started by a small launcher script (written by the fixture) that serves
``create_app(store, generator=Gated())``: the extractive generator's answer, written word
by word with short sleeps, that can be *held* before its last piece (the file ``hold`` in
the gate folder, until ``release`` appears) or made to *fail* there (``fail``). A held turn
makes "the connection dropped mid-answer" deterministic: the client has an ``answer``
event, the turn is provably still pending, and the rest comes only after the test
releases it. The heartbeat is shortened to 0.2 s so a live wait shows ``: ping`` lines.
Keys come from :meth:`Engine.create_key` on the store file the server uses. A second
process on the same store, serving only (``workers=False``), is the other replica of the
cross-replica tests: its turns are answered by the first one's workers, and it follows
them, and the resumes that land on it, from the store.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from citewell import Engine

from .servers import free_port, running

FILES = {
    "acme-2022.txt": "Acme revenue was $12.4 million in 2022. Acme gross margin was 41 percent in 2022.\n",
    "globex.txt": "Globex revenue was $55.0 million in 2022. Globex gross margin was 18 percent in 2022.\n",
    "acme-call.vtt": ("WEBVTT\n\n00:00:01.000 --> 00:00:04.500\n"
                      "<v Ana>Acme revenue grew in 2022 because wind turbine orders doubled.\n\n"
                      "00:00:05.000 --> 00:00:09.000\n<v Ben>Turbine demand should stay strong next year.\n"),
}
QUESTION = "What was Acme revenue in 2022 and why did it grow?"

LAUNCHER = textwrap.dedent('''
    import re, sys, time
    from pathlib import Path

    import uvicorn

    from citewell.generate import ExtractiveGenerator
    from citewell.web import create_app
    from citewell.logcontext import LOG_CONFIG
    from citewell.web.routes import analytics

    store, port, gate = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    analytics.HEARTBEAT_SECONDS = 0.2


    class Gated:
        """The extractive answer word by word; held or failing before its last piece."""

        def __init__(self):
            self.inner = ExtractiveGenerator()

        def write(self, request):
            raw = self.inner.generate(request.query, request.passages)
            pieces = re.findall(r"\\S+\\s*", raw) or [raw]
            for i, piece in enumerate(pieces):
                if i == len(pieces) - 1:
                    if (gate / "fail").exists():
                        raise RuntimeError("model endpoint down")
                    if (gate / "hold").exists():
                        deadline = time.monotonic() + 30
                        while not (gate / "release").exists() and time.monotonic() < deadline:
                            time.sleep(0.01)
                time.sleep(0.005)
                yield piece


    workers = sys.argv[4:] != ["serve-only"]  # serve-only: another process's workers answer its turns
    uvicorn.run(create_app(store, generator=Gated(), workers=workers), host="127.0.0.1", port=port,
                log_config=LOG_CONFIG, access_log=False)
''')


_SIGNED = re.compile(r"(expires=)\d+(&signature=)[A-Za-z0-9_-]+")


@dataclass
class Sse:
    """One parsed server-sent event."""

    id: str
    event: str
    data: dict[str, Any]
    raw: str

    @property
    def seq(self) -> int:
        return int(self.id.rpartition(":")[2])

    @property
    def stable(self) -> str:
        """``raw`` with the expiry and signature of its signed links blanked: a citation's
        links are signed as the event is sent, to expire at the next hour but one
        (``viewer_expiry``), so two reads of one event differ there across an hour."""
        return _SIGNED.sub(r"\1-\2-", self.raw)


@dataclass
class Read:
    """What a stream delivered: its events and how many ``: ping`` comments came."""

    events: list[Sse] = field(default_factory=list)
    pings: int = 0


def sse_blocks(lines: Iterator[str], read: Read) -> Iterator[Sse]:
    """Parse SSE lines into events (comments counted as pings)."""
    fields: dict[str, str] = {}
    raw: list[str] = []
    for line in lines:
        if line == "":
            if fields:
                event = Sse(fields["id"], fields["event"], json.loads(fields["data"]), "\n".join(raw))
                read.events.append(event)
                yield event
            fields, raw = {}, []
            continue
        if line.startswith(":"):
            read.pings += 1
            continue
        name, _, value = line.partition(": ")
        assert name in ("id", "event", "data") and name not in fields, line
        fields[name] = value
        raw.append(line)


class Server:
    """The running server: base URL, the store, the gate folder and keys of two workspaces."""

    def __init__(self, base: str, store: Path, gate: Path, key: str, other_key: str, log: Path) -> None:
        self.base, self.store, self.gate, self.key, self.other_key, self.log = base, store, gate, key, other_key, log

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"X-API-KEY": key if key is not None else self.key}
        return httpx.Client(base_url=self.base, timeout=30.0, headers=headers)

    def read_all(self, method: str, path: str, *, key: str | None = None, **kwargs: Any) -> tuple[httpx.Response, Read]:
        read = Read()
        with self.client(key) as client, client.stream(method, path, **kwargs) as response:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                for _ in sse_blocks(response.iter_lines(), read):
                    pass
            else:
                response.read()
        return response, read

    def gate_files(self, *names: str) -> None:
        for name in ("hold", "release", "fail"):
            (self.gate / name).unlink(missing_ok=True)
        for name in names:
            (self.gate / name).touch()

    def message(self, conversation_id: str, message_id: str) -> dict[str, Any]:
        with self.client() as client:
            r = client.get(f"/v1/chats/{conversation_id}/messages/{message_id}")
        assert r.status_code == 200, r.text
        return r.json()

    def settled(self, conversation_id: str, message_id: str) -> dict[str, Any]:
        for _ in range(1500):
            message = self.message(conversation_id, message_id)
            if message["status"] != "pending":
                return message
            time.sleep(0.02)
        raise AssertionError("the turn stayed pending")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, module_store_location: str | Path) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("sse")
    docs, gate = root / "docs", root / "gate"
    docs.mkdir()
    gate.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text, encoding="utf-8")
    store = module_store_location
    with Engine(store, workspace="acme") as engine:
        key, _ = engine.create_key()
        report = engine.ingest([docs])
        assert not report.failed
    with Engine(store, workspace="other") as engine:
        other_key, _ = engine.create_key()
    launcher = root / "serve_gated.py"
    launcher.write_text(LAUNCHER, encoding="utf-8")
    port = free_port()
    log_path = root / "server.log"
    env = {**os.environ, "CITEWELL_CONFIG": "", "XDG_CONFIG_HOME": str(root / "config"),
           "XDG_DATA_HOME": str(root / "data"), "PYTHONUNBUFFERED": "1"}
    with running([sys.executable, str(launcher), str(store), str(port), str(gate)], port, log_path, env) as base:
        yield Server(base, store, gate, key, other_key, log_path)
    assert "Traceback" not in log_path.read_text(), log_path.read_text()


@pytest.fixture(scope="module")
def replica(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Another server process on the same store that serves only (no workers)."""
    root = tmp_path_factory.mktemp("replica")
    port = free_port()
    log_path = root / "replica.log"
    env = {**os.environ, "CITEWELL_CONFIG": "", "XDG_CONFIG_HOME": str(root / "config"),
           "XDG_DATA_HOME": str(root / "data"), "PYTHONUNBUFFERED": "1"}
    launcher = server.gate.parent / "serve_gated.py"  # beside the gate folder (the store may be a URL)
    with running([sys.executable, str(launcher), str(server.store), str(port), str(server.gate), "serve-only"],
                 port, log_path, env) as base:
        yield Server(base, server.store, server.gate, server.key, server.other_key, log_path)
    assert "Traceback" not in log_path.read_text(), log_path.read_text()


def check_grammar(events: list[Sse], first_seq: int = 1) -> None:
    """ids ``<message>:<seq>`` contiguous from ``first_seq``, one message, event_name = event."""
    assert [e.seq for e in events] == list(range(first_seq, first_seq + len(events)))
    assert len({e.id.rpartition(":")[0] for e in events}) == 1
    assert all(e.data["event_name"] == e.event for e in events)


def answer_text(events: list[Sse]) -> str:
    return "".join(e.data["delta"] for e in events if e.event == "answer")


# -- the whole stream ------------------------------------------------------------------------

def test_a_stream_in_order_with_its_content(server: Server) -> None:
    server.gate_files()
    response, read = server.read_all("POST", "/v2/analytics/sse", json={"query": QUESTION})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache" and response.headers["x-request-id"]
    events = read.events
    check_grammar(events)
    names = [e.event for e in events]
    assert names[:2] == ["conversation", "search_results"] and names[-1] == "done"
    assert set(names[2:-1]) <= {"citation", "answer", "support"} and {"citation", "answer", "support"} <= set(names)
    message_id = events[0].id.rpartition(":")[0]
    conversation_id = events[0].data["conversation_id"]
    assert events[0].data == {"event_name": "conversation", "conversation_id": conversation_id,
                              "chat_message_id": message_id}

    results = events[1].data["results"]
    assert events[1].data["chat_message_id"] == message_id and results
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    by_name = {r["document_name"]: r for r in results}
    assert "acme-2022" in by_name and by_name["acme-2022"]["page"] is None
    assert by_name["acme-2022"]["text_type"] == "paragraph" and by_name["acme-2022"]["document_id"]
    for r in results:
        assert len(r["text"]) <= 300 and r["chunk_id"]
    call = by_name["acme-call"]
    assert (call["text_type"], call["start_time"], call["end_time"], call["page"]) == ("paragraph", 1.0, 9.0, None)
    assert call["chunk_text_type"] == "transcript"  # citewell's own type beside seed 004's enum
    assert {r["text_type"] for r in results} <= {"paragraph", "table", "image", "news"}

    # every [N] is announced by its citation before the answer delta that first shows it
    announced: dict[int, dict[str, Any]] = {}
    text = ""
    for e in events:
        if e.event == "citation":
            assert e.data["citation"] not in announced
            announced[e.data["citation"]] = e.data
        elif e.event == "answer":
            text += e.data["delta"]
            assert {int(n) for n in re.findall(r"\[(\d+)\]", text)} <= set(announced), text
        elif e.event == "support":
            assert e.data["support"]["verdict"] in ("supported", "unsupported", "uncertain", "unchecked")
            assert 0 <= e.data["start"] < e.data["end"] <= len(text) and e.data["offset_unit"] == "codepoint"
    assert len(announced) >= 2 and sorted(announced) == list(range(1, len(announced) + 1))
    first = announced[1]
    assert (first["citation_idx"], first["id"], first["search_type"]) == ("1", "1", "rms")
    assert first["document_name"] in by_name and first["chunk_id"] in {r["chunk_id"] for r in results}
    assert "fiscal_year" in first["metadata"] and "start_index" not in first
    assert events[-1].data == {"event_name": "done", "chat_message_id": message_id,
                               "conversation_id": conversation_id, "status": "settled", "grounded": True,
                               "warnings": [], "generation": {"generator": "Gated"}, "grounded_coverage": 1.0}

    # the deltas are the stored text: the chat history's, and the one /v1/references points into
    with server.client() as client:
        history = client.get(f"/v1/chats/{conversation_id}/messages").json()["messages"]
        assert [(m["role"], m["status"]) for m in history] == [("user", "settled"), ("assistant", "settled")]
        assert history[0]["text"] == QUESTION
        assert history[1]["id"] == message_id and history[1]["text"] == text
        refs = client.get("/v1/references", params={"chat_message_id": message_id}).json()["references"]
        conv = client.get(f"/v2/analytics/conversations/{conversation_id}/references").json()["payload"]
    assert [r["citation_idx"] for r in refs] == [str(n) for n in sorted(announced)]
    for ref in refs:
        assert text[ref["start_index"]:ref["end_index"]] == f"[{ref['citation_idx']}]"
        for occ in ref["occurrences"]:
            assert text[occ["start_index"]:occ["end_index"]] == f"[{ref['citation_idx']}]"
        streamed = announced[int(ref["citation_idx"])]
        # the citation event is the reference as /v1/references renders it (without the offsets)
        seed_keys = {"id", "citation_idx", "search_type", "chunk_id", "text", "text_type", "document_id",
                     "document_name", "s3_file_key", "metadata", "custom_metadata", "citation", "chunk_text_type"}
        assert seed_keys <= set(streamed)
        assert {k: ref[k] for k in seed_keys} == {k: streamed[k] for k in seed_keys}
        # the signed links name the same targets (signed again as each answer is sent)
        for link in ("external_url", "viewer_url"):
            assert _SIGNED.sub("", streamed[link]) == _SIGNED.sub("", ref[link])
        assert streamed["external_url"].startswith(f"{server.base}/v1/presigned_url/{ref['document_id']}?")
    assert [r["chunk_id"] for r in conv["references"]] == [r["chunk_id"] for r in refs]


def test_a_follow_up_in_the_same_conversation(server: Server) -> None:
    server.gate_files()
    _, first = server.read_all("POST", "/v2/analytics/sse", json={"query": QUESTION})
    conversation_id = first.events[0].data["conversation_id"]
    _, second = server.read_all("POST", "/v2/analytics/sse",
                                json={"query": "And Globex revenue?", "conversation_id": conversation_id,
                                      "offsets": "utf16", "policy": "drop"})
    check_grammar(second.events)
    assert second.events[0].data["conversation_id"] == conversation_id
    assert second.events[-1].event == "done"
    assert len([e for e in second.events if e.event == "answer"]) == 1  # policy drop: checked whole
    with server.client() as client:
        history = client.get(f"/v1/chats/{conversation_id}/messages").json()["messages"]
    assert len(history) == 4 and history[3]["text"] == answer_text(second.events)
    assert "Globex" in history[3]["text"]


# -- dropped connections and resume ---------------------------------------------------------

def _drop_after_first_answer(server: Server, **body: Any) -> list[Sse]:
    """POST, read until the first ``answer`` event, then close the connection."""
    read = Read()
    with server.client() as client, client.stream("POST", "/v2/analytics/sse", json=body) as response:
        assert response.status_code == 200
        for event in sse_blocks(response.iter_lines(), read):
            if event.event == "answer":
                break
    assert read.events[-1].event == "answer"
    return read.events


def test_a_dropped_stream_resumes_with_exactly_the_rest(server: Server) -> None:
    server.gate_files("hold")
    try:
        before = _drop_after_first_answer(server, query=QUESTION)
        message_id = before[0].data["chat_message_id"]
        conversation_id = before[0].data["conversation_id"]
        assert server.message(conversation_id, message_id)["status"] == "pending"  # dropped mid-answer
        after = Read()
        # the body of a resume is ignored (here: another question)
        with server.client() as client, client.stream("POST", "/v2/analytics/sse", json={"query": "ignored"},
                                                      headers={"Last-Event-ID": before[-1].id}) as response:
            assert response.status_code == 200
            (server.gate / "release").touch()
            for _ in sse_blocks(response.iter_lines(), after):
                pass
    finally:
        server.gate_files()
    assert after.events[-1].event == "done"
    check_grammar(before + after.events)  # contiguous across the drop: no gap, no duplicate
    assert after.events[0].seq == before[-1].seq + 1
    _, replay = server.read_all("GET", "/v2/analytics/sse", params={"chat_message_id": message_id})
    assert [e.stable for e in replay.events] == [e.stable for e in before + after.events]
    assert server.message(conversation_id, message_id)["text"] == answer_text(before + after.events)


def test_a_resume_waits_live_for_a_running_turn(server: Server) -> None:
    server.gate_files("hold")
    try:
        before = _drop_after_first_answer(server, query=QUESTION)
        message_id = before[0].data["chat_message_id"]
        assert server.message(before[0].data["conversation_id"], message_id)["status"] == "pending"
        after = Read()
        with server.client() as client, client.stream("GET", "/v2/analytics/sse",
                                                      params={"chat_message_id": message_id},
                                                      headers={"Last-Event-ID": before[-1].id}) as response:
            assert response.status_code == 200

            def lines() -> Iterator[str]:
                for line in response.iter_lines():
                    if line.startswith(":"):  # caught up, waiting live: let the turn finish
                        (server.gate / "release").touch()
                    yield line

            for _ in sse_blocks(lines(), after):
                pass
    finally:
        server.gate_files()
    assert after.pings >= 1  # it waited live (heartbeats), then got the rest
    check_grammar(before + after.events)
    assert after.events[-1].event == "done" and after.events[-1].data["status"] == "settled"


def test_a_disconnected_turn_still_completes_and_is_stored(server: Server) -> None:
    server.gate_files("hold")
    try:
        before = _drop_after_first_answer(server, query=QUESTION)
    finally:
        server.gate_files()  # released with nobody listening
    message_id, conversation_id = before[0].data["chat_message_id"], before[0].data["conversation_id"]
    settled = server.settled(conversation_id, message_id)
    assert settled["status"] == "settled" and settled["references"]
    _, replay = server.read_all("GET", "/v2/analytics/sse", params={"chat_message_id": message_id})
    check_grammar(replay.events)
    assert [e.stable for e in replay.events[:len(before)]] == [e.stable for e in before]
    assert replay.events[-1].event == "done" and answer_text(replay.events) == settled["text"]


def test_a_resume_after_the_turn_finished_replays_from_the_store(server: Server) -> None:
    server.gate_files()
    _, full = server.read_all("POST", "/v2/analytics/sse", json={"query": QUESTION})
    message_id = full.events[0].data["chat_message_id"]
    for cut in (0, 2, len(full.events) - 1, len(full.events)):
        last = f"{message_id}:{cut}"
        # a POST resume's body is never read: none, an invalid one ({} has no query) or not JSON
        for method, kwargs in (("POST", {}), ("POST", {"json": {}}), ("POST", {"content": b"not json"}),
                               ("GET", {"params": {"chat_message_id": message_id}})):
            response, rest = server.read_all(method, "/v2/analytics/sse", headers={"Last-Event-ID": last}, **kwargs)
            assert response.status_code == 200
            assert [e.stable for e in rest.events] == [e.stable for e in full.events[cut:]], (method, cut)


def test_a_blank_last_event_id_on_a_post_is_no_resume(server: Server) -> None:
    # blank as the routes read it (str.strip of the latin-1 value): no-break spaces
    server.gate_files()
    for blank in (b"\xa0", b"\xa0\xa0"):
        response, read = server.read_all("POST", "/v2/analytics/sse", json={"query": QUESTION},
                                         headers=[(b"Last-Event-ID", blank)])
        assert response.status_code == 200, blank
        assert read.events[0].event == "conversation" and read.events[-1].event == "done"


def test_a_turn_that_fails_midway_ends_with_error_and_is_stored_failed(server: Server) -> None:
    server.gate_files("fail")
    try:
        _, read = server.read_all("POST", "/v2/analytics/sse", json={"query": QUESTION})
    finally:
        server.gate_files()
    check_grammar(read.events)
    assert read.events[-1].event == "error" and "done" not in [e.event for e in read.events]
    error = read.events[-1].data
    assert (error["code"], error["message"]) == ("SERVER_ERROR", "the answer could not be produced (RuntimeError)")
    message = server.message(error["conversation_id"], error["chat_message_id"])
    assert message["status"] == "failed" and message["error"] == {"code": "SERVER_ERROR",
                                                                 "message": error["message"]}
    _, replay = server.read_all("GET", "/v2/analytics/sse", params={"chat_message_id": error["chat_message_id"]})
    assert [e.stable for e in replay.events] == [e.stable for e in read.events]


def test_an_answer_that_was_never_streamed_replays_from_its_message(server: Server) -> None:
    server.gate_files()
    with server.client() as client:
        accepted = client.post("/v1/ask", json={"question": QUESTION}).json()
    message = server.settled(accepted["chat_id"], accepted["message_id"])
    _, replay = server.read_all("GET", "/v2/analytics/sse", params={"chat_message_id": message["id"]})
    check_grammar(replay.events)
    names = [e.event for e in replay.events]
    assert names == ["conversation"] + ["citation"] * (len(names) - 3) + ["answer", "done"]
    assert answer_text(replay.events) == message["text"] and len(names) > 3
    # the replayed citations carry links signed as they are sent, which open without a key
    with httpx.Client(timeout=30.0) as anonymous:
        for event in replay.events[1:-2]:
            assert anonymous.get(event.data["viewer_url"]).status_code == 200
            opened = anonymous.get(event.data["external_url"])
            assert opened.status_code == 200 and opened.content  # the original file
    _, tail = server.read_all("GET", "/v2/analytics/sse", params={"chat_message_id": message["id"]},
                              headers={"Last-Event-ID": replay.events[1].id})
    assert [e.stable for e in tail.events] == [e.stable for e in replay.events[2:]]


# -- errors come before the stream, as JSON in the analytics envelope ------------------------

def _analytics_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["payload"] is None and body["error"]["code"] == code
    assert body["error"]["msg"] == body["error"]["message"]


def test_errors_before_the_stream_are_json_in_the_analytics_envelope(server: Server) -> None:
    with httpx.Client(base_url=server.base, timeout=30.0) as anonymous:
        _analytics_error(anonymous.post("/v2/analytics/sse", json={"query": QUESTION}), 401, "API_KEY_MISSING")
        _analytics_error(anonymous.get("/v2/analytics/sse", params={"chat_message_id": "x"}), 401,
                         "API_KEY_MISSING")
    with server.client("cw_not_a_key") as client:
        _analytics_error(client.post("/v2/analytics/sse", json={"query": QUESTION}), 401, "INVALID_API_KEY")
    with server.client() as client:
        _analytics_error(client.post("/v2/analytics/sse", json={"query": QUESTION, "filters": {"colour": "red"}}),
                         400, "INVALID_FILTER")
        _analytics_error(client.post("/v2/analytics/sse",
                                     json={"query": QUESTION, "conversation_id": "00000000-0000-0000-0000-000000000000"}),
                         404, "NOT_FOUND")
        _analytics_error(client.post("/v2/analytics/sse", json={"query": "   "}), 400, "INVALID_REQUEST_BODY")
        _analytics_error(client.post("/v2/analytics/sse", json={"question": QUESTION}), 400, "INVALID_REQUEST_BODY")
        _analytics_error(client.post("/v2/analytics/sse"), 400, "INVALID_REQUEST_BODY")
        _analytics_error(client.post("/v2/analytics/sse", json={"query": QUESTION, "offsets": "bytes"}), 400,
                         "INVALID_REQUEST_BODY")
        _analytics_error(client.post("/v2/analytics/sse", headers={"Last-Event-ID": "no-seq"}), 400,
                         "INVALID_REQUEST_BODY")
        _analytics_error(client.get("/v2/analytics/sse"), 400, "CHAT_MESSAGE_ID_MISSING")
        _analytics_error(client.get("/v2/analytics/sse", params={"chat_message_id": "nope"}), 404, "NOT_FOUND")
        _analytics_error(client.get("/v2/analytics/sse", params={"chat_message_id": "a"},
                                    headers={"Last-Event-ID": "b:1"}), 400, "INVALID_REQUEST_BODY")


def test_another_workspace_cannot_resume_a_stream(server: Server) -> None:
    server.gate_files()
    _, read = server.read_all("POST", "/v2/analytics/sse", json={"query": QUESTION})
    message_id = read.events[0].data["chat_message_id"]
    conversation_id = read.events[0].data["conversation_id"]
    with server.client(server.other_key) as other:
        _analytics_error(other.post("/v2/analytics/sse", headers={"Last-Event-ID": f"{message_id}:1"}), 404,
                         "NOT_FOUND")
        _analytics_error(other.get("/v2/analytics/sse", params={"chat_message_id": message_id}), 404, "NOT_FOUND")
        _analytics_error(other.get("/v2/analytics/sse", headers={"Last-Event-ID": f"{message_id}:0"}), 404,
                         "NOT_FOUND")
        _analytics_error(other.post("/v2/analytics/sse", json={"query": QUESTION, "conversation_id": conversation_id}),
                         404, "NOT_FOUND")
    with server.client() as client:  # the question of a turn has no stream
        history = client.get(f"/v1/chats/{conversation_id}/messages").json()["messages"]
        _analytics_error(client.get("/v2/analytics/sse", params={"chat_message_id": history[0]["id"]}), 404,
                         "NOT_FOUND")


# -- several replicas on one store ------------------------------------------------------------

def test_a_resume_on_another_replica_follows_the_turn_from_the_store(server: Server, replica: Server) -> None:
    """The stream drops mid-answer on the replica whose worker answers; the reconnect lands
    on a replica with no worker and no channel of that turn: it sends the recorded rest and
    follows new events from the store until the turn settles, with no gap and no duplicate."""
    server.gate_files("hold")
    try:
        before = _drop_after_first_answer(server, query=QUESTION)
        message_id = before[0].data["chat_message_id"]
        conversation_id = before[0].data["conversation_id"]
        assert replica.message(conversation_id, message_id)["status"] == "pending"
        after = Read()
        with replica.client() as client, client.stream("GET", "/v2/analytics/sse",
                                                       params={"chat_message_id": message_id},
                                                       headers={"Last-Event-ID": before[-1].id}) as response:
            assert response.status_code == 200
            released = False
            for event in sse_blocks(response.iter_lines(), after):
                if not released:  # the replica has caught up with what was recorded: let the turn go on
                    (server.gate / "release").touch()
                    released = True
            if not released:
                (server.gate / "release").touch()
    finally:
        server.gate_files()
    check_grammar(before + after.events)
    assert after.events[0].seq == before[-1].seq + 1
    assert after.events[-1].event == "done" and after.events[-1].data["status"] == "settled"
    stored = server.message(conversation_id, message_id)
    assert stored["text"] == answer_text(before + after.events)
    # both replicas replay the same stream from the store
    _, here = server.read_all("GET", "/v2/analytics/sse", params={"chat_message_id": message_id})
    _, there = replica.read_all("GET", "/v2/analytics/sse", params={"chat_message_id": message_id})
    assert [e.event for e in here.events] == [e.event for e in there.events] == [e.event for e in before + after.events]
    assert answer_text(there.events) == stored["text"]


def test_a_replica_without_workers_streams_a_turn_another_process_answers(server: Server, replica: Server) -> None:
    """Asked on the serve-only replica: the turn is a job in the store, the other process's
    worker claims it and streams it (recording its events), and the replica streams them
    to the client live from the store."""
    server.gate_files()
    response, read = replica.read_all("POST", "/v2/analytics/sse", json={"query": QUESTION})
    assert response.status_code == 200
    check_grammar(read.events)
    names = [e.event for e in read.events]
    assert names[:2] == ["conversation", "search_results"] and names[-1] == "done", names
    assert "citation" in names and "answer" in names
    message_id = read.events[0].data["chat_message_id"]
    stored = replica.message(read.events[0].data["conversation_id"], message_id)
    assert stored["status"] == "settled" and stored["text"] == answer_text(read.events)
    assert "$12.4 million" in stored["text"]
    # the worker of the other process answered it (the replica has none): its log says so
    deadline = time.monotonic() + 10
    while f"turn {message_id} settled" not in server.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f"turn {message_id} settled" in server.log.read_text()
    assert f"turn {message_id}" not in replica.log.read_text()
