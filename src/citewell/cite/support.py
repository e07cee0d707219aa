"""Support on a message: every (sentence, cited passage) pair checked, flagged or dropped
(docs/architecture.md rule 8).

The verdict of one pair comes from :mod:`citewell.cite.verdict`; this module finds the
pairs of a :class:`~citewell.models.Message`, puts the verdicts on it and, under policy
``drop``, rebuilds the message without the citations that are not supported.

Messages
========

:func:`apply_support` (policy ``flag``, the default, or ``drop``) returns a copy of the
message where

- every reference occurrence gets the support of (the sentence of the part holding the
  marker, that reference's passage ``Reference.text``); a reference without text (a post
  the workspace does not know) gives ``unchecked``/``no_passage``;
- every part that holds a marker gets the *worst* support of its cited passages, by
  :data:`VERDICT_ORDER` ``supported < unchecked < uncertain < unsupported`` (ties: the
  lower score): ``unchecked`` means "could not check", which is better news than a check
  that found doubt. Parts without markers keep ``support: None``.

Policy ``drop`` removes every citation (marker occurrence) whose pair is ``unsupported``
or ``uncertain`` (``unchecked`` ones stay, flagged): the marker goes with the spaces and
tabs directly before it (a line break before it stays, so no two lines are joined; a bracketed number that
the removal creates, as in ``[12[1]]``, is escaped, rule 5);
remaining sources are renumbered gap-free by first appearance; references (first
occurrence and ``occurrences``), parts (rule 6, rebuilt with
:func:`~citewell.cite.parts.build_parts`), ``citations``/``resource_ids`` (rule 7) are
recomputed; entity references and earlier warnings are kept; the markdown structure
(code blocks and spans, links) must read back unchanged: if making a marker's line blank
would change it (a marker starting its line: a blank line, or a list marker or fence
brought to the line start; a marker between two code spans joining them), such markers,
then all removed ones, are replaced by :data:`LINE_KEEPER` (U+200B); if that does not
help either, those citations stay, flagged, with a ``citation_kept`` warning
(same fields) instead; ``grounded`` becomes false
when no numbered source is left. Removing a marker can merge two parts into one
sentence, so checking and dropping repeat until every remaining citation passes. Each
dropped (sentence, passage) pair adds one warning ``{"code": "citation_dropped",
"message", "citation": N in the input message, "verdict", "score", "reasons": [...]}``.
Offsets are worked in code points and returned in the message's ``offset_unit``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from citewell.embed import Embedder
from citewell.models import Message, Notice, Occurrence, Passage, Reference, SourceRef
from citewell.domains.finance.rows import table_part
from citewell.text.tables import table_lead
from citewell.text.terms import NO_EXPANSIONS, Expansions

from .links import escape_numbers, scan
from .offsets import OffsetMap, convert_offsets
from .parts import Marker, build_citations, build_parts
from .verdict import (DROPPED_VERDICTS, POLICIES, VERDICT_ORDER, VERDICTS, Judge, Support, check_rules,
                      check_support, unescape_markdown)

__all__ = ["LINE_KEEPER", "POLICIES", "VERDICTS", "VERDICT_ORDER", "Embedder", "Judge", "Support", "apply_support",
           "check_rules", "check_support", "grounded_coverage", "markers_by_part", "message_sentence", "part_support",
           "sentence_support"]


# --------------------------------------------------------------------------- messages


def _worst(supports: Sequence[Support]) -> Support:
    return max(supports, key=lambda s: (VERDICT_ORDER.get(s.verdict, 1), -s.score))


def _spans(ref: Reference) -> list[tuple[int, int]]:
    if ref.occurrences:
        return [(o.start_index, o.end_index) for o in ref.occurrences]
    if ref.start_index is not None and ref.end_index is not None:
        return [(ref.start_index, ref.end_index)]
    return []


def message_sentence(text: str, start: int, end: int, markers: Iterable[tuple[int, int]]) -> str:
    """The sentence of the part ``text[start:end]`` as support checks read it: markers
    (code-point spans) and the whitespace directly before each removed, markdown escapes
    undone (:func:`unescape_markdown`), outer whitespace stripped."""
    out: list[str] = []
    pos = start
    for a, b in sorted(markers):
        if a < start or b > end:
            continue
        piece = text[pos:a]
        out.append(piece.rstrip())
        pos = b
    out.append(text[pos:end])
    return unescape_markdown("".join(out)).strip()


def _key(ref: Reference) -> tuple[str, ...]:
    if ref.type == "post" and ref.source is not None and ref.id is not None:
        return ("post", ref.source.lower(), ref.id)
    if ref.chunk_id is not None:
        return ("chunk", ref.chunk_id)
    return ("citation", str(ref.citation))


@dataclass
class _Pair:
    part: int
    ref: Reference
    spans: list[tuple[int, int]]
    support: Support


def markers_by_part(msg: Message) -> list[tuple[tuple[int, int], list[tuple[int, int, Reference]]]]:
    """The ``[N]`` markers of a message grouped by the part whose text holds their start.

    Args:
        msg: a message whose offsets are in code points (``convert_offsets`` first).

    Returns:
        One item per part, in order: ``((start, end), markers)``, the part's span in
        ``msg.text`` and its markers ``(start, end, reference)`` sorted by start; a marker's
        span comes from its reference's occurrences (else its ``start_index``/``end_index``).
        Only numbered references (``citation`` set) have markers.
    """
    numbered = [r for r in msg.references if r.citation is not None]
    markers = sorted(((a, b, r) for r in numbered for a, b in _spans(r)), key=lambda m: m[0])
    out: list[tuple[tuple[int, int], list[tuple[int, int, Reference]]]] = []
    pos = k = 0
    for part in msg.parts:
        a, b = pos, pos + len(part.text)
        pos = b
        inside: list[tuple[int, int, Reference]] = []
        while k < len(markers) and markers[k][0] < b:
            if markers[k][0] >= a:
                inside.append(markers[k])
            k += 1
        out.append(((a, b), inside))
    return out


def _check_message(msg: Message, embedder: Embedder | None, judge: Judge | None = None,
                   expansions: Expansions = NO_EXPANSIONS) -> list[_Pair]:
    """Check every (part, cited reference) pair of a code-point message and write the
    supports onto its occurrences and parts (in place)."""
    numbered = [r for r in msg.references if r.citation is not None]
    pairs: dict[tuple[int, int], _Pair] = {}
    cache: dict[tuple[str, str], Support] = {}
    for index, ((a, b), inside) in enumerate(markers_by_part(msg)):
        part = msg.parts[index]
        if not inside:
            part.support = None
            continue
        sentence = message_sentence(msg.text, a, b, [(x, y) for x, y, _ in inside])
        supports: list[Support] = []
        for x, y, ref in inside:
            pk = (index, id(ref))
            if pk not in pairs:
                ck = (sentence, str(id(ref)))
                if ck not in cache:
                    title = " ".join(str(t) for t in (ref.resource_title, getattr(ref, "file_name", None)) if t)
                    cache[ck] = check_support(sentence, ref.text, embedder=embedder, text_type=ref.text_type,
                                              title=title or None, judge=judge, header=table_lead(ref.metadata),
                                              expansions=expansions, part=table_part(ref.metadata))
                pairs[pk] = _Pair(index, ref, [], cache[ck])
                supports.append(cache[ck])
            pairs[pk].spans.append((x, y))
        part.support = _worst(supports).to_dict()
    by_span = {(x, y): p.support for p in pairs.values() for x, y in p.spans}
    for ref in numbered:
        if ref.occurrences:
            for occ in ref.occurrences:
                sup = by_span.get((occ.start_index, occ.end_index))
                occ.support = sup.to_dict() if sup is not None else None
    return list(pairs.values())


def _source_refs(msg: Message) -> dict[str, SourceRef]:
    out: dict[str, SourceRef] = {}
    for part in msg.parts:
        for ref in [part.source, *part.sources]:
            if ref is not None:
                out.setdefault(ref.chunk_id, ref)
    return out


def _source_ref(ref: Reference, known: dict[str, SourceRef], citation: int) -> SourceRef | None:
    if ref.chunk_id is None:
        return None
    base = known.get(ref.chunk_id)
    if base is not None:
        return base.model_copy(update={"citation": citation}, deep=True)
    extra: dict[str, Any] = {"citation": citation}
    if ref.type == "post":
        extra["source"], extra["id"] = ref.source, ref.id
    return SourceRef(chunk_id=ref.chunk_id, resource_id=ref.resource_id or "",
                     resource_title=ref.resource_title or "", chunk_index=ref.chunk_index or 0,
                     metadata=dict(ref.metadata or {}), **extra)


def _verbatim_spans(text: str) -> list[tuple[int, int, bool]]:
    """Code and ordinary-link spans of a final text (never cut by parts)."""
    return [(t.start, t.end, t.block) for t in scan(text) if t.kind in ("code", "mdlink")]


def _escape_joined(text: str, marker_starts: Sequence[int]) -> tuple[str, Any]:
    """Rule 5 after markers were removed: removing ``[1]`` from ``[12[1]]`` leaves a
    bracketed number that is no marker. Prose between kept markers and code/link spans is
    passed through :func:`~citewell.cite.links.escape_numbers` again (which leaves what is
    escaped already alone). Returns the text and a function mapping an old marker start to
    its new position (``None`` when nothing changed)."""
    if "[" not in text:
        return text, None
    starts = set(marker_starts)
    fixed: list[tuple[int, int]] = []
    for a in sorted(starts):
        end = text.index("]", a) + 1
        fixed.append((a, end))
    fixed.extend((t.start, t.end) for t in scan(text) if t.kind in ("code", "mdlink"))
    fixed.sort()
    for (_, b), (c, _) in pairwise(fixed):
        if c < b:  # overlapping spans: leave the text as the cite stage wrote it
            return text, None
    out: list[str] = []
    moves: dict[int, int] = {}
    pos = 0
    length = 0
    for a, b in fixed:
        prose = escape_numbers(text[pos:a]) if a > pos else ""
        out.append(prose)
        length += len(prose)
        moves[a] = length
        out.append(text[a:b])
        length += b - a
        pos = b
    out.append(escape_numbers(text[pos:]) if pos < len(text) else "")
    new_text = "".join(out)
    if new_text == text:
        return text, None
    return new_text, lambda x: moves[x]


_LINE_BREAKS = "\n\r\u2028\u2029\x0b\x0c\x85"
#: What replaces a removed marker that started its line when removing it would change the
#: markdown structure (a blank line ending a container, ``1. ```` `` becoming a fence):
#: ZERO WIDTH SPACE, invisible, and not whitespace for CommonMark nor for
#: :func:`~citewell.cite.links.scan`.
LINE_KEEPER = "\u200b"


_MARKER_OR_KEEPER_RE = re.compile(r"[ \t]*\[\d+\]|\u200b")


def _structure(text: str) -> list[tuple[str, str]]:
    """Code, ordinary-link and citation-link tokens of ``text`` (what must not change),
    their text without markers (a re-scan may read a marker into a link label)."""
    return [(t.kind, _MARKER_OR_KEEPER_RE.sub("", t.text)) for t in scan(text)
            if t.kind in ("code", "mdlink", "link", "tail")]


def _starts_line(text: str, a: int) -> bool:
    """Whether only whitespace stands before ``a`` on its line."""
    return not re.split(r"[\n\r]", text[:a])[-1].strip()


def _rebuild(msg: Message, drop: set[tuple[int, int]]) -> Message | None:
    """``msg`` (code points) without the marker spans ``drop``, renumbered and recomputed;
    ``None`` when no removal keeps the markdown structure (code blocks and spans, links)."""
    expected = _structure(msg.text)
    for keeper, everywhere in (("", False), (LINE_KEEPER, False), (LINE_KEEPER, True)):
        rebuilt = _rebuild_with(msg, drop, keeper, everywhere)
        if _structure(rebuilt.text) == expected:
            return rebuilt
    return None


def _rebuild_with(msg: Message, drop: set[tuple[int, int]], keeper: str, everywhere: bool = False) -> Message:
    """:func:`_rebuild` with ``keeper`` written in place of a removed marker that starts its
    line (of every removed marker when ``everywhere``)."""
    text = msg.text
    numbered = [r for r in msg.references if r.citation is not None]
    entities = [r for r in msg.references if r.citation is None]
    markers = sorted(((a, b, r) for r in numbered for a, b in _spans(r)), key=lambda m: m[0])
    kept_starts = {a for a, b, _ in markers if (a, b) not in drop}
    known = _source_refs(msg)
    out: list[str] = []
    pos = 0
    new_number: dict[int, int] = {}
    new_spans: dict[int, list[tuple[int, int, Occurrence | None]]] = {}
    new_markers: list[Marker] = []
    occurrence_of = {(o.start_index, o.end_index): o for r in numbered for o in (r.occurrences or [])}
    length = 0
    for a, b, ref in markers:
        piece = text[pos:a]
        if (a, b) in drop:
            cut = len(piece)
            if b not in kept_starts:  # "million [2][1]": the space stays before the kept [1]
                while cut > 0 and piece[cut - 1].isspace() and piece[cut - 1] not in _LINE_BREAKS:
                    cut -= 1
            piece = piece[:cut]
            if keeper and (everywhere or _starts_line(text, a)):
                piece += keeper
            out.append(piece)
            length += len(piece)
            pos = b
            continue
        out.append(piece)
        length += len(piece)
        rid = id(ref)
        if rid not in new_number:
            new_number[rid] = len(new_number) + 1
        marker = f"[{new_number[rid]}]"
        new_spans.setdefault(rid, []).append((length, length + len(marker), occurrence_of.get((a, b))))
        out.append(marker)
        length += len(marker)
        pos = b
    out.append(text[pos:])
    new_text, shift = _escape_joined("".join(out), sorted(x for spans in new_spans.values() for x, _, _ in spans))
    if shift:
        new_spans = {rid: [(shift(x), shift(x) + (y - x), o) for x, y, o in spans] for rid, spans in new_spans.items()}
    references: list[Reference] = []
    for ref in numbered:
        rid = id(ref)
        if rid not in new_number:
            continue
        n = new_number[rid]
        spans = new_spans[rid]
        occurrences = [Occurrence(start_index=x, end_index=y, support=(o.support if o is not None else None))
                       for x, y, o in spans]
        references.append(ref.model_copy(update={
            "citation": n, "start_index": spans[0][0], "end_index": spans[0][1],
            "occurrences": occurrences, "offset_unit": "codepoint"}, deep=True))
        for x, y, _ in spans:
            new_markers.append(Marker(x, y, n, _source_ref(ref, known, n)))
    references.sort(key=lambda r: r.citation or 0)
    new_markers.sort(key=lambda m: m.start)
    parts = build_parts(new_text, new_markers, verbatim=_verbatim_spans(new_text), offset_map=OffsetMap(new_text),
                        passage_texts={r.chunk_id: r.text for r in numbered if r.chunk_id and r.text})
    citations, resource_ids = build_citations(parts)
    return msg.model_copy(update={
        "text": new_text,
        "parts": parts,
        "references": [*references, *entities],
        "citations": citations,
        "resource_ids": resource_ids,
        "grounded": msg.grounded and bool(references),
    })


def apply_support(message: Message, *, policy: str = "flag", embedder: Embedder | None = None,
                  judge: Judge | None = None, expansions: Expansions = NO_EXPANSIONS) -> Message:
    """Return a copy of ``message`` with rule-8 support on its parts and occurrences.

    Args:
        message: a cited message (from :func:`~citewell.cite.cite`), any offset unit.
        policy: ``flag`` (default: mark only) or ``drop`` (remove unsupported and
            uncertain citations, renumber, recompute, warn ``citation_dropped``).
        embedder: optional sentence embedder for the similarity check.
        judge: optional second opinion on ``uncertain`` pairs (:func:`check_support`).

    Returns:
        A new :class:`~citewell.models.Message` (the input is not changed), in the
        input's ``offset_unit``. See the module docstring for the rules.

    Raises:
        ValueError: unknown policy.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown support policy {policy!r}: expected one of {', '.join(POLICIES)}")
    unit = message.offset_unit
    msg = convert_offsets(message, "codepoint") if unit != "codepoint" else message.model_copy(deep=True)
    original = {_key(r): r.citation for r in msg.references if r.citation is not None}
    pairs = _check_message(msg, embedder, judge, expansions)
    if policy == "drop":
        warnings: list[Notice] = []
        while True:
            bad = [p for p in pairs if p.support.verdict in DROPPED_VERDICTS]
            if not bad:
                break
            drop: set[tuple[int, int]] = set()
            for p in bad:
                drop.update(p.spans)
                old = original.get(_key(p.ref), p.ref.citation)
                what = (f"post {p.ref.source}/{p.ref.id}" if p.ref.type == "post"
                        else f"{p.ref.resource_title or 'passage'} chunk {p.ref.chunk_index}")
                warnings.append(Notice(
                    code="citation_dropped",
                    message=(f"a citation of {what} (numbered [{old}] before removal) was removed from a sentence "
                             f"it does not support ({p.support.verdict}: {', '.join(p.support.reasons[:3])})"),
                    citation=old,
                    chunk_id=p.ref.chunk_id,
                    source=p.ref.source,
                    id=p.ref.id,
                    verdict=p.support.verdict,
                    score=p.support.score,
                    reasons=list(p.support.reasons),
                ))
            rebuilt = _rebuild(msg, drop)
            if rebuilt is None:  # cannot remove them safely: they stay, flagged
                for w in warnings[len(warnings) - len(bad):]:
                    w.code = "citation_kept"
                    w.message = w.message.replace("was removed from", "could not be removed (the markdown "
                                                  "structure would change) from") + "; it stays, flagged"
                break
            msg = rebuilt
            pairs = _check_message(msg, embedder, judge, expansions)
        if warnings:
            msg = msg.model_copy(update={"warnings": [*msg.warnings, *warnings]})
    return msg if unit == "codepoint" else convert_offsets(msg, unit)


