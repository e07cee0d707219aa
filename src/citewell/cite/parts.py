"""Parts (docs/architecture.md rule 6) and citations (rule 7) of a cited message.

``parts[]`` partition the message text: each part runs from the end of the previous one
through one sentence, including the ``[N]`` markers and closing punctuation right after
it, so ``Sales rose [1].`` and ``Sales rose. [1]`` both keep ``[1]`` in their part;
whitespace between sentences starts the next part, and trailing text after the last
sentence joins the last part. A part's ``source`` is the passage of the last marker of
its sentence (the one "at the end"); the other passages cited in it go in ``sources``
(text order, each once). Uncited parts have ``source: None``.

Sentences come from :func:`citewell.text.sentences.sentence_spans` run on the text with every
marker and the whitespace directly before it removed (what the sessions profile shows),
so markers never split or merge sentences.

``citations[]`` has one entry per cited resource in order of first citation; a post is
its own resource (keyed by (source, id)).
"""

from __future__ import annotations

from bisect import bisect_left

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from citewell.models import Citation, Part, Passage, SourceRef
from citewell.text.sentences import sentence_spans

from .cues import with_cue_times
from .offsets import OffsetMap
from .resolver import post_key

#: Characters that close a sentence and stay with it when they follow its end or a marker.
CLOSING_PUNCTUATION = frozenset(".!?…)]}\"'”’»›」』）。！？")


@dataclass(slots=True)
class Marker:
    """One ``[N]`` in the final text: code-point span, number, and its passage (``None``
    for a post the workspace does not know). Read-only by convention (slotted, not
    frozen: built once per marker, so construction speed matters)."""

    start: int
    end: int
    citation: int
    ref: SourceRef | None


def source_ref(passage: Passage, citation: int | None = None) -> SourceRef:
    """The :class:`SourceRef` of ``passage``; a post's also has additive ``source``/``id``,
    and ``citation`` (the marker number) when given."""
    chunk = passage.chunk
    extra: dict[str, Any] = {}
    key = post_key(passage)
    if key is not None:
        extra["source"], extra["id"] = key
    if citation is not None:
        extra["citation"] = citation
    return SourceRef(
        chunk_id=chunk.id,
        resource_id=chunk.resource_id,
        resource_title=passage.resource_title,
        chunk_index=chunk.chunk_index,
        metadata=chunk.metadata,  # validation copies it
        **extra,
    )


def _content_map(text: str, markers: Sequence[Marker]) -> tuple[str, list[int]]:
    """``text`` without markers and the whitespace directly before each, plus the
    index in ``text`` of every kept character."""
    pieces: list[str] = []
    where: list[int] = []
    pos = 0
    for m in markers:
        if m.start < pos or m.end <= m.start:  # unordered, overlapping or empty: the slow way
            return _content_map_slow(text, markers)
        # only this run can lose whitespace: the previous marker stands between
        kept = text[pos:m.start].rstrip()
        pieces.append(kept)
        where.extend(range(pos, pos + len(kept)))
        pos = m.end
    if pos < len(text):
        pieces.append(text[pos:])
        where.extend(range(pos, len(text)))
    return "".join(pieces), where


def _content_map_slow(text: str, markers: Sequence[Marker]) -> tuple[str, list[int]]:
    chars: list[str] = []
    where: list[int] = []
    pos = 0
    for m in markers:
        for i in range(pos, m.start):
            chars.append(text[i])
            where.append(i)
        q = m.start
        while chars and chars[-1].isspace() and where[-1] == q - 1:
            chars.pop()
            where.pop()
            q -= 1
        pos = m.end
    for i in range(pos, len(text)):
        chars.append(text[i])
        where.append(i)
    return "".join(chars), where


_SENTENCE_END = ".!?"


def _marker_sentence_ends(text: str, markers: Sequence[Marker]) -> list[int]:
    """Part ends that the markers themselves show: a marker with a sentence-final
    ``.``/``!``/``?`` right before it (``… rose. [1] Next``) or right after it (``… rose
    [1]. Next``), followed by whitespace, ends its sentence there, whatever the sentence
    splitter thinks (it reads ``$ 3,393 [2]. 2023 results`` as one sentence)."""
    ends: list[int] = []
    starts = {x.start for x in markers}
    for m in markers:
        b = m.end
        final = False
        while b < len(text) and text[b] in CLOSING_PUNCTUATION:
            final = final or text[b] in _SENTENCE_END
            b += 1
        j = m.start
        while j > 0 and text[j - 1] in " \t":
            j -= 1
        final = final or (j > 0 and text[j - 1] in _SENTENCE_END)
        if final and b < len(text) and text[b].isspace() and b not in starts:
            ends.append(b)
    return ends


