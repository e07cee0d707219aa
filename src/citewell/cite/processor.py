"""The cite stage: generator markdown with links in, canonical :class:`Message` out.

:func:`cite` applies rules 1–7 of the citation contract (docs/architecture.md) to a finished
generator output:

1. :func:`~citewell.cite.links.scan` finds citation links, ordinary links and code;
2. each source link is resolved (against the retrieved ``sources`` if given, else the
   ``resolver``) and replaced by ``[N]``, numbered per message by first appearance over
   unique sources: a post by (source lower-cased, id), a passage by chunk id, a chunk
   link to a post's chunk by that post; unresolved links keep their label as plain text
   and add an ``unknown_target`` warning;
3. entity links become their label plus an entity reference when the entity exists;
4. bracketed numbers in prose that are not markers are escaped (``\\[12\\]``), and so is
   whatever would turn a marker into a link: ``(``, ``[`` after it, ``:`` after a marker
   first on its line (``[1]\\(more)``), and a citation destination after ``]`` and
   whitespace (``[1] (post:x:1``: some renderers link across the space); no citation
   target is left in the text (nested and orphan targets: see
   :mod:`citewell.cite.links`, rule 5); brackets are only ever escaped in pairs, so no
   ordinary link appears or vanishes (rule 6 there);
5. references (with every occurrence), parts and citations are computed in code points
   and converted to the requested offset unit.

Worked example (no sources, posts always count)::

    >>> m = cite("Fans love it [clip](post:tiktok:7392184932) 😍 and agree "
    ...          "[thread](post:reddit:t3_1oqliu8).")
    >>> m.text
    'Fans love it [1] 😍 and agree [2].'
    >>> [(r.citation, r.start_index, r.end_index) for r in m.references]
    [(1, 13, 16), (2, 29, 32)]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from citewell.models import Message, Notice, Passage, Reference, SourceRef

from .links import SCHEMES, Target, Token, escape_link_tail, escape_numbers, scan, scan_label
from .offsets import OffsetMap, check_unit, convert_offsets
from .parts import Marker, build_citations, build_parts, source_ref
from .resolver import SourceResolver, post_key


@dataclass
class _Source:
    """A numbered source of the message being built."""

    key: tuple[str, ...]
    citation: int
    passage: Passage | None
    spans: list[tuple[int, int]] = field(default_factory=list)
    ref: SourceRef | None = None  # of the passage, for parts (set once numbering is done)

    @property
    def kind(self) -> str:
        return self.key[0]


class _Citer:
    """State of one :func:`cite` call: numbering, entities, warnings, output segments."""

    def __init__(self, sources: Sequence[Passage] | None, resolver: SourceResolver | None,
                 posts: Iterable[tuple[str, str]] = ()) -> None:
        self.resolver = resolver
        self.restricted = sources is not None
        #: posts the caller gave as sources without their text: numbered, passage unknown
        self.posts_given = {(source.lower(), pid) for source, pid in posts}
        self.chunks: dict[str, Passage] = {}
        self.posts: dict[tuple[str, str], Passage] = {}
        for p in sources or ():
            self.chunks.setdefault(p.chunk.id, p)
            key = post_key(p)
            if key is not None:
                self.posts.setdefault(key, p)
        self.resolved: dict[str, tuple[tuple[str, ...], Passage | None] | None] = {}  # by raw target
        self.numbered: dict[tuple[str, ...], _Source] = {}
        self.entities: dict[tuple[str, str], Reference] = {}
        self.warnings: dict[tuple[str, ...], Notice] = {}
        # ("text", str) prose (escaped later); ("raw", str) verbatim inline code or link markup;
        # ("block", str) a fenced code block; ("marker", _Source)
        self.segments: list[tuple[str, Any]] = []

    # -- resolution -------------------------------------------------------------------

    def _lookup_post(self, source: str, pid: str) -> Passage | None:
        if self.restricted:
            return self.posts.get((source, pid))
        return self.resolver.post(source, pid) if self.resolver is not None else None

    def _lookup_chunk(self, chunk_id: str) -> Passage | None:
        if self.restricted:
            return self.chunks.get(chunk_id)
        return self.resolver.chunk(chunk_id) if self.resolver is not None else None

    def resolve(self, target: Target) -> tuple[tuple[str, ...], Passage | None] | None:
        """Source key and passage of a post or chunk target, or ``None`` if unresolved."""
        if target.kind == "post":
            source, pid = target.source or "", target.id
            if not source or not pid:
                return None
            passage = self._lookup_post(source, pid)
            if passage is None and self.restricted and (source, pid) not in self.posts_given:
                return None
            return ("post", source, pid), passage
        if not target.id:
            return None
        passage = self._lookup_chunk(target.id)
        if passage is None:
            return None
        pkey = post_key(passage)
        if pkey is not None:
            return ("post", *pkey), passage
        return ("chunk", target.id), passage

    def number(self, key: tuple[str, ...], passage: Passage | None) -> _Source:
        src = self.numbered.get(key)
        if src is None:
            src = _Source(key, len(self.numbered) + 1, passage)
            self.numbered[key] = src
        elif src.passage is None and passage is not None:
            src.passage = passage
        return src

    def warn(self, target: Target, label: str) -> None:
        if target.kind == "post":
            wkey: tuple[str, ...] = ("post", target.source or "", target.id)
            fields: dict[str, Any] = {"source": target.source or "", "id": target.id}
        elif target.kind == "chunk":
            wkey = ("chunk", target.id)
            fields = {"chunk_id": target.id}
        else:
            wkey = ("entity", target.type or "", target.id)
            fields = {"type": target.type, "id": target.id}
        if wkey in self.warnings:
            return
        if not target.id or (target.kind == "post" and not target.source):
            why = "is malformed"
        elif target.kind == "entity":
            why = "names no entity of this workspace" if self.resolver else "cannot be checked (no resolver)"
        elif self.restricted:
            why = "is not among the retrieved sources"
        elif target.kind == "chunk" and self.resolver is None:
            why = "cannot be checked (no resolver)"
        else:
            why = "does not exist in this workspace"
        self.warnings[wkey] = Notice(
            code="unknown_target",
            message=f"link target {target.raw.strip()!r} {why}; its label is kept as plain text",
            label=label,
            target=target.raw.strip(),
            **fields,
        )

    # -- rewriting ----------------------------------------------------------------------

    def emit(self, tokens: Sequence[Token], *, in_label: bool = False) -> None:
        for tok in tokens:
            if tok.kind == "link" and not in_label:  # the common case first
                self.link(tok)
            elif tok.kind == "text" or (in_label and tok.kind in ("link", "mdlink")):
                self.segments.append(("text", tok.text))
            elif tok.kind == "code":
                self.segments.append(("block" if tok.block else "raw", tok.text))
            elif tok.kind == "mdlink":
                tail = escape_link_tail(tok.tail or "", tok.dest_span or (0, 0))
                self.segments.append(("raw", "[" + self.render_label(tok.label or "") + tail))
            elif tok.kind == "open":
                # the "[" of a citation link whose label holds links: dropped (kept as a
                # literal "\\[" only when dropping it joins code, see :func:`_assemble`)
                self.segments.append(("open", None))
            elif tok.kind == "ticks":
                self.segments.append(("text", "\\" + tok.text))  # would open a fence once rewritten
            elif tok.kind == "bracket":
                # a literal "[" or "]" escaped so the pairing of the others stays (links.py)
                self.segments.append(("text", "\\" + tok.text))
            else:
                # "](target)" of such a link (its label was emitted as it was scanned) or
                # with no "[" at all: a marker, an entity reference, or a warning
                self.link(tok, label_shown=True)

    def link(self, tok: Token, *, label_shown: bool = False) -> None:
        """A citation link: ``[N]``, or its label (unless ``label_shown``) plus an entity
        reference or an ``unknown_target`` warning."""
        target = tok.target
        assert target is not None
        label = tok.label or ""
        if target.kind == "entity":
            exists = bool(target.id) and self.resolver is not None and self.resolver.entity_exists(
                target.type or "", target.id)
            if exists:
                self.entities.setdefault((target.type or "", target.id),
                                         Reference(type=target.type or "", id=target.id))
            else:
                self.warn(target, label)
            self.show_label(label, label_shown)
            return
        try:
            resolved = self.resolved[target.raw]
        except KeyError:
            resolved = self.resolved[target.raw] = self.resolve(target)
        if resolved is None:
            self.warn(target, label)
            self.show_label(label, label_shown)
            return
        self.segments.append(("marker", self.number(*resolved)))

    def show_label(self, label: str, label_shown: bool) -> None:
        """Keep a link's label as plain text (entity links, unresolved targets)."""
        if not label_shown:
            self.segments.append(("label_start", None))
            self.emit(scan_label(label), in_label=True)
        self.segments.append(("label_end", None))

    def render_label(self, label: str) -> str:
        """The processed label of an ordinary link (prose escaped, code verbatim).

        A label that is only a number (``[12](https://…)``) would put ``[12]`` in the
        text, which rule 5 reserves for markers; its first digit is written as a
        character reference (``[&#49;2](…)``), which markdown renders identically.
        """
        saved, self.segments = self.segments, []
        try:
            self.emit(scan_label(label), in_label=True)
            rendered, _, _ = _assemble(self.segments)
        finally:
            self.segments = saved
        if rendered.isdecimal():
            rendered = f"&#{ord(rendered[0])};{rendered[1:]}"
        return rendered


