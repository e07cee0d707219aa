"""Markdown-aware scanner for the citation links of the contract (DESIGN.md rules 1 and 5).

A generator writes its answer as markdown with inline links whose destination names a
source or an entity::

    [label](post:SOURCE:ID)        a social post; SOURCE compared lower-cased, ID exact
    [label](chunk:CHUNK_ID)        a passage (chunk) of a resource
    [label](TYPE:ID)               an entity, TYPE in pattern, dataset, research_preview,
                                   resource, chat

:func:`scan` cuts a raw text into :class:`Token`\\ s without losing a character
(``"".join(t.text for t in tokens) == raw``):

``text``
    prose; the cite stage may rewrite literal ``[N]`` in it (rule 5);
``code``
    an inline code span or a fenced code block, copied verbatim: nothing inside code
    is ever parsed as a link or rewritten;
``link``
    a citation link (one of the three shapes above), with its label and parsed
    :class:`Target`;
``mdlink``
    an ordinary inline markdown link ``[label](url "title")`` that stays a link; its
    destination is copied verbatim (URLs may contain parentheses or strings such as
    ``post:reddit:…``); only its label is processed like prose.

Grammar, CommonMark-ish (https://spec.commonmark.org/), in order of precedence:

1. **Fenced code blocks** are line based. An opening line is optional indentation,
   blockquote markers ``>`` and at most one list marker, then a fence of 3 or more
   backticks or tildes (a backtick fence's info string holds no backtick). The block
   ends at a line holding only a fence of the same character at least as long
   (indentation and ``>`` allowed before it), or at the end of the text.
2. **Backslash escapes**: ``\\`` before an ASCII punctuation character makes it literal
   (so ``\\[a](post:x:1)`` is not a link). Not inside code.
3. **Code spans**: a run of N backticks up to the next run of exactly N backticks in the
   same paragraph; an unmatched run is literal text.
4. **Links**: ``[`` label ``]`` immediately followed by ``(``. The label may contain
   balanced brackets, escaped brackets and code spans; it may span lines but not a blank
   line. If the label contains a complete link, the inner link wins and the outer
   ``[`` is literal (CommonMark: links do not nest).

   A destination starting (after optional spaces and ``<``) with ``post:``, ``chunk:``
   or ``TYPE:`` (case-insensitive) is a citation link. It runs to the parenthesis that
   closes the link (balanced parentheses, on one line; if they never balance, the first
   ``)``). Percent escapes of ``(``, ``)``, ``%`` and ASCII whitespace are decoded in the
   source and the id (``%29`` is ``)``); every other character is taken literally, so
   ids may contain colons. Any other destination is parsed as a CommonMark inline link
   destination plus optional title; if that fails, the brackets are literal text.

Reference-style links (``[a][b]``, ``[a]: url``), autolinks, raw HTML and indented code
blocks are not recognised: they are prose.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Literal

from citewell.models import ENTITY_TYPES

_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")

#: Destination schemes that make a link a citation link (compared case-insensitively).
SCHEMES: tuple[str, ...] = ("post", "chunk", *ENTITY_TYPES)
_SCHEME_RE = re.compile(r"(?i)(" + "|".join(SCHEMES) + r"):")

#: Characters that :func:`encode_id` percent-encodes and :func:`decode_id` decodes.
_ENCODED = frozenset("%() \t\n\r\f\v")
_PCT_RE = re.compile(r"%([0-9A-Fa-f]{2})")

_FENCE_OPEN = re.compile(
    r"[ \t]*(?:>[ \t]*)*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?(?P<fence>`{3,}|~{3,})(?P<info>[^\r\n]*)"
)
_FENCE_CLOSE = re.compile(r"[ \t]*(?:>[ \t]*)*(?P<fence>`{3,}|~{3,})[ \t]*")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")
_BLANK_LINE = re.compile(r"\n[ \t]*(?:\r?\n|\r)|\r[ \t]*\r")


def encode_id(value: str) -> str:
    """Percent-encode ``value`` for use as SOURCE or ID in a link destination.

    Encodes ``%``, ``(``, ``)`` and ASCII whitespace, nothing else, so that
    ``decode_id(encode_id(x)) == x`` for every string. Generators should use
    :func:`format_link` rather than building destinations by hand.
    """
    return "".join(f"%{ord(c):02X}" if c in _ENCODED else c for c in value)


def decode_id(value: str) -> str:
    """Decode the percent escapes of ``(``, ``)``, ``%`` and ASCII whitespace in ``value``.

    Other ``%XX`` sequences are left as written (ids are compared exactly).
    """

    def repl(m: re.Match[str]) -> str:
        ch = chr(int(m.group(1), 16))
        return ch if ch in _ENCODED else m.group(0)

    return _PCT_RE.sub(repl, value)


def format_link(label: str, *, post: tuple[str, str] | None = None, chunk_id: str | None = None,
                entity: tuple[str, str] | None = None) -> str:
    """Write a citation link the way :func:`scan` reads it.

    Exactly one of ``post=(source, id)``, ``chunk_id=...`` or ``entity=(type, id)``.
    Brackets and backslashes in ``label`` are backslash-escaped so any label survives.
    """
    if sum(x is not None for x in (post, chunk_id, entity)) != 1:
        raise ValueError("format_link needs exactly one of post, chunk_id, entity")
    safe_label = re.sub(r"([\\\[\]`])", r"\\\1", label)
    if post is not None:
        source, pid = post
        if ":" in source:
            raise ValueError(f"post source {source!r} must not contain ':'")
        dest = f"post:{encode_id(source)}:{encode_id(pid)}"
    elif chunk_id is not None:
        dest = f"chunk:{encode_id(chunk_id)}"
    else:
        etype, eid = entity  # type: ignore[misc]
        if etype not in ENTITY_TYPES:
            raise ValueError(f"unknown entity type {etype!r}")
        dest = f"{etype}:{encode_id(eid)}"
    return f"[{safe_label}]({dest})"


@dataclass(frozen=True)
class Target:
    """A parsed citation-link destination.

    ``kind`` is ``post`` (``source`` lower-cased, ``id`` exact), ``chunk`` (``id`` is the
    chunk id) or ``entity`` (``type`` one of :data:`~citewell.models.ENTITY_TYPES`).
    ``raw`` is the destination as written. An ``id`` of ``""`` means the destination was
    malformed (e.g. ``post:reddit`` without an id); it never resolves.
    """

    kind: Literal["post", "chunk", "entity"]
    id: str
    raw: str
    source: str | None = None
    type: str | None = None


def parse_target(dest: str) -> Target | None:
    """Parse a destination such as ``post:Reddit:t3_x`` or ``chunk:…``; ``None`` if it is
    not one of the citation schemes (an ordinary URL)."""
    d = dest.strip()
    if d.startswith("<") and d.endswith(">"):
        d = d[1:-1].strip()
    m = _SCHEME_RE.match(d)
    if not m:
        return None
    scheme = m.group(1).lower()
    rest = d[m.end():]
    if scheme == "post":
        source, sep, pid = rest.partition(":")
        return Target("post", decode_id(pid) if sep else "", dest, source=decode_id(source).lower())
    if scheme == "chunk":
        return Target("chunk", decode_id(rest), dest)
    return Target("entity", decode_id(rest), dest, type=scheme)


@dataclass(frozen=True)
class Token:
    """A piece of the raw text: ``raw[start:end] == text``.

    For ``link`` and ``mdlink``: ``label`` is the raw label (between the outer brackets)
    starting at ``label_start``; ``tail`` is the raw ``](…)`` after it (``mdlink``);
    ``target`` is the parsed destination (``link``); ``dest_span`` is the half-open span
    of the destination inside ``tail`` (``mdlink``). ``block`` marks a fenced code block
    (as opposed to an inline code span).
    """

    kind: Literal["text", "code", "link", "mdlink"]
    start: int
    end: int
    text: str
    label: str | None = None
    label_start: int | None = None
    tail: str | None = None
    target: Target | None = None
    dest_span: tuple[int, int] | None = None
    block: bool = False


def _lines(text: str, lo: int, hi: int):
    pos = lo
    while pos < hi:
        m = _LINE_RE.match(text, pos, hi)
        assert m is not None
        end = m.end() if m.end() > pos else hi
        yield pos, end
        pos = end


def code_blocks(text: str) -> list[tuple[int, int]]:
    """Half-open spans of the fenced code blocks of ``text`` (opening and closing fence
    lines included; an unclosed fence runs to the end)."""
    blocks: list[tuple[int, int]] = []
    lines = _lines(text, 0, len(text))
    for start, end in lines:
        line = text[start:end].rstrip("\r\n")
        m = _FENCE_OPEN.fullmatch(line)
        if not m:
            continue
        fence = m.group("fence")
        if fence[0] == "`" and "`" in m.group("info"):
            continue
        block_end = len(text)
        for cstart, cend in lines:
            c = _FENCE_CLOSE.fullmatch(text[cstart:cend].rstrip("\r\n"))
            if c and c.group("fence")[0] == fence[0] and len(c.group("fence")) >= len(fence):
                block_end = cend
                break
        blocks.append((start, block_end))
    return blocks


class _Inline:
    """Inline scanner over ``text[lo:hi]`` (a region outside fenced code).

    Links are found in one pass per paragraph before tokenising (:meth:`_find_links`):
    brackets are paired with a stack, inner pairs first, so "the inner link wins" needs
    no recursion and the pass is linear in the number of brackets.
    """

    def __init__(self, text: str, lo: int, hi: int) -> None:
        self.s = text
        self.lo = lo
        self.hi = hi
        # A label or code span never crosses a blank line: limits are paragraph ends.
        self.para_ends = [m.start() + 1 for m in _BLANK_LINE.finditer(text, lo, hi)]
        # Starts of the maximal backtick runs, by run length (code-span closers).
        self.runs: dict[int, list[int]] = {}
        for m in re.finditer("`+", text[lo:hi]):
            self.runs.setdefault(m.end() - m.start(), []).append(lo + m.start())
        self.links = self._find_links()

    def para_end(self, i: int) -> int:
        k = bisect_left(self.para_ends, i + 1)
        return self.para_ends[k] if k < len(self.para_ends) else self.hi

    def run_len(self, i: int, limit: int) -> int:
        j = i
        while j < limit and self.s[j] == "`":
            j += 1
        return j - i

    def code_close(self, i: int, run: int, limit: int) -> int | None:
        """End of the code span opened by ``run`` backticks at ``i``, or None."""
        starts = self.runs.get(run, [])
        k = bisect_left(starts, i + run)
        if k < len(starts) and starts[k] + run <= limit:
            return starts[k] + run
        return None

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        s, hi = self.s, self.hi
        i = buf = self.lo

        def flush(upto: int) -> None:
            if upto > buf:
                out.append(Token("text", buf, upto, s[buf:upto]))

        while i < hi:
            c = s[i]
            if c == "\\" and i + 1 < hi and s[i + 1] in _PUNCT:
                i += 2
                continue
            if c == "`":
                run = self.run_len(i, hi)
                end = self.code_close(i, run, self.para_end(i))
                if end is not None:
                    flush(i)
                    out.append(Token("code", i, end, s[i:end]))
                    i = buf = end
                else:
                    i += run
                continue
            if c == "[" and i in self.links:
                flush(i)
                end, tok = self.links[i]
                out.append(tok)
                i = buf = end
                continue
            i += 1
        flush(hi)
        return out

    def _find_links(self) -> dict[int, tuple[int, Token]]:
        """``{position of "[": (end, token)}`` for every link of the region."""
        s = self.s
        links: dict[int, tuple[int, Token]] = {}
        start = self.lo
        for limit in [*self.para_ends, self.hi]:
            stack: list[list[Any]] = []  # [position of "[", contains a link]
            j = start
            while j < limit:
                c = s[j]
                if c == "\\" and j + 1 < limit and s[j + 1] in _PUNCT:
                    j += 2
                    continue
                if c == "`":
                    run = self.run_len(j, limit)
                    end = self.code_close(j, run, limit)
                    j = end if end is not None else j + run
                    continue
                if c == "[":
                    stack.append([j, False])
                elif c == "]" and stack:
                    opener, inner = stack.pop()
                    # links do not nest: a bracket pair holding a link is literal text
                    found = None if inner else self._link_at(opener, j, limit)
                    if (inner or found) and stack:
                        stack[-1][1] = True
                    if found is not None:
                        links[opener] = found
                        j = found[0]
                        continue
                j += 1
            start = limit
        return links

    def _link_at(self, i: int, label_end: int, limit: int) -> tuple[int, Token] | None:
        """The link whose label runs from ``[`` at ``i`` to ``]`` at ``label_end``, if the
        destination after it parses: ``(end, token)``, else None."""
        s = self.s
        if label_end + 1 >= limit or s[label_end + 1] != "(":
            return None
        dest_start = label_end + 2
        label = s[i + 1:label_end]
        k = dest_start
        while k < limit and s[k] in " \t":
            k += 1
        if k < limit and s[k] == "<":
            k += 1
        if _SCHEME_RE.match(s, k, limit):
            close = self._citation_close(dest_start, limit)
            if close is None:
                return None
            target = parse_target(s[dest_start:close])
            assert target is not None
            end = close + 1
            return end, Token("link", i, end, s[i:end], label=label, label_start=i + 1, target=target)
        found = self._markdown_close(dest_start, limit)
        if found is None:
            return None
        close, dest_lo, dest_hi = found
        end = close + 1
        return end, Token("mdlink", i, end, s[i:end], label=label, label_start=i + 1,
                          tail=s[label_end:end], dest_span=(dest_lo - label_end, dest_hi - label_end))

    def _citation_close(self, k: int, limit: int) -> int | None:
        """Index of the ``)`` closing a citation destination starting at ``k``: the
        parenthesis balancing the link's ``(`` on the same line, else the first ``)``."""
        s = self.s
        line_end = min((p for p in (s.find("\n", k, limit), s.find("\r", k, limit)) if p >= 0), default=limit)
        first = s.find(")", k, line_end)
        if first < 0:
            return None
        if s.find("(", k, first) < 0:
            return first
        depth = 0
        for j in range(k, line_end):
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                if depth == 0:
                    return j
                depth -= 1
        return first

    def _markdown_close(self, k: int, limit: int) -> tuple[int, int, int] | None:
        """``(index of the closing ")", destination start, destination end)`` of an ordinary
        inline link destination (+ optional title) starting at ``k``, or None."""
        s = self.s
        j = self._skip_ws(k, limit, newline=True)
        dest_lo = j
        if j < limit and s[j] == "<":
            j += 1
            while j < limit and s[j] not in "<>\r\n":
                j += 2 if s[j] == "\\" and j + 1 < limit else 1
            if j >= limit or s[j] != ">":
                return None
            j += 1
        else:
            depth = 0
            while j < limit:
                c = s[j]
                if c == "\\" and j + 1 < limit and s[j + 1] in _PUNCT:
                    j += 2
                    continue
                if c.isspace() or ord(c) < 0x20:
                    break
                if c == "(":
                    depth += 1
                    if depth > 32:  # CommonMark's nesting limit; also bounds the work
                        return None
                elif c == ")":
                    if depth == 0:
                        break
                    depth -= 1
                j += 1
            if depth:
                return None
        before_title = dest_hi = j
        j = self._skip_ws(j, limit, newline=True)
        if j < limit and s[j] in "\"'(" and j > before_title:
            closer = ")" if s[j] == "(" else s[j]
            j += 1
            while j < limit and s[j] != closer:
                j += 2 if s[j] == "\\" and j + 1 < limit else 1
            if j >= limit:
                return None
            j = self._skip_ws(j + 1, limit, newline=True)
        if j < limit and s[j] == ")":
            return j, dest_lo, dest_hi
        return None

    def _skip_ws(self, j: int, limit: int, *, newline: bool) -> int:
        seen_newline = False
        while j < limit and self.s[j] in " \t\r\n":
            if self.s[j] in "\r\n":
                if not newline or seen_newline:
                    break
                seen_newline = True
                if self.s[j] == "\r" and j + 1 < limit and self.s[j + 1] == "\n":
                    j += 1
            j += 1
        return j


