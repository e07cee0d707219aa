"""Bounded passages: text of any length cut into pieces of at most a few hundred words.

Answering a question costs time in proportion to the passages it reads (sentence
boundaries, support checks, highlighting), and embedding a passage costs memory in
proportion to its length. Every extractor therefore hands out chunks of bounded size
(issue 14: one 52 MB post was one chunk, and every question that retrieved it split 52 MB
into sentences). :func:`bounded_spans` is the one cutter, used by the text extractor
(long paragraphs), the posts extractor (long posts: every piece still cites its post) and
the transcript extractor (a long cue: every piece keeps the cue's times), and
:func:`bound_chunks` is the net under every extractor (:func:`citewell.ingest.pipeline.extract`):
a chunk no extractor bounded is cut the same way and keeps its provenance.

Rules of :func:`bounded_spans`:

- sentences (syntok, :func:`citewell.text.sentences.sentence_spans`, the boundaries answers
  quote by) are packed greedily into pieces of at most ``max_words`` words
  (:func:`citewell.text.sentences.word_count`: a run of more than 20 characters without a space
  counts a word per 6 characters);
- a sentence longer than that is cut between words, and a run of characters without a
  space longer than that every ``max_words * 6`` characters;
- a segment of more than :data:`SYNTOK_MAX_CHARS` characters is cut at sentence ends found
  by a plain pattern (``.``, ``!``, ``?`` and closing quotes or brackets, then a space)
  instead of syntok, which reads about 250,000 characters a second: a 52 MB post is cut in
  seconds, not minutes;
- pieces are non-empty, in order, never overlap, start and end on a non-space character,
  and together cover every non-space character of the segment. Linear in its length.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from ..text.sentences import CHARS_PER_WORD, LONG_RUN, sentence_spans
from ..extraction import ChunkDraft, Extraction

#: Words of a piece (as :func:`~citewell.text.sentences.word_count` counts them): the text
#: extractor's paragraph limit, about 1,500 characters of prose.
MAX_WORDS = 250
#: Characters of a chunk any extractor hands out at most (the net of :func:`bound_chunks`):
#: 250 words of 20-character words and their spaces. Sentence splitting of a chunk this
#: long takes about 20 ms.
MAX_CHUNK_CHARS = 5_500
#: Longest segment whose sentences syntok finds; longer ones use :data:`_SENTENCE_END`.
SYNTOK_MAX_CHARS = 200_000

_RUN = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*(?=\s)")


def _run_words(length: int) -> int:
    """Words a whitespace-free run of ``length`` characters counts (see the module docstring)."""
    return length // CHARS_PER_WORD if length > LONG_RUN else 1


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans of ``text[start:end]`` (absolute, stripped, covering its non-space text)."""
    if end - start <= SYNTOK_MAX_CHARS:
        return [(a + start, b + start) for a, b in sentence_spans(text[start:end])]
    spans: list[tuple[int, int]] = []
    pos = start
    for match in _SENTENCE_END.finditer(text, start, end):
        spans.extend(_stripped(text, pos, match.end()))
        pos = match.end()
    spans.extend(_stripped(text, pos, end))
    return spans


