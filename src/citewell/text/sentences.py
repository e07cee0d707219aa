"""Sentence boundaries with exact code-point offsets (syntok).

Shared by the extractive generator (which sentences to quote), the cite stage (where
parts end) and support checks. Offsets index the string given, in code points.
"""

from __future__ import annotations

import re
from functools import lru_cache

from syntok.segmenter import preprocess_with_offsets as _preprocess_with_offsets
from syntok.segmenter import segment as _segment
from syntok.tokenizer import Tokenizer as _Tokenizer

_RUN = re.compile(r"\S+")


#: Texts up to this many code points (passages, quotes, questions) keep their spans in a
#: cache of :data:`CACHED_TEXTS` entries: the generator, the cite stage and the support
#: checks split the same passages again for every question that retrieves them. A longer
#: text (a whole document at ingest) is split afresh each time.
CACHED_TEXT_CHARS = 8192
CACHED_TEXTS = 4096


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Return the half-open ``(start, end)`` code-point spans of the sentences of ``text``.

    A span runs from the first token of a sentence to the end of its last token, so it
    has no leading or trailing whitespace; text between spans is whitespace only.
    Empty or whitespace-only text gives ``[]``. Never raises on any ``str``. A new list
    each call (texts of up to :data:`CACHED_TEXT_CHARS` are split once and cached).
    """
    if len(text) <= CACHED_TEXT_CHARS:
        return list(_cached_spans(text))
    return _spans(text)


@lru_cache(maxsize=CACHED_TEXTS)
def _cached_spans(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(_spans(text))


def _spans(text: str) -> list[tuple[int, int]]:
    """:func:`sentence_spans`, computed.

    Linear in the length of ``text``: syntok's ``analyze`` tokenizes each paragraph at
    its offset by prefixing that many spaces (quadratic in the number of paragraphs), so
    each paragraph is tokenized on its own here and its token offsets are shifted, which
    gives the same tokens.
    """
    spans: list[tuple[int, int]] = []
    if not text.strip():
        return spans
    try:
        tokenizer = _Tokenizer(replace_not_contraction=False)
        n = len(text)
        for offset, paragraph in _preprocess_with_offsets(text):
            for sentence in _segment(tokenizer.tokenize(paragraph)):
                tokens = list(sentence)
                if not tokens:
                    continue
                start = tokens[0].offset + offset
                end = min(max(t.offset + len(t.value) for t in tokens) + offset, n)
                while end > start and text[end - 1].isspace():
                    end -= 1
                while start < end and text[start].isspace():
                    start += 1
                if spans and start < spans[-1][1]:
                    start = spans[-1][1]
                if end > start:
                    spans.append((start, end))
    except Exception:  # syntok is robust, but a boundary finder must never fail a request
        return _fallback_spans(text)
    return _cover_gaps(text, spans)


def _cover_gaps(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Widen ``spans`` over the non-space characters syntok leaves out (a zero-width space
    or another format character between tokens is no token to it, yet ``str.isspace`` says
    it is text): such characters join the next sentence, or the last one at the end."""
    out: list[tuple[int, int]] = []
    pos = 0
    for start, end in spans:
        gap = text[pos:start]
        if gap.strip():
            start = pos + len(gap) - len(gap.lstrip())
        out.append((start, end))
        pos = end
    tail = text[pos:]
    if tail.strip():
        end = pos + len(tail.rstrip())
        if out:
            out[-1] = (out[-1][0], end)
        else:
            out.append((len(text) - len(text.lstrip()), end))
    return out


def _fallback_spans(text: str) -> list[tuple[int, int]]:
    """Non-blank lines as sentences: used only if syntok fails on an input."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped:
            start = pos + (len(line) - len(line.lstrip()))
            spans.append((start, start + len(stripped)))
        pos += len(line)
    return spans


#: A whitespace-free run longer than this counts as several words (CJK, URLs, minified text).
LONG_RUN = 20
#: Characters per word assumed for such runs.
CHARS_PER_WORD = 6


def word_count(text: str) -> int:
    """Words of ``text`` for size limits: whitespace-separated words, where a run longer
    than :data:`LONG_RUN` characters counts ``len(run) // CHARS_PER_WORD`` words, so text
    without spaces (Chinese, Japanese, minified data) is measured too."""
    return sum(len(w) // CHARS_PER_WORD if len(w) > LONG_RUN else 1 for w in text.split())


def cut_at_words(text: str, max_words: int) -> int:
    """Index at which ``text`` holds at most ``max_words`` words (by :func:`word_count`),
    preferring a whitespace boundary; ``len(text)`` when it fits."""
    count = 0
    end = 0
    for match in _RUN.finditer(text):
        run = match.group()
        size = len(run) // CHARS_PER_WORD if len(run) > LONG_RUN else 1
        if count + size > max_words:
            if count == 0:  # the very first run is too long on its own: cut inside it
                return match.start() + max_words * CHARS_PER_WORD if size > 1 else match.end()
            return end  # otherwise before the run: never in the middle of a word or URL
        count += size
        end = match.end()
    return len(text)
