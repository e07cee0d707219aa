"""The times of the cues a cited transcript sentence comes from.

A transcript passage is a group of consecutive cues, one per line of its text, and its
chunk metadata holds each cue's ``[start, end]`` (``cue_times``, seconds; see
:func:`citewell.ingest.transcript.extract_vtt`) beside the group's ``start_time`` and
``end_time``. A sentence of an answer quotes one or a few of those cues, and the reader
following its citation wants to hear those, not the whole group (docs/architecture.md
"Canonical data": times are seconds, millisecond precision).

:func:`cue_times` finds the cues of the span of the passage that backs a sentence
(:func:`~citewell.cite.quote.quoted_span`, verbatim or the closest unit; never the whole
passage) and gives their first start and last end; :func:`narrowed` is the
:class:`~citewell.models.SourceRef` of a part with those times as its ``start_time``/
``end_time`` and the passage's own range kept as additive ``passage_start_time``/
``passage_end_time``; :func:`with_cue_times` applies it to every source of a part.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from citewell.models import Part, SourceRef

from .quote import quoted_span
from .verdict import unescape_markdown

__all__ = ["cue_times", "narrowed", "part_sentence", "with_cue_times"]

#: A citation marker of a message (``[3]``), not an escaped bracket of a quote (``\\[3\\]``).
_MARKER_RE = re.compile(r"[ \t]*(?<!\\)\[\d+\]")


def cue_times(sentence: str, passage: str, metadata: Mapping[str, Any]) -> tuple[float, float] | None:
    """``(start, end)`` in seconds of the cues of ``passage`` (a transcript chunk's text,
    one cue per line) that hold ``sentence`` (as a reader sees it: no markers, no escapes),
    from ``metadata["cue_times"]``; None when the passage has no cue times, they do not
    pair with its lines, or no span of it backs the sentence more closely than the whole
    passage."""
    times = metadata.get("cue_times")
    if not isinstance(times, Sequence) or not times or not sentence.strip():
        return None
    if passage.count("\n") + 1 != len(times):
        return None
    span = quoted_span(sentence, passage, "paragraph")  # read by sentences
    if span.how == "passage" or span.end <= span.start:
        return None
    first = passage.count("\n", 0, span.start)
    last = passage.count("\n", 0, span.end - 1)
    try:
        chosen = [(float(t[0]), float(t[1])) for t in times[first:last + 1]]
    except (TypeError, ValueError, IndexError):
        return None
    return (chosen[0][0], max(end for _, end in chosen)) if chosen else None


def narrowed(ref: SourceRef, sentence: str, passage: str) -> SourceRef:
    """``ref`` with ``start_time``/``end_time`` of the cues that hold ``sentence``
    (:func:`cue_times`) and the passage's range as ``passage_start_time``/
    ``passage_end_time``; ``ref`` itself when it is no transcript or the cues are not found."""
    meta = ref.metadata or {}
    found = cue_times(sentence, passage, meta)
    if found is None:
        return ref
    start, end = found
    return ref.model_copy(update={"metadata": {**meta, "start_time": start, "end_time": end,
                                               "passage_start_time": meta.get("passage_start_time", meta.get("start_time")),
                                               "passage_end_time": meta.get("passage_end_time", meta.get("end_time"))}})


def part_sentence(text: str) -> str:
    """A part's text as a reader sees it: its ``[N]`` markers removed (with the blanks before
    them), markdown escapes undone, outer whitespace stripped."""
    return unescape_markdown(_MARKER_RE.sub("", text)).strip()


def with_cue_times(part: Part, passages: Mapping[str, str]) -> Part:
    """``part`` whose transcript sources (``source`` and ``sources``) carry the times of the
    cues its sentence quotes (:func:`narrowed`); ``passages``: chunk id → chunk text. The
    part itself when none of its sources has cue times."""
    refs = [r for r in (part.source, *part.sources) if r is not None]
    if not any((r.metadata or {}).get("cue_times") and r.chunk_id in passages for r in refs):
        return part
    sentence = part_sentence(part.text)

    def narrow(ref: SourceRef | None) -> SourceRef | None:
        if ref is None or ref.chunk_id not in passages or not (ref.metadata or {}).get("cue_times"):
            return ref
        return narrowed(ref, sentence, passages[ref.chunk_id])

    return part.model_copy(update={"source": narrow(part.source),
                                   "sources": [r for r in (narrow(s) for s in part.sources) if r is not None]})
