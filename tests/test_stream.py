"""The streaming citer (docs/architecture.md rule 9): BC-16, every rewrite case streamed, random
splits of random texts (hypothesis), and the extractive answer path streamed."""

from __future__ import annotations

import json
import os
import random
import re
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citewell.cite import InMemoryResolver, cite
from citewell.cite.stream import Event, StreamingCiter, stream_cite
from citewell.models import Chunk, Message, Passage

from .conftest import CASES, copy_corpus_files
from .test_cite_properties import _link as _property_link

ALL_CASES = json.loads(CASES.read_text()) if CASES.exists() else []
BY_ID = {c["id"]: c for c in ALL_CASES}
needs_cases = pytest.mark.skipif(not ALL_CASES, reason=f"{CASES} not available")
FORBIDDEN = ("](", "post:", "chunk:")
#: More examples for a long run: CITEWELL_STREAM_EXAMPLES=5000 pytest tests/test_stream.py
EXAMPLES = int(os.environ.get("CITEWELL_STREAM_EXAMPLES", "400"))


def _dump(message: Message) -> dict:
    return message.model_dump(exclude={"created_at", "id"})


def run_stream(pieces: list[str], **kwargs) -> tuple[list[Event], Message, list[str]]:
    """Feed ``pieces``; check the prefix rule after every piece against ``cite(whole)``;
    return all events, the final message and the text sent after each piece."""
    whole = "".join(pieces)
    expected = cite(whole, **{k: v for k, v in kwargs.items() if k in ("sources", "resolver", "offset_unit")})
    citer = StreamingCiter(**kwargs)
    events: list[Event] = []
    sent_after: list[str] = []
    sent = ""
    for piece in pieces:
        for event in citer.feed(piece):
            events.append(event)
            if event.kind == "delta":
                sent += event.data["text"]
        assert expected.text.startswith(sent), (pieces, sent, expected.text)
        sent_after.append(sent)
    tail, message = citer.close()
    events.extend(tail)
    assert _dump(message) == _dump(expected)
    assert "".join(e.data["text"] for e in events if e.kind == "delta") == message.text
    assert citer.sent_text == message.text
    check_citations_before_markers(events, message)
    return events, message, sent_after


def check_citations_before_markers(events: list[Event], message: Message) -> None:
    """Every ``[N]`` first shown by a delta was announced by a citation event before it."""
    announced: set[int] = set()
    sent = ""
    starts = {r.citation: r.start_index for r in message.references if r.citation is not None}
    if message.offset_unit != "codepoint":
        return
    for event in events:
        if event.kind == "citation":
            n = event.data["citation"]
            assert n in starts
            if not event.data.get("update"):
                assert n not in announced
                announced.add(n)
        elif event.kind == "delta":
            sent += event.data["text"]
            for n, start in starts.items():
                if start + len(f"[{n}]") <= len(sent):
                    assert n in announced, (n, sent)


def random_split(text: str, rng: random.Random, *, ones: bool = False) -> list[str]:
    if ones:
        return list(text) or [""]
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 12)))) if len(text) > 1 else []
    edges = [0, *cuts, len(text)]
    return [text[a:b] for a, b in pairwise(edges)]


# -- BC-16 ------------------------------------------------------------------------------

@needs_cases
def test_bc16_split_links_never_leak() -> None:
    case = BY_ID["BC-16"]
    chunks = case["input"]["model_chunks"]
    exp = case["expected"]
    events, message, sent_after = run_stream(chunks)
    assert message.text == exp["final_text"]
    for ref, want in zip(message.references, exp["references"], strict=True):
        assert {k: getattr(ref, k) for k in want} == want
    deltas = [e.data["text"] for e in events if e.kind == "delta"]
    assert "".join(deltas) == exp["concatenated_client_deltas"]
    assert exp["client_text_so_far_is_prefix_of_final_text_after_every_model_chunk"]
    for sent in sent_after:
        assert exp["final_text"].startswith(sent)
    for bad in exp["substrings_never_in_any_client_delta"]:
        assert all(bad not in d for d in deltas), bad
        assert bad not in "".join(deltas)
    # it really streams: text is sent before the model finishes
    assert sent_after[2] == "Fans agree [1] today; critics "
    kinds = [e.kind for e in events]
    assert kinds.index("citation") < kinds.index("delta")