#: What may stand before a marker on its line for ``[N]: …`` to be a link reference
#: definition (indentation, block quote and list markers), loosely.
_DEFINITION_PREFIX = re.compile(r"[ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t>]+)*")


def _links_marker(prose: str, before: Sequence[str]) -> bool:
    """Whether ``prose``, written right after a marker, would make that marker a link:
    ``[1](x)`` (inline link), ``[1][x]`` / ``[1][]`` (reference link; another marker is
    never such a label, since no definition of a number can exist), or ``[1]: x`` with the
    marker first on its line (a link reference definition). ``before`` is the text
    written so far (ending with the marker)."""
    if prose[0] in "([":
        return True
    if prose[0] != ":":
        return False
    tail: list[str] = []
    for piece in reversed(before):
        cut = max(piece.rfind("\n"), piece.rfind("\r"))
        if cut >= 0:
            tail.append(piece[cut + 1:])
            break
        tail.append(piece)
    line = "".join(reversed(tail))
    return _DEFINITION_PREFIX.fullmatch(line[:line.rfind("[")]) is not None


_DESTINATION = r"(\(\s*<?\s*(?i:" + "|".join(SCHEMES) + r"):)"
#: ``]``, whitespace, then ``(`` and a citation scheme: the ``(`` gets a backslash
_SPACED_TARGET = re.compile(r"(\]\s+)" + _DESTINATION)
#: the same at the start of prose written right after a marker or a ``]``
_SPACED_TARGET_START = re.compile(r"^(\s+)" + _DESTINATION)


