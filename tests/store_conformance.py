"""What every store must do, as test classes that need only a ``store`` fixture.

Each class covers one concern of :mod:`citewell.store` (keys, events, resources and sync,
uploads, search, vectors, chats and messages, mentions, tracking agents, tenant isolation). A backend's
test module subclasses each class once and provides ``store`` (a fresh, empty store):
``tests/test_store_conformance.py`` does so for SQLite. The module's name does not start
with ``test_``, so the classes run only through their subclasses.
"""

from __future__ import annotations

import hashlib
import struct
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from citewell.answer.messages import stored_message, stored_messages
from citewell.errors import NotFoundError, StoreError, UsageError
from citewell.extraction import ChunkDraft, Extraction, MentionDraft
from citewell.models import Message, Resource, utcnow
from citewell.store.base import Condition, Store, TextHit
from citewell.store.ids import chunk_id_for, resource_id_for, text_hash

VERSION = "conformance-1"


def _resource(workspace_id: str, name: str, content: str, *, status: str = "ready", kind: str = "text",
              metadata: dict[str, Any] | None = None) -> Resource:
    sha = hashlib.sha256(content.encode()).hexdigest()
    return Resource(id=resource_id_for(workspace_id, sha), workspace_id=workspace_id, title=name.rsplit(".", 1)[0],
                    file_name=name, kind=kind, media_type="text/plain", sha256=sha, size_bytes=len(content),
                    blob_key=sha, status=status, extractor_version=VERSION, metadata=metadata or {})


def _extraction(*pieces: str, kind: str = "text") -> Extraction:
    text, drafts = "", []
    for piece in pieces:
        start = len(text) + (1 if text else 0)
        text = f"{text}\n{piece}" if text else piece
        drafts.append(ChunkDraft(text=piece, char_start=start, char_end=start + len(piece), text_type="paragraph",
                                 metadata={"source_type": kind}))
    return Extraction(kind=kind, media_type="text/plain", text=text, chunks=drafts)


def ingest(store: Store, workspace_id: str, name: str, *pieces: str, path: str | None = None,
           metadata: dict[str, Any] | None = None) -> Resource:
    """Commit a ready text resource of ``pieces`` (one chunk each) at ``path``."""
    resource = _resource(workspace_id, name, "\n".join(pieces), metadata=metadata)
    return store.commit_resource(workspace_id, resource, _extraction(*pieces), path=path or f"/docs/{name}",
                                 size_bytes=resource.size_bytes, mtime_ns=1)