def scan(text: str) -> list[Token]:
    """Cut ``text`` into tokens (see the module docstring); lossless and never raising.

    Offsets are code points into ``text``. Fenced code blocks become ``code`` tokens;
    the rest is scanned inline.
    """
    tokens: list[Token] = []
    pos = 0
    for start, end in code_blocks(text):
        if start > pos:
            tokens.extend(_Inline(text, pos, start).tokens())
        tokens.append(Token("code", start, end, text[start:end], block=True))
        pos = end
    if pos < len(text):
        tokens.extend(_Inline(text, pos, len(text)).tokens())
    return tokens


def scan_label(label: str) -> list[Token]:
    """Tokens of a link label scanned on its own (code spans, escapes; no fences)."""
    return _Inline(label, 0, len(label)).tokens() if label else []


_NUM_TAIL = re.compile(r"(\d+)\\?\]")
_BRACKETED_NUM = re.compile(r"\[(\d+)\]")
_ESCAPED_NUM = re.compile(r"\\\[(\d+)\\\]")


def escape_numbers(prose: str) -> str:
    """Escape every bracketed number of ``prose`` that is not escaped yet (rule 5).

    ``[12]`` → ``\\[12\\]``; half-escaped ``\\[12]`` and ``[12\\]`` are completed; fully
    escaped ``\\[12\\]`` and other backslash escapes are left alone. ``prose`` must be text
    outside code (the caller never passes code).
    """
    out: list[str] = []
    i, n = 0, len(prose)
    while i < n:
        c = prose[i]
        if c == "\\" and i + 1 < n:
            if prose[i + 1] == "[":
                m = _NUM_TAIL.match(prose, i + 2)
                if m:
                    out.append(f"\\[{m.group(1)}\\]")
                    i = m.end()
                    continue
            if prose[i + 1] in _PUNCT:
                out.append(prose[i:i + 2])
                i += 2
                continue
        elif c == "[":
            m = _NUM_TAIL.match(prose, i + 1)
            if m:
                out.append(f"\\[{m.group(1)}\\]")
                i = m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def escape_link_tail(tail: str, dest_span: tuple[int, int]) -> str:
    """Rule 5 for the ``](url "title")`` of an ordinary link: a bracketed number in the
    URL is percent-encoded (``%5B12%5D``, the same URL), one in the title is
    backslash-escaped; everything else is kept as written."""
    lo, hi = dest_span
    dest = _BRACKETED_NUM.sub(r"%5B\1%5D", tail[lo:hi])
    return tail[:lo] + dest + escape_numbers(tail[hi:])


def unescape_numbers(text: str) -> str:
    """Undo :func:`escape_numbers`: ``\\[12\\]`` → ``[12]`` (for support checks that
    compare prose with passage text)."""
    return _ESCAPED_NUM.sub(r"[\1]", text)