@needs_cases
@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
def test_bc16_any_chunk_size(size: int) -> None:
    whole = "".join(BY_ID["BC-16"]["input"]["model_chunks"])
    pieces = [whole[i:i + size] for i in range(0, len(whole), size)]
    events, message, _ = run_stream(pieces, min_delta=1)
    assert message.text == BY_ID["BC-16"]["expected"]["final_text"]
    for d in (e.data["text"] for e in events if e.kind == "delta"):
        assert not any(bad in d for bad in (*FORBIDDEN, "[cl", "thread", "tik"))


# -- every rewrite case, streamed ---------------------------------------------------------

def _case_kwargs(case: dict) -> dict:
    inp = case["input"]
    posts = inp.get("retrieved_posts_in_rank_order") or inp.get("retrieved_posts")
    if posts is None:
        return {}
    sources = []
    for i, p in enumerate(posts):
        chunk = Chunk(id=f"chunk-{p['source']}-{p['id']}", resource_id="dataset", chunk_index=i,
                      text=f"post {p['id']}", text_type="post",
                      metadata={"source_type": "post", "source": p["source"], "id": p["id"]})
        sources.append(Passage(chunk=chunk, resource_title="posts.jsonl", resource_kind="post"))
    return {"sources": sources}


REWRITE = [c["id"] for c in ALL_CASES if c["input"].get("operation") == "rewrite_post_citations"]


@needs_cases
@pytest.mark.parametrize("case_id", REWRITE)
@pytest.mark.parametrize("unit", ["codepoint", "utf16", "utf8"])
def test_rewrite_cases_streamed_equal_non_streamed(case_id: str, unit: str) -> None:
    case = BY_ID[case_id]
    raw = case["input"]["assistant_raw_text"]
    kwargs = {**_case_kwargs(case), "offset_unit": unit}
    rng = random.Random(case_id)
    for trial in range(25):
        pieces = random_split(raw, rng, ones=trial == 0)
        _, message, _ = run_stream(pieces, min_delta=rng.choice([1, 24]), **kwargs)
        if "text" in case["expected"]:
            assert message.text == case["expected"]["text"]


# -- random texts, random splits (hypothesis) ---------------------------------------------

def _passages() -> list[Passage]:
    docs = [Passage(chunk=Chunk(id=cid, resource_id=f"r-{cid}", chunk_index=i, text=f"text {cid}"),
                    resource_title=f"Doc {cid}", resource_kind="text") for i, cid in enumerate(["c-1", "c-2"])]
    post = Passage(chunk=Chunk(id="chunk-x-1", resource_id="ds", chunk_index=0, text="post", text_type="post",
                               metadata={"source_type": "post", "source": "x", "id": "1"}),
                   resource_title="posts", resource_kind="post")
    return [*docs, post]


RESOLVER = InMemoryResolver(_passages(), entities=[("pattern", "p1")])
WEIRD = [
    "😀", "👩\u200d💻", "🏳\ufe0f\u200d🌈", "🇫🇷", "漢字", "e\u0301", "a\u0308\u0323", "שלום", "مرحبا", "\u200f",
    "𠀋", "[", "]", "`", "``", "```", "~~~", "\\", "(", ")", "[12]", "[3]", "\\[4\\]", "1", ".", "!", ":",
    " ", "  ", "\n", "\n\n", "\r\n", "\t", "a", "Z", "?", "post:x:1", "chunk:c-1", "\"", "> ", "- ", "1. ",
    "\n```\ncode [z](post:x:1)\n```\n", "\n> ```\n> in quote\n", "\n- ```\n  item code\n", "\n~~~\n",
    "`code [a](post:x:1)`", "[ 1 ]: u", "Sales rose. ", "It fell! ", " and ",
]
LABELS = ["a", "the [viral] clip", "😀", "x\\]y", "", "12", "`]`", "漢 字", "[b](post:x:1)"]


