"""Sentence boundaries with exact code-point offsets (syntok).

Shared by the extractive generator (which sentences to quote), the cite stage (where
parts end) and support checks. Offsets index the string given, in code points.
"""

from __future__ import annotations

import syntok.segmenter as _segmenter


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Return the half-open ``(start, end)`` code-point spans of the sentences of ``text``.

    A span runs from the first token of a sentence to the end of its last token, so it
    has no leading or trailing whitespace; text between spans is whitespace only.
    Empty or whitespace-only text gives ``[]``. Never raises on any ``str``.
    """
    spans: list[tuple[int, int]] = []
    if not text.strip():
        return spans
    try:
        for paragraph in _segmenter.analyze(text):
            for sentence in paragraph:
                tokens = list(sentence)
                if not tokens:
                    continue
                start = tokens[0].offset
                end = min(max(t.offset + len(t.value) for t in tokens), len(text))
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
    return spans


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
