"""What the HTTP API needs from the engine and the store (issue 4): API keys, uploads
processed later, deletion, paging, the original bytes, chats owned by a user, schema v5."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from citewell import Engine
from citewell.errors import NotFoundError, StoreError, UsageError
from citewell.keys import hash_key
from citewell.store import open_store
from citewell.store.migrate import SCHEMA_VERSION

from .conftest import is_sqlite, sql_rows

NOTE = b"Clinic visits last thirty minutes on average.\nThe clinic opens at eight.\n"
VTT = b"WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Dana>Pumps run at forty bar.\n"


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


# -- keys ------------------------------------------------------------------------------

def test_keys_are_stored_as_hashes_and_found_by_them(engine: Engine, store_path: Path) -> None:
    key, record = engine.create_key()
    assert key.startswith("cw_") and len(key) == 46
    assert record.workspace_id == engine.workspace_id and record.platform is False and record.prefix == key[:8]
    assert engine.store.api_key(hash_key(key)) == record
    assert engine.store.api_key(hash_key(key + "x")) is None
    stored = sql_rows(store_path, "SELECT key_hash, prefix, platform FROM api_keys")
    assert stored == [(hashlib.sha256(key.encode()).hexdigest(), key[:8], 0)]
    if is_sqlite(store_path):
        assert key not in Path(store_path).read_bytes().decode("latin-1")
    other, platform = engine.create_key(platform=True)
    assert other != key and platform.platform is True


def test_engine_for_workspace_id(store_path: Path) -> None:
    with Engine(store_path, workspace="acme") as acme:
        wid = acme.workspace_id
        store = acme.store
        assert store.workspace_name(wid) == "acme"
        assert Engine.for_workspace_id(store, wid).workspace == "acme"
        with pytest.raises(NotFoundError):
            Engine.for_workspace_id(store, "00000000-0000-0000-0000-000000000000")


def test_keys_create_cli_prints_the_key_alone_on_the_last_line(store_path: str | Path) -> None:
    store = store_path
    run = subprocess.run([sys.executable, "-m", "citewell", "keys", "create", "--workspace", "acme", "--platform",
                          "--store", str(store)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    key = run.stdout.splitlines()[-1]
    assert run.stdout == key + "\n" and key.startswith("cw_")
    assert "acme" in run.stderr and key not in run.stderr
    record = open_store(store).api_key(hash_key(key))
    assert record is not None and record.platform is True
    assert open_store(store).workspace_name(record.workspace_id) == "acme"


# -- uploads ---------------------------------------------------------------------------

def test_upload_is_processing_until_processed_then_ready(engine: Engine) -> None:
    pending = engine.upload("notes/../clinic.txt", NOTE, metadata={"title": "Clinic FAQ", "fiscal_year": "FY2023",
                                                                   "tickers": "CLN", "team": "ops"})
    assert pending.status == "processing" and pending.file_name == "clinic.txt" and pending.title == "Clinic FAQ"
    assert pending.metadata == {"fiscal_year": 2023, "tickers": ["CLN"]}
    assert pending.custom_metadata == {"team": "ops"}
    assert engine.resource(pending.id).status == "processing"
    assert engine.retrieve("clinic visits") == []  # not searchable before extraction
    assert Engine.pending_uploads(engine.store) == [(engine.workspace_id, pending.id)]

    ready = engine.process(pending.id)
    assert ready is not None and ready.status == "ready" and ready.kind == "text" and ready.chunk_count == 1
    assert ready.metadata["fiscal_year"] == 2023 and ready.custom_metadata == {"team": "ops"}
    hits = engine.retrieve("How long are clinic visits?")
    assert hits and hits[0].chunk.resource_id == pending.id
    assert Engine.pending_uploads(engine.store) == []
    assert _files(engine.store.blobs.root / ".incoming") == []
    path, media_type, name = engine.resource_content(pending.id)
    assert path.read_bytes() == NOTE and media_type == "text/plain" and name == "clinic.txt"
    assert engine.process(pending.id) == engine.resource(pending.id)  # idempotent


def test_same_bytes_uploaded_again_return_the_stored_resource(engine: Engine) -> None:
    first = engine.process(engine.upload("a.txt", NOTE, metadata={"tickers": ["CLN"], "fiscal_year": 2022,
                                                                  "team": "ops"}).id)
    again = engine.upload("b.txt", NOTE, metadata={"title": "Renamed", "publisher": "Clinic"})
    assert again.id == first.id and again.status == "ready"
    assert again.title == "Renamed" and again.metadata["publisher"] == "Clinic"
    # merged, not replaced: what the first upload said stays
    assert (again.metadata["tickers"], again.metadata["fiscal_year"]) == (["CLN"], 2022)
    assert again.custom_metadata == {"team": "ops"}
    assert engine.upload("c.txt", NOTE).title == "Renamed"  # no metadata: unchanged
    assert len(engine.resources()) == 1
    assert _files(engine.store.blobs.root / ".incoming") == []


@pytest.mark.parametrize(("name", "data", "code"), [
    ("empty.txt", b"", "EMPTY_FILE"),
    ("blank.txt", b"  \n\n", "EMPTY_FILE"),
    ("picture.exe", b"MZ\x90\x00", "UNSUPPORTED_FILE"),
    ("noext", b"hello", "UNSUPPORTED_FILE"),
    ("broken.pdf", b"%PDF-1.7\nthis is not a pdf", "PDF_CORRUPT"),
    ("bad.vtt", b"NOT A VTT\n\n00:00:01.000 --> nonsense\nx\n", "VTT_MALFORMED"),
    ("bad.srt", b"1\n00:00:01,000 --> \n\n", "SRT_MALFORMED"),
    ("bad.jsonl", b'{broken\n{"source": "reddit", "id": "1", "text": "ok"}\n', "JSONL_MALFORMED"),
    ("other.jsonl", b'{"name": "not a post"}\n', "UNSUPPORTED_FILE"),
    ("latin.txt", "caf\u00e9 na\u00efve".encode("latin-1") + b"\xff\xfe\x00", "TEXT_ENCODING"),
])
def test_bad_upload_leaves_one_failed_row_and_nothing_else(engine: Engine, store_path: Path, name: str,
                                                          data: bytes, code: str) -> None:
    pending = engine.upload(name, data)
    failed = engine.process(pending.id)
    assert failed is not None and failed.status == "failed" and failed.error is not None
    assert failed.error.code == code, failed.error
    assert failed.blob_key is None
    assert [r.id for r in engine.resources()] == [pending.id]
    assert sql_rows(store_path, "SELECT count(*) FROM chunks") == [(0,)]
    assert sql_rows(store_path, "SELECT count(*) FROM mentions") == [(0,)]
    assert _files(engine.store.blobs.root) == []
    with pytest.raises(NotFoundError):
        engine.resource_content(pending.id)


def test_failed_upload_is_tried_again_when_uploaded_again(engine: Engine) -> None:
    failed = engine.process(engine.upload("x.foo", NOTE).id)
    assert failed.status == "failed"
    # same bytes under a name citewell reads: a new attempt replaces the failed row
    retried = engine.upload("x.txt", NOTE)
    assert retried.id == failed.id and retried.status == "processing" and retried.error is None
    assert engine.process(retried.id).status == "ready"


def test_lost_staged_bytes_fail_with_upload_lost(engine: Engine) -> None:
    pending = engine.upload("a.txt", NOTE)
    for staged in (engine.store.blobs.root / ".incoming").iterdir():
        staged.unlink()
    failed = engine.process(pending.id)
    assert failed.status == "failed" and failed.error.code == "UPLOAD_LOST"


def test_upload_rejects_a_bad_name_or_metadata(engine: Engine) -> None:
    for name in ("", "  ", "dir/", "..", "\x00\x01"):
        with pytest.raises(UsageError):
            engine.upload(name, NOTE)
    with pytest.raises(UsageError) as bad:
        engine.upload("a.txt", NOTE, metadata={"fiscal_quarter": 7})
    assert "fiscal_quarter" in bad.value.message
    with pytest.raises(UsageError):
        engine.upload("a.txt", NOTE, metadata=["not", "an", "object"])  # type: ignore[arg-type]
    assert engine.resources() == [] and _files(engine.store.blobs.root) == []


def test_a_transcript_upload_keeps_its_provenance(engine: Engine) -> None:
    resource = engine.process(engine.upload("call.vtt", VTT).id)
    assert resource.status == "ready" and resource.kind == "transcript"
    chunk = engine.store.resource_chunks(engine.workspace_id, resource.id)[0]
    assert chunk.text == "Dana: Pumps run at forty bar."
    assert (chunk.metadata["start_time"], chunk.metadata["end_time"], chunk.metadata["blocks"]) == (1.0, 4.0, [0])


# -- deletion --------------------------------------------------------------------------

def test_delete_removes_passages_search_rows_and_the_unshared_blob(engine: Engine, store_path: Path) -> None:
    kept = engine.process(engine.upload("kept.vtt", VTT).id)
    gone = engine.process(engine.upload("gone.txt", NOTE).id)
    chat = engine.chat("before deletion")
    answer = engine.ask("How long are clinic visits?", chat_id=chat.id)
    assert answer.references and answer.references[0].resource_id == gone.id

    engine.delete_resource(gone.id)
    with pytest.raises(NotFoundError):
        engine.resource(gone.id)
    assert [r.id for r in engine.resources()] == [kept.id]
    assert engine.retrieve("clinic visits") == []
    assert sql_rows(store_path, "SELECT count(*) FROM chunks WHERE resource_id = ?", gone.id) == [(0,)]
    lexical = "chunk_fts" if is_sqlite(store_path) else "lexical_docs"  # the lexical index's rows
    assert sql_rows(store_path, f"SELECT count(*) FROM {lexical}") == [(1,)]
    assert sql_rows(store_path, "SELECT count(*) FROM facets WHERE resource_id = ?", gone.id) == [(0,)]
    assert _files(engine.store.blobs.root) == [kept.blob_key]
    # the stored answer keeps its citation (rule 10)
    assert engine.history(chat.id)[1].model_dump() == answer.model_dump()
    with pytest.raises(NotFoundError):
        engine.delete_resource(gone.id)


def test_delete_keeps_a_blob_another_workspace_shares(store_path: Path) -> None:
    with Engine(store_path, workspace="a") as a, Engine(a.store, workspace="b") as b:
        ra = a.process(a.upload("n.txt", NOTE).id)
        rb = b.process(b.upload("n.txt", NOTE).id)
        assert ra.id != rb.id and ra.blob_key == rb.blob_key
        a.delete_resource(ra.id)
        assert b.resource_content(rb.id)[0].read_bytes() == NOTE
        with pytest.raises(NotFoundError):
            b.delete_resource(ra.id)  # another workspace's id: as unknown


def test_deleted_while_processing_does_not_come_back(engine: Engine) -> None:
    pending = engine.upload("a.txt", NOTE)
    engine.delete_resource(pending.id)
    assert engine.process(pending.id) is None
    assert engine.resources() == [] and _files(engine.store.blobs.root) == []


def test_delete_moves_a_shared_post_to_the_other_posts_file(engine: Engine) -> None:
    post = {"source": "reddit", "id": "t3_a", "text": "Turbine five failed at noon.", "url": "https://r/x"}
    other = {"source": "reddit", "id": "t3_b", "text": "All quiet.", "url": "https://r/y"}
    first = engine.process(engine.upload("a.jsonl", (json.dumps(post) + "\n").encode()).id)
    second = engine.process(engine.upload("b.jsonl", (json.dumps(post) + "\n" + json.dumps(other) + "\n").encode()).id)
    assert first.status == second.status == "ready"
    engine.delete_resource(first.id)
    found = engine.store.post_passage(engine.workspace_id, "reddit", "t3_a")
    assert found is not None and found.chunk.resource_id == second.id
    assert engine.retrieve("turbine five")[0].chunk.id == found.chunk.id


# -- listing ---------------------------------------------------------------------------

def test_resources_page_in_creation_order(engine: Engine) -> None:
    ids = [engine.upload(f"n{i}.txt", NOTE + str(i).encode()).id for i in range(5)]
    assert [r.id for r in engine.resources(limit=2)] == ids[:2]
    assert [r.id for r in engine.resources(limit=2, offset=3)] == ids[3:]
    assert [r.id for r in engine.resources(offset=4)] == ids[4:]
    assert engine.count_resources_total() == 5
    assert engine.count_resources_total(statuses=["ready"]) == 0
    with pytest.raises(UsageError):
        engine.resources(limit=-1)


# -- chats of users --------------------------------------------------------------------

def test_a_users_chats_are_hidden_from_other_users(engine: Engine) -> None:
    engine.process(engine.upload("n.txt", NOTE).id)
    mine = engine.chat("mine", user_id="u1", user_email="u1@example.com")
    shared = engine.chat("workspace chat")
    assert (mine.user_id, mine.user_email) == ("u1", "u1@example.com") and shared.user_id is None
    assert [c.id for c in engine.chats(user_id="u1")] == [mine.id]
    assert [c.id for c in engine.chats()] == [mine.id, shared.id]
    answer = engine.ask("How long are clinic visits?", chat_id=mine.id, user_id="u1")
    assert engine.message(answer.id, user_id="u1").chat_id == mine.id
    for call in (lambda: engine.get_chat(mine.id, user_id="u2"), lambda: engine.history(mine.id, user_id="u2"),
                 lambda: engine.message(answer.id, user_id="u2"),
                 lambda: engine.ask("clinic?", chat_id=mine.id, user_id="u2")):
        with pytest.raises(NotFoundError):
            call()
    assert engine.get_chat(mine.id).id == mine.id  # the workspace itself sees every chat


def test_image_url_is_recorded_as_given(engine: Engine, tmp_path: Path) -> None:
    chat = engine.chat()
    image = tmp_path / "blank.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    answer = engine.ask("", image=image, image_url="data:image/png;base64,iVBORw0KGgo=", chat_id=chat.id)
    user, stored = engine.history(chat.id)
    assert answer.image_url == stored.image_url == user.image_url == "data:image/png;base64,iVBORw0KGgo="


# -- schema v5 -------------------------------------------------------------------------

@pytest.mark.sqlite_only("upgrades a SQLite file of an older schema")
def test_v4_store_migrates_to_the_current_version(store_path: Path) -> None:
    with Engine(store_path) as engine:
        chat = engine.chat("old chat")
    conn = sqlite3.connect(store_path)
    conn.executescript("DROP TABLE api_keys; DROP INDEX resources_by_status; DROP TABLE stream_events; "
                       "ALTER TABLE chats DROP COLUMN user_id; ALTER TABLE chats DROP COLUMN user_email; "
                       "DROP TABLE chunk_vectors; DROP INDEX chunks_by_text_hash; "
                       "ALTER TABLE chunks DROP COLUMN text_hash; "
                       "UPDATE meta SET value = '4' WHERE key = 'schema_version';")
    conn.close()
    with Engine(store_path) as engine:
        old = engine.get_chat(chat.id)
        assert (old.title, old.user_id, old.user_email) == ("old chat", None, None)
        key, record = engine.create_key()
        assert engine.store.api_key(hash_key(key)) == record
    assert sql_rows(store_path, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    assert sql_rows(store_path, "SELECT count(*) FROM chunk_vectors") == [(0,)]


@pytest.mark.sqlite_only("upgrades a SQLite file of an older schema")
def test_v7_vectors_become_each_workspace_s_own(store_path: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Ferries leave the harbour at dawn.\n", encoding="utf-8")
    with Engine(store_path, workspace="one") as one, Engine(store_path, workspace="two") as two:
        one.ingest([docs])
        two.ingest([docs])
        text_hash = sql_rows(store_path, "SELECT DISTINCT text_hash FROM chunks")[0][0]
    conn = sqlite3.connect(store_path)  # the v7 shape: one vector per text, whatever the workspace
    conn.executescript("DROP TABLE chunk_vectors; CREATE TABLE chunk_vectors (text_hash TEXT PRIMARY KEY, "
                       "model TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL); "
                       "UPDATE meta SET value = '7' WHERE key = 'schema_version';")
    conn.execute("INSERT INTO chunk_vectors VALUES (?, 'm', 2, ?)", (text_hash, b"\x00" * 8))
    conn.execute("INSERT INTO chunk_vectors VALUES (?, 'm', 2, ?)", ("f" * 64, b"\x00" * 8))  # no chunk has it
    conn.commit()
    conn.close()
    with Engine(store_path, workspace="one") as one, Engine(store_path, workspace="two") as two:
        assert one.store.vector_coverage(one.workspace_id, "m") == (1, 1)
        assert two.store.vector_coverage(two.workspace_id, "m") == (1, 1)
    assert sql_rows(store_path, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    assert sorted(sql_rows(store_path, "SELECT w.name, v.text_hash FROM chunk_vectors v JOIN workspaces w "
                                    "ON w.id = v.workspace_id")) == [("one", text_hash), ("two", text_hash)]


def test_secrets_are_made_once_and_shared(store_path: Path) -> None:
    first = open_store(store_path).secret("presign")
    assert len(first) == 32
    assert open_store(store_path).secret("presign") == first  # another process reads the same
    assert open_store(store_path).secret("other") != first


def test_stream_events_are_recorded_in_order(engine: Engine) -> None:
    store, ws = engine.store, engine.workspace_id
    store.append_events(ws, "m1", [(1, "conversation", '{"a": 1}'), (2, "answer", '{"delta": "x"}')])
    store.append_events(ws, "m1", [(3, "done", "{}")])
    assert store.events(ws, "m1") == [(1, "conversation", '{"a": 1}'), (2, "answer", '{"delta": "x"}'),
                                      (3, "done", "{}")]
    assert store.events(ws, "m1", after=2) == [(3, "done", "{}")]
    assert store.events("other-workspace", "m1") == []
    with pytest.raises(StoreError):
        store.append_events(ws, "m1", [(4, "more", "{}"), (3, "done", "{}")])
    assert store.events(ws, "m1", after=2) == [(3, "done", "{}")]  # all or nothing


def test_keys_list_and_revoke_cli(store_path: str | Path) -> None:
    store = store_path

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "citewell", "keys", *args, "--store", str(store)],
                              capture_output=True, text=True, timeout=120)

    key = cli("create", "--workspace", "acme").stdout.splitlines()[-1]
    other = cli("create", "--workspace", "beta", "--platform").stdout.splitlines()[-1]
    listed = json.loads(cli("list", "--json").stdout)
    assert [(k["prefix"], k["workspace"], k["platform"]) for k in listed] == [(key[:8], "acme", False),
                                                                              (other[:8], "beta", True)]
    assert key not in cli("list").stdout
    assert [k["workspace"] for k in json.loads(cli("list", "--workspace", "beta", "--json").stdout)] == ["beta"]
    revoked = cli("revoke", listed[0]["id"])
    assert revoked.returncode == 0, revoked.stderr
    assert open_store(store).api_key(hash_key(key)) is None
    assert open_store(store).api_key(hash_key(other)) is not None
    missing = cli("revoke", listed[0]["id"])
    assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr
    assert cli("revoke", other[:8]).returncode == 0  # by prefix
    assert json.loads(cli("list", "--json").stdout) == []


def test_an_unanswered_question_says_when_uploads_are_still_processing(engine: Engine) -> None:
    pending = engine.upload("clinic.txt", NOTE)
    answer = engine.ask("How long are clinic visits?")
    assert not answer.references
    assert [(w.code, w.model_extra["processing"]) for w in answer.warnings
            if w.code == "RESOURCES_PROCESSING"] == [("RESOURCES_PROCESSING", 1)]
    engine.process(pending.id)
    answer = engine.ask("How long are clinic visits?")
    assert answer.references and not [w for w in answer.warnings if w.code == "RESOURCES_PROCESSING"]


# -- races and odd posts (found by adversarial testing) ------------------------------------

def test_a_delete_waits_for_a_commit_of_the_same_bytes_in_another_workspace(store_path: Path) -> None:
    import threading

    data = NOTE * 1000
    with Engine(store_path, workspace="a") as a, Engine(a.store, workspace="b") as b:
        ra = a.process(a.upload("n.txt", data).id)
        pending = b.upload("n.txt", data)
        real_commit = b.store.commit_resource
        deleter: list[threading.Thread] = []

        def commit_while_a_deletes(*args, **kwargs):
            # b has written (found) the shared blob and holds the blob lock: a's delete must wait
            thread = threading.Thread(target=a.delete_resource, args=(ra.id,))
            thread.start()
            thread.join(0.3)
            assert thread.is_alive(), "the delete did not wait for the blob lock"
            deleter.append(thread)
            return real_commit(*args, **kwargs)

        b.store.commit_resource = commit_while_a_deletes  # type: ignore[method-assign]
        try:
            rb = b.process(pending.id)
        finally:
            b.store.commit_resource = real_commit  # type: ignore[method-assign]
        deleter[0].join(10)
        assert rb.status == "ready"
        assert b.resource_content(rb.id)[0].read_bytes() == data
        with pytest.raises(NotFoundError):
            a.resource(ra.id)


def test_an_upload_deleted_while_processing_never_overwrites_its_reupload(engine: Engine) -> None:
    first = engine.upload("n.txt", NOTE, metadata={"title": "first"})
    stale = engine.resource(first.id)  # what a worker already processing it has read
    engine.delete_resource(first.id)
    second = engine.upload("n.txt", NOTE, metadata={"title": "second"})
    assert second.id == first.id and second.created_at != stale.created_at
    from citewell.ingest.pipeline import extract

    ready = stale.model_copy(update={"status": "ready", "kind": "text"})
    assert engine._ingestor._commit_upload(ready, extract(NOTE, name="n.txt", fmt="text"), NOTE) is None
    done = engine.process(second.id)
    assert (done.status, done.title) == ("ready", "second")
    assert _files(engine.store.blobs.root / ".incoming") == []


def test_posts_with_object_and_number_fields_are_stored_as_text(engine: Engine) -> None:
    lines = [{"source": "tw", "id": "1", "text": "Turbine five failed at noon.", "author": {"name": "x"},
              "url": 42, "created_at": ["2022-01-05"]},
             {"source": "tw", "id": "2", "text": "All quiet.", "author": None, "url": "https://t/2"}]
    resource = engine.process(engine.upload("p.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode()).id)
    assert resource.status == "ready"
    first, second = engine.store.mentions(engine.workspace_id, [("tw", "1"), ("tw", "2")])
    assert (first.author, first.url, first.created_at) == ('{"name":"x"}', "42", '["2022-01-05"]')
    assert second.url == "https://t/2" and second.author is None
    answer = engine.ask("turbine five")
    assert answer.references[0].id == "1" and answer.references[0].metadata["author"] == '{"name":"x"}'
