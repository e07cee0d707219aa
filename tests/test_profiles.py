"""Profile serializers: sessions (seed 001) and chats (seed 000), and BC-17 (a settled
message read back from history renders exactly as first returned)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from citewell import Chunk, Engine, Message, Passage
from citewell.cite import InMemoryResolver, cite
from citewell.profiles import chats, sessions
from citewell.answer.messages import stored_messages
from citewell.store import open_store

from .conftest import CASES


def case(case_id: str) -> dict[str, Any]:
    return next(c for c in json.loads(CASES.read_text(encoding="utf-8")) if c["id"] == case_id)


def passage_of(source: dict[str, Any], text: str, kind: str = "transcript") -> Passage:
    """The passage behind a seed-shaped ``source`` object."""
    chunk = Chunk(id=source["chunk_id"], resource_id=source["resource_id"], chunk_index=source["chunk_index"],
                  text=text, text_type="transcript", metadata=copy.deepcopy(source["metadata"]))
    return Passage(chunk=chunk, resource_title=source["resource_title"], resource_kind=kind)  # type: ignore[arg-type]


# -- BC-17 -----------------------------------------------------------------------------

def bc17_message() -> Message:
    """The canonical message whose sessions rendering is BC-17's ``message_as_first_returned``."""
    live = case("BC-17")["input"]["message_as_first_returned"]
    source = live["response"]["parts"][0]["source"]
    passage = passage_of(source, "Doctor: Visits last thirty minutes on average, sometimes more.")
    message = cite(f"Clinic visits last 30 minutes on average [v](chunk:{source['chunk_id']}).", sources=[passage])
    message.id = live["id"]
    return message


def test_bc17_history_renders_exactly_as_first_returned(store_path: Path) -> None:
    data = case("BC-17")
    live = data["input"]["message_as_first_returned"]
    expected = data["expected"]["message_from_history"]
    message = bc17_message()
    first = sessions.render_message(message)
    assert {k: first[k] for k in live} == live  # the canonical message yields the live shape

    store = open_store(store_path)
    ws = store.workspace_id("default")
    chat = store.create_chat(ws, "Clinic")
    stored = store.add_message(ws, chat.id, message)
    store.close()
    reopened = open_store(store_path)  # a reload: a new process reads the history
    from_history = stored_messages(reopened, ws, chat.id)
    reopened.close()
    assert len(from_history) == 1
    rendered = sessions.render_message(from_history[0])
    assert {k: rendered[k] for k in expected} == expected
    for key in ("response", "citations", "resource_ids", "content", "image_url", "id", "role"):
        assert rendered[key] == expected[key], key
    assert set(rendered) == set(expected) | {"created_at"}  # nothing else, created_at from the seed
    assert rendered == sessions.render_message(stored) == first
    # and the chats profile: text and references identical too
    assert chats.render_message(from_history[0]) == chats.render_message(stored)
    assert chats.render_message(from_history[0])["text"] == "Clinic visits last 30 minutes on average [1]."


# -- sessions profile -------------------------------------------------------------------

SOURCES = [
    {"chunk_id": f"c{i}", "resource_id": f"r{i // 2}", "resource_title": f"Doc {i // 2}.pdf", "chunk_index": i,
     "metadata": {"source_type": "pdf", "page": i + 1}} for i in range(4)
]


def test_sessions_content_drops_markers_and_the_whitespace_before_them() -> None:
    passages = [passage_of(s, f"text {i}", "pdf") for i, s in enumerate(SOURCES)]
    message = cite("Sales rose [a](chunk:c0) [b](chunk:c2). Costs fell.[c](chunk:c1) Margins 😍 held "
                   "[d](chunk:c3)\n\nNew paragraph [e](post:reddit:t3_x). Quote \\[12\\] stays.", sources=passages)
    message.id = "m1"
    out = sessions.render_message(message)
    assert out["content"] == "Sales rose. Costs fell. Margins 😍 held\n\nNew paragraph e. Quote \\[12\\] stays."
    parts = out["response"]["parts"]
    assert "".join(p["text"] for p in parts) == out["content"]
    assert parts[0]["text"] == "Sales rose." and parts[0]["source"]["chunk_id"] == "c2"
    assert [s["chunk_id"] for s in parts[0]["sources"]] == ["c0"]  # additive, only when non-empty
    assert set(parts[0]["source"]) == {"chunk_id", "resource_id", "resource_title", "chunk_index", "metadata"}
    assert "sources" not in parts[1]
    assert out["response"]["type"] == "answer" and out["response"]["form"] is None
    # one citation per resource; chunk_indices only when more than the first chunk is cited
    assert [c["resource_id"] for c in out["citations"]] == ["r0", "r1"] == out["resource_ids"]
    assert out["citations"][0]["chunk_index"] == 0 and out["citations"][0]["chunk_indices"] == [0, 1]
    assert out["citations"][1] == {"resource_id": "r1", "resource_title": "Doc 1.pdf", "chunk_index": 2,
                                   "metadata": {"source_type": "pdf", "page": 3}, "chunk_indices": [2, 3]}


