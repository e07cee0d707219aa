"""Markdown-aware scanner for the citation links of the contract (docs/architecture.md rules 1 and 5).

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
``open`` / ``tail``
    the dropped ``[`` and the ``](target)`` of a citation link whose label holds links,
    or an orphan ``](target)`` (rule 5 below); ``tail`` carries the parsed target;
``bracket``
    a literal ``[`` or ``]`` written backslash-escaped so that rewriting cannot change
    which ``[`` a ``]`` closes (rule 4: both brackets of a pair holding a link; rule 6:
    the partner of a half-escaped number);
``ticks``
    a line-start backtick run written with its first backtick escaped (rule 5).

Grammar, CommonMark-ish (https://spec.commonmark.org/), in order of precedence:

1. **Fenced code blocks** are line based. An opening line is optional indentation and
   container markers (block quote ``>``, list item ``-``/``*``/``+``/``1.``/``1)``, in any
   order), then a fence of 3 or more backticks or tildes (a backtick fence's info string
   holds no backtick). The block ends at a line holding only a fence of the same character
   at least as long, inside the same containers, or - CommonMark - when its containers
   end: at the first line that does not continue them (a block-quote line without ``>``,
   a blank line in a quote, a non-blank line indented less than a list item's content).
   An indented fence with no marker on its line belongs to the innermost list item seen
   earlier whose content indentation it reaches. A top-level unclosed fence runs to the
   end of the text.
2. **Backslash escapes**: ``\\`` before an ASCII punctuation character makes it literal
   (so ``\\[a](https://x)`` is not a link; in ``\\[a](post:x:1)`` the target is still
   consumed, rule 5: ``\\[a[1]``). Not inside code.
3. **Code spans**: a run of N backticks up to the next run of exactly N backticks in the
   same paragraph; an unmatched run is literal text.
4. **Links**: ``[`` label ``]`` immediately followed by ``(``. The label may contain
   balanced brackets, escaped brackets and code spans; it may span lines but not a blank
   line. If the label contains a complete link and the destination is an ordinary one,
   the inner link wins and the outer pair is literal (CommonMark: links do not nest); it
   is then written ``\\[…\\]`` when ``(`` or ``[`` follows the ``]``, so the pair cannot
   become a link around the rewritten inner link. Both brackets are escaped: escaping
   only the ``[`` would free its ``]`` to close an earlier ``[`` (one CommonMark had
   deactivated, since it too precedes the inner link), and ``[[a](post:x:1)](url)`` would
   become the new link ``[\\[1]](url)``. An image is the exception (CommonMark: an image
   does not deactivate the ``[`` before it): a label holding only images is an ordinary
   label, so the linked badge ``[![build](b.svg)](url)`` stays a link. Known limit: the
   reverse, an image whose alt text holds a link (``![[a](url)](b.png)``), is written as
   literal brackets around that link.

   A destination starting (after optional whitespace, at most one line break, and ``<``)
   with ``post:``, ``chunk:`` or ``TYPE:`` (case-insensitive) is a citation link. It runs
   to the parenthesis that closes the link (balanced parentheses, on one line; if they
   never balance, the first ``)``); with no ``)`` on the line it is *unclosed* and ends at
   the first whitespace or the line end. Percent escapes of ``(``, ``)``, ``%`` and ASCII
   whitespace are decoded in the source and the id (``%29`` is ``)``), and ``%3A`` (``:``)
   in the source, which otherwise ends at the first colon; every other character is
   taken literally, so ids may contain colons. Any other destination is parsed as a
   CommonMark inline link destination plus optional title; if that fails, the brackets
   are literal text.

5. **A citation target never stays in the text** (rule 9's spirit, for the stored text
   too). Wherever ``](`` + a citation destination appears outside code it is consumed:

   - *nested*: a bracket pair whose label holds links, followed by a citation
     destination, is a citation link too. Its ``[`` is dropped (``open`` token), its
     label is scanned in place (inner links numbered first, ordinary links kept) and its
     ``](target)`` becomes a ``tail`` token: ``[a [b](post:x:1) c](post:x:2)`` →
     ``a [1] c[2]``; unresolved, the label stays and a warning is added;
   - *orphan*: a ``]`` closing no ``[`` (or an escaped ``\\]``) directly followed by a
     citation destination is a ``tail`` with no label: ``5%](post:x:1)`` → ``5%[1]``.

   Rewriting can create markdown the input did not hold; the cite stage prevents the
   cases that matter: a marker followed by ``(``, ``[`` (other than another marker's) or,
   first on its line, ``:`` gets that character backslash-escaped (``[1]\\(more)``), so
   it is never an inline link, a reference link or a link reference definition; the same
   for ``(``/``[`` after a removed link whose shown label ends with ``]``; a definition of
   a number label with padding (``[ 1 ]: url``) is escaped (rule 6); a line-start
   backtick run that is not a fence only because of a backtick inside rewritten link
   markup is written with its first backtick escaped (``ticks`` token). Known limit: a marker directly
   followed by an ordinary inline link, ``[1][a](url)``, is left alone (escaping would
   break that link); it renders as a reference link only if the text defines ``[a]:``.

6. **Brackets stay paired.** A rewrite that escapes or removes one bracket of a pair
   would change which ``[`` every later ``]`` closes, so a link could appear (or vanish)
   that the input did not hold. Markers, removed link markup and escaped numbers
   ``\\[12\\]`` are balanced by construction; a literal pair is escaped on both sides
   (rule 4); ``[ 1 ]:`` is written ``\\[ 1 \\]:``; and where :func:`escape_numbers`
   completes a half-escaped number, the partner of its other bracket is escaped too
   (``bracket`` token): ``[x \\[12] y](url)`` holds no link (``[x \\[12]`` is a pair), so
   it is written ``\\[x \\[12\\] y](url)``, not as the link ``[x \\[12\\] y](url)``; in
   the link ``[w [12\\] x] y](url)`` the ``]`` closing ``[12\\]`` is escaped with it. The
   one-sided ``\\[`` after a marker (rule 5) is safe: the ``]`` it frees can only close
   a ``[`` holding that marker's link, whose own ``]`` is never followed by ``(``/``[``
   unless the pair is escaped.

Reference-style links (``[a][b]``, ``[a]: url``), autolinks, raw HTML and indented code
blocks are not recognised: they are prose (so a definition ``[a]: post:x:1`` is not
treated as a citation either).
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
#: A post SOURCE also encodes ``:`` (``%3A``): it ends at the first raw colon.
_ENCODED_SOURCE = _ENCODED | {":"}
_PCT_RE = re.compile(r"%([0-9A-Fa-f]{2})")

_FENCE_OPEN = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>[^\r\n]*)")
_FENCE_CLOSE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*")
_LIST_MARKER = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?=[ \t]|$)")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")
_BLANK_LINE = re.compile(r"\n[ \t]*(?:\r?\n|\r)|\r[ \t]*\r")
#: The characters the inline scanner acts on; everything else is skipped in one search.
_LINK_STOP = re.compile(r"[\\`\[\]]")
#: "[…]" with no bracket, backslash or backtick inside and no "(" after it.
_SIMPLE_PAIR = re.compile(r"\[[^\[\]\\`]*\](?!\()")
_CODE_STOP = re.compile(r"[\\`]")
#: A citation link with a plain label (no bracket, backslash or backtick) whose destination
#: starts right after the "(" and is closed by the line's first ")", with no "(" before it.
_SIMPLE_CITE = re.compile(r"\[([^\[\]\\`]*)\]\(((?i:" + "|".join(SCHEMES) + r"):[^\r\n()]*)\)")
#: A citation destination closed by the line's first ")" with no "(" before it.
_SIMPLE_CLOSE = re.compile(r"[^\r\n()]*\)")
#: A half-escaped number, which :func:`escape_numbers` completes (escaping one bracket).
_HALF_NUMBER = re.compile(r"\\\[\d+\]|\[\d+\\\]")
#: Digits and an escaped "]" after a "[": a "[12\\]" whose "[" escape_numbers escapes.
_HALF_OPEN = re.compile(r"\d+\\\]")


def encode_id(value: str, *, source: bool = False) -> str:
    """Percent-encode ``value`` for use as SOURCE or ID in a link destination.

    Encodes ``%``, ``(``, ``)`` and ASCII whitespace, nothing else, so that
    ``decode_id(encode_id(x)) == x`` for every string. With ``source=True`` (the SOURCE
    of ``post:SOURCE:ID``, which ends at the first raw colon) ``:`` is encoded too, as
    ``%3A``, and ``decode_id(encode_id(x, source=True), source=True) == x``. Generators
    should use :func:`format_link` rather than building destinations by hand.
    """
    table = _ENCODED_SOURCE if source else _ENCODED
    return "".join(f"%{ord(c):02X}" if c in table else c for c in value)


def decode_id(value: str, *, source: bool = False) -> str:
    """Decode the percent escapes of ``(``, ``)``, ``%`` and ASCII whitespace in ``value``
    (and of ``:`` when ``source=True``).

    Other ``%XX`` sequences are left as written (ids are compared exactly).
    """
    table = _ENCODED_SOURCE if source else _ENCODED

    def repl(m: re.Match[str]) -> str:
        ch = chr(int(m.group(1), 16))
        return ch if ch in table else m.group(0)

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
        dest = f"post:{encode_id(source, source=True)}:{encode_id(pid)}"
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


#: Parsed citation destinations (a :class:`Target` is immutable), bounded.
_TARGETS: dict[str, Target] = {}


def _target(dest: str) -> Target:
    """:func:`parse_target` of a citation destination, cached."""
    target = _TARGETS.get(dest)
    if target is None:
        target = parse_target(dest)
        assert target is not None
        if len(_TARGETS) >= 4096:
            _TARGETS.clear()
        _TARGETS[dest] = target
    return target


def parse_target(dest: str) -> Target | None:
    """Parse a destination such as ``post:Reddit:t3_x`` or ``chunk:…``; ``None`` if it is
    not one of the citation schemes (an ordinary URL)."""
    d = dest.strip()
    if d.startswith("<"):  # an unclosed destination may keep only one of the pair
        d = d[1:].strip()
    if d.endswith(">"):
        d = d[:-1].strip()
    m = _SCHEME_RE.match(d)
    if not m:
        return None
    scheme = m.group(1).lower()
    rest = d[m.end():]
    if scheme == "post":
        source, sep, pid = rest.partition(":")
        return Target("post", decode_id(pid) if sep else "", dest,
                      source=decode_id(source, source=True).lower())
    if scheme == "chunk":
        return Target("chunk", decode_id(rest), dest)
    return Target("entity", decode_id(rest), dest, type=scheme)


@dataclass(slots=True)
class Token:
    """A piece of the raw text: ``raw[start:end] == text``. Read-only by convention (not
    frozen: a slotted plain dataclass is built three times faster, and a 100 KB answer
    has a thousand tokens).

    For ``link`` and ``mdlink``: ``label`` is the raw label (between the outer brackets)
    starting at ``label_start``; ``tail`` is the raw ``](…)`` after it (``mdlink``);
    ``target`` is the parsed destination (``link``); ``dest_span`` is the half-open span
    of the destination inside ``tail`` (``mdlink``). ``block`` marks a fenced code block
    (as opposed to an inline code span).
    """

    kind: Literal["text", "code", "link", "mdlink", "open", "tail", "bracket", "ticks"]
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


def _skip_indent(line: str, pos: int, col: int) -> tuple[int, int]:
    """Skip spaces and tabs from ``pos`` (at column ``col``; a tab advances to the next
    multiple of 4): ``(new pos, new column)``."""
    while pos < len(line) and line[pos] in " \t":
        col = col + 4 - col % 4 if line[pos] == "\t" else col + 1
        pos += 1
    return pos, col


def _container_prefix(line: str) -> tuple[list[int], int, int]:
    """The container markers at the start of ``line``: block quotes (``>``) and list items,
    in order, as a list of widths (0 for a quote; for a list item, the columns from the
    end of the enclosing container's marker to the item's content), plus the position and
    column after them."""
    ctx: list[int] = []
    pos = col = 0
    while True:
        start_col = col
        j, c = _skip_indent(line, pos, col)
        if j < len(line) and line[j] == ">":
            pos, col = j + 1, c + 1
            if pos < len(line) and line[pos] == " ":
                pos, col = pos + 1, col + 1
            ctx.append(0)
            continue
        m = _LIST_MARKER.match(line, j)
        if m is None:
            return ctx, pos, col
        k, ck = _skip_indent(line, m.end(), c + len(m.group()))
        spaces = ck - (c + len(m.group()))
        if spaces > 4 or k == len(line):  # content is indented code / empty: width is marker + 1
            k, ck = m.end() + (1 if m.end() < len(line) else 0), c + len(m.group()) + 1
        ctx.append(ck - start_col)
        pos, col = k, ck


def _continues(line: str, ctx: list[int]) -> int | None:
    """Position after the container prefix of ``line`` if ``line`` continues every
    container of ``ctx`` (a quote needs its ``>``; a list item needs its content
    indentation, or a blank line while no quote is left to match); else None."""
    pos = col = 0
    for n, width in enumerate(ctx):
        j, c = _skip_indent(line, pos, col)
        if width == 0:
            if j >= len(line) or line[j] != ">":
                return None
            pos, col = j + 1, c + 1
            if pos < len(line) and line[pos] == " ":
                pos, col = pos + 1, col + 1
            continue
        if j >= len(line):  # blank: a list item goes on, a block quote inside it ends
            return None if 0 in ctx[n + 1:] else j
        if c - col < width:
            return None
        target = col + width
        while col < target and pos < len(line):
            col = col + 4 - col % 4 if line[pos] == "\t" else col + 1
            pos += 1
    return pos


def _track_items(line: str, items: list[tuple[int, int]]) -> None:
    """Update ``items``, the open list items ``(quote depth, content width)`` seen on
    non-code lines, with ``line`` (approximate: lazy continuation lines close items)."""
    depth, pos, col = 0, 0, 0
    while True:
        j, c = _skip_indent(line, pos, col)
        if j < len(line) and line[j] == ">":
            depth += 1
            pos, col = j + 1, c + 1
            if pos < len(line) and line[pos] == " ":
                pos, col = pos + 1, col + 1
            continue
        break
    items[:] = [it for it in items if it[0] <= depth]
    if j >= len(line):
        return
    indent = c - col
    items[:] = [it for it in items if it[0] < depth or it[1] <= indent]
    m = _LIST_MARKER.match(line, j)
    if m is not None:
        k, ck = _skip_indent(line, m.end(), c + len(m.group()))
        spaces = ck - (c + len(m.group()))
        width = (ck - col) if 1 <= spaces <= 4 and k < len(line) else (c + len(m.group()) + 1 - col)
        items.append((depth, width))


def code_blocks(text: str) -> list[tuple[int, int]]:
    """Half-open spans of the fenced code blocks of ``text`` (opening and closing fence
    lines included).

    A fence opened inside block quotes or list items (markers on its line, or an indented
    fence under a list item seen earlier) ends with them, as in CommonMark: at the first
    line that no longer continues every container (a quote line without ``>``, a blank
    line in a quote, a non-blank line indented less than a list item's content). A
    closing fence must sit inside the same containers. An unclosed top-level fence runs
    to the end of the text.
    """
    blocks: list[tuple[int, int]] = []
    if "```" not in text and "~~~" not in text:
        return blocks  # no line can open a fence
    lines = list(_lines(text, 0, len(text)))
    items: list[tuple[int, int]] = []
    k = 0
    while k < len(lines):
        start, end = lines[k]
        line = text[start:end].rstrip("\r\n")
        k += 1
        ctx, pos, col = _container_prefix(line)
        m = _FENCE_OPEN.fullmatch(line, pos)
        if not m or (m.group("fence")[0] == "`" and "`" in m.group("info")):
            _track_items(line, items)
            continue
        fence = m.group("fence")
        if not ctx or ctx[-1] == 0:
            # an indented fence with no list marker on its line: inside the innermost list
            # item (seen earlier, same quote depth) whose content indentation it reaches
            depth = len(ctx)
            _, fcol = _skip_indent(line, pos, col)
            widths = [w for d, w in items if d == depth and w <= fcol - col]
            if widths:
                ctx = [*ctx, max(widths)]
        _track_items(line, items)
        block_end = len(text)
        while k < len(lines):
            cstart, cend = lines[k]
            cline = text[cstart:cend].rstrip("\r\n")
            cpos = _continues(cline, ctx)
            if cpos is None:
                block_end = cstart  # the container ended: so did the code block
                break
            k += 1
            c = _FENCE_CLOSE.fullmatch(cline, cpos)
            if c and c.group("fence")[0] == fence[0] and len(c.group("fence")) >= len(fence):
                block_end = cend
                break
        blocks.append((start, block_end))
    return blocks


def _para_ends(text: str, lo: int, hi: int) -> list[int]:
    """``[m.start() + 1 for m in _BLANK_LINE.finditer(text, lo, hi)]``; without a ``\r``
    only a ``\n`` can start a match, and ``str.find`` gets there faster than the regex."""
    if text.find("\r", lo, hi) >= 0:
        return [m.start() + 1 for m in _BLANK_LINE.finditer(text, lo, hi)]
    ends: list[int] = []
    match = _BLANK_LINE.match
    find = text.find
    i = find("\n", lo, hi)
    while i >= 0:
        m = match(text, i, hi)
        if m is not None:
            ends.append(i + 1)
            i = find("\n", m.end(), hi)
        else:
            i = find("\n", i + 1, hi)
    return ends


def _is_image(s: str, opener: int, lo: int) -> bool:
    """Whether the ``[`` at ``opener`` opens an image, ``![…](…)``: a ``!`` before it that
    is not backslash-escaped (looking no further back than ``lo``). An image may sit in a
    link label (CommonMark: images, unlike links, do not deactivate earlier ``[``)."""
    if opener <= lo or s[opener - 1] != "!":
        return False
    b = opener - 1
    while b > lo and s[b - 1] == "\\":
        b -= 1
    return (opener - 1 - b) % 2 == 0


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
        self.para_ends = _para_ends(text, lo, hi)
        # Starts of the maximal backtick runs, by run length (code-span closers).
        self.runs: dict[int, list[int]] = {}
        if text.find("`", lo, hi) >= 0:
            for m in re.finditer("`+", text[lo:hi]):
                self.runs.setdefault(m.end() - m.start(), []).append(lo + m.start())
        # "[" of a simple link -> (end, token); "[" of a citation link whose label holds
        # links (dropped); "]" or "\\]" starting a citation tail "](target)" -> (end, token)
        self.links: dict[int, tuple[int, Token]] = {}
        self.opens: set[int] = set()
        # "[" and "]" written "\\[" / "\\]" (``bracket`` tokens): both brackets of a pair
        # holding a link and followed by "(" or "["; the partner of the other bracket of
        # a half-escaped number (module docstring, rule 6)
        self.literal: set[int] = set()
        self.tails: dict[int, tuple[int, Token]] = {}
        # every link and tail has a "](", every half-escaped number a backslash
        if text.find("](", lo, hi) >= 0 or (
                text.find("\\", lo, hi) >= 0 and _HALF_NUMBER.search(text, lo, hi) is not None):
            self._find_links()

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

        # Only the positions found by _find_links (links, tails, dropped and literal
        # "[") and backslashes and backticks (which may skip over them) need a look.
        tails, links, opens = self.tails, self.links, self.opens
        events = sorted({*tails, *links, *opens, *self.literal})
        k, n_events = 0, len(events)
        search = _CODE_STOP.search
        special = search(s, i, hi)
        while True:
            while k < n_events and events[k] < i:
                k += 1
            e = events[k] if k < n_events else hi
            if special is not None and special.start() < i:
                special = search(s, i, hi)
            sp = special.start() if special is not None else hi
            if e <= sp:  # a tail starting with "\\" is taken before the escape
                if e >= hi:
                    break
                i = e
                flush(i)
                if i in tails:
                    end, tok = tails[i]
                    out.append(tok)
                    i = buf = end
                elif i in links:
                    end, tok = links[i]
                    out.append(tok)
                    i = buf = end
                else:
                    out.append(Token("open" if i in opens else "bracket", i, i + 1, s[i]))
                    i = buf = i + 1
                continue
            i = sp
            if s[i] == "\\":
                i += 2 if i + 1 < hi and s[i + 1] in _PUNCT else 1
                continue
            run = self.run_len(i, hi)
            end = self.code_close(i, run, self.para_end(i))
            if end is not None:
                flush(i)
                out.append(Token("code", i, end, s[i:end]))
                i = buf = end
            else:
                i += run
        flush(hi)
        return out

    def _find_links(self) -> None:
        """Fill :attr:`links`, :attr:`opens`, :attr:`tails` and :attr:`literal` for the
        region, in one pass per paragraph with a bracket stack (inner pairs first, no
        recursion)."""
        s = self.s
        start = self.lo
        search = _LINK_STOP.search
        simple = _SIMPLE_PAIR.match
        simple_cite = _SIMPLE_CITE.match
        for limit in [*self.para_ends, self.hi]:
            # [position of "[", contains a link, escape_numbers escapes it ("[12\\]"),
            #  contains a link other than an image (so it cannot open a link itself)]
            stack: list[list[Any]] = []
            j = start
            while True:
                m = search(s, j, limit)
                if m is None:
                    break
                j = m.start()
                c = s[j]
                if c == "[":
                    pair = simple(s, j, limit)
                    if pair is not None:
                        # pushed and popped with no effect (not a link, nothing to flag)
                        j = pair.end()
                        continue
                    link = simple_cite(s, j, limit)
                    if link is not None:
                        # the common "[label](scheme:…)" with a plain label, closed by the
                        # first ")" of its line: what _link_at finds, without the detour
                        end = link.end()
                        self.links[j] = (end, Token("link", j, end, link.group(), label=link.group(1),
                                                     label_start=j + 1, target=_target(link.group(2))))
                        if stack:
                            stack[-1][1] = stack[-1][3] = True
                        j = end
                        continue
                if c == "\\" and j + 1 < limit and s[j + 1] in _PUNCT:
                    if s[j + 1] == "]":
                        # "\\](post:…)": an escaped bracket cannot hide a citation target
                        tail = self._tail_at(j, j + 1, limit, None)
                        if tail is not None:
                            self.tails[j] = tail
                            if stack:
                                stack[-1][1] = stack[-1][3] = True
                            j = tail[0]
                            continue
                    j += 2
                    continue
                if c == "`":
                    run = self.run_len(j, limit)
                    end = self.code_close(j, run, limit)
                    j = end if end is not None else j + run
                    continue
                if c == "[":
                    stack.append([j, False, _HALF_OPEN.match(s, j + 1, limit) is not None, False])
                elif c == "]":
                    opener, inner, half, deact = stack.pop() if stack else (None, False, False, False)
                    if opener is not None and not inner:
                        found = self._link_at(opener, j, limit)
                        if found is not None:
                            self.links[opener] = found
                        elif half or self._half_close(j):
                            # escape_numbers escapes one bracket of this pair: the other
                            # one too, or the pairing of later brackets would shift
                            self.literal.add(j if half else opener)
                    else:
                        # a "]" closing no "[" or a label holding links: a citation
                        # destination after it is a tail (the outer "[" is dropped)
                        found = self._tail_at(j, j, limit, opener)
                        if found is not None:
                            self.tails[j] = found
                            if opener is not None:
                                self.opens.add(opener)
                        elif opener is not None and not deact and (found := self._mdlink_at(opener, j, limit)):
                            # only images inside: a link may hold an image (CommonMark),
                            # "[![badge](b.svg)](url)" stays a link
                            self.links[opener] = found
                        elif opener is not None and j + 1 < limit and s[j + 1] in "([":
                            # literal in CommonMark (links do not nest); once the inner
                            # link is rewritten the pair could become a link around it.
                            # Both brackets: a lone "]" would close an earlier "[".
                            self.literal.add(opener)
                            self.literal.add(j)
                        elif opener is not None and (half or self._half_close(j)):
                            self.literal.add(j if half else opener)
                    if stack and (inner or found is not None):
                        # the enclosing label holds a link; unless that is an image, its
                        # "[" can no longer open a link (CommonMark deactivates it)
                        stack[-1][1] = True
                        if deact or (found is not None and not (found[1].kind == "mdlink" and
                                                                _is_image(s, opener, self.lo))):
                            stack[-1][3] = True
                    if found is not None:
                        j = found[0]
                        continue
                j += 1
            start = limit

    def _half_close(self, j: int) -> bool:
        """Whether the ``]`` at ``j`` ends a half-escaped number ``\\[12]`` (the ``\\``
        itself not escaped), which :func:`escape_numbers` writes ``\\[12\\]``."""
        s = self.s
        k = j
        while k > self.lo and s[k - 1].isdecimal():  # what "\\d" matches in escape_numbers
            k -= 1
        if k == j or k - 2 < self.lo or s[k - 1] != "[" or s[k - 2] != "\\":
            return False
        b = k - 2
        while b > self.lo and s[b - 1] == "\\":
            b -= 1
        return (k - 1 - b) % 2 == 1

    def _citation_dest(self, close_bracket: int, limit: int) -> tuple[int, Target] | None:
        """``(end of the link, target)`` if a citation destination ``(post:…)`` (or
        another scheme) directly follows the ``]`` at ``close_bracket``, else None."""
        s = self.s
        if close_bracket + 1 >= limit or s[close_bracket + 1] != "(":
            return None
        dest_start = close_bracket + 2
        k = self._skip_ws(dest_start, limit, newline=True)
        if k < limit and s[k] == "<":
            k = self._skip_ws(k + 1, limit, newline=False)
        if not _SCHEME_RE.match(s, k, limit):
            return None
        dest_end, end = self._citation_close(k, limit)
        target = _target(s[dest_start:dest_end])
        return end, target

    def _tail_at(self, i: int, bracket: int, limit: int, opener: int | None) -> tuple[int, Token] | None:
        """The citation tail ``](target)`` starting at ``i`` (``]`` at ``bracket``), with
        the raw label from ``opener`` (None: no label) for warnings."""
        found = self._citation_dest(bracket, limit)
        if found is None:
            return None
        end, target = found
        label = self.s[opener + 1:bracket] if opener is not None else ""
        return end, Token("tail", i, end, self.s[i:end], label=label,
                          label_start=opener + 1 if opener is not None else None, target=target)

    def _link_at(self, i: int, label_end: int, limit: int) -> tuple[int, Token] | None:
        """The link whose label runs from ``[`` at ``i`` to ``]`` at ``label_end``, if the
        destination after it parses: ``(end, token)``, else None."""
        s = self.s
        if label_end + 1 >= limit or s[label_end + 1] != "(":
            return None
        cited = self._citation_dest(label_end, limit)
        if cited is not None:
            end, target = cited
            return end, Token("link", i, end, s[i:end], label=s[i + 1:label_end], label_start=i + 1,
                              target=target)
        return self._mdlink_at(i, label_end, limit)

    def _mdlink_at(self, i: int, label_end: int, limit: int) -> tuple[int, Token] | None:
        """The ordinary link ``[label](url "title")`` with ``[`` at ``i`` and ``]`` at
        ``label_end``, if its destination parses: ``(end, token)``, else None."""
        s = self.s
        if label_end + 1 >= limit or s[label_end + 1] != "(":
            return None
        label = s[i + 1:label_end]
        found = self._markdown_close(label_end + 2, limit)
        if found is None:
            return None
        close, dest_lo, dest_hi = found
        end = close + 1
        return end, Token("mdlink", i, end, s[i:end], label=label, label_start=i + 1,
                          tail=s[label_end:end], dest_span=(dest_lo - label_end, dest_hi - label_end))

    def _citation_close(self, k: int, limit: int) -> tuple[int, int]:
        """``(end of the destination, end of the link)`` for a citation destination whose
        scheme starts at ``k``: up to the parenthesis balancing the link's ``(`` on the same
        line, else the first ``)`` of the line; with no ``)`` on the line the destination
        is unclosed and ends at the first whitespace (or the line end), and so does the
        link (a target never stays in the text)."""
        s = self.s
        m = _SIMPLE_CLOSE.match(s, k, limit)
        if m is not None:
            return m.end() - 1, m.end()
        line_end = min((p for p in (s.find("\n", k, limit), s.find("\r", k, limit)) if p >= 0), default=limit)
        first = s.find(")", k, line_end)
        if first < 0:
            j = k
            while j < line_end and not s[j].isspace():
                j += 1
            return j, j
        if s.find("(", k, first) < 0:
            return first, first + 1
        depth = 0
        for j in range(k, line_end):
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                if depth == 0:
                    return j, j + 1
                depth -= 1
        return first, first + 1

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


#: One step of :func:`_simple_tokens`: a citation link with a plain one-line label, a
#: one-line bracket pair with no link, or any other character that needs the full scanner.
_SIMPLE_STEP = re.compile(  # a leading character class: the regex engine skips to it fast
    r"([\[\]\\`](?:(?<=\[)([^\[\]\\`\r\n]*)\]\(((?i:" + "|".join(SCHEMES) + r"):[^\r\n()]*)\)"
    r"|(?<=\[)[^\[\]\\`\r\n]*\](?!\()"
    r"|()))")


def _simple_tokens(text: str) -> list[Token] | None:
    """Tokens of a text whose only markup is citation links with plain one-line labels
    closed by the line's first ``)`` and bracket pairs that are no links - the usual
    generator answer - in one regex pass; ``None`` for anything else (a backslash, a
    backtick, ``~~~``, an ordinary link, a nested or unpaired bracket), which the full
    scanner handles. Equal to the full scanner's result where it answers (tested)."""
    if "~" in text and "~~~" in text:  # a single character is found much faster
        return None
    out: list[Token] = []
    append = out.append
    targets = _TARGETS
    # split() gives: prose, then per step (whole step, label, destination, other, prose)
    pieces = iter(_SIMPLE_STEP.split(text))
    pos = len(next(pieces))  # end of the prose read so far
    buf = 0  # start of the prose not yet in a token
    for step, label, dest, other, prose in zip(pieces, pieces, pieces, pieces, pieces):
        if other is not None:
            return None  # a character only the full scanner can place
        if dest is not None:  # a citation link (else a bracket pair that is no link: prose)
            if pos > buf:
                append(Token("text", buf, pos, text[buf:pos]))
            buf = pos + len(step)
            append(Token("link", pos, buf, step, label, pos + 1, None, targets.get(dest) or _target(dest)))
        pos += len(step) + len(prose)
    if pos > buf:
        append(Token("text", buf, pos, text[buf:pos]))
    return out