ODD: list[str]


def _link(kind: str, label: str, a: str, b: str) -> str:
    if kind == "odd":
        return ODD[sum(map(ord, b)) % len(ODD)].replace("L", label)
    return _property_link(kind, label, a, b)  # post, chunk, entity and ordinary links


ODD = ["[L](<post:x:1>)", "[L](\npost:x:1)", "[L](post:x:1 more)", "[L](post:x:(1))", "L](post:x:1)",
           "\\[L](post:x:1)", "[L](https://e.com/a \"t)\")", "[L](chunk:c-2", "[x [L](post:x:1) y](chunk:c-1)",
           "[![L](a.png)](https://e.com/ci)", "[x \\[12] L](https://e.com)"]
links = st.builds(
    _link,
    st.sampled_from(["post", "post", "chunk", "chunk", "entity", "md", "odd"]),
    st.sampled_from(LABELS),
    st.sampled_from(["reddit", "x", "TikTok", "c-1", "c-2", "chunk-x-1", "nope"]),
    st.sampled_from(["1", "a:b", "x)y", "t3 z", "2", "3", "4", "5", "6", "7", "8", "p1"]),
)
texts = st.lists(links | st.sampled_from(WEIRD) | st.text(max_size=3), max_size=14).map("".join)
clean_texts = st.lists(
    st.builds(_link, st.sampled_from(["post", "chunk"]), st.sampled_from(["a", "😀 b", "the [viral] clip"]),
              st.sampled_from(["reddit", "x", "c-1", "c-2"]), st.sampled_from(["1", "t3_z", "2"]))
    | st.sampled_from(["Sales rose. ", "漢字 ", "👩\u200d💻 ", "שלום ", "e\u0301 ", "word ", "x", "\n", "\n\n"]),
    max_size=16).map("".join)
configs = st.sampled_from([{}, {"resolver": RESOLVER}, {"sources": _passages()[:2], "resolver": RESOLVER}])


def _splits(draw_cuts: list[int], text: str) -> list[str]:
    cuts = sorted({c % (len(text) + 1) for c in draw_cuts})
    edges = [0, *cuts, len(text)]
    return [text[a:b] for a, b in pairwise(edges) if b > a] or [""]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.lists(st.integers(0, 10_000), max_size=12), configs, st.sampled_from([1, 24]), st.booleans())
def test_random_splits_keep_the_contract(text: str, cuts: list[int], config: dict, min_delta: int,
                                         ones: bool) -> None:
    pieces = list(text) if ones else _splits(cuts, text)
    run_stream(pieces, min_delta=min_delta, **config)


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clean_texts, st.lists(st.integers(0, 10_000), max_size=12), configs, st.booleans())
def test_no_target_or_partial_label_ever_reaches_the_client(text: str, cuts: list[int], config: dict,
                                                            ones: bool) -> None:
    pieces = list(text) if ones else _splits(cuts, text)
    events, message, _ = run_stream(pieces, min_delta=1, **config)
    deltas = [e.data["text"] for e in events if e.kind == "delta"]
    for d in deltas:
        assert not any(bad in d for bad in FORBIDDEN), d
    # a label never shows: only markers, prose and kept labels of unresolved links
    if not message.warnings:
        for label in ("😀 b", "viral"):
            assert all(label not in d for d in deltas)