_PART_MARKER_RE = re.compile(r"[ \t]*(?<!\\)\[\d+\]")


def part_support(part_text: str, passage: Passage, *, embedder: Embedder | None = None,
                 judge: Judge | None = None, expansions: Expansions = NO_EXPANSIONS) -> dict[str, Any]:
    """Rule-8 support of one part's text (markers and all, as the streaming citer sends
    it) against one cited passage, as ``Support.to_dict()``.

    The markers and the whitespace before them are removed and escapes undone first —
    the sentence :func:`apply_support` checks — so streamed support events and the final
    message agree.
    """
    chunk = passage.chunk
    plain = unescape_markdown(_PART_MARKER_RE.sub("", part_text)).strip()
    return check_support(plain, chunk.text, text_type=chunk.text_type, title=passage.resource_title,
                         embedder=embedder, judge=judge, header=table_lead(chunk.metadata),
                         expansions=expansions, part=table_part(chunk.metadata)).to_dict()


_CONTENT_RE = re.compile(r"[^\W_]")
_MARKER_RE = re.compile(r"\[\d+\]")


def sentence_support(message: Message) -> tuple[int, int]:
    """``(supported, sentences)`` of a code-point message: its sentences are the parts
    holding a letter or digit once ``[N]`` markers are removed; a sentence is supported
    when one of the markers inside it carries a ``supported`` verdict. This is the
    grounded coverage an answer reports, and the citation recall of
    :mod:`citewell.eval.metrics`."""
    supported_markers = [(occ.start_index, occ.end_index) for ref in message.references
                         if ref.citation is not None for occ in ref.occurrences or []
                         if occ.support and occ.support.get("verdict") == "supported"]
    sentences = supported = 0
    position = 0
    for part in message.parts:
        start, end = position, position + len(part.text)
        position = end
        if not _CONTENT_RE.search(_MARKER_RE.sub("", part.text)):
            continue
        sentences += 1
        if any(start <= a and b <= end for a, b in supported_markers):
            supported += 1
    return supported, sentences


def grounded_coverage(message: Message) -> float | None:
    """Share of a code-point message's sentences that carry a supported citation
    (:func:`sentence_support`), rounded to 4 places; None for a message without sentences."""
    supported, sentences = sentence_support(message)
    return round(supported / sentences, 4) if sentences else None
