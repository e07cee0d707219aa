"""The chats profile over HTTP (issue 5, seed 000): ``POST /v1/ask`` turns that settle in
the background, polling and history, ``POST /v1/mentions`` by reference and by query,
the entity routes and the chats error envelope.

The app gets a :class:`Scripted` generator: the extractive one unless a test scripts the
raw answer, makes it fail, or holds it at a gate (to see a turn pending). Turns are polled
with a bounded loop, never timed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from citewell import Engine
from citewell.generate import ExtractiveGenerator, GenerationRequest
from citewell.web import create_app
from citewell.jobs.workers import TurnWorker

from .conftest import CORPUS

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

REDDIT = CORPUS / "posts" / "reddit_wallstreetbets_2022-01.jsonl"
STOCKTWITS = CORPUS / "posts" / "stocktwits_2022-06_07.jsonl"

#: The posts of the seed's worked example (a test fixture, not corpus data).
SEED_POSTS = [
    {"source": "tiktok", "id": "7392184932", "text": "Turbine noise from the new wind farm keeps the whole street awake.",
     "created_at": "2024-05-01T10:00:00Z", "likes": 1200, "shares": 31, "author": "@windwatch",
     "url": "https://www.tiktok.com/@windwatch/video/7392184932"},
    {"source": "reddit", "id": "t3_1oqliu8", "text": "Our town council heard complaints about wind farm turbine noise.",
     "created_at": "2024-05-02T11:00:00Z", "score": 87, "num_comments": 14, "author": None,
     "url": "https://example.org/noise-report", "permalink": "https://www.reddit.com/r/energy/comments/1oqliu8/"},
]
SEED_RAW = ("See [clip](post:tiktok:7392184932) and [thread](post:reddit:t3_1oqliu8). "
            "As [clip](post:tiktok:7392184932) also notes…")
SEED_QUESTION = "What do people say about wind farm turbine noise?"
FILES = {
    "acme-2022.txt": "Acme revenue was $12.4 million in 2022. Acme gross margin was 41 percent in 2022.\n",
    "acme-2021.txt": "Acme revenue was $9.1 million in 2021.\n",
    "globex.txt": "Globex revenue was $55.0 million in 2022. Globex gross margin was 18 percent in 2022.\n",
}


class Scripted:
    """A generator for the app: extractive, unless ``script`` (the raw answer), ``error``
    (raised) or ``gate`` (a :class:`threading.Event` every turn waits for) is set."""

    def __init__(self) -> None:
        self.inner = ExtractiveGenerator()
        self.script: str | None = None
        self.error: Exception | None = None
        self.gate: threading.Event | None = None

    name = "scripted"

    def write(self, request: GenerationRequest) -> Iterator[str]:
        if self.gate is not None:
            assert self.gate.wait(30), "the gate was never opened"
        if self.error is not None:
            raise self.error
        if self.script is not None:
            yield self.script
            return
        yield from self.inner.write(request)


class Api:
    """A client with workspace ``acme``'s key, the app's generator and the store path."""

    def __init__(self, client: TestClient, generator: Scripted, store_path: Path, workspace_id: str) -> None:
        self.client, self.generator, self.store_path, self.workspace_id = client, generator, store_path, workspace_id

    def ask(self, question: str, **body: Any) -> dict[str, Any]:
        """POST /v1/ask; asserts the 202 and returns its body."""
        r = self.client.post("/v1/ask", json={"question": question, **body})
        assert r.status_code == 202, r.text
        return r.json()

    def settle(self, accepted: dict[str, Any], **params: Any) -> dict[str, Any]:
        """Poll the turn's message until it is not pending (at most ~30 s)."""
        path = f"/v1/chats/{accepted['chat_id']}/messages/{accepted['message_id']}"
        for _ in range(1500):
            r = self.client.get(path, params=params)
            assert r.status_code == 200, r.text
            if r.json()["status"] != "pending":
                return r.json()
            time.sleep(0.02)
        raise AssertionError(f"{path} still pending")

    def turn(self, question: str, **body: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Ask and wait: (the 202 body, the settled message)."""
        accepted = self.ask(question, **body)
        return accepted, self.settle(accepted)

    def upload(self, path: Path) -> dict[str, Any]:
        """Upload a corpus file's bytes (the corpus stays read-only) and wait until processed."""
        r = self.client.post("/v1/resources", files={"file": (path.name, path.read_bytes(), "application/jsonl")})
        assert r.status_code == 202, r.text
        rid = r.json()["data"]["resource"]["id"]
        for _ in range(1500):
            resource = self.client.get(f"/v1/resources/{rid}").json()["data"]["resource"]
            if resource["status"] != "processing":
                assert resource["status"] == "ready", resource
                return resource
            time.sleep(0.02)
        raise AssertionError("still processing")


@pytest.fixture
def api(store_path: Path, tmp_path: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "seed-posts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in SEED_POSTS), encoding="utf-8")
    with Engine(store_path, workspace="acme") as engine:
        assert not engine.ingest([folder]).failed
        key, _ = engine.create_key()
        workspace_id = engine.workspace_id
    generator = Scripted()
    with TestClient(create_app(store_path, generator=generator)) as client:
        client.headers["X-API-KEY"] = key
        yield Api(client, generator, store_path, workspace_id)
        if generator.gate is not None:
            generator.gate.set()


def corpus_posts(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- the worked example of seed 000 -----------------------------------------------------------

def test_the_seeds_worked_example_end_to_end(api: Api) -> None:
    api.generator.script = SEED_RAW
    accepted = api.ask(SEED_QUESTION)
    assert set(accepted) == {"chat_id", "message_id", "status"} and accepted["status"] == "pending"
    message = api.settle(accepted)
    assert message["status"] == "settled" and message["role"] == "assistant"
    assert message["id"] == accepted["message_id"] and message["chat_id"] == accepted["chat_id"]
    assert message["text"] == "See [1] and [2]. As [1] also notes…"
    seed_fields = ["type", "source", "id", "citation", "start_index", "end_index"]
    refs = message["references"]
    assert [{k: r[k] for k in seed_fields} for r in refs] == [
        {"type": "post", "source": "tiktok", "id": "7392184932", "citation": 1, "start_index": 4, "end_index": 7},
        {"type": "post", "source": "reddit", "id": "t3_1oqliu8", "citation": 2, "start_index": 12, "end_index": 15},
    ]
    assert [list(r)[:6] for r in refs] == [seed_fields, seed_fields]  # the seed's fields lead
    for ref in refs:
        assert message["text"][ref["start_index"]:ref["end_index"]] == f"[{ref['citation']}]"
        assert ref["offset_unit"] == "codepoint" and ref["text_type"] == "post"
    assert [(o["start_index"], o["end_index"]) for o in refs[0]["occurrences"]] == [(4, 7), (20, 23)]
    assert refs[0]["text"] == SEED_POSTS[0]["text"]

    # the cited posts resolve to the full mention, as the source gave them
    r = api.client.post("/v1/mentions", json={"post_refs": [{"source": r["source"], "id": r["id"]} for r in refs]})
    assert r.status_code == 200, r.text
    mentions = r.json()["mentions"]
    assert r.json()["next_cursor"] is None
    for mention, post in zip(mentions, SEED_POSTS, strict=True):
        assert {k: mention[k] for k in post} == post
        assert mention["dataset_id"] == refs[0]["resource_id"] and mention["chunk_id"]


def test_offsets_in_every_unit(api: Api) -> None:
    api.generator.script = "\U0001F600 Loud: [clip](post:tiktok:7392184932), again [clip](post:tiktok:7392184932)."
    accepted, message = api.turn(SEED_QUESTION, offsets="utf16")
    assert message["text"] == "\U0001F600 Loud: [1], again [1]."
    ref = message["references"][0]
    assert (ref["start_index"], ref["end_index"], ref["offset_unit"]) == (9, 12, "utf16")  # the emoji is 2 units
    expected = {"codepoint": (8, 11, 19, 22), "utf16": (9, 12, 20, 23), "utf8": (11, 14, 22, 25)}
    path = f"/v1/chats/{accepted['chat_id']}/messages/{accepted['message_id']}"
    for unit, (start, end, again_start, again_end) in expected.items():
        got = api.client.get(path, params={"offsets": unit}).json()["references"][0]
        assert (got["start_index"], got["end_index"], got["offset_unit"]) == (start, end, unit)
        assert [(o["start_index"], o["end_index"]) for o in got["occurrences"]] == [
            (start, end), (again_start, again_end)]
        encoded = {"codepoint": lambda t: t, "utf16": lambda t: t.encode("utf-16-le"),
                   "utf8": lambda t: t.encode("utf-8")}[unit](message["text"])
        width = 2 if unit == "utf16" else 1
        piece = encoded[start * width:end * width]
        assert (piece if unit == "codepoint" else piece.decode("utf-16-le" if unit == "utf16" else "utf-8")) == "[1]"
        listed = api.client.get(f"/v1/chats/{accepted['chat_id']}/messages", params={"offsets": unit}).json()
        assert listed["messages"][1]["references"][0]["start_index"] == start
    assert api.client.get(path, params={"offsets": "utf32"}).status_code == 400


# -- turns: pending, settled, failed -------------------------------------------------------------

def test_a_turn_is_pending_then_settled_and_a_turn_asked_meanwhile_points_at_it(api: Api) -> None:
    api.generator.gate = threading.Event()
    first = api.ask("What was Acme revenue in 2022?")
    path = f"/v1/chats/{first['chat_id']}/messages/{first['message_id']}"
    pending = api.client.get(path).json()
    assert (pending["status"], pending["text"], pending["references"]) == ("pending", "", [])
    assert pending["id"] == first["message_id"] and "error" not in pending
    preview = api.client.get(f"/v1/research_previews/{first['message_id']}").json()
    assert preview == {"id": first["message_id"], "chat_id": first["chat_id"], "status": "pending",
                       "question": "What was Acme revenue in 2022?", "message_id": first["message_id"],
                       "created_at": pending["created_at"]}
    history = api.client.get(f"/v1/chats/{first['chat_id']}/messages").json()["messages"]
    assert [(m["role"], m["status"]) for m in history] == [("user", "settled"), ("assistant", "pending")]

    # a follow-up asked while the first answer is still being written points at it
    second = api.ask("And what about gross margin?", chat_id=first["chat_id"])
    assert second["chat_id"] == first["chat_id"]
    api.generator.gate.set()
    settled = api.settle(first)
    assert settled["status"] == "settled" and settled["text"].startswith("Acme revenue was $12.4 million in 2022 [1].")
    assert settled["created_at"] == pending["created_at"]
    follow = api.settle(second)
    assert follow["status"] == "settled"
    assert follow["references"][-1] == {"type": "research_preview", "id": first["message_id"]}
    assert api.client.get(f"/v1/research_previews/{first['message_id']}").json()["status"] == "settled"
    # a turn asked once the previous answer settled points at nothing
    third = api.turn("And in 2021?", chat_id=first["chat_id"])[1]
    assert not [r for r in third["references"] if r["type"] == "research_preview"]


def test_a_failing_turn_settles_failed_with_its_code(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    api.generator.error = RuntimeError("model endpoint down")
    with caplog.at_level(logging.INFO, logger="citewell.jobs"):
        accepted, message = api.turn("What was Acme revenue in 2022?")
    assert message["status"] == "failed" and message["text"] == "" and message["references"] == []
    assert message["error"] == {"code": "SERVER_ERROR", "message": "the answer could not be produced (RuntimeError)"}
    assert [w["code"] for w in message["warnings"]] == ["SERVER_ERROR"]
    assert "model endpoint down" not in json.dumps(message)
    listed = api.client.get(f"/v1/chats/{accepted['chat_id']}/messages").json()["messages"]
    assert listed[1] == message
    preview = api.client.get(f"/v1/research_previews/{accepted['message_id']}").json()
    assert preview["status"] == "failed"
    assert any(accepted["message_id"] in rec.getMessage() and "SERVER_ERROR" in rec.getMessage()
               for rec in caplog.records)
    # the chat goes on
    api.generator.error = None
    assert api.turn("What was Acme revenue in 2022?", chat_id=accepted["chat_id"])[1]["status"] == "settled"


def test_ask_errors_come_before_anything_is_stored(api: Api) -> None:
    chat_id = api.turn("What was Acme revenue in 2022?")[0]["chat_id"]
    before = api.client.get("/v1/chats").json()["chats"]
    history = api.client.get(f"/v1/chats/{chat_id}/messages").json()["messages"]
    cases = [
        ({"question": "   "}, 400, "INVALID_REQUEST_BODY"),
        ({}, 400, "INVALID_REQUEST_BODY"),
        ({"question": 5}, 400, "INVALID_REQUEST_BODY"),
        ({"question": "revenue?", "offsets": "bytes"}, 400, "INVALID_REQUEST_BODY"),
        ({"question": "revenue?", "policy": "maybe"}, 400, "INVALID_REQUEST_BODY"),
        ({"question": "revenue?", "filters": {"colour": "red"}}, 400, "INVALID_FILTER"),
        ({"question": "revenue?", "filters": ["fiscal_quarter=Q7"]}, 400, "INVALID_FILTER"),
        ({"question": "revenue?", "filters": "kind=post"}, 400, "INVALID_REQUEST_BODY"),
        ({"question": "revenue?", "chat_id": str(uuid.uuid4())}, 404, "NOT_FOUND"),
        ({"question": "   ", "chat_id": chat_id}, 400, "INVALID_REQUEST_BODY"),
        ({"question": "revenue?", "chat_id": chat_id, "filters": {"nope": 1}}, 400, "INVALID_FILTER"),
    ]
    for body, status, code in cases:
        r = api.client.post("/v1/ask", json=body)
        assert (r.status_code, r.json()["error"]["code"]) == (status, code), (body, r.text)
        assert set(r.json()) == {"error"} and set(r.json()["error"]) == {"code", "message"}
    r = api.client.post("/v1/ask", content=b"{nope", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_REQUEST_BODY")
    assert api.client.get("/v1/chats").json()["chats"] == before
    assert api.client.get(f"/v1/chats/{chat_id}/messages").json()["messages"] == history


def test_filters_as_an_object_or_a_list(api: Api) -> None:
    for filters in ({"document_name": "globex"}, ["document_name=globex"], {"document_name": ["globex", "nope"]}):
        message = api.turn("What was gross margin in 2022?", filters=filters)[1]
        assert "18 percent" in message["text"] and "41 percent" not in message["text"], filters
        assert {r["resource_title"] for r in message["references"]} == {"globex"}


# -- history and follow-ups ---------------------------------------------------------------------

def test_history_is_what_each_turn_returned_when_it_settled(api: Api) -> None:
    first, answer1 = api.turn("What was Acme revenue in 2022?")
    api.generator.script = SEED_RAW
    second, answer2 = api.turn(SEED_QUESTION, chat_id=first["chat_id"])
    api.generator.script = None
    third, answer3 = api.turn("What was Globex revenue in 2022?", chat_id=first["chat_id"])
    chat_id = first["chat_id"]
    assert second["chat_id"] == third["chat_id"] == chat_id
    messages = api.client.get(f"/v1/chats/{chat_id}/messages").json()
    assert messages["next_after"] is None
    rows = messages["messages"]
    assert [m["role"] for m in rows] == ["user", "assistant"] * 3
    assert [m["id"] for m in rows[1::2]] == [first["message_id"], second["message_id"], third["message_id"]]
    assert rows[1::2] == [answer1, answer2, answer3]  # each exactly as polled when it settled
    assert [m["text"] for m in rows[0::2]] == ["What was Acme revenue in 2022?", SEED_QUESTION,
                                              "What was Globex revenue in 2022?"]
    assert all(m["chat_id"] == chat_id and m["status"] == "settled" for m in rows)
    assert [m["created_at"] for m in rows] == sorted(m["created_at"] for m in rows)
    # paged by next_after: every message exactly once, in order
    seen: list[dict[str, Any]] = []
    after = None
    for _ in range(10):
        page = api.client.get(f"/v1/chats/{chat_id}/messages",
                              params={"limit": 4, **({"after": after} if after else {})}).json()
        seen += page["messages"]
        after = page["next_after"]
        if after is None:
            break
        assert after == page["messages"][-1]["id"]
    assert seen == rows
    last = api.client.get(f"/v1/chats/{chat_id}/messages", params={"after": rows[-1]["id"]}).json()
    assert last == {"messages": [], "next_after": None}
    r = api.client.get(f"/v1/chats/{chat_id}/messages", params={"after": str(uuid.uuid4())})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    for limit in (0, 201, "x"):
        r = api.client.get(f"/v1/chats/{chat_id}/messages", params={"limit": limit})
        assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_REQUEST_BODY")
    # the chat itself and the list of chats
    chat = api.client.get(f"/v1/chats/{chat_id}").json()
    assert chat["id"] == chat_id and chat["workspace_id"] == api.workspace_id
    assert chat["title"] == "What was Acme revenue in 2022?"
    assert chat in api.client.get("/v1/chats").json()["chats"]
    # a message of another chat is not found through this one
    other = api.turn("What was Acme revenue in 2021?")[0]
    r = api.client.get(f"/v1/chats/{chat_id}/messages/{other['message_id']}")
    unknown = api.client.get(f"/v1/chats/{chat_id}/messages/{uuid.uuid4()}")
    assert r.status_code == unknown.status_code == 404 and r.json()["error"]["code"] == "NOT_FOUND"


def test_a_follow_up_is_answered_in_the_context_of_the_chat(api: Api) -> None:
    first, answer = api.turn("What was Acme revenue in 2022?")
    assert answer["text"].startswith("Acme revenue was $12.4 million in 2022 [1].")
    follow = api.turn("And in 2021?", chat_id=first["chat_id"])[1]
    assert follow["text"].startswith("Acme revenue was $9.1 million in 2021 [1].")
    assert "$9.1 million" not in api.turn("And in 2021?")[1]["text"]  # a new chat has no context
    # the previous question's filters carry over to a follow-up that refers back
    scoped, margin = api.turn("What was gross margin in 2022?", filters=["document_name=globex"])
    assert "18 percent" in margin["text"] and "41 percent" not in margin["text"]
    revenue = api.turn("And what about its revenue?", chat_id=scoped["chat_id"])[1]
    assert "$55.0 million" in revenue["text"]
    assert {r["resource_title"] for r in revenue["references"]} == {"globex"}
    users = [m["text"] for m in api.client.get(f"/v1/chats/{scoped['chat_id']}/messages").json()["messages"]
             if m["role"] == "user"]
    assert users == ["What was gross margin in 2022?", "And what about its revenue?"]  # stored as asked


# -- mentions ------------------------------------------------------------------------------------

def test_mentions_by_refs_in_the_order_asked(api: Api, tmp_path: Path) -> None:
    dataset = api.upload(STOCKTWITS)
    posts = corpus_posts(STOCKTWITS)
    with Engine(api.store_path, workspace="elsewhere") as other:  # a post only another workspace has
        folder = tmp_path / "elsewhere"
        folder.mkdir()
        (folder / "p.jsonl").write_text(json.dumps({"source": "reddit", "id": "t3_only_there",
                                                    "text": "Elsewhere only."}) + "\n", encoding="utf-8")
        assert not other.ingest([folder]).failed
        assert other.store.mentions(other.workspace_id, [("reddit", "t3_only_there")])[0] is not None
    refs = [{"source": "stocktwits", "id": posts[5]["id"]},
            {"source": "reddit", "id": "t3_only_there"},
            {"source": "StockTwits", "id": int(posts[0]["id"])},
            {"source": "reddit", "id": "t3_nowhere"},
            {"source": "stocktwits", "id": posts[5]["id"]}]
    r = api.client.post("/v1/mentions", json={"post_refs": refs})
    assert r.status_code == 200, r.text
    got = r.json()["mentions"]
    assert len(got) == 5 and r.json()["next_cursor"] is None
    for mention, post in ((got[0], posts[5]), (got[2], posts[0]), (got[4], posts[5])):
        assert {k: mention[k] for k in post} == post  # every field as the source gave it
        assert mention["dataset_id"] == dataset["id"]
    assert got[0] == got[4]
    foreign, unknown = got[1], got[3]
    assert foreign == {"source": "reddit", "id": "t3_only_there",
                       "error": {"code": "NOT_FOUND", "message": "no post reddit:t3_only_there"}}
    assert json.dumps(foreign).replace("t3_only_there", "ID") == json.dumps(unknown).replace("t3_nowhere", "ID")
    assert api.client.post("/v1/mentions", json={"post_refs": []}).json() == {"mentions": [], "next_cursor": None}
    for body in ({"post_refs": [{"source": "x"}]}, {"post_refs": [{"id": "1"}]}, {"post_refs": "x"},
                 {"post_refs": [{"source": "x", "id": str(i)} for i in range(201)]},
                 {"post_refs": refs[:1], "source": "stocktwits"}, {"post_refs": refs[:1], "limit": 5},
                 {"post_refs": refs[:1], "cursor": "abc"}):
        r = api.client.post("/v1/mentions", json=body)
        assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_REQUEST_BODY"), body


def test_two_datasets_keep_their_own_copy_of_a_post_in_mentions_answers_and_references(api: Api) -> None:
    """Issue 14: b.jsonl repeating a.jsonl's post (source in another case) with other text
    keeps its own copy; mentions, answers and references show the cited dataset's text, and
    deleting b changes nothing of a's."""
    def upload(name: str, text: str) -> dict[str, Any]:
        body = json.dumps({"source": "Reddit", "id": "z1", "text": text, "score": len(text)}) + "\n"
        r = api.client.post("/v1/resources", files={"file": (name, body.encode(), "application/jsonl")})
        assert r.status_code == 202, r.text
        for _ in range(1500):
            resource = api.client.get(f"/v1/resources/{r.json()['data']['resource']['id']}").json()["data"]["resource"]
            if resource["status"] != "processing":
                return resource
            time.sleep(0.02)
        raise AssertionError("still processing")

    a = upload("a.jsonl", "Original zeppelin maintenance note.")
    b = upload("b.jsonl", "Rewritten zeppelin claim from another file.")
    ref = {"source": "reddit", "id": "z1"}
    got = api.client.post("/v1/mentions", json={"post_refs": [{**ref, "dataset_id": a["id"]},
                                                              {**ref, "dataset_id": b["id"]}, ref]}).json()["mentions"]
    assert [(m["dataset_id"], m["text"], m["score"]) for m in got] == [
        (a["id"], "Original zeppelin maintenance note.", 35), (b["id"], "Rewritten zeppelin claim from another file.", 43),
        (b["id"], "Rewritten zeppelin claim from another file.", 43)]  # no dataset: the newest one's copy
    listed = api.client.post("/v1/mentions", json={"query": "zeppelin"}).json()["mentions"]
    assert sorted((m["dataset_id"], m["text"]) for m in listed) == sorted([
        (a["id"], "Original zeppelin maintenance note."), (b["id"], "Rewritten zeppelin claim from another file.")])
    first = api.client.post("/v1/mentions", json={"query": "zeppelin", "limit": 1}).json()
    second = api.client.post("/v1/mentions", json={"query": "zeppelin", "limit": 1,
                                                  "cursor": first["next_cursor"]}).json()
    assert [first["mentions"][0]["dataset_id"], second["mentions"][0]["dataset_id"]] == [m["dataset_id"] for m in listed]
    # an answer restricted to a cites a's copy, with a's text, everywhere it is shown
    _, message = api.turn("zeppelin maintenance", filters={"resource_id": a["id"]})
    (post,) = [r for r in message["references"] if r["type"] == "post"]
    assert (post["source"], post["id"], post["resource_id"], post["text"]) == (
        "reddit", "z1", a["id"], "Original zeppelin maintenance note.")
    refs = api.client.get("/v1/references", params={"chat_message_id": message["id"]}).json()["references"]
    assert [(r["document_id"], r["text"]) for r in refs] == [(a["id"], "Original zeppelin maintenance note.")]
    assert api.client.delete(f"/v1/resources/{b['id']}").status_code == 200
    (left,) = api.client.post("/v1/mentions", json={"post_refs": [ref]}).json()["mentions"]
    assert (left["dataset_id"], left["text"]) == (a["id"], "Original zeppelin maintenance note.")
    _, again = api.turn("zeppelin maintenance")
    assert [(r["resource_id"], r["text"]) for r in again["references"] if r["type"] == "post"] == [
        (a["id"], "Original zeppelin maintenance note.")]


def test_mentions_by_query_and_cursor_paging(api: Api) -> None:
    dataset = api.upload(REDDIT)
    posts = corpus_posts(REDDIT)
    by_id = {p["id"]: p for p in posts}

    def listing(**body: Any) -> list[dict[str, Any]]:
        """Every page of a list query; checks the pages join up."""
        out: list[dict[str, Any]] = []
        cursor = None
        for _ in range(100):
            r = api.client.post("/v1/mentions", json={**body, **({"cursor": cursor} if cursor else {})})
            assert r.status_code == 200, r.text
            page = r.json()
            assert len(page["mentions"]) <= body.get("limit", 50)
            out += page["mentions"]
            cursor = page["next_cursor"]
            if cursor is None:
                return out
            assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        raise AssertionError("too many pages")

    reddit = listing(dataset_id=dataset["id"], limit=37)
    # every mention of the file exactly once, ordered by (created_at, source, id), as given
    assert sorted(m["id"] for m in reddit) == sorted(by_id) and len(reddit) == len(by_id) == 300
    keys = [(m["created_at"], m["source"].lower(), m["id"]) for m in reddit]
    assert keys == sorted(keys)
    for m in reddit:
        assert {k: m[k] for k in by_id[m["id"]]} == by_id[m["id"]] and m["dataset_id"] == dataset["id"]
    # the seed posts are there too (another dataset): without a filter both, 50 a page
    everything = listing()
    assert len(everything) == 302 and len({(m["source"], m["id"]) for m in everything}) == 302
    assert [m["id"] for m in everything if m["dataset_id"] != dataset["id"]] == ["7392184932", "t3_1oqliu8"]
    assert [m["id"] for m in listing(source="Reddit", limit=200)] == [m["id"] for m in reddit] + ["t3_1oqliu8"]
    assert listing(dataset_id=str(uuid.uuid4())) == []
    assert listing(source="stocktwits") == []
    assert [m["id"] for m in listing(source="TIKTOK")] == ["7392184932"]
    # dates: ISO text, a date alone as created_before covers that whole day
    day = "2022-01-19"
    expected = sorted(p["id"] for p in posts if "2022-01-18T20:00:00Z" <= p["created_at"] < "2022-01-20")
    assert expected
    got = listing(dataset_id=dataset["id"], created_after="2022-01-18T21:00:00+01:00", created_before=day)
    assert sorted(m["id"] for m in got) == expected
    # full-text: any word of the query
    puts = listing(dataset_id=dataset["id"], query="Activision puts")
    assert puts and all("activision" in m["text"].lower() or "put" in m["text"].lower() for m in puts)
    assert any(m["id"] == "t3_s74nql" for m in puts)
    assert listing(query="???") == []
    # bad input is 400, in the chats envelope
    for body in ({"cursor": "not a cursor!"}, {"cursor": "WzFd"}, {"limit": 0}, {"limit": 201},
                 {"created_after": "yesterday"}, {"created_before": "2022-13-01"}, {"source": 5}):
        r = api.client.post("/v1/mentions", json=body)
        assert r.status_code == 400, body
        assert r.json() == {"error": {"code": "INVALID_REQUEST_BODY", "message": r.json()["error"]["message"]}}
    # no body at all: the first page of everything
    r = api.client.post("/v1/mentions")
    assert r.status_code == 200 and len(r.json()["mentions"]) == 50 and r.json()["next_cursor"]


# -- entity references and their routes -----------------------------------------------------------

def test_entity_references_resolve_through_their_routes(api: Api) -> None:
    posts = next(r for r in api.client.get("/v1/resources").json()["data"]["resources"] if r["kind"] == "post")
    text_file = next(r for r in api.client.get("/v1/resources").json()["data"]["resources"] if r["kind"] == "text")
    first, answer = api.turn("What was Acme revenue in 2022?")
    api.generator.script = (f"From [the posts](dataset:{posts['id']}), [this chat](chat:{first['chat_id']}), "
                            f"[the last answer](research_preview:{first['message_id']}), "
                            f"[the file](resource:{text_file['id']}) and [a pattern](pattern:pat_1).")
    message = api.turn("What else?", chat_id=first["chat_id"])[1]
    assert message["text"] == "From the posts, this chat, the last answer, the file and a pattern."
    assert message["references"] == [{"type": "dataset", "id": posts["id"]},
                                     {"type": "chat", "id": first["chat_id"]},
                                     {"type": "research_preview", "id": first["message_id"]},
                                     {"type": "resource", "id": text_file["id"]}]
    assert [(w["code"], w.get("label")) for w in message["warnings"]] == [("unknown_target", "a pattern")]

    dataset = api.client.get(f"/v1/datasets/{posts['id']}")
    assert dataset.status_code == 200
    assert {k: dataset.json()[k] for k in ("id", "title", "file_name", "post_count", "status")} == {
        "id": posts["id"], "title": "seed-posts", "file_name": "seed-posts.jsonl", "post_count": 2,
        "status": "ready"}
    assert dataset.json()["created_at"].endswith("Z")
    chat = api.client.get(f"/v1/chats/{first['chat_id']}").json()
    assert chat["id"] == first["chat_id"]
    preview = api.client.get(f"/v1/research_previews/{first['message_id']}").json()
    assert preview == {"id": first["message_id"], "chat_id": first["chat_id"], "status": "settled",
                       "question": "What was Acme revenue in 2022?", "message_id": first["message_id"],
                       "created_at": answer["created_at"]}
    assert api.client.get(f"/v1/resources/{text_file['id']}").status_code == 200
    # what is not an entity of that type is 404 NOT_FOUND, in the chats envelope
    user_message = api.client.get(f"/v1/chats/{first['chat_id']}/messages").json()["messages"][0]["id"]
    for path in (f"/v1/datasets/{text_file['id']}", f"/v1/datasets/{uuid.uuid4()}",
                 f"/v1/research_previews/{user_message}", f"/v1/research_previews/{uuid.uuid4()}",
                 "/v1/patterns/pat_1", f"/v1/patterns/{uuid.uuid4()}", f"/v1/chats/{uuid.uuid4()}"):
        r = api.client.get(path)
        assert r.status_code == 404, path
        assert set(r.json()) == {"error"} and r.json()["error"]["code"] == "NOT_FOUND"
    assert api.client.get("/v1/patterns/pat_1", headers={"X-API-KEY": ""}).status_code == 401


# -- restarts: no turn stays pending ----------------------------------------------------------------

def test_turns_left_pending_by_a_stopped_server_fail_at_the_next_start(store_path: Path) -> None:
    with Engine(store_path, workspace="acme") as engine:
        key, _ = engine.create_key()
        left = engine.begin_turn("What was Acme revenue in 2022?")  # never completed: the server "died"
        TurnWorker(engine.store, run=False).submit(engine, left)
        # …while answering it: its worker's lease on the turn's job expired (no process ids involved)
        claimed = engine.store.claim_job("dead-server", kinds=["turn"], lease_s=0.01)
        time.sleep(0.05)
        assert claimed is not None and claimed.payload["message_id"] == left.message.id
    with TestClient(create_app(store_path)) as client:
        client.headers["X-API-KEY"] = key
        r = client.get(f"/v1/chats/{left.chat.id}/messages/{left.message.id}")
        assert r.status_code == 200
        message = r.json()
        assert message["status"] == "failed"
        assert message["error"]["code"] == "TURN_INTERRUPTED" and message["error"]["message"]
        # a turn asked after the start is answered normally
        accepted = client.post("/v1/ask", json={"question": "anything?"}).json()
        for _ in range(1500):
            status = client.get(f"/v1/chats/{accepted['chat_id']}/messages/{accepted['message_id']}").json()
            if status["status"] != "pending":
                break
            time.sleep(0.02)
        assert status["status"] == "settled"


def test_queued_turns_wait_for_the_next_worker_when_the_worker_stops(engine: Engine) -> None:
    gate = threading.Event()
    generator = Scripted()
    generator.gate = gate
    engine.generator = generator
    worker = TurnWorker(engine.store, threads=1)
    running = worker.submit(engine, engine.begin_turn("first?"))
    for _ in range(3000):  # the first turn holds the worker's one thread before the second is queued
        if engine.store.jobs(states=["running"]):
            break
        time.sleep(0.01)
    queued_turn = engine.begin_turn("second?")
    worker.submit(engine, queued_turn)
    stopper = threading.Thread(target=worker.shutdown)
    stopper.start()
    time.sleep(0.2)
    gate.set()
    stopper.join(30)
    assert running.result(30).status == "settled"  # the running turn finished
    # the queued one stays queued in the store: the next worker (here, or another replica's) answers it
    assert engine.message(str(queued_turn.message.id)).status == "pending"
    assert [j.state for j in engine.store.jobs(kinds=["turn"])] == ["done", "queued"]
    late_turn = engine.begin_turn("third?")
    late = worker.submit(engine, late_turn).result(5)  # a closed worker settles at once
    assert late is not None and late.status == "failed" and late.model_extra["error"]["code"] == "TURN_INTERRUPTED"
    successor = TurnWorker(engine.store, threads=1, engine_for=lambda ws: engine, poll_s=0.05)
    try:
        for _ in range(600):
            if engine.message(str(queued_turn.message.id)).status != "pending":
                break
            time.sleep(0.05)
        assert engine.message(str(queued_turn.message.id)).status == "settled"
    finally:
        successor.shutdown()


# -- the chats envelope -----------------------------------------------------------------------------

def test_the_chats_envelope_for_every_error(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    anon = {"X-API-KEY": ""}
    for method, path in (("POST", "/v1/ask"), ("GET", "/v1/chats"), ("GET", "/v1/chats/x"),
                         ("GET", "/v1/chats/x/messages"), ("GET", "/v1/chats/x/messages/y"),
                         ("POST", "/v1/mentions"), ("GET", "/v1/datasets/x"), ("GET", "/v1/research_previews/x"),
                         ("GET", "/v1/patterns/x")):
        r = api.client.request(method, path, headers=anon, json={"question": "q"} if method == "POST" else None)
        assert r.status_code == 401, path
        assert r.json() == {"error": {"code": "API_KEY_MISSING", "message": "header does not contain api key"}}
        r = api.client.request(method, path, headers={"X-API-KEY": "cw_not-a-key"})
        assert (r.status_code, r.json()) == (401, {"error": {"code": "INVALID_API_KEY",
                                                             "message": "the API key is not valid"}})
        assert r.headers["X-Request-ID"]
    r = api.client.get("/v1/chats/x/messages/y/z")
    assert r.status_code == 404 and r.json() == {"error": {"code": "NOT_FOUND",
                                                           "message": "The requested resource was not found."}}
    r = api.client.delete("/v1/ask")
    assert r.status_code == 405 and r.json()["error"]["code"] == "METHOD_NOT_ALLOWED" and "payload" not in r.json()
    r = api.client.get("/v1/chats", params={"organization_id": str(uuid.uuid4())})
    assert (r.status_code, r.json()["error"]["code"]) == (403, "FORBIDDEN")

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(Engine, "chats", boom)
    r = api.client.get("/v1/chats")
    assert r.status_code == 500
    assert r.json() == {"error": {"code": "SERVER_ERROR", "message": "An unexpected error occurred on the server."}}


def test_profile_table() -> None:
    from citewell.web.errors import error_body, profile_of

    assert [profile_of(p) for p in ("/v1/ask", "/v1/chats", "/v1/chats/x/messages/y", "/v1/mentions",
                                    "/v1/patterns/p", "/v1/datasets/d", "/v1/research_previews/r",
                                    "/v1/askx", "/v1/chatsx", "/v1/sessions", "/v1/references")] == \
        ["chats"] * 7 + ["sessions", "sessions", "sessions", "analytics"]
    assert error_body("chats", "NOT_FOUND", "m") == {"error": {"code": "NOT_FOUND", "message": "m"}}


def test_ask_as_a_user_of_an_organization(api: Api, store_path: Path) -> None:
    with Engine(store_path, workspace="hub") as hub:
        hub_key, _ = hub.create_key(platform=True)
    h = {"X-API-KEY": hub_key}

    def as_user(uid: str) -> dict[str, str]:
        return {"organization_id": api.workspace_id, "user_id": uid, "user_email": f"{uid}@example.com"}

    r = api.client.post("/v1/ask", headers=h, params=as_user("u1"), json={"question": "What was Acme revenue?"})
    assert r.status_code == 202, r.text
    accepted = r.json()
    path = f"/v1/chats/{accepted['chat_id']}/messages/{accepted['message_id']}"
    for _ in range(1500):
        mine = api.client.get(path, headers=h, params=as_user("u1"))
        if mine.json()["status"] != "pending":
            break
        time.sleep(0.02)
    assert mine.json()["status"] == "settled"
    assert [c["id"] for c in api.client.get("/v1/chats", headers=h, params=as_user("u1")).json()["chats"]] == [
        accepted["chat_id"]]
    assert api.client.get("/v1/chats", headers=h, params=as_user("u2")).json()["chats"] == []
    # u2 sees none of it, exactly as if it did not exist; the workspace's own key sees it
    unknown = str(uuid.uuid4())
    for template in ("/v1/chats/{}", "/v1/chats/{}/messages", "/v1/research_previews/{}"):
        real = accepted["chat_id"] if "chats" in template else accepted["message_id"]
        got = api.client.get(template.format(real), headers=h, params=as_user("u2"))
        ref = api.client.get(template.format(unknown), headers=h, params=as_user("u2"))
        assert got.status_code == ref.status_code == 404
        assert got.text.replace(real, "ID") == ref.text.replace(unknown, "ID")
        assert api.client.get(template.format(real)).status_code == 200
    r = api.client.post("/v1/ask", headers=h, params=as_user("u2"),
                        json={"question": "And in 2021?", "chat_id": accepted["chat_id"]})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")


def test_a_dataset_counts_posts_not_the_chunks_of_a_long_post(api: Api, tmp_path: Path) -> None:
    long_text = " ".join(f"Sentence {i} about the zeppelin hangar and its maintenance schedule." for i in range(400))
    path = tmp_path / "long-posts.jsonl"
    path.write_text("\n".join(json.dumps({"source": "reddit", "id": f"p{i}", "text": text}) for i, text in
                              enumerate([long_text, "A short post.", "Another short post."])) + "\n")
    resource = api.upload(path)
    assert resource["chunk_count"] > 3  # the long post is several chunks
    dataset = api.client.get(f"/v1/datasets/{resource['id']}").json()
    assert dataset["post_count"] == 3