def _ends_with_bracket(prose: Sequence[str], out: Sequence[str]) -> bool:
    """Whether the text written so far (``out`` then pending ``prose``) ends with ``]``.
    Looks back only to the last non-empty piece (no copy of ``out``: it is called once
    per prose run, so copying made assembling quadratic in the number of segments)."""
    for pieces in (prose, out):
        for piece in reversed(pieces):
            if piece:
                return piece.endswith("]")
    return False


_TICKS = re.compile(r"\\[!-/:-@\[-`{-~]|`|~{3,}")


def _escape_ticks(prose: str) -> str:
    """Backslash-escape every active backtick of ``prose`` and the first tilde of each run
    of 3 or more (prose backticks were literal in the input: the rendering is the same)."""
    return _TICKS.sub(lambda m: m.group(0) if m.group(0)[0] == "\\" else "\\" + m.group(0), prose)


def _reads_back(text: str, markers: Sequence[tuple[int, int, _Source]],
                verbatim: Sequence[tuple[int, int, bool]]) -> bool:
    """Whether ``text``, scanned again, has no citation link, no fenced block that was not
    copied as one, no marker inside code (removing link markup can join backticks), and
    every verbatim span - code, ordinary link - reads back as itself (a dropped ``[`` can
    join prose backticks and a code span into one that swallows an ordinary link)."""
    if "`" not in text and "~" not in text and "](" not in text:  # single characters first: faster
        return True  # no link or tail (each has a "]("), no code span, no fence
    blocks = {(a, b) for a, b, block in verbatim if block}
    kept = {(a, b) for a, b, _ in verbatim}
    code: list[tuple[int, int]] = []
    for tok in scan(text):
        if tok.kind in ("link", "tail"):
            return False
        if tok.kind == "mdlink":
            kept.discard((tok.start, tok.end))
        elif tok.kind == "code":
            if tok.block and (tok.start, tok.end) not in blocks:
                return False
            kept.discard((tok.start, tok.end))
            code.append((tok.start, tok.end))
    if kept:
        return False
    starts = sorted(m[0] for m in markers)
    k = 0
    for a, b in code:
        while k < len(starts) and starts[k] < a:
            k += 1
        if k < len(starts) and starts[k] < b:
            return False
    return True