def part_bounds(text: str, markers: Sequence[Marker],
                verbatim: Sequence[tuple[int, int, bool]] = ()) -> list[tuple[int, int]]:
    """Half-open code-point spans of the parts of ``text`` (they partition it).

    ``verbatim`` spans ``(start, end, is_fenced_block)`` (code, link markup) are never
    cut; a fenced code block also ends a part (the text after it starts a new one).
    """
    if not text:
        return []
    by_start = {m.start: m for m in markers}
    content, where = _content_map(text, markers)
    spans = [(where[s], where[e - 1] + 1) for s, e in sentence_spans(content)]
    bounds: list[int] = []
    prev = 0
    for k, (_, t_end) in enumerate(spans):
        next_start = spans[k + 1][0] if k + 1 < len(spans) else len(text)
        b = t_end
        while b < next_start:
            if text[b] in CLOSING_PUNCTUATION:
                b += 1
                continue
            j = b
            while j < next_start and text[j] in " \t":
                j += 1
            m = by_start.get(j)
            if m is None:
                break
            b = m.end
        b = min(b, next_start)
        if k + 1 < len(spans) and b > prev:
            bounds.append(b)
            prev = b
    bounds.extend(_marker_sentence_ends(text, markers))
    spans = sorted((a, e) for a, e, _ in verbatim)
    starts = [a for a, _ in spans]

    def inside(b: int) -> bool:  # b strictly inside a verbatim span (they never overlap)
        i = bisect_left(starts, b) - 1
        return i >= 0 and spans[i][0] < b < spans[i][1]

    cuts = {b for b in bounds if not inside(b)}
    cuts.update(e for _, e, block in verbatim if block and 0 < e < len(text))
    edges = [0, *sorted(cuts), len(text)]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def build_parts(text: str, markers: Sequence[Marker], *, verbatim: Sequence[tuple[int, int, bool]] = (),
                unit: str = "codepoint", offset_map: OffsetMap | None = None,
                passage_texts: Mapping[str, str] | None = None) -> list[Part]:
    """Parts of ``text`` (rule 6), with additive ``start_index``/``end_index`` and
    ``offset_unit`` (``unit``), and ``citation_numbers`` (the distinct marker numbers in the
    part, text order). ``verbatim``: see :func:`part_bounds`. ``passage_texts`` (chunk id →
    text): a transcript source of a part then carries the times of the cues its sentence
    quotes (:func:`~citewell.cite.cues.with_cue_times`), not those of its whole passage."""
    omap = offset_map or OffsetMap(text)
    parts: list[Part] = []
    ordered = sorted(markers, key=lambda m: m.start)
    k = 0
    for a, b in part_bounds(text, ordered, verbatim):
        inside: list[Marker] = []
        while k < len(ordered) and ordered[k].start < b:
            if ordered[k].start >= a:
                inside.append(ordered[k])
            k += 1
        known = [m for m in inside if m.ref is not None]
        main = known[-1].ref if known else None
        others: list[SourceRef] = []
        seen = {main.chunk_id} if main is not None else set()
        for m in known:
            assert m.ref is not None
            if m.ref.chunk_id not in seen:
                seen.add(m.ref.chunk_id)
                others.append(m.ref)
        numbers = list(dict.fromkeys(m.citation for m in inside))
        parts.append(Part(
            text=text[a:b],
            source=main,
            sources=others,
            start_index=omap.to_unit(a, unit),
            end_index=omap.to_unit(b, unit),
            offset_unit=unit,
            citation_numbers=numbers,
        ))
    if passage_texts:
        parts = [with_cue_times(p, passage_texts) for p in parts]
    return parts


def _extra(obj: Any, key: str) -> Any:
    extra = getattr(obj, "model_extra", None) or {}
    return extra.get(key)


def _resource_key(ref: SourceRef) -> tuple[str, ...]:
    source, pid = _extra(ref, "source"), _extra(ref, "id")
    meta = ref.metadata or {}
    if (source is None or pid is None) and meta.get("source_type") == "post":
        source, pid = meta.get("source"), meta.get("id")
    if source is not None and pid is not None:
        return ("post", str(source).lower(), str(pid))
    return ("resource", ref.resource_id)


def build_citations(parts: Sequence[Part | Mapping[str, Any]]) -> tuple[list[Citation], list[str]]:
    """``(citations, resource_ids)`` of rule 7 from ``parts``.

    One :class:`Citation` per cited resource, in order of first citation, describing its
    first-cited passage (``chunk_index``, ``metadata``, additive ``chunk_id``) with
    ``chunk_indices`` = every cited chunk of it (first-citation order, each once). A post
    is its own resource: key (source lower-cased, id), additive ``source``/``id`` on its
    citation; its ``resource_id`` is the posts file's. ``resource_ids``: distinct
    ``resource_id`` values in first-citation order.

    Order within a part: when every passage of the part carries its marker number
    (additive ``citation``, as :func:`~citewell.cite.cite` sets), by that number, which is
    text order of first appearance; otherwise ``source`` first, then ``sources``.
    Accepts :class:`Part` objects or their dicts; never mutates them.
    """
    entries: dict[tuple[str, ...], Citation] = {}
    resource_ids: list[str] = []
    for raw in parts:
        part = raw if isinstance(raw, Part) else Part.model_validate(raw)
        refs = [r for r in [part.source, *part.sources] if r is not None]
        numbers = [_extra(r, "citation") for r in refs]
        if refs and all(isinstance(n, int) for n in numbers):
            order = sorted(range(len(refs)), key=lambda i: (numbers[i], i))
            refs = [refs[i] for i in order]
        for ref in refs:
            key = _resource_key(ref)
            entry = entries.get(key)
            if entry is None:
                extra: dict[str, Any] = {"chunk_id": ref.chunk_id}
                if key[0] == "post":
                    extra["source"], extra["id"] = key[1], key[2]
                entry = Citation(
                    resource_id=ref.resource_id,
                    resource_title=ref.resource_title,
                    chunk_index=ref.chunk_index,
                    metadata=dict(ref.metadata or {}),
                    chunk_indices=[ref.chunk_index],
                    **extra,
                )
                entries[key] = entry
                if ref.resource_id not in resource_ids:
                    resource_ids.append(ref.resource_id)
            elif ref.chunk_index not in entry.chunk_indices:
                entry.chunk_indices.append(ref.chunk_index)
    return list(entries.values()), resource_ids