def scan(text: str) -> list[Token]:
    """Cut ``text`` into tokens (see the module docstring); lossless and never raising.

    Offsets are code points into ``text``. Fenced code blocks become ``code`` tokens;
    the rest is scanned inline. Texts with nothing but simple links take a one-pass
    route (:func:`_simple_tokens`).
    """
    simple = _simple_tokens(text)
    if simple is not None:
        return simple
    return _scan(text)


def _scan(text: str) -> list[Token]:
    """The full scanner behind :func:`scan`."""
    tokens: list[Token] = []
    pos = 0
    for start, end in code_blocks(text):
        if start > pos:
            tokens.extend(_Inline(text, pos, start).tokens())
        tokens.append(Token("code", start, end, text[start:end], block=True))
        pos = end
    if pos < len(text):
        tokens.extend(_Inline(text, pos, len(text)).tokens())
    return _mark_fence_like(text, tokens)


def _inside(spans: list[tuple[int, int]], i: int) -> bool:
    """Whether ``i`` lies in one of ``spans`` (sorted, disjoint, half-open)."""
    k = bisect_left(spans, (i + 1,)) - 1
    return k >= 0 and spans[k][0] <= i < spans[k][1]


def _mark_fence_like(text: str, tokens: list[Token]) -> list[Token]:
    """Split off, as ``ticks`` tokens, prose backtick runs (3 or more) that start a line but
    are no fence only because a later backtick of the line sits in a citation link or tail:
    once that markup is rewritten the line would open a code block, so the cite stage
    writes the run's first backtick escaped."""
    rewritten = [(t.start, t.end) for t in tokens if t.kind in ("link", "tail")]
    if not rewritten or "```" not in text:
        return tokens
    out: list[Token] = []
    for tok in tokens:
        if tok.kind != "text" or "```" not in tok.text:
            out.append(tok)
            continue
        cuts: list[tuple[int, int]] = []
        for m in re.finditer(r"(?:^|(?<=[\r\n]))[^\r\n]*", tok.text):
            a = tok.start + m.start()
            if a != 0 and text[a - 1] not in "\r\n":
                continue  # not a line start of the whole text
            line_end = a + len(m.group())
            while line_end < len(text) and text[line_end] not in "\r\n":
                line_end += 1
            line = text[a:line_end]
            _, ppos, _ = _container_prefix(line)
            f = re.compile(r"[ \t]*(`{3,})").match(line, ppos)
            if f is None or a + f.end() > tok.end:
                continue
            later = [i for i in range(a + f.end(), line_end) if text[i] == "`"]
            if later and all(_inside(rewritten, i) for i in later):
                cuts.append((a + f.start(1), a + f.end(1)))
        pos = tok.start
        for lo, hi in cuts:
            if lo > pos:
                out.append(Token("text", pos, lo, text[pos:lo]))
            out.append(Token("ticks", lo, hi, text[lo:hi]))
            pos = hi
        if pos < tok.end:
            out.append(Token("text", pos, tok.end, text[pos:tok.end]))
    return out