def test_sessions_rendering_is_the_same_in_every_offset_unit() -> None:
    passages = [passage_of(s, f"text {i}", "pdf") for i, s in enumerate(SOURCES)]
    raw = "𝔘nicode 😍 first [a](chunk:c0). Then [b](chunk:c1) and [a](chunk:c0)."
    base = sessions.render_message(cite(raw, sources=passages))
    for unit in ("utf16", "utf8"):
        other = sessions.render_message(cite(raw, sources=passages, offset_unit=unit))
        assert dict(other, created_at=None) == dict(base, created_at=None)
    assert base["content"] == "𝔘nicode 😍 first. Then and."


def test_sessions_user_message_shape() -> None:
    user = Message(id="u1", role="user", text="How long do anticoagulant patients stay under observation?",
                   resource_ids=["r9"])
    out = sessions.render_message(user)
    assert out["response"] is None and out["citations"] == [] and out["resource_ids"] == ["r9"]
    assert out["content"] == user.text and out["image_url"] is None
    assert out["created_at"].endswith("Z") and len(out["created_at"]) == len("2026-08-05T10:02:11.219Z")


def test_sessions_post_sources_carry_source_and_id(tmp_path: Path) -> None:
    post = Passage(chunk=Chunk(id="p1", resource_id="ds", chunk_index=4, text="great", text_type="post",
                               metadata={"source_type": "post", "source": "reddit", "id": "t3_a1"}),
                   resource_title="posts", resource_kind="post")
    message = cite("Great [a](post:reddit:t3_a1).", resolver=InMemoryResolver([post]))
    out = sessions.render_message(message)
    assert out["response"]["parts"][0]["source"]["source"] == "reddit"
    assert out["citations"][0]["id"] == "t3_a1"


# -- chats profile ----------------------------------------------------------------------

def test_chats_reference_shapes() -> None:
    passages = [passage_of(SOURCES[0], "text 0", "pdf")]
    resolver = InMemoryResolver(passages, entities=[("dataset", "ds1")])
    message = cite("See [x](post:TikTok:7392184932) and [y](chunk:c0). As [z](post:tiktok:7392184932) notes, "
                   "[the set](dataset:ds1) agrees.", resolver=resolver)
    message.id = "a1"
    out = chats.render_message(message)
    assert out["text"] == "See [1] and [2]. As [1] notes, the set agrees."
    post, passage, entity = out["references"]
    assert list(post)[:6] == ["type", "source", "id", "citation", "start_index", "end_index"]
    assert {k: post[k] for k in list(post)[:6]} == {"type": "post", "source": "tiktok", "id": "7392184932",
                                                    "citation": 1, "start_index": 4, "end_index": 7}
    assert post["occurrences"] == [{"start_index": 4, "end_index": 7}, {"start_index": 20, "end_index": 23}]
    assert post["offset_unit"] == "codepoint" and "chunk_id" not in post  # unknown post: no None fields
    assert passage["type"] == "chunk" and passage["citation"] == 2 and passage["chunk_id"] == "c0"
    # seed 000: every reference has an id; a passage's is its chunk id, right after its type
    assert list(passage)[:5] == ["type", "id", "citation", "start_index", "end_index"] and passage["id"] == "c0"
    assert passage["metadata"] == {"source_type": "pdf", "page": 1} and passage["text"] == "text 0"
    assert out["text"][passage["start_index"]:passage["end_index"]] == "[2]"
    assert entity == {"type": "dataset", "id": "ds1"}
    assert out["status"] == "settled" and out["role"] == "assistant" and out["id"] == "a1"
    assert isinstance(post["citation"], int)