def _assemble(segments: Sequence[tuple[str, Any]], *, escape_ticks: bool = False
              ) -> tuple[str, list[tuple[int, int, _Source]], list[tuple[int, int, bool]]]:
    """Join segments, escaping prose runs.

    With ``escape_ticks`` (the fallback when the plain result does not read back, see
    :func:`_reads_back`: removed link markup joined backticks or put a fence or container
    marker at a line start), prose backticks and tilde runs are escaped and the brackets
    of removed link markup stay as literal ``\\[``/``\\]`` (only the ``(target)`` goes), so
    nothing joins: ``[](chunk:zz)> ```…`` gives ``\\[\\]> ```…``.

    Returns the text, the marker spans and the verbatim spans (code and ordinary-link
    markup: ``(start, end, is_fenced_block)``), all in code points.
    """
    out: list[str] = []
    markers: list[tuple[int, int, _Source]] = []
    verbatim: list[tuple[int, int, bool]] = []
    prose: list[str] = []
    pos = 0
    after_marker = False

    def flush() -> None:
        nonlocal pos
        if prose:
            chunk = escape_numbers(prose[0] if len(prose) == 1 else "".join(prose))
            if escape_ticks:
                chunk = _escape_ticks(chunk)
            if after_marker and chunk and _links_marker(chunk, out):
                chunk = "\\" + chunk
            if chunk and chunk[0].isspace() and (after_marker or _ends_with_bracket((), out)):
                chunk = _SPACED_TARGET_START.sub(r"\1\\\2", chunk, count=1)
            if "]" in chunk:
                chunk = _SPACED_TARGET.sub(r"\1\\\2", chunk)
            out.append(chunk)
            pos += len(chunk)
            prose.clear()

    label_end = False
    for kind, value in segments:
        if kind == "text":
            if value and label_end and value[0] in "([" and _ends_with_bracket(prose, out):
                value = "\\" + value  # "[[x]](pattern:zz)(y)" must not become the link "[x](y)"
            if value:
                label_end = False
            prose.append(value)
            continue
        if kind == "label_start":
            if escape_ticks:
                prose.append("\\[")
            continue
        if kind == "label_end":
            if escape_ticks:
                prose.append("\\]")
            label_end = True  # a link's markup was removed here: what follows must not join
            continue
        if kind == "open":
            if escape_ticks:
                prose.append("\\[")
            continue
        label_end = False
        if prose:
            flush()
        after_marker = kind == "marker"
        if kind in ("raw", "block"):
            out.append(value)
            verbatim.append((pos, pos + len(value), kind == "block"))
            pos += len(value)
        else:
            marker = f"[{value.citation}]"
            markers.append((pos, pos + len(marker), value))
            out.append(marker)
            pos += len(marker)
    flush()
    return "".join(out), markers, verbatim