def test_streams_before_the_end_and_announces_citations_first() -> None:
    p = _passages()
    text = "".join(f"Sentence {i} says something [s{i}](chunk:c-{1 + i % 2}). " for i in range(30))
    events, message, sent_after = run_stream(list(text), sources=p, resolver=RESOLVER, min_delta=1)
    # well before the end most of the text is out, and every marker was announced first
    assert len(sent_after[len(text) // 2]) > len(message.text) // 3
    cits = [e for e in events if e.kind == "citation"]
    assert [e.data["citation"] for e in cits] == [1, 2]
    assert cits[0].data["chunk_id"] == "c-1" and cits[0].data["text"] == "text c-1"
    assert cits[0].data["resource_title"] == "Doc c-1" and cits[0].data["chunk_index"] == 0


def test_fenced_code_streams_verbatim_line_by_line() -> None:
    text = "Intro [a](post:x:1).\n```python\nx = '[b](post:x:2)'\ny = 1\n```\nAfter [c](post:x:3) done.\n"
    _, message, sent_after = run_stream(list(text), min_delta=1)
    assert "x = '[b](post:x:2)'\n" in sent_after[text.index("y = 1") + 2]
    assert [r.citation for r in message.references] == [1, 2]


def test_unclosed_bracket_and_code_span_hold_until_settled() -> None:
    pieces = ["Costs [rose", " a lot", "](post:x:1) and `code", " [z](post:x:2)", "` end. More"]
    _, message, sent_after = run_stream(pieces, min_delta=1)
    assert sent_after[0] == "Costs " and sent_after[1] == "Costs "
    assert message.text == "Costs [1] and `code [z](post:x:2)` end. More"


def test_marker_followed_by_parenthesis_is_escaped_in_the_stream() -> None:
    pieces = ["See [a](post:x:1)", "(more) and [b](post:x:2)", ": done"]
    _, message, _ = run_stream(pieces, min_delta=1)
    assert message.text == "See [1]\\(more) and [2]: done"


#: Inputs whose rewrite once formed or broke an ordinary link (links.py rule 6), with the
#: final text cite() gives for them (tests/test_cite.py checks that text in detail).
BRACKET_PAIRING = [
    ("[a](https://e.com/post:reddit:1/(x))(post:x:1", "[a](https://e.com/post:reddit:1/(x))(post:x:1"),
    ("[[[a](post:reddit:1)](post:x:1)> ```\n[a](post:reddit:1)> ```\n[[a](post:reddit:1)](https://e.com/(x))",
     "[[1][2]> ```\n[a](post:reddit:1)> ```\n\\[[1]\\](https://e.com/(x))"),
    ("[0 [[a](post:x:1)](https://e.com) ok", "[0 \\[[1]\\](https://e.com) ok"),
    ("[a \\[12] b](https://e.com) [c](post:x:1)", "\\[a \\[12\\] b](https://e.com) [1]"),
    ("[w [12\\] x] y](https://e.com) [c](post:x:1)", "[w \\[12\\] x\\] y](https://e.com) [1]"),
    ("[w [ 1 ]: x](https://e.com) [c](post:x:1)", "[w \\[ 1 \\]: x](https://e.com) [1]"),
    ("``[`]` [a](https://e.com) `x`](post:x:1) and more", "\\`\\`\\[`]` [a](https://e.com) `x`[1] and more"),
    ("[![build](b.svg)](https://e.com/ci \"CI\") ok [a](post:x:1)", "[![build](b.svg)](https://e.com/ci \"CI\") ok [1]"),
    ("[![i](a.png) [b](https://z)](https://x) ok", "\\[![i](a.png) [b](https://z)\\](https://x) ok"),
]


@pytest.mark.parametrize("raw, text", BRACKET_PAIRING)
def test_bracket_pairing_fixes_stream_equal_for_every_split(raw: str, text: str) -> None:
    for min_delta in (1, 24):
        _, message, _ = run_stream(list(raw), min_delta=min_delta)
        assert message.text == text
        for i in range(1, len(raw)):
            run_stream([raw[:i], raw[i:]], min_delta=min_delta)


@pytest.mark.parametrize("pieces, text", [
    # found by hypothesis: the cut after "[1]\n" sent "(post:" before the whole-text rule
    # (a citation destination after "]" and whitespace gets its "(" escaped) could see it
    (["](post:x:1\n(post:", "\n", "1"], "[1]\n\\(post:\n1"),
    (["See [a](post:x:1) ", "(post:x:1 more"], "See [1] \\(post:x:1 more"),
    (["Up 5%] ", " \t", "(chunk:c-1) and on"], "Up 5%]  \t\\(chunk:c-1) and on"),
])
def test_a_target_after_a_bracket_and_whitespace_is_escaped_in_the_stream(pieces: list[str], text: str) -> None:
    for min_delta in (1, 24):
        _, message, _ = run_stream(pieces, min_delta=min_delta)
        assert message.text == text
        run_stream(list("".join(pieces)), min_delta=min_delta)


def test_support_events_follow_their_sentence() -> None:
    p = _passages()
    calls: list[tuple[str, str]] = []

    def support(sentence: str, passage: Passage) -> dict:
        calls.append((sentence, passage.chunk.id))
        return {"verdict": "supported", "score": 1.0, "reasons": []}

    text = "First claim [a](chunk:c-1). Second claim [b](chunk:c-2). Third [c](chunk:c-1)."
    events, message, _ = run_stream([text[i:i + 4] for i in range(0, len(text), 4)], sources=p,
                                    resolver=RESOLVER, support=support, min_delta=1)
    sup = [e for e in events if e.kind == "support"]
    assert [(e.data["part_index"], e.data["chunk_id"]) for e in sup] == [(0, "c-1"), (1, "c-2"), (2, "c-1")]
    sent = ""
    for e in events:
        if e.kind == "delta":
            sent += e.data["text"]
        elif e.kind == "support":
            assert len(sent) >= e.data["end"]  # after the delta that completes the part
            assert message.text[e.data["start"]:e.data["end"]] == message.parts[e.data["part_index"]].text


def test_stream_cite_ends_with_done() -> None:
    events = list(stream_cite(["Fans [a](post:x:", "1) agree."]))
    assert events[-1].kind == "done"
    assert events[-1].data["message"]["text"] == "Fans [1] agree."
    assert "".join(e.data["text"] for e in events if e.kind == "delta") == "Fans [1] agree."


# -- the extractive answer path, streamed --------------------------------------------------

QUESTIONS = [
    "Are people buying puts on Activision?",
    "How has deep learning changed OCR and document understanding?",
    "What does the transcript say about handwriting recognition?",
]


@pytest.fixture(scope="module")
def stream_engine(tmp_path_factory: pytest.TempPathFactory, module_store_location):
    from citewell import Engine

    corpus = copy_corpus_files(tmp_path_factory.mktemp("corpus"), "posts/reddit_wallstreetbets_2022-01.jsonl",
                               "transcripts/twiml-409_deep-learning-ocr_cha-zhang.vtt")
    with Engine(module_store_location) as eng:
        eng.sync(corpus)
        yield eng


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("offsets", ["codepoint", "utf16"])
def test_extractive_answer_streamed_equals_ask(stream_engine, question: str, offsets: str) -> None:
    asked = stream_engine.ask(question, offsets=offsets)
    events = list(stream_engine.ask_stream(question, offsets=offsets))
    assert events[-1].kind == "done"
    done = Message.model_validate(events[-1].data["message"])
    assert _dump(done) == _dump(asked)
    deltas = [e.data["text"] for e in events if e.kind == "delta"]
    assert "".join(deltas) == asked.text
    assert len(deltas) > 1 or len(asked.parts) <= 1  # sentence by sentence
    assert not any(bad in d for d in deltas for bad in ("](chunk:", "](post:"))
    check_citations_before_markers(events[:-1], done)


def test_ask_stream_validates_before_the_first_event(stream_engine) -> None:
    from citewell.errors import UsageError

    with pytest.raises(UsageError):
        stream_engine.ask_stream("   ")
    with pytest.raises(UsageError):
        stream_engine.ask_stream("q", offsets="bytes")


def test_generator_pieces_split_anywhere_give_the_same_message(stream_engine) -> None:
    passages = stream_engine.retrieve(QUESTIONS[0])
    raw = stream_engine.generator.generate(QUESTIONS[0], passages)
    rng = random.Random(7)
    for trial in range(10):
        pieces = random_split(raw, rng, ones=trial == 0)
        run_stream(pieces, sources=passages, resolver=stream_engine.resolver, min_delta=rng.choice([1, 24]))
    assert re.search(r"\]\((post|chunk):", raw)
