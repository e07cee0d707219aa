"""Stored chat history (docs/architecture.md rule 10, "Canonical data": Chat, Message; cases BC-17, BC-18).

A current row reads back byte-identical; a legacy row (raw links, no references, no
format version) is converted on read into exactly what a fresh turn returns; every
chat and message is scoped to its workspace; v3 stores migrate to v4 keeping data.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from citewell import Engine, Message, NotFoundError, Notice, UsageError
from citewell.cite import apply_support, cite
from citewell.cite.history import read_message
from citewell.models import FORMAT_VERSION
from citewell.answer.messages import stored_message, stored_messages
from citewell.store import Store, open_store
from citewell.store.sqlite import SCHEMA_VERSION

from .conftest import CASES, sql_rows


def case(case_id: str) -> dict[str, Any]:
    return next(c for c in json.loads(CASES.read_text(encoding="utf-8")) if c["id"] == case_id)


def project(obj: Any, like: Any) -> Any:
    """``obj`` restricted to the keys ``like`` names (recursively): the fields a case fixes."""
    if isinstance(like, dict):
        assert isinstance(obj, dict), obj
        return {k: project(obj.get(k), v) for k, v in like.items()}
    if isinstance(like, list):
        assert isinstance(obj, list) and len(obj) == len(like), obj
        return [project(o, v) for o, v in zip(obj, like)]
    return obj


@pytest.fixture
def store(store_path: Path) -> Store:
    s = open_store(store_path)
    yield s
    s.close()


def raw_row(path: Path, message_id: str) -> dict[str, Any]:
    return sql_rows(path, "SELECT * FROM messages WHERE id = ?", message_id, dicts=True)[0]


LEGACY_BC18 = case("BC-18")["input"]["stored_row"]


# -- BC-18: a legacy row converted on read ---------------------------------------------

def test_bc18_legacy_row_is_converted_on_read_exactly(store: Store, store_path: Path) -> None:
    expected = case("BC-18")["expected"]
    ws = store.workspace_id("default")
    chat = store.create_chat(ws, "legacy")
    message_id = store.add_legacy_message(ws, chat.id, LEGACY_BC18)
    assert raw_row(store_path, message_id)["format_version"] is None  # stored as the old shape

    message = stored_message(store, ws, message_id)
    assert message.text == expected["text"]
    refs = [r.model_dump(mode="json") for r in message.references]
    assert project(refs, expected["references"]) == expected["references"]
    for ref in message.references:  # additive fields are the canonical ones, nothing else
        assert ref.offset_unit == "codepoint"
        assert message.text[ref.start_index:ref.end_index] == f"[{ref.citation}]"
    assert [(o.start_index, o.end_index) for o in message.references[0].occurrences] == [(14, 17), (37, 40)]
    assert message.format_version == FORMAT_VERSION
    assert (message.id, message.chat_id, message.role) == (message_id, chat.id, "assistant")
    assert "".join(p.text for p in message.parts) == message.text

    # exactly what a fresh turn returns: the cite stage without sources (rule 4), then support
    fresh = apply_support(cite(LEGACY_BC18["text"]))
    keep = {"text", "references", "parts", "citations", "resource_ids", "warnings", "grounded", "offset_unit"}
    assert message.model_dump(include=keep) == fresh.model_dump(include=keep)

    # through the chats profile (seed 000 shape)
    from citewell.profiles import chats

    rendered = chats.render_message(message)
    assert rendered["text"] == expected["text"]
    assert project(rendered["references"], expected["references"]) == expected["references"]


def test_bc18_in_other_offset_units_through_the_profile(store: Store) -> None:
    from citewell.profiles import chats

    ws = store.workspace_id("default")
    chat = store.create_chat(ws)
    row = dict(LEGACY_BC18, text="😍 " + LEGACY_BC18["text"])
    message = stored_message(store, ws, store.add_legacy_message(ws, chat.id, row))
    utf16 = chats.render_message(message, offsets="utf16")
    encoded = utf16["text"].encode("utf-16-le")
    for ref in utf16["references"]:
        assert ref["offset_unit"] == "utf16"
        assert encoded[2 * ref["start_index"]:2 * ref["end_index"]].decode("utf-16-le") == f"[{ref['citation']}]"


def test_legacy_conversion_is_deterministic_and_happens_once(store_path: Path) -> None:
    lazy = open_store(store_path)
    ws = lazy.workspace_id("default")
    chat = lazy.create_chat(ws)
    message_id = lazy.add_legacy_message(ws, chat.id, dict(LEGACY_BC18, created_at="2024-01-02T03:04:05Z"))
    first = stored_message(lazy, ws, message_id, persist=False)
    second = stored_message(lazy, ws, message_id, persist=False)
    assert first.model_dump_json() == second.model_dump_json()
    assert raw_row(store_path, message_id)["format_version"] is None  # not written back
    lazy.close()

    store = open_store(store_path)  # persist (default): written back on first read
    third = stored_message(store, ws, message_id)
    assert third.model_dump_json() == first.model_dump_json()
    row = raw_row(store_path, message_id)
    assert row["format_version"] == FORMAT_VERSION
    assert row["payload"] == first.model_dump_json()
    assert row["text"] == "Great reviews [1] and [2], echoed by [1]."
    assert json.loads(row["legacy"])["text"] == LEGACY_BC18["text"]  # the original is kept
    assert stored_messages(store, ws, chat.id)[0].model_dump_json() == first.model_dump_json()
    store.close()


def test_legacy_chunk_links_count_when_the_chunk_exists(tmp_path: Path, store_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.txt").write_text("Clinic visits last thirty minutes on average.\n", encoding="utf-8")
    with Engine(store_path) as engine:
        engine.ingest([tmp_path / "docs"])
        chunk = engine.store.resource_chunks(engine.workspace_id, engine.resources()[0].id)[0]
        chat = engine.chat()
        text = (f"Visits take half an hour [n](chunk:{chunk.id}), says [x](chunk:00000000-0000-0000-0000-000000000000)"
                f" and [p](post:reddit:t3_zz).")
        message_id = engine.store.add_legacy_message(engine.workspace_id, chat.id, {"role": "assistant", "text": text})
        message = engine.message(message_id)
        assert message.text == "Visits take half an hour [1], says x and [2]."
        assert [r.type for r in message.references] == ["chunk", "post"]
        assert message.references[0].chunk_id == chunk.id and message.references[0].text == chunk.text
        assert [w.code for w in message.warnings] == ["unknown_target"]
        assert message.citations[0].resource_id == chunk.resource_id
        fresh = engine.cite(text)
        assert message.model_dump(include={"text", "references", "parts", "citations", "warnings"}) == \
            fresh.model_dump(include={"text", "references", "parts", "citations", "warnings"})


def test_legacy_user_message_keeps_its_text(store: Store) -> None:
    ws = store.workspace_id("default")
    chat = store.create_chat(ws)
    message_id = store.add_legacy_message(ws, chat.id, {"role": "user", "text": "What about [a](post:x:1)?",
                                                        "format_version": None, "references": None})
    message = stored_message(store, ws, message_id)
    assert message.role == "user" and message.text == "What about [a](post:x:1)?"
    assert message.references == [] and message.format_version == FORMAT_VERSION


def test_read_message_rejects_a_newer_format() -> None:
    from citewell.errors import StoreError

    with pytest.raises(StoreError):
        read_message({"id": "m", "format_version": FORMAT_VERSION + 1, "payload": "{}"})


# -- current rows ----------------------------------------------------------------------

def test_current_rows_read_back_byte_identical(store: Store, store_path: Path) -> None:
    ws = store.workspace_id("default")
    chat = store.create_chat(ws, "t")
    original = cite("Fans love it [clip](post:tiktok:7392184932) 😍 and agree [t](post:reddit:t3_1oqliu8). "
                    "Quoted \\[12\\] stays; `[x](post:a:b)` is code.", offset_unit="utf16")
    original.warnings.append(Notice(code="custom", message="m", extra_field=[1, {"a": 2.5}]))
    original.image_url = "https://example.org/q.png"
    stored = store.add_message(ws, chat.id, original)
    assert stored.id and stored.chat_id == chat.id
    payload = raw_row(store_path, stored.id)["payload"]
    assert payload == stored.model_dump_json()
    again = stored_message(store, ws, stored.id)
    assert again.model_dump_json() == payload  # byte for byte
    assert again.model_dump() == stored.model_dump()
    assert again.text == original.text and again.references == original.references
    # additive fields of any JSON-able type: add_message returns what every read returns
    tupled = store.add_message(ws, chat.id, Message(text="x", extra_pair=("a", 1)))
    assert tupled.model_dump() == stored_message(store, ws, tupled.id).model_dump()


def test_a_current_row_is_never_renumbered_or_rewritten(store: Store) -> None:
    """Even a text the cite stage would number differently today is read as stored."""
    ws = store.workspace_id("default")
    chat = store.create_chat(ws)
    odd = Message(text="Stored [2] then [1] and [a](post:x:1).", references=[])
    stored = store.add_message(ws, chat.id, odd)
    assert stored_message(store, ws, stored.id).text == odd.text


def test_add_message_keeps_a_given_id_and_refuses_a_taken_one(store: Store) -> None:
    ws = store.workspace_id("default")
    chat = store.create_chat(ws)
    stored = store.add_message(ws, chat.id, Message(id="m-1", role="user", text="hi"))
    assert stored.id == "m-1"
    with pytest.raises(UsageError):
        store.add_message(ws, chat.id, Message(id="m-1", role="user", text="again"))
    assert [m.text for m in stored_messages(store, ws, chat.id)] == ["hi"]  # the failed add left nothing


# -- order, paging, isolation ----------------------------------------------------------

def test_history_order_limit_and_after(store: Store) -> None:
    ws = store.workspace_id("default")
    chat = store.create_chat(ws, "order")
    other = store.create_chat(ws, "other")
    texts = [f"m{i}" for i in range(6)]
    ids = [store.add_message(ws, chat.id, Message(role="user" if i % 2 == 0 else "assistant", text=t)).id
           for i, t in enumerate(texts)]
    store.add_message(ws, other.id, Message(text="elsewhere"))
    assert [m.text for m in stored_messages(store, ws, chat.id)] == texts
    assert [m.text for m in stored_messages(store, ws, chat.id, limit=2)] == texts[:2]
    assert [m.text for m in stored_messages(store, ws, chat.id, after=ids[2])] == texts[3:]
    assert [m.text for m in stored_messages(store, ws, chat.id, after=ids[2], limit=1)] == texts[3:4]
    assert [m.text for m in stored_messages(store, ws, other.id)] == ["elsewhere"]
    with pytest.raises(NotFoundError):
        stored_messages(store, ws, other.id, after=ids[0])  # a message of another chat
    assert [c.id for c in store.chats(ws)] == [chat.id, other.id]
    assert store.chat(ws, chat.id).updated_at >= store.chat(ws, chat.id).created_at


def test_workspace_isolation(store: Store) -> None:
    a, b = store.workspace_id("a"), store.workspace_id("b")
    chat = store.create_chat(a, "mine")
    message = store.add_message(a, chat.id, Message(text="secret"))
    legacy = store.add_legacy_message(a, chat.id, LEGACY_BC18)
    calls = [
        lambda: store.chat(b, chat.id),
        lambda: stored_messages(store, b, chat.id),
        lambda: stored_message(store, b, message.id),
        lambda: stored_message(store, b, legacy),
        lambda: store.add_message(b, chat.id, Message(text="intrude")),
        lambda: store.add_legacy_message(b, chat.id, LEGACY_BC18),
    ]
    unknown = [
        lambda: store.chat(b, "no-such-chat"),
        lambda: stored_message(store, b, "no-such-message"),
    ]
    for call in calls + unknown:
        with pytest.raises(NotFoundError) as info:
            call()
        assert info.value.code == "NOT_FOUND"
    # a foreign id answers exactly like an unknown one (same message shape)
    with pytest.raises(NotFoundError) as foreign:
        store.chat(b, chat.id)
    with pytest.raises(NotFoundError) as missing:
        store.chat(b, "x" * len(chat.id))
    assert str(foreign.value).replace(chat.id, "ID") == str(missing.value).replace("x" * len(chat.id), "ID")
    assert store.chats(b) == []
    assert [m.text for m in stored_messages(store, a, chat.id)] == ["secret", "Great reviews [1] and [2], echoed by [1]."]


# -- migration -------------------------------------------------------------------------

@pytest.mark.sqlite_only("upgrades a SQLite file of an older schema")
def test_v3_store_migrates_to_current_keeping_data(tmp_path: Path, store_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.txt").write_text("Clinic visits last thirty minutes on average.\n", encoding="utf-8")
    with Engine(store_path) as engine:
        engine.ingest([tmp_path / "docs"])
        before = [r.model_dump() for r in engine.resources()]
        hits_before = [p.chunk.id for p in engine.retrieve("clinic visits")]
    # turn the file into a v3 store: v4 only added the chats and messages tables
    conn = sqlite3.connect(store_path)
    conn.executescript("DROP TABLE messages; DROP TABLE chats; DROP TABLE chunk_vectors; "
                       "DROP INDEX chunks_by_text_hash; ALTER TABLE chunks DROP COLUMN text_hash; "
                       "UPDATE meta SET value = '3' WHERE key = 'schema_version';")
    conn.close()
    conn = sqlite3.connect(store_path)
    assert conn.execute("SELECT value FROM meta").fetchone()[0] == "3"
    conn.close()

    with Engine(store_path) as engine:
        assert [r.model_dump() for r in engine.resources()] == before
        assert [p.chunk.id for p in engine.retrieve("clinic visits")] == hits_before
        chat = engine.chat("after migration")
        answer = engine.ask("How long are clinic visits?", chat_id=chat.id)
        assert [m.model_dump() for m in engine.history(chat.id)][1] == answer.model_dump()
    conn = sqlite3.connect(store_path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert SCHEMA_VERSION == 13  # v11 and v13 (issue 18) change nothing on SQLite (its vector index ranks the bytes; its
    # lexical index is FTS5's); v12: jobs
    # v10: the tracking agents' tables are there, empty (issue 17)
    assert conn.execute("SELECT COUNT(*) FROM tracking_agents").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM post_arrivals").fetchone()[0] == 0
    # v7: every chunk's text hash is filled in by the migration (the key of its vector)
    rows = conn.execute("SELECT text, text_hash FROM chunks").fetchall()
    assert rows and all(h == hashlib.sha256(t.encode()).hexdigest() for t, h in rows)
    conn.close()


# -- engine ----------------------------------------------------------------------------

def test_ask_with_chat_id_stores_both_turns(tmp_path: Path, store_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "visits.txt").write_text(
        "Clinic visits last thirty minutes on average. Longer visits are rare.\n", encoding="utf-8")
    with Engine(store_path) as engine:
        engine.ingest([tmp_path / "docs"])
        chat = engine.chat("Visits")
        assert engine.chats()[0].to_dict()["title"] == "Visits"
        plain = engine.ask("How long are clinic visits?")  # no chat: nothing stored, as before
        assert engine.history(chat.id) == []
        answer = engine.ask("How long are clinic visits?", chat_id=chat.id)
        second = engine.ask("Are longer visits common?", chat_id=chat.id, offsets="utf16")
        assert answer.references and answer.chat_id == chat.id
        assert answer.model_dump(exclude={"id", "created_at", "chat_id"}) == \
            plain.model_dump(exclude={"id", "created_at", "chat_id"})
        history = engine.history(chat.id)
        assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
        assert history[0].text == "How long are clinic visits?" and history[0].chat_id == chat.id
        assert history[1].model_dump() == answer.model_dump()
        assert history[3].model_dump() == second.model_dump()
        assert history[3].offset_unit == "utf16"
        assert engine.message(answer.id).model_dump() == answer.model_dump()
        assert history[0].created_at <= history[1].created_at
        with pytest.raises(NotFoundError):
            engine.ask("anything", chat_id="no-such-chat")
    with Engine(store_path, workspace="other") as other:
        with pytest.raises(NotFoundError):
            other.history(chat.id)
        with pytest.raises(NotFoundError):
            other.ask("How long are clinic visits?", chat_id=chat.id)
        with pytest.raises(NotFoundError):
            other.message(answer.id)


def test_user_message_records_the_resource_restriction(tmp_path: Path, store_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "visits.txt").write_text("Clinic visits last thirty minutes.\n", encoding="utf-8")
    with Engine(store_path) as engine:
        engine.ingest([tmp_path / "docs"])
        rid = engine.resources()[0].id
        chat = engine.chat()
        engine.ask("How long are clinic visits?", chat_id=chat.id, filters=[f"resource_id={rid}"])
        assert engine.history(chat.id)[0].resource_ids == [rid]
