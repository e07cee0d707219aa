"""``citewell.client`` against a real server: ``citewell serve`` (uvicorn) in a subprocess on a
free port and a temporary store, keys made with :meth:`Engine.create_key`.

Every method is called with real values: a text file, a VTT transcript and a posts JSONL
written by the test are uploaded and waited for; a session question, its references, a
chats turn polled until it settles, mentions by reference and by query (paged), the
entity routes, download and delete; the error mapping of all three envelopes; a platform
key acting for a user; and the async client on the same server. The server is stopped by
its PID in ``finally``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

import httpx
import pytest

from citewell import Engine
from citewell.client import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    CitewellAPIError,
    Client,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    ResourceFailedError,
    TransportError,
    WaitTimeoutError,
)
from citewell.client.types import (
    AskAccepted,
    ChatMessage,
    Dataset,
    Mention,
    MentionNotFound,
    Reference,
    TrackingAgent,
    Resource,
    Session,
    Turn,
)

from .servers import free_port, running

TEXT_NAME = "acme-2022.txt"
TEXT = ("Acme revenue was $12.4 million in 2022. Acme gross margin was 41 percent in 2022.\n\n"
        "Acme opened a new factory in Ohio in 2022.\n")
VTT = """WEBVTT

00:00:01.000 --> 00:00:06.000
<v Alice>Welcome back to the show. Today we talk about perovskite solar cells.

00:00:06.000 --> 00:00:14.000
<v Bob>Perovskite solar cells reached twenty six percent efficiency in the lab this year.

