"""Bounded passages (issue 14): posts, cues and paragraphs of any length become pieces of a
few hundred words, each with exact provenance, in time linear in their length."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from citewell.extraction import ChunkDraft, Extraction, MentionDraft
from citewell.ingest.pieces import MAX_CHUNK_CHARS, MAX_WORDS, SYNTOK_MAX_CHARS, bound_chunks, bounded_spans
from citewell.ingest.posts import extract_posts
from citewell.ingest.transcript import extract_vtt
from citewell.text.sentences import word_count

_WORDS = st.sampled_from(["Revenue", "grew", "by", "12%", "in", "2022.", "The", "board", "agreed!", "x" * 30,
                          "\u5927\u962a" * 15, "(see", "note)", "Is", "it?", "\n\n", "  "])


def _check(text: str, spans: list[tuple[int, int]], max_words: int) -> None:
    """Pieces are ordered, disjoint, stripped, within the limit, and cover every non-space character."""
    covered = 0
    last = 0
    for s, e in spans:
        assert last <= s < e and not text[s].isspace() and not text[e - 1].isspace()
        assert word_count(text[s:e]) <= max_words
        assert text[last:s].strip() == ""
        covered += len("".join(text[s:e].split()))
        last = e
    assert text[last:].strip() == ""
    assert covered == len("".join(text.split()))


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, max_size=400), st.integers(1, 40))
def test_bounded_spans_cover_the_text_within_the_limit(words: list[str], max_words: int) -> None:
    text = " ".join(words)
    _check(text, bounded_spans(text, max_words=max_words), max_words)


def test_sentences_stay_whole_when_they_fit() -> None:
    text = "First sentence here. Second one follows. Third closes it."
    assert [text[s:e] for s, e in bounded_spans(text, max_words=6)] == [
        "First sentence here. Second one follows.", "Third closes it."]


def test_a_text_without_spaces_is_cut_every_1500_characters() -> None:
    text = "a" * 10_000
    spans = bounded_spans(text)
    assert [e - s for s, e in spans] == [MAX_WORDS * 6] * 6 + [10_000 - 6 * MAX_WORDS * 6]


def test_a_segment_past_the_syntok_limit_is_cut_at_pattern_sentence_ends() -> None:
    sentence = "The lighthouse keeper logs every passing ship. "
    text = sentence * (SYNTOK_MAX_CHARS // len(sentence) + 100)
    spans = bounded_spans(text)
    _check(text, spans, MAX_WORDS)
    assert all(text[s:e].endswith("ship.") for s, e in spans)
    assert {word_count(text[s:e]) for s, e in spans[:-1]} == {245}  # 35 whole 7-word sentences each


def test_bound_chunks_cuts_only_what_is_too_long_and_keeps_provenance() -> None:
    long_text = " ".join(f"Page word{i}." for i in range(2000))
    short = "A short passage."
    text = short + "\n\n" + long_text
    extraction = Extraction(kind="pdf", media_type="application/pdf", text=text, chunks=[
        ChunkDraft(short, 0, len(short), "paragraph", {"source_type": "pdf", "page": 1}),
        ChunkDraft(long_text, len(short) + 2, len(text), "paragraph", {"source_type": "pdf", "page": 2})])
    bounded = bound_chunks(extraction)
    assert bounded.chunks[0] is extraction.chunks[0]
    pieces = bounded.chunks[1:]
    assert len(pieces) > 1 and all(len(p.text) <= MAX_CHUNK_CHARS for p in pieces)
    for part, piece in enumerate(pieces):
        assert text[piece.char_start:piece.char_end] == piece.text
        assert piece.metadata == {"source_type": "pdf", "page": 2, "part": part, "parts": len(pieces)}
    assert bound_chunks(bounded) is bounded


def test_bound_chunks_moves_mentions_with_their_chunks() -> None:
    texts = ["one " * 2000, "two"]
    text = "\n\n".join(texts)
    chunks = [ChunkDraft(texts[0].strip(), 0, len(texts[0].strip()), "post", {"source_type": "post", "id": "1"}),
              ChunkDraft("two", len(texts[0]) + 2, len(text), "post", {"source_type": "post", "id": "2"})]
    mentions = [MentionDraft("x", "1", {}, 0), MentionDraft("x", "2", {}, 1)]
    bounded = bound_chunks(Extraction("post", "application/jsonl", text, chunks, mentions=mentions))
    first, second = bounded.mentions
    assert (first.chunk_position, second.chunk_position) == (0, first.chunk_count)
    assert first.chunk_count > 1 and second.chunk_count == 1
    assert bounded.chunks[second.chunk_position].text == "two"


def test_a_long_post_is_cut_and_every_piece_cites_the_post() -> None:
    body = " ".join(f"Sentence number {i} about Activision puts." for i in range(3000))
    rows = [{"source": "Reddit", "id": "z1", "text": body, "author": "ann"},
            {"source": "reddit", "id": "z2", "text": "A short one."}]
    extraction = extract_posts("".join(json.dumps(r) + "\n" for r in rows).encode(), name="p.jsonl")
    long_post, short_post = extraction.mentions
    assert long_post.chunk_position == 0 and long_post.chunk_count == len(extraction.chunks) - 1 > 10
    assert (short_post.chunk_position, short_post.chunk_count) == (len(extraction.chunks) - 1, 1)
    pieces = extraction.chunks[:long_post.chunk_count]
    for part, piece in enumerate(pieces):
        assert extraction.text[piece.char_start:piece.char_end] == piece.text
        assert word_count(piece.text) <= MAX_WORDS and piece.text_type == "post"
        assert (piece.metadata["source"], piece.metadata["id"], piece.metadata["part"]) == ("Reddit", "z1", part)
        assert piece.metadata["parts"] == len(pieces) and piece.metadata["author"] == "ann"
    assert " ".join(p.text for p in pieces) == body
    assert long_post.fields["text"] == body  # the mention keeps the whole post
    assert "part" not in extraction.chunks[-1].metadata


def test_a_long_cue_is_cut_and_every_piece_keeps_the_cue_times() -> None:
    words = " ".join(f"word{i}" for i in range(2000)) + "."
    vtt = f"WEBVTT\n\n00:00:01.000 --> 00:00:02.500\nHello there.\n\n00:00:03.000 --> 00:10:04.250\n<v Ann>{words}\n"
    extraction = extract_vtt(vtt.encode(), name="t.vtt")
    first, *pieces = extraction.chunks
    assert first.text == "Hello there." and first.metadata["blocks"] == [0]
    assert len(pieces) > 10
    for part, piece in enumerate(pieces):
        assert extraction.text[piece.char_start:piece.char_end] == piece.text
        assert word_count(piece.text) <= 150
        meta = piece.metadata
        assert (meta["start_time"], meta["end_time"], meta["blocks"], meta["cue_times"]) == (
            3.0, 604.25, [1], [[3.0, 604.25]])
        assert meta["speakers"] == ["Ann"] and (meta["part"], meta["parts"]) == (part, len(pieces))
    assert pieces[0].text.startswith("Ann: word0 word1")
    assert " ".join(p.text for p in pieces) == "Ann: " + words


def test_an_answer_is_offered_one_passage_per_post() -> None:
    """A long post's pieces (or two files' copies of a post) compete for the same places:
    only the best-ranked passage of each post is offered (one post, one number, one text)."""
    from citewell.answer.retrieval import one_per_post
    from citewell.models import Chunk, Passage

    def passage(cid: str, post: str | None, rank: int) -> Passage:
        meta = {"source_type": "post", "source": "reddit", "id": post} if post else {"source_type": "text"}
        return Passage(chunk=Chunk(id=cid, resource_id="r", chunk_index=rank, text=cid, text_type="post",
                                   metadata=meta), resource_title="t", resource_kind="post", rank=rank)

    ranking = [passage("z1-0", "z1", 1), passage("z1-3", "z1", 2), passage("doc-a", None, 3), passage("z1-1", "z1", 4),
               passage("z2-0", "z2", 5), passage("doc-b", None, 6), passage("z2-1", "z2", 7), passage("doc-c", None, 8)]
    asked: list[int] = []

    def fetch(n: int) -> list[Passage]:
        asked.append(n)
        return ranking[:n]

    offered = one_per_post(fetch, 3)
    assert [(p.chunk.id, p.rank) for p in offered] == [("z1-0", 1), ("doc-a", 2), ("z2-0", 3)]
    assert asked == [3, 9]  # the top 3 held a post twice: one look further, no more
    asked.clear()
    assert [p.chunk.id for p in one_per_post(fetch, 1)] == ["z1-0"] and asked == [1]