def test_chats_offsets_parameter() -> None:
    message = cite("😍 x [a](post:reddit:1).")
    out = chats.render_message(message, offsets="utf8")
    ref = out["references"][0]
    assert ref["offset_unit"] == "utf8"
    assert out["text"].encode()[ref["start_index"]:ref["end_index"]] == b"[1]"
    with pytest.raises(ValueError):
        chats.render_message(message, offsets="bytes")


def test_engine_history_renders_like_the_live_answer(tmp_path: Path, store_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "visits.txt").write_text("Clinic visits last thirty minutes on average.\n", encoding="utf-8")
    with Engine(store_path) as engine:
        engine.ingest([tmp_path / "docs"])
        chat = engine.chat()
        live = engine.ask("How long are clinic visits?", chat_id=chat.id)
        assert live.references
        stored = engine.history(chat.id)[-1]
        assert sessions.render_message(stored) == sessions.render_message(live)
        assert chats.render_message(stored) == chats.render_message(live)


# -- sessions: part offsets (additive, opt-in) --------------------------------------------

def _slice(content: str, start: int, end: int, unit: str) -> str:
    if unit == "utf16":
        return content.encode("utf-16-le")[2 * start:2 * end].decode("utf-16-le")
    if unit == "utf8":
        return content.encode()[start:end].decode()
    return content[start:end]


@pytest.mark.parametrize("unit", ["codepoint", "utf16", "utf8"])
@pytest.mark.parametrize("stored_unit", ["codepoint", "utf16", "utf8"])
def test_sessions_part_offsets_locate_each_part_in_content(unit: str, stored_unit: str) -> None:
    passages = [passage_of(s, f"text {i}", "pdf") for i, s in enumerate(SOURCES)]
    raw = ("😍🚀 Sales 中文 rose [a](chunk:c0). 𝔘nicode [b](chunk:c1) held, é [c](chunk:c2)\n\n"
           "漢字 end [a](chunk:c0).")
    message = cite(raw, sources=passages, offset_unit=stored_unit)
    plain = sessions.render_message(message)
    out = sessions.render_message(message, offsets=unit)
    parts = out["response"]["parts"]
    assert out["offset_unit"] == unit and len(parts) >= 3
    content = out["content"]
    assert content == "😍🚀 Sales 中文 rose. 𝔘nicode held, é\n\n漢字 end."
    pos = 0
    for part in parts:
        assert list(part)[:4] == ["text", "source", "start_index", "end_index"]
        assert _slice(content, part["start_index"], part["end_index"], unit) == part["text"]
        assert part["start_index"] == pos  # adjacent, half-open
        pos = part["end_index"]
    total = {"codepoint": len(content), "utf16": len(content.encode("utf-16-le")) // 2,
             "utf8": len(content.encode())}[unit]
    assert pos == total
    # everything else is the seed shape unchanged
    stripped = dict(out, response=dict(out["response"], parts=[
        {k: v for k, v in p.items() if k not in ("start_index", "end_index")} for p in parts]))
    stripped.pop("offset_unit")
    assert stripped == plain


def test_sessions_part_offsets_exact_values_and_defaults() -> None:
    passages = [passage_of(s, f"text {i}", "pdf") for i, s in enumerate(SOURCES)]
    message = cite("😍 A [a](chunk:c0). 中 B [b](chunk:c1).", sources=passages)
    spans = {unit: [(p["start_index"], p["end_index"]) for p in
                    sessions.render_message(message, offsets=unit)["response"]["parts"]]
             for unit in ("codepoint", "utf16", "utf8")}
    # content "😍 A. 中 B.": parts "😍 A." and " 中 B."
    assert spans == {"codepoint": [(0, 4), (4, 9)], "utf16": [(0, 5), (5, 10)], "utf8": [(0, 7), (7, 14)]}
    plain = sessions.render_message(message)
    assert "offset_unit" not in plain
    assert all("start_index" not in p for p in plain["response"]["parts"])
    user = Message(id="u1", role="user", text="😍 why?")
    assert sessions.render_message(user, offsets="utf16") == dict(sessions.render_message(user),
                                                                  offset_unit="utf16")
    for bad in ("bytes", "UTF16", ""):
        with pytest.raises(ValueError):
            sessions.render_message(message, offsets=bad)