def _vector(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


class KeysContract:
    """Workspaces, secrets and API keys."""

    def test_workspaces_by_name(self, store: Store) -> None:
        first = store.workspace_id("acme")
        assert store.workspace_id("acme") == first and store.workspace_name(first) == "acme"
        assert store.workspace_id("beta") != first
        assert store.workspace_ids() == [first, store.workspace_id("beta")]
        with pytest.raises(NotFoundError):
            store.workspace_id("nobody", create=False)
        with pytest.raises(NotFoundError):
            store.workspace_name("no-such-id")

    def test_secrets_are_made_once(self, store: Store) -> None:
        secret = store.secret("signing")
        assert len(secret) == 32 and store.secret("signing") == secret and store.secret("other") != secret

    def test_keys_by_hash_id_and_prefix(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        record = store.create_api_key(ws, "h" * 64, platform=True, prefix="cw_abcde")
        assert record.workspace_id == ws and record.platform is True and record.prefix == "cw_abcde"
        assert store.api_key("h" * 64) == record and store.api_key("x" * 64) is None
        assert store.api_key_by_id(record.id) == record and store.api_key_by_id("cw_abcde") is None
        other = store.create_api_key(ws, "g" * 64, platform=False, prefix="cw_fghij")
        assert store.api_keys(ws) == [record, other] and store.api_keys() == [record, other]
        assert store.delete_api_key("cw_abcde") is True  # by its prefix, which one key has
        assert store.api_key("h" * 64) is None and store.api_keys() == [other]
        assert store.delete_api_key("nothing") is False
        with pytest.raises(NotFoundError):
            store.create_api_key("no-such-workspace", "k" * 64, platform=False, prefix="cw_zzzzz")


class EventsContract:
    """Stream events of answers."""

    def test_events_in_order_after_a_seq(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        store.append_events(ws, "m1", [(1, "a", "{}"), (2, "b", '{"x":1}')])
        store.append_events(ws, "m1", [(3, "c", "[]")])
        assert store.events(ws, "m1") == [(1, "a", "{}"), (2, "b", '{"x":1}'), (3, "c", "[]")]
        assert store.events(ws, "m1", after=2) == [(3, "c", "[]")]
        assert store.events(ws, "m2") == []

    def test_a_seq_is_recorded_once(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        store.append_events(ws, "m1", [(1, "a", "{}")])
        with pytest.raises(Exception):
            store.append_events(ws, "m1", [(2, "b", "{}"), (1, "again", "{}")])
        assert store.events(ws, "m1") == [(1, "a", "{}")]  # the failed batch left nothing


class ResourcesContract:
    """Resources, their chunks and file records (sync)."""

    def test_commit_reads_back(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        resource = ingest(store, ws, "pumps.txt", "Pumps run at forty bar.", "Valves close at night.")
        assert resource.chunk_count == 2
        read = store.resource(ws, resource.id)
        assert (read.status, read.title, read.paths, read.chunk_count) == ("ready", "pumps", ["/docs/pumps.txt"], 2)
        chunks = store.resource_chunks(ws, resource.id)
        assert [c.text for c in chunks] == ["Pumps run at forty bar.", "Valves close at night."]
        assert chunks[0].id == chunk_id_for(ws, resource.sha256, VERSION, 0)
        text = store.resource_text(ws, resource.id)
        assert all(text[c.char_start:c.char_end] == c.text for c in chunks)
        passages = store.chunks(ws, [chunks[1].id, "no-such-chunk"])
        assert list(passages) == [chunks[1].id] and passages[chunks[1].id].resource_title == "pumps"
        assert store.resource_by_sha(ws, resource.sha256).id == resource.id
        assert store.blob_referenced(resource.sha256) and not store.blob_referenced("0" * 64)
        record = store.file_record(ws, "/docs/pumps.txt")
        assert record.resource_id == resource.id and record.present and record.last_sha256 == resource.sha256
        assert store.total_resources(ws) == 1 and store.total_resources(ws, statuses=["failed"]) == 0

    def test_a_changed_file_supersedes_and_a_gone_one_goes_missing(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        old = ingest(store, ws, "a.txt", "First version of the note.", path="/docs/a.txt")
        new = ingest(store, ws, "a.txt", "Second version of the note.", path="/docs/a.txt")
        assert store.resource(ws, old.id).status == "superseded" and store.resource(ws, new.id).status == "ready"
        other = ingest(store, ws, "b.txt", "Another note entirely.", path="/docs/b.txt")
        assert store.mark_missing(ws, "/docs", ["/docs/b.txt"]) == [new.id]
        assert store.resource(ws, new.id).status == "missing" and store.resource(ws, other.id).status == "ready"
        assert [r.id for r in store.resources(ws, statuses=["ready"])] == [other.id]
        store.link_path(ws, "/docs/c.txt", store.resource(ws, new.id), size_bytes=1, mtime_ns=2)
        assert store.resource(ws, new.id).status == "ready" and store.resource(ws, new.id).paths == ["/docs/c.txt"]

    def test_paging_and_folders(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        made = [ingest(store, ws, f"n{i}.txt", f"Note number {i}.", path=f"/{'x' if i % 2 else 'y'}/n{i}.txt")
                for i in range(5)]
        assert [r.id for r in store.resources(ws)] == [r.id for r in made]
        assert [r.id for r in store.resources(ws, limit=2, offset=1)] == [made[1].id, made[2].id]
        assert [r.id for r in store.resources(ws, under="/x")] == [made[1].id, made[3].id]

    def test_metadata_update_and_page_neighbours(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        resource = ingest(store, ws, "r.txt", "Revenue grew strongly.")
        store.update_resource_metadata(ws, resource.id, title="Annual report", metadata={"fiscal_year": 2022},
                                       custom_metadata={"team": "ir"})
        read = store.resource(ws, resource.id)
        assert (read.title, read.metadata, read.custom_metadata) == ("Annual report", {"fiscal_year": 2022},
                                                                     {"team": "ir"})
        assert store.count_resources(ws, conditions=[Condition("fiscal_year", "eq", ("2022",))]) == 1
        assert store.count_resources(ws, conditions=[Condition("fiscal_year", "eq", ("2021",))]) == 0
        chunk = store.resource_chunks(ws, resource.id)[0]
        assert store.page_passages(ws, chunk.id) == []  # a text chunk has no page


class UploadsContract:
    """Uploads recorded before extraction, and deletion."""

    def test_upload_then_commit(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        pending = _resource(ws, "u.txt", "Uploaded text here.", status="processing")
        assert store.begin_upload(ws, pending).status == "processing"
        assert store.pending_uploads() == [(ws, pending.id)]
        assert store.begin_upload(ws, pending.model_copy()).id == pending.id  # the same bytes again
        ready = pending.model_copy(update={"status": "ready"})
        store.commit_resource(ws, ready, _extraction("Uploaded text here."), path=None, size_bytes=1, mtime_ns=0,
                              upload=True)
        assert store.resource(ws, pending.id).status == "ready" and store.pending_uploads() == []

    def test_delete_removes_everything_derived(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        resource = ingest(store, ws, "d.txt", "Deleted soon, quartz.")
        chunk = store.resource_chunks(ws, resource.id)[0]
        store.put_vectors(ws, "m", 2, [(text_hash(chunk.text), _vector(1, 0))])
        assert store.delete_resource(ws, resource.id) == resource.blob_key
        assert store.search_text(ws, ["quartz"], limit=5) == []
        assert store.chunks(ws, [chunk.id]) == {} and store.vectors(ws, "m", [chunk.id]) == {}
        assert store.file_record(ws, "/docs/d.txt") is None and not store.blob_referenced(resource.blob_key)
        with pytest.raises(NotFoundError):
            store.resource(ws, resource.id)
        with pytest.raises(NotFoundError):
            store.delete_resource(ws, resource.id)

    def test_an_upload_deleted_while_processing_stays_deleted(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        pending = store.begin_upload(ws, _resource(ws, "u.txt", "Short lived.", status="processing"))
        store.delete_resource(ws, pending.id)
        with pytest.raises(NotFoundError):
            store.commit_resource(ws, pending.model_copy(update={"status": "ready"}), _extraction("Short lived."),
                                  path=None, size_bytes=1, mtime_ns=0, upload=True)


class SearchContract:
    """Lexical search, term statistics and the resources a search reads."""

    def test_bm25_ranks_and_filters(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        one = ingest(store, ws, "one.txt", "Pumps run at forty bar in the plant.", "Nothing here.",
                     metadata={"fiscal_year": 2021})
        two = ingest(store, ws, "two.txt", "Pumps pumps pumps: the pump room.", metadata={"fiscal_year": 2022})
        found = store.search_text(ws, ["pumps"], limit=5)
        assert [p.chunk.resource_id for p in found] == [two.id, one.id]
        assert found[0].score > found[1].score > 0 and [p.rank for p in found] == [1, 2]
        assert store.search_text(ws, ["pumps"], limit=1)[0].chunk.resource_id == two.id
        year = [Condition("fiscal_year", "eq", ("2021",))]
        assert [p.chunk.resource_id for p in store.search_text(ws, ["pumps"], limit=5, conditions=year)] == [one.id]
        assert store.search_text(ws, ['"NEAR(', "*"], limit=5) == []  # never a syntax error
        assert store.search_text(ws, ["pumps"], limit=0) == []
        assert [r.id for r in store.scope_resources(ws, conditions=year)] == [one.id]
        assert [r.id for r in store.ranking_resources(ws)] == [one.id, two.id]

    def test_search_hits_are_search_texts_matches_without_metadata(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        one = ingest(store, ws, "one.txt", "Pumps run at forty bar in the plant.", "Nothing here.",
                     metadata={"fiscal_year": 2021})
        ingest(store, ws, "two.txt", "Pumps pumps pumps: the pump room.", "Valves, pumps.",
               metadata={"fiscal_year": 2022})
        year = [Condition("fiscal_year", "eq", ("2021",))]
        source = [Condition("source", "eq", ("nothing",))]  # a chunk-level key: the SQL ranking answers
        for terms, conditions, limit in ((["pumps"], [], 5), (["pumps", "plant"], [], 2), (["pumps"], year, 5),
                                         (["pumps"], source, 5), (["quartz"], [], 5), (["pumps"], [], 0)):
            passages = store.search_text(ws, terms, limit=limit, conditions=conditions)
            hits = store.search_hits(ws, terms, limit=limit, conditions=conditions)
            assert hits == [TextHit(p.chunk.id, p.chunk.resource_id, p.chunk.text, p.score) for p in passages]
        assert [h.resource_id for h in store.search_hits(ws, ["plant"], limit=5)] == [one.id]
        assert store.search_hits(ws, ["pumps"], limit=5)[0].text == "Pumps pumps pumps: the pump room."

    def test_term_counts(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        ingest(store, ws, "a.txt", "Red pumps and blue valves.", "Red valves only.", "Green pumps.")
        n, counts = store.term_counts(ws, [["red"], ["pumps"], ["red", "pumps"], ["purple"], []])
        assert (n, counts) == (3, [2, 2, 1, 0, 0])

    def test_what_a_write_changes_is_seen_by_the_next_search(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        first = ingest(store, ws, "a.txt", "Quartz clocks tick.")
        assert len(store.search_text(ws, ["quartz"], limit=5)) == 1
        second = ingest(store, ws, "b.txt", "Quartz watches too.")
        assert {p.chunk.resource_id for p in store.search_text(ws, ["quartz"], limit=5)} == {first.id, second.id}
        store.delete_resource(ws, first.id)
        assert [p.chunk.resource_id for p in store.search_text(ws, ["quartz"], limit=5)] == [second.id]


class VectorsContract:
    """Chunk vectors: what needs one, storing, reading, the matrix dense search ranks."""

    def test_vectors_by_text(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        resource = ingest(store, ws, "v.txt", "Alpha text.", "Beta text, longer.", "Alpha text.")
        chunks = store.resource_chunks(ws, resource.id)
        todo = store.texts_without_vectors(ws, "m")
        assert todo == [(text_hash("Alpha text."), "Alpha text."), (text_hash("Beta text, longer."),
                                                                   "Beta text, longer.")]
        assert store.missing_vectors(ws, "m") == 2 and store.vector_coverage(ws, "m") == (0, 3)
        assert store.put_vectors(ws, "m", 2, [(text_hash("Alpha text."), _vector(1, 0)),
                                              (text_hash("not a chunk of the workspace"), _vector(0, 1))]) == 1
        assert store.vector_coverage(ws, "m") == (2, 3) and store.missing_vectors(ws, "m") == 1
        query = np.array([0.6, 0.8], dtype="<f4")  # cosine 0.6 with (1, 0); ties in chunk order
        assert [(cid, round(score, 6)) for cid, score in store.nearest_chunks(ws, "m", query, limit=5)] \
            == [(chunks[0].id, 0.6), (chunks[2].id, 0.6)]
        assert [cid for cid, _ in store.nearest_chunks(ws, "m", query, limit=1)] == [chunks[0].id]
        assert store.nearest_chunks(ws, "m", query, limit=0) == [] and store.nearest_chunks(ws, "x", query, limit=3) == []
        assert store.vectors(ws, "m", [chunks[0].id, chunks[1].id]) == {chunks[0].id: _vector(1, 0)}
        assert store.scope_vectors(ws, "m") == [(chunks[0].id, _vector(1, 0)), (chunks[2].id, _vector(1, 0))]
        with pytest.raises(StoreError):
            store.put_vectors(ws, "m", 3, [(text_hash("Beta text, longer."), _vector(1, 0))])

    def test_shortest_first(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        ingest(store, ws, "s.txt", "A much longer passage of text.", "Short.")
        assert [t for _, t in store.texts_without_vectors(ws, "m", shortest_first=True)] == [
            "Short.", "A much longer passage of text."]
        assert len(store.texts_without_vectors(ws, "m", limit=1)) == 1


class ChatsContract:
    """Chats and messages, read back through rule 10."""

    def test_messages_read_back_exactly(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        chat = store.create_chat(ws)
        assert chat.title is None and store.chats(ws) == [chat]
        stored = store.add_messages(ws, chat.id, [Message(role="user", text="What runs at forty bar?"),
                                                  Message(role="assistant", text="", status="pending")])
        assert store.chat(ws, chat.id).title == "What runs at forty bar?"
        settled = stored[1].model_copy(update={"text": "Pumps [1].", "status": "settled"})
        answer = store.settle_message(ws, settled)
        assert (answer.text, answer.status, answer.chat_id) == ("Pumps [1].", "settled", chat.id)
        with pytest.raises(UsageError):
            store.settle_message(ws, settled)
        read = stored_messages(store, ws, chat.id)
        assert [m.model_dump_json() for m in read] == [stored[0].model_dump_json(), answer.model_dump_json()]
        assert stored_message(store, ws, stored[0].id).model_dump_json() == stored[0].model_dump_json()
        assert [m.id for m in stored_messages(store, ws, chat.id, after=stored[0].id)] == [stored[1].id]
        with pytest.raises(NotFoundError):
            stored_message(store, ws, "no-such-message")
        with pytest.raises(UsageError):
            store.add_message(ws, chat.id, Message(id=stored[0].id, role="user", text="again"))

    def test_users_and_pending_turns(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        mine = store.create_chat(ws, "Mine", user_id="u1", user_email="u1@example.com")
        store.create_chat(ws, "Theirs", user_id="u2")
        assert [c.title for c in store.chats(ws, user_id="u1")] == ["Mine"]
        with pytest.raises(NotFoundError):
            store.chat(ws, mine.id, user_id="u2")
        old = Message(role="assistant", status="pending", created_at=utcnow() - timedelta(hours=1))
        pending = store.add_message(ws, mine.id, old)
        assert store.fail_pending(before=utcnow(), code="INTERRUPTED", message="stopped") == 1
        failed = stored_message(store, ws, pending.id)
        assert failed.status == "failed" and failed.warnings[-1].code == "INTERRUPTED"

    def test_a_legacy_row_is_converted_once(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        chat = store.create_chat(ws)
        message_id = store.add_legacy_message(ws, chat.id, {"role": "assistant", "text": "Plain answer."})
        assert store.message_row(ws, message_id)["format_version"] is None
        first = stored_message(store, ws, message_id)
        row = store.message_row(ws, message_id)
        assert row["format_version"] == first.format_version and row["payload"] == first.model_dump_json()
        assert store.save_conversion(ws, message_id, first)["payload"] == first.model_dump_json()  # once


class MentionsContract:
    """Posts of posts files."""

    def test_mentions_by_ref_and_listed(self, store: Store) -> None:
        ws = store.workspace_id("acme")
        text = "Great pumps from Acme."
        resource = _resource(ws, "posts.jsonl", text, kind="post")
        extraction = _extraction(text, kind="post")
        extraction.chunks[0].metadata.update(source="twitter", id="42", created_at="2024-05-01T10:00:00Z")
        extraction.mentions.append(MentionDraft(source="Twitter", id="42", chunk_position=0,
                                                fields={"text": text, "author": "dana",
                                                        "created_at": "2024-05-01T10:00:00Z"}))
        store.commit_resource(ws, resource, extraction, path="/posts.jsonl", size_bytes=1, mtime_ns=1)
        found, missing = store.mentions(ws, [("twitter", "42"), ("twitter", "43")])
        assert missing is None and (found.text, found.author, found.dataset_id) == (text, "dana", resource.id)
        assert store.post_passage(ws, "TWITTER", "42").chunk.text == text
        assert [m.id for m in store.list_mentions(ws, terms=["pumps"])] == ["42"]
        assert store.list_mentions(ws, terms=["valves"]) == []
        assert store.list_mentions(ws, after=("2024-05-01T10:00:00Z", "twitter", "42", resource.id)) == []


def _posts(store: Store, workspace_id: str, name: str, *posts: tuple[str, str, str]) -> Resource:
    """Commit a ready posts file of ``posts`` (``(source, id, created_at)``, one chunk each)."""
    texts = [f"Post {post_id} from {source} about pumps." for source, post_id, _ in posts]
    resource = _resource(workspace_id, name, "\n".join(texts), kind="post")
    extraction = _extraction(*texts, kind="post")
    for position, (source, post_id, created_at) in enumerate(posts):
        extraction.chunks[position].metadata.update(source=source, id=post_id, created_at=created_at)
        extraction.mentions.append(MentionDraft(source=source, id=post_id, chunk_position=position,
                                                fields={"text": texts[position], "created_at": created_at}))
    store.commit_resource(workspace_id, resource, extraction, path=f"/{name}", size_bytes=1, mtime_ns=1)
    return resource


class TrackingContract:
    """Tracking agents: records, the run lease, post arrivals, alerts and patterns."""

    def test_agents_are_kept_changed_and_deleted_per_workspace(self, store: Store) -> None:
        tracking = store.tracking()
        a, b = store.workspace_id("a"), store.workspace_id("b")
        first = tracking.create_agent(a, name="pumps", query="pump failures", filters={"sources": ["twitter"]},
                                      interval_s=3600, state="active")
        second = tracking.create_agent(a, name="valves", query="valves", filters={}, interval_s=60, state="paused")
        assert (first.name, first.filters, first.interval_s, first.state, first.watermark, first.runs) == \
            ("pumps", {"sources": ["twitter"]}, 3600, "active", 0, 0)
        assert first.next_run_at == first.created_at and first.last_run_at is None and first.alerts == 0
        assert [x.id for x in tracking.agents(a)] == [first.id, second.id] and tracking.agents(b) == []
        changed = tracking.update_agent(a, first.id, {"name": "Pumps", "interval_s": 60, "filters": {}})
        assert (changed.name, changed.interval_s, changed.filters) == ("Pumps", 60, {})
        assert changed.next_run_at == first.created_at + timedelta(seconds=60)  # no run yet: from its creation
        for call in (lambda: tracking.agent(b, first.id), lambda: tracking.update_agent(b, first.id, {"name": "x"}),
                     lambda: tracking.delete_agent(b, first.id)):
            with pytest.raises(NotFoundError):
                call()
        tracking.delete_agent(a, first.id)
        assert [x.id for x in tracking.agents(a)] == [second.id]
        with pytest.raises(NotFoundError):
            tracking.agent(a, first.id)

    def test_one_run_holds_the_lease_until_it_ends_or_expires(self, store: Store) -> None:
        tracking = store.tracking()
        ws = store.workspace_id("a")
        agent = tracking.create_agent(ws, name="n", query="q", filters={}, interval_s=600, state="active")
        paused = tracking.create_agent(ws, name="p", query="q", filters={}, interval_s=600, state="paused")
        now = agent.next_run_at + timedelta(seconds=5)
        assert tracking.due_agents(now) == [(ws, agent.id)]
        token = tracking.claim(ws, agent.id, owner="one", now=now, lease_s=30, due_only=True)
        assert token is not None
        assert tracking.claim(ws, agent.id, owner="two", now=now, lease_s=30, due_only=False) is None
        assert tracking.due_agents(now) == []  # leased
        assert tracking.claim(ws, paused.id, owner="two", now=now, lease_s=30, due_only=True) is None
        later = now + timedelta(seconds=31)  # the first run's lease expired: another run takes over
        taken = tracking.claim(ws, agent.id, owner="two", now=later, lease_s=30, due_only=True)
        assert taken is not None and taken != token
        assert tracking.release(ws, agent.id, token, now=later, error=None) is False  # no longer its lease
        assert tracking.release(ws, agent.id, taken, now=later, error={"code": "X", "message": "m"}) is True
        ended = tracking.agent(ws, agent.id)
        assert (ended.last_error, ended.runs, ended.last_run_at, ended.lease_owner) == \
            ({"code": "X", "message": "m"}, 1, later, None)
        assert ended.next_run_at == agent.next_run_at + timedelta(seconds=600)  # the next tick after the run
        assert tracking.due_agents(later) == []

    def test_posts_arrive_once_in_order_and_runs_write_their_results(self, store: Store) -> None:
        from citewell.store.tracking import PatternMember, PatternRecord

        tracking = store.tracking()
        ws, other = store.workspace_id("a"), store.workspace_id("b")
        _posts(store, ws, "one.jsonl", ("Twitter", "2", "2024-05-02T00:00:00Z"), ("Twitter", "1", "2024-05-01T00:00:00Z"))
        _posts(store, other, "one.jsonl", ("Twitter", "9", "2024-05-01T00:00:00Z"))
        assert tracking.register_arrivals(ws) == 2
        assert tracking.arrivals(ws, after=0, upto=2) == [("twitter", "1"), ("twitter", "2")]
        _posts(store, ws, "two.jsonl", ("Twitter", "2", "2024-05-02T00:00:00Z"), ("Reddit", "3", None))
        assert tracking.register_arrivals(ws) == 3  # post 2 arrived already (another file holds it again)
        assert tracking.arrivals(ws, after=2, upto=3) == [("reddit", "3")]
        assert tracking.register_arrivals(ws) == 3 and tracking.arrivals(other, after=0, upto=9) == []
        agent = tracking.create_agent(ws, name="n", query="q", filters={}, interval_s=600, state="active")
        now = agent.next_run_at
        token = tracking.claim(ws, agent.id, owner="one", now=now, lease_s=30, due_only=False)
        assert token is not None
        members = (PatternMember("twitter", "1", "d1", "2024-05-01T00:00:00Z"), PatternMember("twitter", "2", "d1"))
        pattern = PatternRecord(id="p1", workspace_id=ws, agent_id=agent.id, label="pumps", members=members,
                                datasets=("d1",), sources=("twitter",), first_seen="2024-05-01T00:00:00Z",
                                last_seen="2024-05-01T00:00:00Z", trend={"direction": "up", "buckets": [1, 2]})
        alerts = [Message(id=f"m{i}", role="assistant", text=f"alert {i}") for i in range(3)]
        assert tracking.finish_run(ws, agent.id, "not-the-token", now=now, watermark=3, alert=alerts[0],
                                   alerted=[("twitter", "1")], patterns=[pattern]) is False
        assert tracking.alerts(ws, agent.id, limit=5) == [] and tracking.total_patterns(ws) == 0
        assert tracking.finish_run(ws, agent.id, token, now=now, watermark=3, alert=alerts[0],
                                   alerted=[("twitter", "1"), ("twitter", "1")], patterns=[pattern]) is True
        for message in alerts[1:]:
            token = tracking.claim(ws, agent.id, owner="one", now=now, lease_s=30, due_only=False)
            assert tracking.finish_run(ws, agent.id, token, now=now, watermark=3, alert=message,
                                       alerted=[("twitter", "2")], patterns=[]) is True
        done = tracking.agent(ws, agent.id)
        assert (done.watermark, done.runs, done.alerts, done.last_error, done.lease_owner) == (3, 3, 3, None, None)
        assert [m.text for m in tracking.alerts(ws, agent.id, limit=2)] == ["alert 2", "alert 1"]
        assert [m.text for m in tracking.alerts(ws, agent.id, limit=5, before="m1")] == ["alert 0"]
        assert tracking.alert(ws, "m2")[0] == agent.id and tracking.alert(ws, "m2")[1].text == "alert 2"
        assert tracking.alerted(ws, agent.id, [("twitter", "1"), ("twitter", "2"), ("reddit", "3")]) == \
            {("twitter", "1"), ("twitter", "2")}
        stored = tracking.pattern(ws, "p1")
        assert (stored.members, stored.trend, stored.size, stored.created_at) == (members, pattern.trend, 2, now)
        assert [p.id for p in tracking.patterns(ws, limit=5)] == ["p1"] and tracking.total_patterns(other) == 0
        for call in (lambda: tracking.alert(other, "m2"), lambda: tracking.pattern(other, "p1"),
                     lambda: tracking.alerts(ws, agent.id, limit=1, before="nope")):
            with pytest.raises(NotFoundError):
                call()
        tracking.delete_agent(ws, agent.id)
        assert tracking.total_patterns(ws) == 1  # patterns describe the mentions: they stay
        with pytest.raises(NotFoundError):
            tracking.alert(ws, "m2")


class IsolationContract:
    """One workspace never sees another's rows."""

    def test_nothing_crosses_workspaces(self, store: Store) -> None:
        a, b = store.workspace_id("a"), store.workspace_id("b")
        resource = ingest(store, a, "secret.txt", "Zirconium secret plans.")
        chunk = store.resource_chunks(a, resource.id)[0]
        store.put_vectors(a, "m", 2, [(text_hash(chunk.text), _vector(1, 0))])
        chat = store.create_chat(a)
        message = store.add_message(a, chat.id, Message(role="user", text="hello"))
        assert store.search_text(b, ["zirconium"], limit=5) == []
        assert store.chunks(b, [chunk.id]) == {} and store.vectors(b, "m", [chunk.id]) == {}
        assert store.resources(b) == [] and store.term_counts(b, [["zirconium"]]) == (0, [0])
        assert store.put_vectors(b, "m", 2, [(text_hash(chunk.text), _vector(0, 1))]) == 0
        for call in (lambda: store.resource(b, resource.id), lambda: store.chat(b, chat.id),
                     lambda: stored_message(store, b, message.id), lambda: store.delete_resource(b, resource.id)):
            with pytest.raises(NotFoundError):
                call()
        assert store.resource(a, resource.id).status == "ready"


class JobsContract:
    """Jobs: claim, lease, retry with backoff, dead letter, fairness, concurrent claims."""

    def test_claim_runs_a_job_once(self, store: Store) -> None:
        job, created = store.enqueue_job("ws1", "extract", {"resource_id": "r1"}, key="extract:r1", now=100.0)
        assert created and job.state == "queued" and job.attempts == 0 and job.payload == {"resource_id": "r1"}
        again, created = store.enqueue_job("ws1", "extract", {"resource_id": "r1"}, key="extract:r1", now=101.0)
        assert not created and again.id == job.id  # one queued job per key
        assert store.claim_job("w", kinds=["embed"], lease_s=30, now=102.0) is None  # another kind
        claimed = store.claim_job("w", kinds=["extract"], lease_s=30, now=102.0)
        assert claimed is not None and claimed.id == job.id
        assert (claimed.state, claimed.attempts, claimed.lease_owner, claimed.lease_expires) == ("running", 1, "w", 132.0)
        assert store.claim_job("w2", kinds=["extract"], lease_s=30, now=103.0) is None  # never twice
        assert store.renew_job(job.id, claimed.lease_token or "", lease_s=30, now=120.0)
        assert store.job(job.id).lease_expires == 150.0
        assert not store.renew_job(job.id, "not-the-token", lease_s=30, now=120.0)
        assert store.finish_job(job.id, claimed.lease_token or "", now=121.0)
        assert store.job(job.id).state == "done" and not store.finish_job(job.id, claimed.lease_token or "")
        # the key is free again once the job is done
        _, created = store.enqueue_job("ws1", "extract", {"resource_id": "r1"}, key="extract:r1", now=122.0)
        assert created
        with pytest.raises(NotFoundError):
            store.job("no-such-job")

    def test_failures_retry_with_backoff_then_dead_letter(self, store: Store) -> None:
        job, _ = store.enqueue_job("ws1", "embed", {}, max_attempts=3, now=0.0)
        for attempt, (at, delay) in enumerate([(0.0, 5.0), (5.0, 10.0)], start=1):
            claimed = store.claim_job("w", kinds=["embed"], lease_s=30, now=at)
            assert claimed is not None and claimed.attempts == attempt
            assert store.fail_job(job.id, claimed.lease_token or "", code="BOOM", message="it broke", backoff_s=5.0,
                                  now=at) == "queued"
            waiting = store.job(job.id)
            assert waiting.run_after == at + delay and waiting.error == {"code": "BOOM", "message": "it broke"}
            assert store.claim_job("w", kinds=["embed"], lease_s=30, now=at + delay - 0.5) is None  # backing off
        last = store.claim_job("w", kinds=["embed"], lease_s=30, now=15.0)
        assert last is not None and last.attempts == 3
        assert store.fail_job(job.id, last.lease_token or "", code="BOOM", message="still broken", now=15.0) == "failed"
        dead = store.job(job.id)
        assert dead.state == "failed" and dead.error == {"code": "BOOM", "message": "still broken"}
        assert store.claim_job("w", kinds=["embed"], lease_s=30, now=1e6) is None
        assert [j.id for j in store.jobs(states=["failed"])] == [job.id]
        # a failure not worth retrying dead-letters at once; a stale token changes nothing
        other, _ = store.enqueue_job("ws1", "embed", {}, max_attempts=5, now=20.0)
        held = store.claim_job("w", kinds=["embed"], lease_s=30, now=20.0)
        assert held is not None and held.id == other.id
        assert store.fail_job(other.id, "stale", code="X", message="y", now=20.0) is None
        assert store.fail_job(other.id, held.lease_token or "", code="BAD_INPUT", message="no", retry=False,
                              now=20.0) == "failed"
        # an operator queues a dead letter again: all its attempts, due at once
        queued, _ = store.enqueue_job("ws2", "embed", {}, now=21.0)
        with pytest.raises(UsageError):
            store.requeue_job(queued.id)  # not a dead letter
        again = store.requeue_job(other.id, now=30.0)
        assert (again.state, again.attempts, again.run_after) == ("queued", 0, 30.0)
        first = store.claim_job("w", kinds=["embed"], lease_s=30, now=30.0)  # ws2 was never served: first
        retried = store.claim_job("w", kinds=["embed"], lease_s=30, now=30.0)
        assert first is not None and first.id == queued.id
        assert retried is not None and (retried.id, retried.attempts) == (other.id, 1)
        with pytest.raises(NotFoundError):
            store.requeue_job("no-such-job")

    def test_an_expired_lease_is_taken_again(self, store: Store) -> None:
        job, _ = store.enqueue_job("ws1", "extract", {}, max_attempts=2, now=0.0)
        first = store.claim_job("dead-worker", kinds=["extract"], lease_s=10, now=0.0)
        assert first is not None
        assert store.expire_jobs(now=9.0) == [] and store.job(job.id).state == "running"  # still leased
        assert store.claim_job("w2", kinds=["extract"], lease_s=10, now=9.0) is None
        assert store.expire_jobs(now=11.0) == []  # requeued: it has an attempt left
        requeued = store.job(job.id)
        assert requeued.state == "queued" and requeued.error is not None and requeued.error["code"] == "LEASE_EXPIRED"
        second = store.claim_job("w2", kinds=["extract"], lease_s=10, now=11.0)
        assert second is not None and second.attempts == 2 and second.lease_owner == "w2"
        # the first worker comes back: its claim holds nothing any more
        assert not store.renew_job(job.id, first.lease_token or "", lease_s=10, now=12.0)
        assert not store.finish_job(job.id, first.lease_token or "", now=12.0)
        # out of attempts: an expired lease dead-letters the job, and says so once
        dead = store.expire_jobs(now=30.0)
        assert [d.id for d in dead] == [job.id] and dead[0].state == "failed"
        assert dead[0].error is not None and dead[0].error["code"] == "LEASE_EXPIRED"
        assert store.expire_jobs(now=40.0) == []

    def test_release_gives_the_attempt_back(self, store: Store) -> None:
        job, _ = store.enqueue_job("ws1", "turn", {"message_id": "m"}, max_attempts=1, now=0.0)
        claimed = store.claim_job("w", kinds=["turn"], lease_s=10, now=0.0)
        assert claimed is not None and store.release_job(job.id, claimed.lease_token or "", now=1.0)
        back = store.job(job.id)
        assert (back.state, back.attempts, back.lease_token) == ("queued", 0, None)
        again = store.claim_job("w", kinds=["turn"], lease_s=10, now=1.0)
        assert again is not None and again.attempts == 1

    def test_claims_are_fair_between_workspaces(self, store: Store) -> None:
        flood = [store.enqueue_job("a", "extract", {"n": i}, now=float(i))[0].id for i in range(150)]
        single, _ = store.enqueue_job("b", "extract", {"n": 0}, now=200.0)
        later, _ = store.enqueue_job("c", "extract", {"n": 0}, now=201.0)
        order = []
        for step in range(6):
            claimed = store.claim_job("w", kinds=["extract"], lease_s=60, now=300.0 + step)
            assert claimed is not None
            order.append((claimed.workspace_id, claimed.payload["n"]))
            assert store.finish_job(claimed.id, claimed.lease_token or "", now=300.5 + step)
        # a's first, then b's and c's single jobs before a's second: never behind a's queue
        assert order == [("a", 0), ("b", 0), ("c", 0), ("a", 1), ("a", 2), ("a", 3)]
        assert store.job(flood[0]).state == "done" and store.job(single.id).state == "done"
        assert store.job(later.id).state == "done"

    def test_a_workspace_cap_leaves_room_for_others(self, store: Store) -> None:
        for i in range(3):
            store.enqueue_job("a", "turn", {"n": i}, now=float(i))
        first = store.claim_job("w", kinds=["turn"], lease_s=60, per_workspace=1, now=10.0)
        assert first is not None and first.workspace_id == "a"
        assert store.claim_job("w", kinds=["turn"], lease_s=60, per_workspace=1, now=11.0) is None  # a is at its cap
        store.enqueue_job("b", "turn", {"n": 0}, now=12.0)
        other = store.claim_job("w", kinds=["turn"], lease_s=60, per_workspace=1, now=13.0)
        assert other is not None and other.workspace_id == "b"
        # the cap is a worker's own: another process's worker takes a's next job
        another = store.claim_job("w2", kinds=["turn"], lease_s=60, per_workspace=1, now=14.0)
        assert another is not None and another.workspace_id == "a"
        # an expired lease no longer counts against the cap
        assert store.claim_job("w", kinds=["turn"], lease_s=60, per_workspace=1, now=71.0) is not None

    def test_concurrent_claims_never_double_claim(self, store: Store) -> None:
        import threading

        ids = {store.enqueue_job(f"ws{i % 3}", "extract", {"n": i}, now=0.0)[0].id for i in range(40)}
        claimed: list[str] = []
        lock = threading.Lock()
        errors: list[BaseException] = []

        def worker(name: str) -> None:
            try:
                idle = 0
                while idle < 20:
                    job = store.claim_job(name, kinds=["extract"], lease_s=60)
                    if job is None:
                        idle += 1
                        continue
                    idle = 0
                    with lock:
                        claimed.append(job.id)
                    assert store.finish_job(job.id, job.lease_token or "")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors, errors
        assert sorted(claimed) == sorted(ids)  # every job once, none twice
        assert {j.state for j in store.jobs(limit=100)} == {"done"}
        assert store.prune_jobs(before=time_now() + 1) == 40 and store.jobs() == []


def time_now() -> float:
    """Seconds since the epoch (the jobs' clock)."""
    import time

    return time.time()