def scan_label(label: str) -> list[Token]:
    """Tokens of a link label scanned on its own (code spans, escapes; no fences)."""
    return _Inline(label, 0, len(label)).tokens() if label else []


_NUM_TAIL = re.compile(r"(\d+)\\?\]")
_BRACKETED_NUM = re.compile(r"\[(\d+)\]")
_ESCAPED_NUM = re.compile(r"\\\[(\d+)\\\]")
_PADDED_DEF = re.compile(r"\s*\d+\s*\]:")
_ESCAPE_STOP = re.compile(r"[\\\[]")


def escape_numbers(prose: str) -> str:
    """Escape every bracketed number of ``prose`` that is not escaped yet (rule 5).

    ``[12]`` → ``\\[12\\]``; half-escaped ``\\[12]`` and ``[12\\]`` are completed (the
    scanner escapes the partner bracket, rule 6 of the module docstring); a padded
    number label ``[ 1 ]:`` → ``\\[ 1 \\]:``; fully escaped ``\\[12\\]`` and other
    backslash escapes are left alone. ``prose`` must be text outside code (the caller
    never passes code).
    """
    if "[" not in prose:
        return prose  # only a "[" can be escaped
    out: list[str] = []
    i, n = 0, len(prose)
    last = 0  # prose[last:i] is copied as it is
    search = _ESCAPE_STOP.search
    while True:
        found = search(prose, i)
        if found is None:
            break
        i = found.start()
        c = prose[i]
        if c == "\\":
            if i + 1 < n:
                if prose[i + 1] == "[":
                    m = _NUM_TAIL.match(prose, i + 2)
                    if m:  # half-escaped "\\[12]": completed
                        out += (prose[last:i], f"\\[{m.group(1)}\\]")
                        i = last = m.end()
                        continue
                if prose[i + 1] in _PUNCT:
                    i += 2
                    continue
        else:  # "["
            m = _NUM_TAIL.match(prose, i + 1)
            if m:  # "[12]" (or "[12\\]"): escaped
                out += (prose[last:i], f"\\[{m.group(1)}\\]")
                i = last = m.end()
                continue
            m = _PADDED_DEF.match(prose, i + 1)
            if m:  # "[ 1 ]: url" would define label 1 (every [1] a link): "\\[ 1 \\]:",
                # both brackets, so no other "]" changes partner (links.py rule 6)
                close = m.end() - 2
                out += (prose[last:i], "\\[", prose[i + 1:close], "\\]")
                i = last = close + 1
                continue
        i += 1
    out.append(prose[last:])
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