def _stripped(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``[(s, e)]``: ``text[start:end]`` without its outer whitespace, or ``[]`` when blank."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return [(start, end)] if end > start else []


def _cut_sentence(text: str, start: int, end: int, max_words: int) -> Iterator[tuple[int, int, int]]:
    """``text[start:end]`` (one sentence) as ``(start, end, words)`` pieces of at most
    ``max_words`` words, cut before a run that would not fit, or inside a run of more than
    ``max_words`` words every ``max_words * 6`` characters."""
    piece_start: int | None = None
    piece_end = start
    count = 0
    for match in _RUN.finditer(text, start, end):
        run_start, run_end = match.span()
        size = _run_words(run_end - run_start)
        if piece_start is not None and count + size > max_words:
            yield piece_start, piece_end, count
            piece_start, count = None, 0
        while size > max_words:  # a run too long on its own: cut inside it
            cut = run_start + max_words * CHARS_PER_WORD
            yield run_start, cut, max_words
            run_start = cut
            size = _run_words(run_end - run_start)
        if piece_start is None:
            piece_start = run_start
        piece_end, count = run_end, count + size
    if piece_start is not None:
        yield piece_start, piece_end, count


def bounded_spans(text: str, start: int = 0, end: int | None = None, *,
                  max_words: int = MAX_WORDS) -> list[tuple[int, int]]:
    """Half-open code-point spans of ``text[start:end]`` cut into pieces of at most
    ``max_words`` words at sentence ends (rules in the module docstring); ``[]`` for blank
    text. Raises ``ValueError`` for ``max_words < 1``."""
    if max_words < 1:
        raise ValueError("max_words must be at least 1")
    end = len(text) if end is None else end
    pieces: list[tuple[int, int]] = []
    cur_start: int | None = None
    cur_end = start
    count = 0
    for s, e in _sentences(text, start, end):
        for a, b, n in _cut_sentence(text, s, e, max_words):
            if cur_start is not None and count + n > max_words:
                pieces.append((cur_start, cur_end))
                cur_start, count = None, 0
            if cur_start is None:
                cur_start = a
            cur_end, count = b, count + n
    if cur_start is not None:
        pieces.append((cur_start, cur_end))
    return pieces


def bound_chunks(extraction: Extraction, *, max_chars: int = MAX_CHUNK_CHARS) -> Extraction:
    """``extraction`` with every chunk longer than ``max_chars`` characters cut by
    :func:`bounded_spans` (at most ``MAX_WORDS`` words, and at most ``max_chars``
    characters: a piece still longer is cut again between words). Each piece keeps its
    chunk's ``text_type`` and ``metadata`` (a PDF piece its page and boxes, a post piece its
    post) with additive ``part`` (0-based) and ``parts``; its ``char_start``/``char_end``
    are its own, so ``text[char_start:char_end] == piece`` still holds. Mentions move with
    their chunks. The extraction itself is returned when nothing is too long."""
    if all(len(c.text) <= max_chars for c in extraction.chunks):
        return extraction
    chunks: list[ChunkDraft] = []
    moved: dict[int, tuple[int, int]] = {}  # old position -> (new first position, pieces)
    for position, chunk in enumerate(extraction.chunks):
        first = len(chunks)
        if len(chunk.text) <= max_chars:
            chunks.append(chunk)
        else:
            spans = _within_chars(chunk.text, max_chars)
            for part, (s, e) in enumerate(spans):
                metadata = {**chunk.metadata, "part": part, "parts": len(spans)}
                chunks.append(replace(chunk, text=chunk.text[s:e], char_start=chunk.char_start + s,
                                      char_end=chunk.char_start + e, metadata=metadata))
        moved[position] = (first, len(chunks) - first)
    mentions = []
    for mention in extraction.mentions:
        first, _ = moved[mention.chunk_position]
        last_first, last_count = moved[mention.chunk_position + mention.chunk_count - 1]
        mentions.append(replace(mention, chunk_position=first, chunk_count=last_first + last_count - first))
    return replace(extraction, chunks=chunks, mentions=mentions)


def _within_chars(text: str, max_chars: int) -> list[tuple[int, int]]:
    """:func:`bounded_spans` of ``text`` with every piece also at most ``max_chars``
    characters (a piece of long words is cut again at word ends, or inside a word)."""
    out: list[tuple[int, int]] = []
    for s, e in bounded_spans(text):
        while e - s > max_chars:
            cut = text.rfind(" ", s + 1, s + max_chars + 1)
            cut = cut if cut > s else s + max_chars
            out.extend(_stripped(text, s, cut))
            s = cut
            while s < e and text[s].isspace():
                s += 1
        out.extend(_stripped(text, s, e))
    return out


__all__ = ["MAX_CHUNK_CHARS", "MAX_WORDS", "SYNTOK_MAX_CHARS", "bound_chunks", "bounded_spans"]