00:00:14.000 --> 00:00:20.000
<v Alice>What keeps perovskite cells from lasting outdoors?
"""
POSTS = [
    {"source": "reddit", "id": "t3_a1", "text": "Activision puts are printing after the Microsoft news.",
     "created_at": "2022-01-18T10:00:00Z", "author": "u/puts_guy", "score": 120, "num_comments": 14,
     "url": "https://www.reddit.com/r/wallstreetbets/comments/a1/"},
    {"source": "reddit", "id": "t3_a2", "text": "Selling my Activision puts, the Microsoft deal ended them.",
     "created_at": "2022-01-19T09:30:00Z", "author": "u/bagholder", "score": 45, "num_comments": 3,
     "url": "https://www.reddit.com/r/wallstreetbets/comments/a2/"},
    {"source": "reddit", "id": "t3_a3", "text": "Tesla calls again, nothing about Activision here.",
     "created_at": "2022-01-20T12:00:00Z", "author": "u/elon_fan", "score": 7, "num_comments": 1,
     "url": "https://www.reddit.com/r/wallstreetbets/comments/a3/"},
    {"source": "stocktwits", "id": "9001", "text": "$ATVI puts are the trade of the week, Activision falls.",
     "created_at": "2022-01-18T15:00:00Z", "author": "trader9", "likes": 3,
     "url": "https://stocktwits.com/trader9/message/9001"},
]

QUESTION = "What happened to Activision puts after the Microsoft news?"


@dataclass
class Served:
    """The running server: its URL, keys, workspace id, and the files the tests wrote."""

    base: str
    key: str
    platform_key: str
    workspace_id: str
    files: Path
    log: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, module_store_location: str | Path) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("client")
    store = module_store_location
    with Engine(store, workspace="acme") as engine:
        key, _ = engine.create_key()
        platform_key, _ = engine.create_key(platform=True)
        workspace_id = engine.workspace_id
    files = root / "files"
    files.mkdir()
    (files / TEXT_NAME).write_text(TEXT, encoding="utf-8")
    (files / "solar-talk.vtt").write_text(VTT, encoding="utf-8")
    (files / "wsb-2022-01.jsonl").write_text("".join(json.dumps(p) + "\n" for p in POSTS), encoding="utf-8")
    env = {**os.environ, "CITEWELL_CONFIG": "", "XDG_CONFIG_HOME": str(root / "config"),
           "XDG_DATA_HOME": str(root / "data"), "PYTHONUNBUFFERED": "1", "CITEWELL_MAX_UPLOAD_MB": "1",
           "CITEWELL_AGENT_TICK_S": "0"}  # agents run when the tests say so
    port = free_port()
    log_path = root / "server.log"
    command = [sys.executable, "-m", "citewell", "serve", "--host", "127.0.0.1", "--port", str(port), "--store",
               str(store)]
    with running(command, port, log_path, env) as base:
        yield Served(base, key, platform_key, workspace_id, files, log_path)
    assert "Traceback" not in log_path.read_text()


@pytest.fixture
def cw(served: Served) -> Iterator[Client]:
    with Client(served.base, served.key, timeout=30.0) as client:
        yield client


@pytest.fixture(scope="module")
def docs(served: Served) -> dict[str, Resource]:
    """The text file (uploaded as bytes) and the transcript (uploaded by path), ready."""
    with Client(served.base, served.key) as client:
        text = client.upload(TEXT.encode(), filename=TEXT_NAME,
                             metadata={"title": "Acme 2022", "fiscal_year": 2022, "tickers": ["ACME"]})
        talk = client.upload(served.files / "solar-talk.vtt", metadata={"title": "Solar talk"})
        assert text.status in ("processing", "ready") and isinstance(text, Resource)
        return {"text": client.wait_ready(text.id, timeout=60), "talk": client.wait_ready(talk.id, timeout=60)}


@pytest.fixture(scope="module")
def posts(served: Served) -> Resource:
    with Client(served.base, served.key) as client:
        return client.wait_ready(client.upload(served.files / "wsb-2022-01.jsonl").id, timeout=60)


# -- sessions, resources, references -------------------------------------------------------------

def test_resources(cw: Client, docs: dict[str, Resource], served: Served) -> None:
    text, talk = docs["text"], docs["talk"]
    assert (text.status, text.title, text.kind, text.file_name) == ("ready", "Acme 2022", "text", TEXT_NAME)
    assert text.metadata["fiscal_year"] == 2022 and text.chunk_count >= 1
    assert (talk.status, talk.title, talk.kind) == ("ready", "Solar talk", "transcript")
    assert cw.get_resource(text.id) == text
    listed = cw.list_resources(limit=1, status=["ready", "processing"])
    assert listed.total >= 2 and len(listed.resources) == 1 and listed.limit == 1 and listed.offset == 0
    assert text.id in {r.id for r in cw.list_resources(limit=100, status="ready").resources}
    assert all(r.status == "failed" for r in cw.list_resources(status="failed").resources)
    assert cw.download(text.id) == TEXT.encode()
    assert cw.download(talk.id) == (served.files / "solar-talk.vtt").read_bytes()
    # uploading the same bytes again gives the same resource
    assert cw.upload(served.files / TEXT_NAME).id == text.id


def test_session_question_and_references(cw: Client, docs: dict[str, Resource]) -> None:
    session = cw.create_session("Acme numbers")
    assert isinstance(session, Session) and session.title == "Acme numbers"
    assert cw.get_session(session.id) == session
    turn = cw.ask_session(session.id, "What was Acme revenue in 2022?", resource_ids=[docs["text"].id],
                          offsets="utf16")
    assert isinstance(turn, Turn) and turn.session.id == session.id
    answer = turn.assistant_message
    assert turn.user_message.content == "What was Acme revenue in 2022?" and answer.role == "assistant"
    assert "12.4 million" in answer.content
    assert [c.resource_id for c in answer.citations] == [docs["text"].id]
    assert answer.response is not None and any(p.source is not None for p in answer.response.parts)
    assert all(p.start_index is not None for p in answer.response.parts)  # an additive field, kept
    history = cw.session_messages(session.id, offsets="utf16")
    assert [m.id for m in history.messages] == [turn.user_message.id, answer.id]
    assert history.messages[1].model_dump() == answer.model_dump()

    refs = cw.references(answer.id, offsets="utf16")
    assert refs and all(isinstance(r, Reference) for r in refs)
    assert refs[0].citation_idx == "1" and refs[0].document_id == docs["text"].id
    assert "12.4 million" in (refs[0].text or "")
    conversation = cw.conversation_references(session.id)
    assert [r.chat_message_id for r in conversation] == [answer.id] * len(refs)
    assert [r.chunk_id for r in conversation] == [r.chunk_id for r in refs]

    second = cw.ask_session(session.id, "How efficient are perovskite solar cells?")
    assert {c.resource_id for c in second.assistant_message.citations} == {docs["talk"].id}
    talk_refs = cw.references(second.assistant_message.id)
    assert talk_refs[0].metadata.blocks is not None  # transcript cues
    assert len(cw.session_messages(session.id).messages) == 4


def test_delete_keeps_stored_references(cw: Client) -> None:
    resource = cw.wait_ready(cw.upload(b"Zebra crossings were repainted in Springfield in 2021.\n",
                                       filename="zebra.txt").id)
    session = cw.create_session()
    answer = cw.ask_session(session.id, "When were zebra crossings repainted in Springfield?",
                            resource_ids=[resource.id]).assistant_message
    assert cw.delete_resource(resource.id).model_dump() == {"resource_id": resource.id, "deleted": True}
    with pytest.raises(NotFoundError):
        cw.get_resource(resource.id)
    with pytest.raises(NotFoundError):
        cw.download(resource.id)
    assert cw.references(answer.id)[0].document_id == resource.id


def test_a_failed_upload_and_a_too_large_one(cw: Client) -> None:
    bad = cw.upload(b"%PDF-1.7 this is not really a pdf", filename="broken.pdf")
    with pytest.raises(ResourceFailedError) as failed:
        cw.wait_ready(bad.id)
    assert failed.value.code == "PDF_CORRUPT" and failed.value.resource.status == "failed"
    with pytest.raises(PayloadTooLargeError) as big:  # the server runs with CITEWELL_MAX_UPLOAD_MB=1
        cw.upload(b"a" * (1024 * 1024 + 10), filename="big.txt")
    assert (big.value.code, big.value.status_code) == ("FILE_TOO_LARGE", 413) and big.value.request_id


# -- chats, mentions, entities ---------------------------------------------------------------------

def test_chats_turn_mentions_and_entities(cw: Client, posts: Resource) -> None:
    dataset = cw.dataset(posts.id)
    assert isinstance(dataset, Dataset) and (dataset.post_count, dataset.status) == (4, "ready")

    accepted = cw.ask(QUESTION, filters={"source": "reddit"}, offsets="utf16")
    assert isinstance(accepted, AskAccepted) and accepted.status == "pending"
    message = cw.wait_message(accepted.chat_id, accepted.message_id, timeout=60)
    assert isinstance(message, ChatMessage) and message.status == "settled" and message.error is None
    assert message.id == accepted.message_id and message.chat_id == accepted.chat_id
    cited = [r for r in message.references if r.type == "post"]
    assert cited and {r.source for r in cited} == {"reddit"}
    for ref in cited:  # offsets in UTF-16 (all ASCII here: the same as code points)
        assert message.text[ref.start_index:ref.end_index] == f"[{ref.citation}]"
    assert cw.get_message(accepted.chat_id, accepted.message_id) == message

    follow = cw.ask("And why?", chat_id=accepted.chat_id)
    assert cw.wait_message(follow.chat_id, follow.message_id, timeout=60).status == "settled"
    page = cw.chat_messages(accepted.chat_id, limit=2)
    assert [m.role for m in page.messages] == ["user", "assistant"] and page.next_after == message.id
    rest = cw.chat_messages(accepted.chat_id, after=page.next_after)
    assert [m.id for m in rest.messages][-1] == follow.message_id and rest.next_after is None
    assert [m.id for m in cw.iter_chat_messages(accepted.chat_id, page_size=1)] == \
        [m.id for m in page.messages + rest.messages]
    chat = cw.get_chat(accepted.chat_id)
    assert chat.id == accepted.chat_id and chat.title
    assert accepted.chat_id in [c.id for c in cw.chats()]
    preview = cw.research_preview(accepted.message_id)
    assert (preview.chat_id, preview.status, preview.question) == (accepted.chat_id, "settled", QUESTION)
    with pytest.raises(NotFoundError) as no_pattern:
        cw.pattern("p-1")
    assert no_pattern.value.code == "NOT_FOUND"

    # the cited posts resolve to full mentions (references as refs), an unknown one in its place
    found = cw.mentions_by_refs([*cited, ("reddit", "t3_nope"), {"source": "stocktwits", "id": 9001}])
    assert found.next_cursor is None
    *known, unknown, by_number = found.mentions
    assert [(m.source, m.id) for m in known] == [(r.source, r.id) for r in cited]
    assert all(isinstance(m, Mention) and m.dataset_id == posts.id for m in known)
    first = next(p for p in POSTS if p["id"] == known[0].id)
    assert known[0].score == first["score"] and known[0].num_comments == first["num_comments"]  # extras kept
    assert isinstance(unknown, MentionNotFound) and unknown.error.code == "NOT_FOUND"
    assert isinstance(by_number, Mention) and by_number.likes == 3


def test_tracking_agents_alerts_and_patterns(cw: Client, posts: Resource) -> None:
    agent = cw.create_agent("Activision puts", keywords=["puts"], interval_s=900)
    assert isinstance(agent, TrackingAgent) and (agent.state, agent.runs, agent.keywords) == ("active", 0, ["puts"])
    run = cw.run_agent(agent.id)
    assert (run.ran, run.matched) == (True, 3) and run.alert is not None
    cited = [r for r in run.alert.references if r.type == "post"]
    assert [r.id for r in cited] == ["t3_a1", "9001", "t3_a2"]  # in arrival (created_at) order; not t3_a3
    for ref in cited:
        assert run.alert.text[ref.start_index:ref.end_index] == f"[{ref.citation}]"
    assert cw.run_agent(agent.id).alert is None  # nothing new
    page = cw.alerts(agent.id)
    assert [m.id for m in page.messages] == [run.alert.id] and page.next_before is None
    assert [a.id for a in cw.tracking_agents()] == [agent.id]
    assert cw.update_agent(agent.id, state="paused").state == "paused"
    with pytest.raises(CitewellAPIError) as paused:
        cw.run_agent(agent.id)
    assert (paused.value.status_code, paused.value.code) == (409, "AGENT_PAUSED")
    listed = cw.patterns()
    assert listed.total == len(listed.patterns) and all(p.size >= 2 for p in listed.patterns)
    for summary in listed.patterns:
        full = cw.pattern(summary.id)
        assert len(full.members) == full.size and full.datasets == [posts.id]
    cw.delete_agent(agent.id)
    with pytest.raises(NotFoundError):
        cw.tracking_agent(agent.id)


def test_mentions_query_and_pages(cw: Client, posts: Resource) -> None:
    everything = cw.mentions(dataset_id=posts.id, limit=200)
    assert [m.id for m in everything.mentions] == ["t3_a1", "9001", "t3_a2", "t3_a3"]  # oldest first
    first = cw.mentions(query="Activision puts", limit=1)
    assert len(first.mentions) == 1 and first.next_cursor
    second = cw.mentions(query="Activision puts", limit=1, cursor=first.next_cursor)
    assert second.mentions[0].id != first.mentions[0].id
    paged = [m.id for m in cw.iter_mentions(query="Activision puts", page_size=1)]
    assert paged[:2] == [first.mentions[0].id, second.mentions[0].id]
    assert len(paged) == len(set(paged)) == 4  # posts with any of the words
    reddit = list(cw.iter_mentions(source="reddit", created_after="2022-01-19", created_before="2022-01-19"))
    assert [m.id for m in reddit] == ["t3_a2"]
    from datetime import date, datetime
    assert [m.id for m in cw.iter_mentions(created_after=datetime(2022, 1, 19, 10, tzinfo=UTC),
                                           created_before=date(2022, 1, 20))] == ["t3_a3"]


# -- errors ----------------------------------------------------------------------------------------

def test_errors_carry_code_message_status_and_request_id(served: Served, cw: Client) -> None:
    with Client(served.base, None) as anonymous, pytest.raises(AuthenticationError) as missing:
        anonymous.list_resources()
    assert (missing.value.code, missing.value.status_code) == ("API_KEY_MISSING", 401)
    assert missing.value.request_id and missing.value.message
    with Client(served.base, "cw_not_a_key", headers={"X-Request-ID": "client-test-1"}) as wrong, \
            pytest.raises(AuthenticationError) as invalid:
        wrong.chats()  # the chats envelope
    assert (invalid.value.code, invalid.value.request_id) == ("INVALID_API_KEY", "client-test-1")
    assert invalid.value.body == {"error": {"code": "INVALID_API_KEY", "message": invalid.value.message}}
    assert "client-test-1" in str(invalid.value)

    with pytest.raises(NotFoundError) as sessions_404:
        cw.get_session("no-such-session")
    assert sessions_404.value.body["status"] == "error" and sessions_404.value.code == "NOT_FOUND"
    with pytest.raises(NotFoundError) as analytics_404:
        cw.references("no-such-message")
    assert analytics_404.value.body["payload"] is None and analytics_404.value.message
    with pytest.raises(NotFoundError):
        cw.get_message("no-such-chat", "no-such-message")
    with pytest.raises(NotFoundError):
        cw.dataset("no-such-dataset")
    with pytest.raises(BadRequestError) as missing_id:
        cw.references("")
    assert missing_id.value.code == "CHAT_MESSAGE_ID_MISSING"
    with pytest.raises(BadRequestError) as bad_filter:
        cw.ask("anything", filters={"no_such_key": "x"})
    assert bad_filter.value.code == "INVALID_FILTER"
    with pytest.raises(BadRequestError) as bad_cursor:
        cw.mentions(cursor="!!!")
    assert bad_cursor.value.code == "INVALID_REQUEST_BODY"
    with Client(served.base, served.key, user_id="u1", user_email="u1@example.com") as plain, \
            pytest.raises(PermissionDeniedError) as forbidden:
        plain.chats()
    assert (forbidden.value.code, forbidden.value.status_code) == ("FORBIDDEN", 403)
    assert isinstance(forbidden.value, CitewellAPIError)

    with Client(f"http://127.0.0.1:{free_port()}", served.key, timeout=2.0) as nowhere, \
            pytest.raises(TransportError) as unreachable:
        nowhere.chats()
    assert isinstance(unreachable.value.__cause__, httpx.ConnectError)


def test_a_platform_key_acts_for_a_user(served: Served) -> None:
    kw = {"organization_id": served.workspace_id}
    with Client(served.base, served.platform_key, user_id="u-7", user_email="u7@example.com", **kw) as u7, \
            Client(served.base, served.platform_key, user_id="u-8", user_email="u8@example.com", **kw) as u8:
        mine = u7.create_session("u7's session")
        assert u7.get_session(mine.id).title == "u7's session"
        assert [c.id for c in u7.chats()] == [mine.id]
        assert mine.id not in [c.id for c in u8.chats()]
        with pytest.raises(NotFoundError):
            u8.get_session(mine.id)


#: A resource still being processed, every field the API documents (the client's models
#: require what the server's do: they are open copies of :mod:`citewell.wire`).
PROCESSING = {"id": "r", "workspace_id": "w", "title": "r", "file_name": "r.txt", "kind": "text",
              "media_type": "text/plain", "sha256": "0" * 64, "size_bytes": 1, "blob_key": None,
              "status": "processing", "error": None, "warnings": [], "metadata": {}, "custom_metadata": None,
              "extractor_version": None, "chunk_count": 0, "created_at": "2024-01-01T00:00:00.000Z",
              "updated_at": "2024-01-01T00:00:00.000Z"}


def test_waits_give_up(served: Served, cw: Client) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if "/v1/chats/" in request.url.path:
            return httpx.Response(200, json={"id": "m", "chat_id": "c", "role": "assistant", "text": "",
                                             "references": [], "status": "pending", "warnings": [],
                                             "created_at": "2024-01-01T00:00:00.000Z"})
        return httpx.Response(200, json={"status": "ok", "data": {"resource": PROCESSING}})

    with Client("http://fake", "k", transport=httpx.MockTransport(handler)) as fake:
        with pytest.raises(WaitTimeoutError) as slow:
            fake.wait_ready("r", timeout=0.2, interval=0.05)
        assert slow.value.last.status == "processing" and isinstance(slow.value, TimeoutError)
        with pytest.raises(WaitTimeoutError):
            fake.wait_message("c", "m", timeout=0.2, interval=0.05)


def test_an_answer_that_is_not_json_is_an_api_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/chats":
            return httpx.Response(502, text="<html>Bad Gateway</html>", headers={"X-Request-ID": "gw"})
        return httpx.Response(200, text="not json")

    with Client("http://fake", "k", transport=httpx.MockTransport(handler)) as fake:
        with pytest.raises(CitewellAPIError) as bad:
            fake.get_chat("x")
        assert bad.value.code == "INVALID_RESPONSE"
        with pytest.raises(Exception) as gateway:
            fake.chats()
    assert type(gateway.value).__name__ == "ServerError"
    assert (gateway.value.code, gateway.value.request_id, gateway.value.message) == (
        "HTTP_502", "gw", "<html>Bad Gateway</html>")


# -- the answer stream (SSE) through the real route -------------------------------------------------

STREAM_QUESTION = "What was Acme revenue in 2022?"


class CuttingTransport(httpx.HTTPTransport):
    """Cuts the first ``cuts`` answer streams after ``budget`` bytes (mid-event, as a
    dropped connection would): the body then fails with a read error."""

    def __init__(self, cuts: int, budget: int) -> None:
        super().__init__()
        self.cuts, self.budget = cuts, budget
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path != "/v2/analytics/sse":
            return response
        self.requests.append(request)
        if self.cuts <= 0 or response.status_code != 200:
            return response
        self.cuts -= 1
        inner, budget = response.stream, self.budget

        class Cut(httpx.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                left = budget
                for chunk in inner:
                    if len(chunk) >= left:
                        yield chunk[:left]
                        raise httpx.ReadError("connection cut by the test")
                    left -= len(chunk)
                    yield chunk

            def close(self) -> None:
                inner.close()

        return httpx.Response(response.status_code, headers=response.headers, stream=Cut(),
                              extensions=response.extensions)


def test_stream_through_the_real_route(served: Served, cw: Client, docs: dict[str, Resource]) -> None:
    with cw.stream(STREAM_QUESTION, offsets="utf16") as stream:
        events = list(stream)
    names = [e.event for e in events]
    assert names[0] == "conversation" and names[1] == "search_results" and names[-1] == "done"
    assert "answer" in names and "citation" in names
    mid, conversation_id = stream.chat_message_id, stream.conversation_id
    assert mid and conversation_id and events[0].conversation_id == conversation_id
    assert [e.id for e in events] == [f"{mid}:{i}" for i in range(1, len(events) + 1)]  # no gap, no duplicate
    results = next(e for e in events if e.event == "search_results")
    assert results.results[0]["document_id"] == docs["text"].id
    citations = [e for e in events if e.event == "citation"]
    assert citations[0].citation == 1 and citations[0].document_id == docs["text"].id
    assert events[-1].status == "settled" and events[-1].conversation_id == conversation_id
    assert "12.4 million" in stream.text and "[1]" in stream.text
    # the deltas are the stored answer, as the history and the references read it
    assert cw.get_message(conversation_id, mid).text == stream.text
    refs = cw.references(mid)
    assert [r.citation_idx for r in refs] == [c.citation_idx for c in citations]
    assert [r.chunk_id for r in refs] == [c.chunk_id for c in citations]

    # a resume from any event gives exactly the rest; from nothing, the whole replay
    assert [e.model_dump() for e in cw.resume_stream(mid, events[2].id)] == [e.model_dump() for e in events[3:]]
    assert [e.id for e in cw.resume_stream(mid)] == [e.id for e in events]
    # a follow-up in the same conversation
    with cw.stream("And its gross margin?", conversation_id=conversation_id) as follow:
        assert follow.until_done()[-1].event == "done"
    assert follow.conversation_id == conversation_id and "41 percent" in follow.text
    assert [r.chat_message_id for r in cw.conversation_references(conversation_id)][-1] == follow.chat_message_id

    with pytest.raises(BadRequestError) as empty:
        list(cw.stream("   "))
    assert empty.value.code == "INVALID_REQUEST_BODY" and empty.value.body["payload"] is None
    with pytest.raises(NotFoundError):
        list(cw.resume_stream("no-such-message"))


def test_a_dropped_stream_resumes_by_itself(served: Served) -> None:
    cutter = CuttingTransport(cuts=2, budget=300)
    with Client(served.base, served.key, transport=cutter, stream_backoff=0.01) as cut:
        stream = cut.stream(STREAM_QUESTION)
        events = list(stream)
    assert stream.reconnects == 2 and events[-1].event == "done"
    mid = stream.chat_message_id
    assert [e.id for e in events] == [f"{mid}:{i}" for i in range(1, len(events) + 1)]  # each once
    methods = [(r.method, r.headers.get("last-event-id")) for r in cutter.requests]
    assert methods[0] == ("POST", None) and [m for m, _ in methods[1:]] == ["GET", "GET"]
    assert all(last and last.startswith(f"{mid}:") for _, last in methods[1:])
    with Client(served.base, served.key) as cw:
        assert [e.model_dump() for e in cw.resume_stream(mid)] == [e.model_dump() for e in events]
        assert cw.references(mid)[0].document_id is not None
        stored = cw.session_messages(stream.conversation_id).messages[-1]
    assert stored.id == mid and stream.text.startswith(stored.content[:10])

    # a connection the caller closes early: resume later from the last event it saw
    with Client(served.base, served.key) as cw:
        with cw.stream(STREAM_QUESTION) as first:
            head = [next(first), next(first)]
        rest = list(cw.resume_stream(first.chat_message_id, first.last_event_id))
    assert [e.event for e in head] == ["conversation", "search_results"]
    assert [e.seq for e in head + rest] == list(range(1, len(head + rest) + 1)) and rest[-1].event == "done"


def test_async_stream_through_the_real_route(served: Served, docs: dict[str, Resource]) -> None:
    async def run() -> tuple[list[Any], str | None, str]:
        async with AsyncClient(served.base, served.key) as acw:
            async with acw.stream(STREAM_QUESTION) as stream:
                events = [e async for e in stream]
            replay = [e async for e in acw.resume_stream(stream.chat_message_id, events[0].id)]
            assert [e.id for e in replay] == [e.id for e in events[1:]]
            return events, stream.chat_message_id, stream.text

    events, mid, text = asyncio.run(run())
    assert events[-1].event == "done" and "12.4 million" in text
    assert [e.id for e in events] == [f"{mid}:{i}" for i in range(1, len(events) + 1)]


# -- documents and the viewer ----------------------------------------------------------------------

def test_presigned_url_and_viewer(cw: Client, docs: dict[str, Resource]) -> None:
    text = docs["text"]
    signed = cw.presigned_url(text.id, expires_in=60)
    assert signed.url.startswith("http") and signed.expires_at.endswith("Z")
    assert cw.fetch_signed(signed.url) == TEXT.encode()
    with pytest.raises(PermissionDeniedError) as tampered:
        cw.fetch_signed(signed.url.replace("signature=", "signature=x"))
    assert tampered.value.code == "FORBIDDEN"
    with pytest.raises(NotFoundError):
        cw.presigned_url("no-such-document")

    session = cw.create_session()
    answer = cw.ask_session(session.id, "What was Acme revenue in 2022?", resource_ids=[text.id]).assistant_message
    page = cw.viewer(1, chat_message_id=answer.id)
    assert "<html" in page.lower() and "12.4 million" in page
    assert cw.viewer("1", conversation_id=session.id) == page or "12.4 million" in cw.viewer(
        "1", conversation_id=session.id)
    ref = cw.references(answer.id)[0]
    if ref.viewer_url:  # a signed link: no key needed
        assert "12.4 million" in cw.fetch_signed(ref.viewer_url).decode()
    with pytest.raises(NotFoundError):  # a text citation has no page image
        cw.viewer_page(1, chat_message_id=answer.id)
    with pytest.raises(BadRequestError) as missing:
        cw.viewer(1)
    assert missing.value.code == "CHAT_MESSAGE_ID_MISSING"

    # a PDF citation: its page as a PNG with the boxes drawn in, and the plain page
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=14)
    pdf.multi_cell(0, 10, text="Initech shipped 4,200 staplers in 2023, twice the 2022 volume.")
    report = cw.wait_ready(cw.upload(bytes(pdf.output()), filename="initech.pdf").id)
    cited = cw.ask_session(cw.create_session().id, "How many staplers did Initech ship in 2023?",
                           resource_ids=[report.id]).assistant_message
    assert cw.references(cited.id)[0].metadata.offset  # page boxes
    boxed = cw.viewer_page(1, chat_message_id=cited.id)
    plain = cw.viewer_page(1, chat_message_id=cited.id, page=1, boxes=False)
    assert boxed.startswith(b"\x89PNG") and plain.startswith(b"\x89PNG") and boxed != plain
    with pytest.raises(NotFoundError):
        cw.viewer_page(1, chat_message_id=cited.id, page=2)


# -- async ---------------------------------------------------------------------------------------

def test_async_client_parity(served: Served, docs: dict[str, Resource], posts: Resource) -> None:
    async def run() -> None:
        async with AsyncClient(served.base, served.key, timeout=30.0) as acw:
            listed = await acw.list_resources(limit=100)
            assert {docs["text"].id, docs["talk"].id, posts.id} <= {r.id for r in listed.resources}
            assert await acw.get_resource(docs["text"].id) == docs["text"]
            uploaded = await acw.upload(b"Globex revenue was $55.0 million in 2022.\n", filename="globex.txt")
            ready = await acw.wait_ready(uploaded.id, timeout=60)
            assert ready.status == "ready"
            assert await acw.download(ready.id) == b"Globex revenue was $55.0 million in 2022.\n"
            session = await acw.create_session("async")
            turn = await acw.ask_session(session.id, "What was Globex revenue in 2022?", resource_ids=[ready.id])
            assert "55.0 million" in turn.assistant_message.content
            refs = await acw.references(turn.assistant_message.id)
            assert refs[0].document_id == ready.id
            assert [r.chunk_id for r in await acw.conversation_references(session.id)] == [r.chunk_id for r in refs]
            assert (await acw.session_messages(session.id)).messages[1].id == turn.assistant_message.id
            accepted = await acw.ask(QUESTION)
            message = await acw.wait_message(accepted.chat_id, accepted.message_id, timeout=60)
            assert message.status == "settled"
            assert [m.id async for m in acw.iter_chat_messages(accepted.chat_id)] == [
                m.id for m in (await acw.chat_messages(accepted.chat_id)).messages]
            ids = [m.id async for m in acw.iter_mentions(dataset_id=posts.id, page_size=3)]
            assert ids == ["t3_a1", "9001", "t3_a2", "t3_a3"]
            assert (await acw.mentions_by_refs([("reddit", "t3_a1")])).mentions[0].author == "u/puts_guy"
            assert (await acw.dataset(posts.id)).post_count == 4
            assert (await acw.research_preview(accepted.message_id)).status == "settled"
            assert (await acw.get_chat(accepted.chat_id)).id in [c.id for c in await acw.chats()]
            assert (await acw.get_message(accepted.chat_id, accepted.message_id)).id == message.id
            signed = await acw.presigned_url(ready.id)
            assert await acw.fetch_signed(signed.url) == b"Globex revenue was $55.0 million in 2022.\n"
            page = await acw.viewer(1, chat_message_id=turn.assistant_message.id)
            assert "55.0 million" in page
            assert (await acw.delete_resource(ready.id)).deleted
            with pytest.raises(NotFoundError):
                await acw.get_resource(ready.id)
            with pytest.raises(NotFoundError):
                await acw.pattern("p")
        async with AsyncClient(served.base, "cw_wrong") as wrong:
            with pytest.raises(AuthenticationError) as denied:
                await wrong.get_session("x")
            assert denied.value.code == "INVALID_API_KEY" and denied.value.request_id

    asyncio.run(run())