def _reference(src: _Source) -> Reference:
    (start, end), *_ = src.spans
    fields: dict[str, Any] = {
        "type": src.kind,
        "citation": src.citation,
        "start_index": start,
        "end_index": end,
        # validated into Occurrence objects with the reference, in one call
        "occurrences": [{"start_index": a, "end_index": b} for a, b in src.spans],
        "offset_unit": "codepoint",
    }
    if src.kind == "post":
        fields["source"], fields["id"] = src.key[1], src.key[2]
    if src.passage is not None:
        chunk = src.passage.chunk
        fields.update(
            chunk_id=chunk.id,
            resource_id=chunk.resource_id,
            resource_title=src.passage.resource_title,
            file_name=src.passage.file_name,
            chunk_index=chunk.chunk_index,
            text=chunk.text,
            text_type=chunk.text_type,
            metadata=chunk.metadata,  # validation copies it
        )
    return Reference.model_validate(fields)


def cite(raw_text: str, *, sources: Sequence[Passage] | None = None,
         resolver: SourceResolver | None = None, offset_unit: str = "codepoint",
         posts: Iterable[tuple[str, str]] = ()) -> Message:
    """Rewrite a generator's markdown into a canonical assistant :class:`Message`.

    Args:
        raw_text: generator output with ``[label](post:SOURCE:ID)``,
            ``[label](chunk:CHUNK_ID)`` and ``[label](TYPE:ID)`` links (rule 1).
        sources: the retrieved passages. When given (even empty), only these are
            numbered; when ``None``, every post link counts and a chunk link counts when
            ``resolver.chunk()`` finds it (rule 4).
        resolver: workspace lookups: post enrichment, chunk existence (without
            ``sources``) and entity existence (always).
        offset_unit: ``codepoint`` (default), ``utf16`` or ``utf8`` (rule 3).
        posts: ``(source, id)`` of posts given as sources without their text (seed 000
            numbers a post by its pair alone): with ``sources``, a link to one is numbered
            too, its reference without passage (so its support is ``unchecked``).

    Returns:
        A settled assistant message with ``text`` (markers ``[N]``), ``references``
        (numbered sources in citation order with ``start_index``/``end_index`` at the
        first occurrence and every ``occurrences``; then entity references ``{type,
        id}``), ``parts`` (rule 6, each with additive ``start_index``/``end_index``/
        ``offset_unit``/``citation_numbers``), ``citations`` and ``resource_ids`` (rule 7),
        ``warnings`` (one ``unknown_target`` per distinct unresolved target, with
        ``label`` and ``source``+``id``, ``chunk_id`` or ``type``+``id``), ``grounded``
        (at least one source numbered) and ``offset_unit``.

    Raises:
        ValueError: unknown ``offset_unit``.
    """
    check_unit(offset_unit)
    citer = _Citer(sources, resolver, posts)
    citer.emit(scan(raw_text))
    text, spans, verbatim = _assemble(citer.segments)
    if not _reads_back(text, spans, verbatim):
        text, spans, verbatim = _assemble(citer.segments, escape_ticks=True)

    markers: list[Marker] = []
    for src in citer.numbered.values():
        src.ref = source_ref(src.passage, src.citation) if src.passage else None
    for start, end, src in spans:
        src.spans.append((start, end))
        markers.append(Marker(start, end, src.citation, src.ref))

    numbered = citer.numbered.values()  # numbered in insertion order: citation order
    references = [_reference(s) for s in numbered if s.spans]
    references.extend(citer.entities.values())
    parts = build_parts(text, markers, verbatim=verbatim, offset_map=OffsetMap(text),
                        passage_texts={s.passage.chunk.id: s.passage.chunk.text for s in numbered if s.passage})
    citations, resource_ids = build_citations(parts)
    message = Message(
        role="assistant",
        text=text,
        parts=parts,
        references=references,
        citations=citations,
        resource_ids=resource_ids,
        warnings=list(citer.warnings.values()),
        grounded=bool(numbered),
        offset_unit="codepoint",
    )
    return message if offset_unit == "codepoint" else convert_offsets(message, offset_unit)
