"""Turns that settle later, follow-up questions, and mentions listed by query (issue 5,
engine and store side)."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest

from citewell import Engine
from citewell.errors import NotFoundError, UsageError
from citewell.models import utcnow
from citewell.question.followup import followup_query, refers_back

FILES = {
    "acme-2022.txt": "Acme revenue was $12.4 million in 2022. Acme gross margin was 41 percent in 2022.\n",
    "acme-2021.txt": "Acme revenue was $9.1 million in 2021.\n",
    "globex.txt": "Globex revenue was $55.0 million in 2022. Globex gross margin was 18 percent in 2022.\n",
}
POSTS = [
    {"source": "reddit", "id": "t3_a", "text": "Turbine five failed at noon.", "created_at": "2022-01-05T10:00:00Z",
     "score": 12, "num_comments": 3, "url": "https://reddit.example/t3_a"},
    {"source": "TikTok", "id": "739", "text": "Turbine noise is loud tonight.", "created_at": "2022-01-06T10:00:00Z",
     "likes": 40, "url": "https://tiktok.example/739"},
    {"source": "reddit", "id": "t3_b", "text": "Pumps at forty bar.", "created_at": "2022-02-01T10:00:00Z",
     "score": 1, "permalink": "/r/x/t3_b"},
]


@pytest.fixture
def docs(engine: Engine, tmp_path: Path) -> Engine:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "posts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in POSTS), encoding="utf-8")
    report = engine.ingest([folder])
    assert not report.failed
    return engine


# -- turns that settle later -----------------------------------------------------------

def test_a_turn_is_pending_until_completed_then_reads_back_as_returned(docs: Engine) -> None:
    pending = docs.begin_turn("What was Acme revenue in 2022?", offsets="utf16")
    assert pending.chat.title == "What was Acme revenue in 2022?"
    assert pending.user_message.text == "What was Acme revenue in 2022?"
    assert pending.message.status == "pending" and pending.message.text == ""
    stored = docs.history(pending.chat.id)
    assert [(m.role, m.status) for m in stored] == [("user", "settled"), ("assistant", "pending")]
    assert docs.message(pending.message.id).status == "pending"

    settled = docs.complete_turn(pending)
    assert settled.id == pending.message.id and settled.status == "settled"
    assert settled.offset_unit == "utf16" and settled.created_at == pending.message.created_at
    assert settled.text.startswith("Acme revenue was $12.4 million in 2022 [1].")
    assert settled.references[0].resource_title == "acme-2022"
    assert docs.message(settled.id).model_dump() == settled.model_dump()
    assert docs.history(pending.chat.id)[1].model_dump() == settled.model_dump()
    with pytest.raises(UsageError):
        docs.store.settle_message(docs.workspace_id, settled)  # a message settles once


def test_a_turn_that_fails_settles_as_failed(docs: Engine) -> None:
    class Broken:
        def write(self, request):
            raise RuntimeError("model endpoint down")

    pending = docs.begin_turn("What was Acme revenue in 2022?")
    docs.generator = Broken()  # type: ignore[assignment]
    failed = docs.complete_turn(pending)
    assert failed.status == "failed" and failed.text == ""
    assert failed.model_extra["error"] == {"code": "SERVER_ERROR",
                                           "message": "the answer could not be produced (RuntimeError)"}
    assert [w.code for w in failed.warnings] == ["SERVER_ERROR"]
    assert docs.message(failed.id).model_dump() == failed.model_dump()


def test_a_stopped_servers_turns_fail_instead_of_staying_pending(docs: Engine) -> None:
    old = docs.begin_turn("What was Acme revenue in 2022?")
    count = docs.store.fail_pending(before=utcnow() + timedelta(seconds=1), code="TURN_INTERRUPTED",
                                    message="the server stopped before the answer was finished")
    assert count == 1
    failed = docs.message(old.message.id)
    assert failed.status == "failed" and failed.model_extra["error"]["code"] == "TURN_INTERRUPTED"
    assert docs.store.fail_pending(before=utcnow(), code="X", message="y") == 0


def test_begin_turn_validates_before_storing(docs: Engine) -> None:
    with pytest.raises(UsageError):
        docs.begin_turn("   ")
    with pytest.raises(NotFoundError):
        docs.begin_turn("revenue?", chat_id="no-such-chat")
    with pytest.raises(UsageError):
        docs.begin_turn("revenue?", offsets="bytes")
    assert docs.chats() == []


def test_begin_turn_of_a_user(docs: Engine) -> None:
    pending = docs.begin_turn("What was Acme revenue in 2022?", user_id="u1", user_email="u1@example.com")
    assert pending.chat.user_id == "u1"
    with pytest.raises(NotFoundError):
        docs.begin_turn("And in 2021?", chat_id=pending.chat.id, user_id="u2")
    follow = docs.begin_turn("And in 2021?", chat_id=pending.chat.id, user_id="u1")
    assert follow.chat.id == pending.chat.id


# -- follow-ups ------------------------------------------------------------------------

def test_refers_back() -> None:
    assert refers_back("And in 2021?") and refers_back("How did it change?") and refers_back("What about Globex?")
    assert refers_back("Why?")
    assert not refers_back("What was Globex gross margin in 2022?")
    assert followup_query("What was Globex gross margin in 2022?", "What was Acme revenue?") == \
        "What was Globex gross margin in 2022?"
    assert followup_query("And in 2021?", "What was Acme revenue in 2022?") == "And in 2021? Acme revenue"
    assert followup_query("What about Globex?", "What was Acme revenue in 2022?") == \
        "What about Globex? revenue 2022"


def test_a_follow_up_is_answered_in_the_context_of_the_previous_turn(docs: Engine) -> None:
    chat = docs.chat()
    first = docs.ask("What was Acme revenue in 2022?", chat_id=chat.id)
    assert first.text.startswith("Acme revenue was $12.4 million in 2022 [1].")
    follow = docs.ask("And in 2021?", chat_id=chat.id)
    assert follow.text.startswith("Acme revenue was $9.1 million in 2021 [1].")
    assert {r.resource_title for r in follow.references} <= {"acme-2021", "acme-2022"}
    # the question is stored as asked
    assert [m.text for m in docs.history(chat.id) if m.role == "user"] == [
        "What was Acme revenue in 2022?", "And in 2021?"]
    # without the chat the follow-up has nothing to go on
    assert "$9.1 million" not in docs.ask("And in 2021?").text


def test_a_follow_up_keeps_the_previous_filters(docs: Engine) -> None:
    chat = docs.chat()
    first = docs.ask("What was gross margin in 2022?", chat_id=chat.id, filters=["document_name=globex"])
    assert "18 percent" in first.text and "41 percent" not in first.text
    follow = docs.ask("And what about its revenue?", chat_id=chat.id)
    assert "$55.0 million" in follow.text and {r.resource_title for r in follow.references} == {"globex"}
    assert docs.history(chat.id)[0].model_extra["filters"] == ["document_name=globex"]
    # a follow-up that names its own filters uses them
    own = docs.ask("And gross margin?", chat_id=chat.id, filters={"document_name": "acme-2022"})
    assert "41 percent" in own.text and "18 percent" not in own.text


# -- mentions listed by query ----------------------------------------------------------

def test_mentions_by_source_query_dates_dataset_and_pages(docs: Engine) -> None:
    store, ws = docs.store, docs.workspace_id
    dataset = next(r.id for r in docs.resources() if r.kind == "post")
    everything = store.list_mentions(ws)
    assert [(m.source, m.id) for m in everything] == [("reddit", "t3_a"), ("TikTok", "739"), ("reddit", "t3_b")]
    assert everything[0].model_extra["score"] == 12 and everything[1].model_extra["likes"] == 40
    assert everything[2].model_extra["permalink"] == "/r/x/t3_b"
    assert [m.id for m in store.list_mentions(ws, source="tiktok")] == ["739"]
    assert [m.id for m in store.list_mentions(ws, terms=["turbine"])] == ["t3_a", "739"]
    assert [m.id for m in store.list_mentions(ws, created_after="2022-01-06", created_before="2022-12-31")] == [
        "739", "t3_b"]
    assert [m.id for m in store.list_mentions(ws, dataset_id=dataset)] == ["t3_a", "739", "t3_b"]
    assert store.list_mentions(ws, dataset_id="other") == []
    page = store.list_mentions(ws, limit=2)
    last = page[-1]
    rest = store.list_mentions(ws, limit=2, after=(last.created_at or "", last.source.lower(), last.id))
    assert [m.id for m in page + rest] == ["t3_a", "739", "t3_b"]
    with Engine(docs.store, workspace="other") as other:
        assert other.store.list_mentions(other.workspace_id) == []


# -- research previews: a turn begun while the previous answer is pending --------------------

def test_a_turn_begun_while_the_previous_answer_is_pending_points_at_it(docs: Engine) -> None:
    first = docs.begin_turn("What was Acme revenue in 2022?")
    assert first.research_preview is None
    second = docs.begin_turn("And in 2021?", chat_id=first.chat.id)
    assert second.research_preview == first.message.id
    answer = docs.complete_turn(second)
    assert answer.status == "settled" and answer.text.startswith("Acme revenue was $9.1 million in 2021 [1].")
    assert answer.references[-1].model_dump(exclude_none=True) == {"type": "research_preview",
                                                                   "id": first.message.id}
    assert docs.message(answer.id).model_dump() == answer.model_dump()
    docs.complete_turn(first)
    third = docs.begin_turn("And gross margin?", chat_id=first.chat.id)
    assert third.research_preview is None  # the previous answer has settled
    assert not [r for r in docs.complete_turn(third).references if r.type == "research_preview"]


def test_a_failed_turn_does_not_carry_the_research_preview(docs: Engine) -> None:
    first = docs.begin_turn("What was Acme revenue in 2022?")
    second = docs.begin_turn("And in 2021?", chat_id=first.chat.id)
    failed = docs.fail_turn(second, "TURN_INTERRUPTED", "stopped")
    assert failed.status == "failed" and failed.references == []
    assert failed.model_extra["error"] == {"code": "TURN_INTERRUPTED", "message": "stopped"}
    with pytest.raises(UsageError):
        docs.fail_turn(second, "X", "settles once")


def test_chat_and_research_preview_entities_exist_when_the_workspace_has_them(docs: Engine) -> None:
    turn = docs.begin_turn("What was Acme revenue in 2022?")
    resolver = docs.resolver
    assert resolver.entity_exists("chat", turn.chat.id)
    assert resolver.entity_exists("research_preview", str(turn.message.id))  # pending counts
    assert not resolver.entity_exists("research_preview", str(turn.user_message.id))  # a question is not a turn
    assert not resolver.entity_exists("chat", "no-such-chat")
    assert not resolver.entity_exists("research_preview", "no-such-message")
    assert not resolver.entity_exists("pattern", "anything")
    cited = docs.cite(f"In [that chat](chat:{turn.chat.id}), see [the answer](research_preview:{turn.message.id}).")
    assert cited.text == "In that chat, see the answer."
    assert [(r.type, r.id) for r in cited.references] == [("chat", turn.chat.id),
                                                          ("research_preview", turn.message.id)]
    with Engine(docs.store, workspace="other") as other:  # another workspace has neither
        assert not other.resolver.entity_exists("chat", turn.chat.id)
        assert not other.resolver.entity_exists("research_preview", str(turn.message.id))
        assert other.cite(f"[x](chat:{turn.chat.id})").references == []


def test_a_legacy_message_linking_to_itself_as_a_research_preview_reads(docs: Engine) -> None:
    chat = docs.chat()
    message_id = "11111111-2222-3333-4444-555555555555"
    docs.store.add_legacy_message(docs.workspace_id, chat.id, {
        "id": message_id, "role": "assistant", "text": f"As [this very answer](research_preview:{message_id}) says."})
    read = docs.message(message_id)
    assert read.text == "As this very answer says."
    assert [(r.type, r.id) for r in read.references] == [("research_preview", message_id)]


# -- streamed turns (issue 6: the engine side of POST /v2/analytics/sse) ----------------------

class _Pieces:
    """A generator that writes ``raw`` in pieces, or raises ``error`` after ``fail_after`` pieces."""

    def __init__(self, pieces, *, error: Exception | None = None, fail_after: int = 0) -> None:
        self.pieces, self.error, self.fail_after = list(pieces), error, fail_after

    def write(self, request):
        for i, piece in enumerate(self.pieces):
            if self.error is not None and i == self.fail_after:
                raise self.error
            yield piece
        if self.error is not None and self.fail_after >= len(self.pieces):
            raise self.error


def _announced_before_shown(events) -> None:
    """Every [N] a delta first shows was announced by a citation event before it."""
    announced: set[int] = set()
    sent = ""
    for event in events:
        if event.kind == "citation":
            announced.add(event.data["citation"])
        elif event.kind == "delta":
            sent += event.data["text"]
            import re
            assert {int(n) for n in re.findall(r"\[(\d+)\]", sent)} <= announced, sent


def test_a_streamed_turn_settles_the_message_its_events_spell(docs: Engine) -> None:
    pending = docs.begin_turn("What was Acme revenue and gross margin in 2022?")
    events = list(docs.stream_turn(pending))
    kinds = [e.kind for e in events]
    assert kinds[0] == "search_results" and kinds[-1] == "done"
    assert set(kinds[1:-1]) <= {"citation", "delta", "support"} and "delta" in kinds and "support" in kinds
    passages = events[0].data["passages"]
    assert [p["chunk"]["id"] for p in passages] == \
        [p.chunk.id for p in docs.retrieve("What was Acme revenue and gross margin in 2022?")]
    assert passages and passages[0]["resource_title"] == "acme-2022"
    stored = docs.message(pending.message.id)
    assert stored.status == "settled" and stored.id == pending.message.id
    assert events[-1].data["message"] == stored.model_dump(mode="json")
    assert "".join(e.data["text"] for e in events if e.kind == "delta") == stored.text
    assert "[1]" in stored.text and stored.references[0].resource_title.startswith("acme")
    _announced_before_shown(events)
    # the same turn answered in the background gives the same answer
    other = docs.complete_turn(docs.begin_turn("What was Acme revenue and gross margin in 2022?"))
    assert other.text == stored.text
    assert [r.model_dump() for r in other.references] == [r.model_dump() for r in stored.references]
    assert [p.model_dump() for p in other.parts] == [p.model_dump() for p in stored.parts]


def test_a_streamed_turn_under_policy_drop_sends_the_checked_answer_whole(docs: Engine) -> None:
    pending = docs.begin_turn("What was Acme revenue in 2022?", policy="drop", offsets="utf16")
    events = list(docs.stream_turn(pending))
    deltas = [e.data["text"] for e in events if e.kind == "delta"]
    stored = docs.message(pending.message.id)
    assert len(deltas) == 1 and deltas[0] == stored.text and stored.offset_unit == "utf16"
    assert events[0].kind == "search_results" and events[-1].kind == "done"
    _announced_before_shown(events)


def test_a_streamed_turn_that_fails_midway_settles_failed_and_ends_with_error(docs: Engine) -> None:
    passage = docs.retrieve("What was Acme revenue in 2022?")[0]
    docs.generator = _Pieces([f"Acme revenue was $12.4 million [a](chunk:{passage.chunk.id}). ", "More "],  # type: ignore[assignment]
                             error=RuntimeError("model endpoint down"), fail_after=2)
    pending = docs.begin_turn("What was Acme revenue in 2022?")
    events = list(docs.stream_turn(pending))
    assert events[-1].kind == "error" and "done" not in [e.kind for e in events]
    assert events[-1].data == {"code": "SERVER_ERROR", "message": "the answer could not be produced (RuntimeError)"}
    assert any(e.kind == "delta" for e in events)  # it failed after sending text
    failed = docs.message(pending.message.id)
    assert failed.status == "failed" and failed.model_extra["error"] == events[-1].data  # the one failure path
    assert [w.code for w in failed.warnings] == ["SERVER_ERROR"]


def test_a_streamed_turn_that_fails_with_a_library_error_keeps_its_code(docs: Engine) -> None:
    from citewell.errors import StoreError

    docs.generator = _Pieces([], error=StoreError("disk full"))  # type: ignore[assignment]
    pending = docs.begin_turn("What was Acme revenue in 2022?")
    events = list(docs.stream_turn(pending))
    assert [e.kind for e in events] == ["search_results", "error"]
    assert events[-1].data["code"] == StoreError.code
    assert docs.message(pending.message.id).model_extra["error"]["code"] == StoreError.code


def test_a_streamed_turn_closed_early_does_not_stay_pending(docs: Engine) -> None:
    pending = docs.begin_turn("What was Acme revenue in 2022?")
    stream = docs.stream_turn(pending)
    assert next(stream).kind == "search_results"
    stream.close()
    closed = docs.message(pending.message.id)
    assert closed.status == "failed" and closed.model_extra["error"]["code"] == "TURN_INTERRUPTED"


def test_a_streamed_turn_begun_while_the_previous_is_pending_points_at_it(docs: Engine) -> None:
    first = docs.begin_turn("What was Acme revenue in 2022?")
    second = docs.begin_turn("And in 2021?", chat_id=first.chat.id)
    done = list(docs.stream_turn(second))[-1]
    assert done.data["message"]["references"][-1] == {**done.data["message"]["references"][-1],
                                                      "type": "research_preview", "id": first.message.id}
    assert docs.message(second.message.id).references[-1].id == first.message.id


def test_a_starting_server_leaves_turns_of_live_workers_alone(docs: Engine) -> None:
    """Turn ownership is the turn job's lease in the store (no process ids): a queued turn
    or one whose worker renews its lease is left alone at a start; one whose lease expired
    (its worker died) and a pending answer without a job fail with TURN_INTERRUPTED."""
    from citewell.jobs.kinds import TURN
    from citewell.jobs.workers import TurnWorker

    serving = TurnWorker(docs.store, run=False)  # a replica that serves only: the turn waits in the queue
    queued = docs.begin_turn("What was Acme revenue in 2022?")
    serving.submit(docs, queued)
    running = docs.begin_turn("What was Acme revenue in 2021?")
    serving.submit(docs, running)
    claimed = docs.store.claim_job("live-worker", kinds=[TURN], lease_s=600)  # held, lease renewed
    assert claimed is not None and claimed.payload["message_id"] == queued.message.id
    died = docs.begin_turn("What was Globex revenue?")
    serving.submit(docs, died)
    dead = docs.store.claim_job("dead-worker", kinds=[TURN], lease_s=0.01)  # not renewed: it expires
    time.sleep(0.05)
    assert dead is not None and dead.payload["message_id"] == running.message.id
    orphan = docs.begin_turn("asked by a citewell of before the jobs")
    assert serving.recover(before=utcnow() + timedelta(seconds=1)) == 2  # as if all were begun a while ago
    assert docs.message(queued.message.id).status == "pending"  # its worker holds the lease
    assert docs.message(died.message.id).status == "pending"  # queued: any worker will answer it
    for gone in (running, orphan):
        failed = docs.message(gone.message.id)
        assert failed.status == "failed" and failed.model_extra["error"]["code"] == "TURN_INTERRUPTED"
    assert docs.store.job(dead.id).state == "failed"  # dead-lettered with its error
    assert docs.store.job(dead.id).error["code"] == "LEASE_EXPIRED"
    # another replica's worker takes the queued turn over from the store and answers it (beside the
    # live worker's turn of the same workspace: two of a workspace's turns may run at once)
    worker = TurnWorker(docs.store, threads=1, per_workspace=2, poll_s=0.05)
    try:
        for _ in range(600):
            if docs.message(died.message.id).status != "pending":
                break
            time.sleep(0.05)
        answered = docs.message(died.message.id)
        assert answered.status == "settled" and answered.text
    finally:
        worker.shutdown()


def test_history_times_never_go_back(docs: Engine) -> None:
    chat = docs.chat()
    late = docs.begin_turn("What was Acme revenue in 2022?", chat_id=chat.id)
    from citewell.models import Message

    early = Message(role="user", text="asked earlier, stored later", created_at=late.message.created_at
                    - timedelta(seconds=5))
    (stored,) = docs.store.add_messages(docs.workspace_id, chat.id, [early])
    assert stored.created_at == late.message.created_at
    times = [m.created_at for m in docs.history(chat.id)]
    assert times == sorted(times)




def test_a_turn_reads_back_from_its_job_payload(docs: Engine) -> None:
    """What another process's worker answers from: the same turn, filters parsed again."""
    from citewell.answer.turn import pending_from_payload, turn_payload

    chat = docs.chat()
    docs.ask("What was Acme revenue in 2022?", chat_id=chat.id, filters={"kind": "text"})
    pending = docs.begin_turn("And in 2021?", chat_id=chat.id, k=3, offsets="utf16", policy="drop")
    payload = json.loads(json.dumps(turn_payload(pending)))  # as stored: JSON
    back = pending_from_payload(docs.store, docs.workspace_id, payload, docs.message)
    assert back.turn == pending.turn  # the follow-up's query and the carried filters included
    assert back.turn.filters == {"kind": "text"} and back.turn.query != back.turn.question
    assert (back.chat.id, back.user_message.id, back.message.id, back.research_preview) == (
        pending.chat.id, pending.user_message.id, pending.message.id, pending.research_preview)
    assert docs.complete_turn(back).status == "settled"
