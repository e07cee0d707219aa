"""The streaming citer: rule 9 of the citation contract (docs/architecture.md).

A generator streams its answer in pieces of any size; a client must see text as soon as
it is safe, and never a partial link, a link target or text that later changes.
:class:`StreamingCiter` turns the pieces into client :class:`Event`\\ s:

``citation``  ``{"citation": N, "type": "post"|"chunk", "source", "id"`` (post) or
              ``"chunk_id", "resource_id", "resource_title", "chunk_index", "metadata",
              "text"}`` (the passage) - sent *before* the delta that first shows ``[N]``;
              sent again with ``"update": true`` if the passage of a post only becomes
              known later in the answer;
``delta``     ``{"text": …}`` - the next piece of the final ``Message.text``;
``support``   ``{"part_index", "start", "end", "citation", "chunk_id", "support"}`` - one
              per (part, cited passage) pair, after the delta that completes the part
              (only when a ``support`` callable is given);
``done``      ``{"message": Message dict}`` (added by :func:`stream_cite`, and by
              ``Engine.ask_stream``).

Guarantees (tested over random splits in ``tests/test_stream.py``):

- after every :meth:`StreamingCiter.feed`, the text sent so far is a prefix of the final
  text; the concatenated deltas equal it;
- the :class:`~citewell.models.Message` of :meth:`StreamingCiter.close` *is*
  ``cite(whole_text, …)`` (it is computed that way), so numbering, references, parts,
  citations and warnings equal the non-streamed result for every split;
- no partial link: a delta is only ever a slice of that final text.

How: the streamer finds the longest prefix of the raw text that is *settled* - no later
input can change how it renders - and renders only that, with the cite stage's own
machinery (:class:`~citewell.cite.links._Inline`, :class:`~citewell.cite.processor._Citer`,
:func:`~citewell.cite.processor._assemble`), one *window* ``raw[W:cut]`` at a time,
keeping the numbering state between windows (numbering by first appearance is stable
under prefix extension). Each window is scanned once, so the work is linear.

State machine (two layers that run over the raw text in order):

1. **Line layer** (fenced code blocks are line based and decided before any inline
   syntax, as in :func:`~citewell.cite.links.code_blocks`):

   - ``NORMAL``: each complete line is checked as a fence opener. The current, incomplete
     line is *held* (no cut after its start) while it could still become one (only
     container-marker characters so far, or a run of backticks/tildes after them);
     otherwise it is *prose*.
     NORMAL → FENCE when a complete line opens a fence at ``S``: the inline region ends
     there, so ``raw[W:S]`` is rendered at once, whatever its inline state.
   - ``FENCE``: the block's text is verbatim. On each new complete line the block is
     measured again with ``code_blocks`` (from the opener; from the start of the text
     when an indented opener may belong to an earlier list item); complete lines still in
     the block are sent as they are. FENCE → NORMAL at the block's end (closing fence,
     or the first line that leaves its containers).

2. **Inline layer** (inside a NORMAL region; mirrors ``_Inline._find_links``), per
   paragraph:

   - ``stack``: the open ``[`` (with "label holds a link" flags);
   - ``ticks``: an unmatched backtick run of length N; until a run of exactly N closes
     it (a code span) or the paragraph ends (it was literal), nothing else counts;
   - ``dest``: after ``](`` (or ``\\](``): reading a destination. A citation destination
     is settled at its ``)`` (no ``(`` before it) or at the line end (balanced parens /
     unclosed destination, decided by the scanner's own ``_citation_close``); an
     ordinary one when ``_markdown_close`` finds its ``)`` (later text cannot change a
     found link) or the paragraph ends (then it was no link);
   - ``pad``: a ``[`` left open at a paragraph end, while ``\\s*\\d+\\s*]:`` could still
     follow it (``escape_numbers`` would escape it);
   - a blank line ends the paragraph: ``stack``, ``ticks`` and ``dest`` reset.

   The state is *neutral* when all four are empty. A cut ``c`` is safe when the state is
   neutral at ``c``, ``raw[c-1]`` is a space, tab or ``\\n`` (so no escape, marker,
   ``]``, backtick or tilde run is pending: what follows a marker - ``(``, ``[``, ``:``
   get escaped - is in the same window) and ``c`` is not inside a held line. When the
   rendered window ends with ``]`` and whitespace, the cut moves back before that
   whitespace (prose whitespace is copied as it is, so it is the raw's last characters):
   a citation destination after them, ``[1] (post:x:1``, gets its ``(`` escaped, which
   the next window decides with the ``]`` in its context.

3. **Global fallback**: ``cite()`` re-assembles the *whole* text with backticks escaped
   and removed link brackets kept when the plain text would not read back
   (``_reads_back``). A window is therefore rendered both ways; only the common prefix is
   sent, and once they differ (a literal backtick or tilde run in prose, a removed link
   label) the streamer *stalls*: the rest is sent at :meth:`StreamingCiter.close`.

Rendering is batched: a window is rendered once at least ``min_delta`` settled
characters are waiting (default 32), or at a line end. ``min_delta=1`` sends every
settled word at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from citewell.models import Message, Passage

from .links import (
    _BLANK_LINE,
    _FENCE_OPEN,
    _PUNCT,
    _SCHEME_RE,
    SCHEMES,
    _container_prefix,
    _Inline,
    _is_image,
    _mark_fence_like,
    code_blocks,
)
from .offsets import check_unit
from .parts import Marker, part_bounds
from .processor import _assemble, _Citer, cite
from .resolver import SourceResolver

__all__ = ["Event", "StreamingCiter", "stream_cite"]


@dataclass
class Event:
    """A client event: ``kind`` is ``citation``, ``delta``, ``support`` or ``done``."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{"event": kind, **data}`` (the SSE/JSON form)."""
        return {"event": self.kind, **self.data}


_INTERESTING = re.compile(r"[\\\[\]`\r\n]")
#: What the fast path of :meth:`StreamingCiter.feed` cannot skip (line ends, markup).
_SPECIAL = re.compile(r"[\\\[\]`\r\n\t~]")
_SPECIAL_CHARS = "\\[]`\r\n\t~"  # the same, for a one-character chunk
#: What can settle a citation destination waiting for its ")" (fast path of feed()).
_WAIT = re.compile(r"[)\r\n]")
_WAIT_CHARS = ")\r\n"
_TICKS_INTERESTING = re.compile(r"[`\r\n]")
_PAD_SKIP = re.compile(r"[\s\d]*")
#: Characters a line may start with before it is known not to open a fence.
_LINE_SET = " \t>-*+0123456789.)"
_SCHEME_WORDS = tuple(s + ":" for s in SCHEMES)
_NORMAL, _FENCE = 0, 1
_UNDECIDED, _PROSE = 0, 1


def _line_held(partial: str) -> bool:
    """Whether an incomplete line could still open a fence (so no cut inside it)."""
    rest = partial.lstrip(_LINE_SET)
    if not rest:
        return True
    if rest[0] not in "`~":
        return False
    run = len(rest) - len(rest.lstrip(rest[0]))
    return run >= 3 or run == len(rest)


def _opener(line: str) -> tuple[bool, bool]:
    """``(opens a fence, may depend on earlier list items)`` for a complete line
    (without its line break), as :func:`code_blocks` decides it."""
    rest = line.lstrip(_LINE_SET)
    if not rest.startswith(("```", "~~~")):
        return False, False
    ctx, pos, _ = _container_prefix(line)
    m = _FENCE_OPEN.fullmatch(line, pos)
    if not m or (m.group("fence")[0] == "`" and "`" in m.group("info")):
        return False, False
    indented = line[pos:pos + 1] in (" ", "\t")
    return True, indented and (not ctx or ctx[-1] == 0)


def _last_ws(s: str, lo: int, hi: int) -> int:
    """Index of the last space, tab or ``\\n`` of ``s[lo:hi]``, or -1."""
    if hi <= lo:
        return -1
    return max(s.rfind(" ", lo, hi), s.rfind("\n", lo, hi), s.rfind("\t", lo, hi))


class StreamingCiter:
    """Cite a generator's output while it streams (see the module docstring).

    ``sources``/``resolver``/``offset_unit``/``posts`` as for :func:`~citewell.cite.cite`;
    ``support(sentence_text, passage) -> dict`` checks one (part, passage) pair (rule 8);
    ``min_delta``: render once this many settled characters wait (1 = every word).
    """

    def __init__(self, *, sources: Sequence[Passage] | None = None, resolver: SourceResolver | None = None,
                 offset_unit: str = "codepoint", support: Callable[[str, Passage], dict] | None = None,
                 min_delta: int = 32, posts: Iterable[tuple[str, str]] = ()) -> None:
        check_unit(offset_unit)
        self._sources = list(sources) if sources is not None else None
        self._posts = list(posts)
        self._resolver = resolver
        self._unit = offset_unit
        self._support = support
        self._min_delta = max(1, min_delta)
        self._citer = _Citer(self._sources, resolver, self._posts)
        self._chunks: list[str] = []
        self._closed = False
        # raw text: _buf == raw[_B:]; _n == len(raw); raw[:_W] is rendered and sent
        self._buf = ""
        self._merged = 0  # chunks already in _buf (feed() defers the concatenation)
        self._B = 0
        self._n = 0
        self._W = 0
        # sent text
        self._sent: list[str] = []
        self._sent_len = 0
        self._line_out = ""  # sent text since its last line break (for _links_marker)
        self._announced: dict[int, bool] = {}  # citation -> passage known when announced
        self._stalled = False
        self._halt = False  # closed or stalled
        self._quiet = 0  # fast-path state of feed(), set after each slow step
        # line layer
        self._mode = _NORMAL
        self._ls = 0  # start of the first line not yet classified (NORMAL)
        self._line_state = _UNDECIDED  # of the incomplete line at _ls
        self._region_end: int | None = None  # a fence opener found at this line start
        self._block_start = 0
        self._block_global = False
        # inline layer
        self._reset_inline(0)
        # support (parts of the sent text)
        self._markers: list[Marker] = []
        self._verbatim: list[tuple[int, int, bool]] = []
        self._part_base = 0
        self._part_index = 0
        self._checked: set[tuple[int, int]] = set()
        self._marker_src: dict[int, Any] = {}  # citation -> numbered source (_Source)

    # ------------------------------------------------------------------ public API

    def feed(self, chunk: str) -> list[Event]:
        """Take the next piece of generator output; return the events safe to send now."""
        if self._halt:
            if self._closed:
                raise RuntimeError("feed() after close()")
            self._chunks.append(chunk)  # stalled: the rest waits for close()
            self._n += len(chunk)
            return []
        self._chunks.append(chunk)  # joined to _buf by _sync(), when the buffer is read
        start = self._n
        size = len(chunk)
        self._n = n = start + size
        quiet = self._quiet
        if quiet == 3:
            # waiting for the ")" (or line end) of a citation destination
            if (chunk not in _WAIT_CHARS) if size == 1 else not _WAIT.search(chunk):
                return []
        elif quiet and self._p == start and (chunk not in _SPECIAL_CHARS if size == 1 else not _SPECIAL.search(chunk)):
            # fast path: plain text on a prose line, nothing pending that it could settle
            self._p = n
            if quiet == 2:  # neutral: a space is a safe cut
                k = chunk.rfind(" ") if size != 1 else (0 if chunk == " " else -1)
                if k >= 0:
                    self._safe = safe = start + k + 1
                    if safe - self._W >= self._min_delta:
                        events: list[Event] = []
                        self._sync()
                        self._render(safe, events)
                        return events
            return []
        events = []
        self._sync()
        self._advance(events)
        # 0: slow path; 1: plain text only moves the scan; 2: ... and is neutral; 3: only a
        # ")" or a line end can settle the pending citation destination
        if self._pad is None and self._line_state == _PROSE and self._mode == _NORMAL \
                and self._region_end is None and not self._stalled:
            if self._dest is None:
                self._quiet = 2 if not self._stack and self._ticks is None else 1
            else:
                self._quiet = 3 if self._cite_wait is self._dest else 0
        else:
            self._quiet = 0
        return events

    def close(self) -> tuple[list[Event], Message]:
        """Flush: the remaining events (citations, last delta, supports; no ``done``) and
        the final :class:`Message`, which is ``cite(all_text, …)``."""
        if self._closed:
            raise RuntimeError("close() called twice")
        self._closed = self._halt = True
        raw = "".join(self._chunks)
        message = cite(raw, sources=self._sources, resolver=self._resolver, offset_unit=self._unit,
                       posts=self._posts)
        sent = "".join(self._sent)
        events: list[Event] = []
        if not message.text.startswith(sent):  # never expected: the client must replace its text
            events.append(Event("reset", {"text": message.text}))
            self._announced.clear()
            self._sent, self._sent_len = [message.text], len(message.text)
            rest = ""
        else:
            rest = message.text[len(sent):]
        refs = [r for r in message.references if r.citation is not None]
        for ref in sorted(refs, key=lambda r: r.citation or 0):
            n = ref.citation or 0
            known = ref.chunk_id is not None
            if n not in self._announced:
                events.append(Event("citation", _ref_data(ref)))
            elif known and not self._announced[n]:
                events.append(Event("citation", {**_ref_data(ref), "update": True}))
        if rest:
            events.append(Event("delta", {"text": rest}))
            self._sent.append(rest)
            self._sent_len += len(rest)
        if self._support is not None:
            events.extend(self._final_support(message))
        return events, message

    @property
    def sent_text(self) -> str:
        """The text sent to the client so far (concatenated deltas)."""
        return "".join(self._sent)

    # ------------------------------------------------------------------ driver

    def _sync(self) -> None:
        """Append the chunks fed since the last call to ``_buf``."""
        chunks = self._chunks
        k = len(chunks)
        if self._merged < k:
            self._buf += chunks[-1] if k - self._merged == 1 else "".join(chunks[self._merged:])
            self._merged = k

    def _advance(self, events: list[Event]) -> None:
        while not self._stalled:
            if self._mode == _FENCE:
                if not self._fence_step(events):
                    return
                continue
            self._classify_lines()
            limit = self._region_end if self._region_end is not None else self._n
            self._scan(limit)
            if self._region_end is not None and self._p >= self._region_end:
                # a fence opens at the region end: everything before it is settled
                start = self._region_end
                if start > self._W:
                    self._render(start, events, hold=False)  # a code block follows: no "(" to escape
                if self._stalled:
                    return
                self._mode = _FENCE
                self._block_start = start
                self._region_end = None
                continue
            cut = self._safe_cut()
            if cut > self._W and (cut - self._W >= self._min_delta or self._buf[cut - 1 - self._B] == "\n"):
                self._render(cut, events)
            return

    # ------------------------------------------------------------------ line layer

    def _line_end(self, rel: int) -> tuple[int, int] | None:
        """``(terminator start, next line start)`` (relative) of the line at ``rel``,
        or None if it is not complete yet."""
        buf = self._buf
        a, b = buf.find("\n", rel), buf.find("\r", rel)
        if a < 0 and b < 0:
            return None
        t = a if b < 0 or (0 <= a < b) else b
        if buf[t] == "\r":
            if t + 1 >= len(buf):
                return None
            return t, t + 2 if buf[t + 1] == "\n" else t + 1
        return t, t + 1

    def _classify_lines(self) -> None:
        """NORMAL mode: classify complete lines (a fence opener ends the region) and
        the incomplete last line (held or prose)."""
        if self._region_end is not None:
            return
        buf, off = self._buf, self._B
        while True:
            # a prose line may start before the trimmed buffer: only its end is needed
            rel = max(self._ls - off, 0)
            found = self._line_end(rel)
            if found is None:
                if self._line_state == _UNDECIDED and not _line_held(buf[rel:]):
                    self._line_state = _PROSE
                return
            t, nxt = found
            if self._line_state == _UNDECIDED:
                opens, global_ = _opener(buf[rel:t])
                if opens:
                    self._region_end = self._ls
                    self._block_global = global_
                    return
            self._ls = nxt + off
            self._line_state = _UNDECIDED

    def _cap(self) -> int:
        """No cut after the start of a held (possible fence) line."""
        if self._mode == _NORMAL and self._region_end is None and self._line_state == _UNDECIDED:
            return self._ls
        return self._n

    def _fence_step(self, events: list[Event]) -> bool:
        """FENCE mode: send the complete lines still inside the block; True when the
        block ended (back to NORMAL)."""
        buf, off = self._buf, self._B
        # end of the last complete line (a final "\r" may still become "\r\n")
        top = len(buf) - 1 if buf.endswith("\r") else len(buf)
        last = max(buf.rfind("\n", 0, top), buf.rfind("\r", 0, top))
        if last < 0:
            return False
        complete = last + 1 + off
        if complete <= self._block_start:
            return False
        if self._block_global:
            whole = "".join(self._chunks)[:complete]
            blocks = [b for b in code_blocks(whole) if b[0] == self._block_start]
            end = blocks[0][1] if blocks else complete
        else:
            window = buf[self._block_start - off:complete - off]
            end = self._block_start + code_blocks(window)[0][1]
        if end > self._W:
            self._send_verbatim(end, events)
        if end < complete:
            self._mode = _NORMAL
            self._ls = end
            self._line_state = _UNDECIDED
            self._reset_inline(end)
            return True
        return False

    # ------------------------------------------------------------------ inline layer

    def _reset_inline(self, pos: int) -> None:
        self._p = pos
        self._stack: list[list[Any]] = []  # [position of "[", holds a link, holds a non-image link]
        self._ticks: int | None = None
        # (]-pos, opener, holds a link, escaped, holds a non-image link)
        self._dest: tuple[int, int | None, bool, bool, bool] | None = None
        self._cite_wait: tuple[int, int | None, bool, bool] | None = None  # _dest waiting for ")"
        self._pad: int | None = None
        self._neutral_from = pos
        self._safe = pos
        self._dest_tried = -1

    def _neutral(self) -> bool:
        return not self._stack and self._ticks is None and self._dest is None and self._pad is None

    def _note_safe(self, q: int) -> None:
        """The state stops being neutral at ``q``: remember the last cut before it."""
        hi = min(q, self._cap())
        k = _last_ws(self._buf, max(self._neutral_from, self._W, self._B) - self._B, hi - self._B)
        if k >= 0:
            self._safe = max(self._safe, k + 1 + self._B)

    def _safe_cut(self) -> int:
        if self._neutral():
            self._note_safe(self._p)
        return max(self._safe, self._W)

    def _para_end_reset(self, para_end: int) -> None:
        """A blank line ends the paragraph at ``para_end``."""
        was = self._neutral()
        pad = self._stack[-1][0] if self._stack else self._pad
        self._stack = []
        self._ticks = None
        self._pad = pad
        if not was and self._neutral():
            self._neutral_from = para_end

    def _scan(self, limit: int) -> None:
        """Run the inline layer from ``_p`` up to ``limit`` (absolute), stopping where a
        decision needs text that has not arrived."""
        buf, off = self._buf, self._B
        L = limit - off
        i = self._p - off
        while True:
            if self._pad is not None:
                m = _PAD_SKIP.match(buf, max(i, self._pad + 1 - off), L)
                j = m.end()
                if j < L and (buf[j] != "]" or j + 1 < L):
                    self._pad = None
                    if self._neutral():
                        self._neutral_from = j + 1 + off
            if self._dest is not None:
                r = self._resolve_dest(limit)
                if r is None:
                    break
                i = r - off
                if self._neutral():
                    self._neutral_from = r
                continue
            m = (_TICKS_INTERESTING if self._ticks is not None else _INTERESTING).search(buf, i, L)
            if m is None:
                i = L
                break
            i = m.start()
            c = buf[i]
            was = self._neutral()
            if c == "\n" or c == "\r":
                j = i + 1
                while j < L and buf[j] in " \t":
                    j += 1
                if j >= L:
                    break  # a blank line may follow: wait
                bl = _BLANK_LINE.match(buf, i, L)
                if bl is not None:
                    self._para_end_reset(i + 1 + off)
                i += 1
                continue
            if c == "`":
                j = i
                while j < L and buf[j] == "`":
                    j += 1
                if j >= L:
                    break  # the run may go on
                run = j - i
                if self._ticks is None:
                    if was:
                        self._note_safe(i + off)
                    self._ticks = run
                elif run == self._ticks:
                    self._ticks = None
                    if self._neutral():
                        self._neutral_from = j + off
                i = j
                continue
            if c == "\\":
                if i + 1 >= L:
                    break
                nxt = buf[i + 1]
                if nxt not in _PUNCT:
                    i += 1
                    continue
                if nxt == "]":
                    if i + 2 >= L:
                        break
                    if buf[i + 2] == "(":
                        if was:
                            self._note_safe(i + off)
                        self._dest = (i + 1 + off, None, False, True, False)
                        self._p = i + off
                        continue
                i += 2
                continue
            if c == "[":
                if was:
                    self._note_safe(i + off)
                self._stack.append([i + off, False, False])
                i += 1
                continue
            # "]"
            if i + 1 >= L:
                break
            entry = self._stack.pop() if self._stack else None
            inner = bool(entry[1]) if entry else False
            deact = bool(entry[2]) if entry else False
            if buf[i + 1] == "(":
                if entry is None and was:
                    self._note_safe(i + off)
                self._dest = (i + off, entry[0] if entry else None, inner, False, deact)
                self._dest_tried = -1
                continue
            if self._stack and inner:
                self._stack[-1][1] = True
                self._stack[-1][2] = self._stack[-1][2] or deact
            i += 1
            if not was and self._neutral():
                self._neutral_from = i + off
        self._p = i + off

    def _scheme_at(self, k: int, L: int) -> tuple[bool, int] | None:
        """Mirror of ``_citation_dest``'s test on relative ``k``: (is a citation scheme,
        where it starts), or None when the text so far cannot tell."""
        buf = self._buf
        j, seen = k, False
        while j < L and buf[j] in " \t\r\n":
            if buf[j] in "\r\n":
                if seen:
                    break
                seen = True
                if buf[j] == "\r":
                    if j + 1 >= L:
                        return None
                    if buf[j + 1] == "\n":
                        j += 1
            j += 1
        if j >= L:
            return None
        if buf[j] == "<":
            j += 1
            while j < L and buf[j] in " \t":
                j += 1
            if j >= L:
                return None
        if _SCHEME_RE.match(buf, j, L):
            return True, j
        head = buf[j:j + 17].lower()
        if j + len(head) >= L and any(w.startswith(head) for w in _SCHEME_WORDS):
            return None
        return False, j

    def _resolve_dest(self, limit: int) -> int | None:
        """Settle the pending destination: the absolute position to go on from, or None."""
        assert self._dest is not None
        self._cite_wait = None
        bracket, opener, inner, escaped, deact = self._dest
        buf, off = self._buf, self._B
        L = limit - off
        b = bracket - off
        sch = self._scheme_at(b + 2, L)
        if sch is None:
            return None
        is_cite, k = sch
        if is_cite:
            end = self._cite_close(k, L)
            if end is None:
                # only a ")" or a line end can settle it: feed() may skip other text
                self._cite_wait = self._dest
                return None
            self._dest = None
            if self._stack:
                self._stack[-1][1] = self._stack[-1][2] = True
            return end + off
        if escaped or opener is None or deact:
            # no link: a "[" holding a link other than an image cannot open one
            self._dest = None
            if self._stack and inner and not escaped:
                self._stack[-1][1] = True
                self._stack[-1][2] = self._stack[-1][2] or deact
            return bracket + 1
        # an ordinary link? settled when its ")" is found, or at the paragraph end
        if self._dest_tried >= 0 and ")" not in buf[self._dest_tried - off:L] and \
                _BLANK_LINE.search(buf, max(b, self._dest_tried - off - 4), L) is None and limit == self._n:
            return None
        self._dest_tried = limit
        bl = _BLANK_LINE.search(buf, b, L)
        if bl is not None:
            lim, definite = bl.start() + 1, True
        else:
            lim, definite = L, limit != self._n or self._region_end is not None
        found = _Inline(buf, 0, 0)._markdown_close(b + 2, lim)
        if found is not None:
            self._dest = None
            if self._stack:
                self._stack[-1][1] = True
                if not _is_image(buf, opener - off, 0):  # a link deactivates the "[" before it
                    self._stack[-1][2] = True
            return found[0] + 1 + off
        if definite:
            self._dest = None
            if self._stack and inner:  # a label holding only images, and no link itself
                self._stack[-1][1] = True
            return bracket + 1
        return None

    def _cite_close(self, k: int, L: int) -> int | None:
        """End (relative) of a citation link whose scheme starts at ``k``, or None."""
        buf = self._buf
        a, b = buf.find("\n", k, L), buf.find("\r", k, L)
        ends = [x for x in (a, b) if x >= 0]
        le = min(ends) if ends else -1
        seg = le if le >= 0 else L
        first = buf.find(")", k, seg)
        if first >= 0 and buf.find("(", k, first) < 0:
            return first + 1
        if le < 0:
            if first < 0:
                return None
            depth = 0
            for j in range(k, seg):
                ch = buf[j]
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    if depth == 0:
                        return j + 1
                    depth -= 1
            return None
        return _Inline(buf, 0, 0)._citation_close(k, le)[1]

    # ------------------------------------------------------------------ rendering

    def _render(self, cut: int, events: list[Event], *, hold: bool = True) -> None:
        """Render ``raw[W:cut]`` (settled) with the cite stage and send it; with ``hold``,
        whitespace ending it after a ``]`` is left for the next window."""
        off = self._B
        lo, hi = self._W - off, cut - off
        text = self._buf[:hi]
        tokens = _mark_fence_like(text, _Inline(text, lo, hi).tokens())
        citer = self._citer
        citer.segments = [("raw", self._line_out)]
        citer.emit(tokens)
        segments = citer.segments
        citer.segments = []
        plain, markers, verbatim = _assemble(segments)
        if any(k in ("label_start", "label_end", "open") or (k == "text" and ("`" in v or "~~~" in v))
               for k, v in segments):
            ticks, _, _ = _assemble(segments, escape_ticks=True)
        else:
            ticks = plain  # nothing that escape_ticks would change
        kept = len(plain)
        before = plain[-2:-1]  # a window ends with whitespace: the usual "x " is settled at once
        while hold and (before == "]" or before.isspace()) and kept and plain[kept - 1].isspace():
            kept -= 1  # (no rstrip(): plain holds the whole line)
        if kept < len(plain):
            # "]" + whitespace + "(post:…" escapes the "(" (processor._SPACED_TARGET, whose
            # "\s" is str.isspace): the whitespace goes with what follows (rendering it
            # again is harmless: the numbering state only grows by first appearance)
            if plain[kept - 1:kept] == "]":
                n = len(plain) - kept
                if cut - n <= self._W:
                    return
                cut -= n
                plain = plain[:kept]
        skip = len(self._line_out)
        if plain != ticks:
            # cite() may still escape backticks / keep link brackets for the whole text:
            # only the common prefix is sure; the rest waits for close()
            n = 0
            top = min(len(plain), len(ticks))
            while n < top and plain[n] == ticks[n]:
                n += 1
            plain = plain[:n]
            self._stalled = self._halt = True
        delta = plain[skip:]
        base = self._sent_len
        for start, end, src in markers:
            if end > len(plain):
                break
            if start < skip:
                continue
            n = src.citation
            if n not in self._announced:
                self._announced[n] = src.passage is not None
                events.append(Event("citation", _source_data(src)))
            elif src.passage is not None and not self._announced[n]:
                self._announced[n] = True
                events.append(Event("citation", {**_source_data(src), "update": True}))
            self._markers.append(Marker(base + start - skip, base + end - skip, n, None))
            self._marker_src[n] = src
        for a, b, block in verbatim:
            if a >= skip and b <= len(plain):
                self._verbatim.append((base + a - skip, base + b - skip, block))
        if delta:
            self._push(delta, events)
        if not self._stalled:
            self._W = cut
            self._trim()

    def _send_verbatim(self, end: int, events: list[Event]) -> None:
        """Send ``raw[W:end]`` as it is (inside a fenced code block)."""
        off = self._B
        piece = self._buf[self._W - off:end - off]
        base = self._sent_len
        self._verbatim.append((base, base + len(piece), True))
        self._W = end
        if piece:
            self._push(piece, events, check=False)
        self._trim()

    def _push(self, delta: str, events: list[Event], *, check: bool = True) -> None:
        self._sent.append(delta)
        self._sent_len += len(delta)
        cut = max(delta.rfind("\n"), delta.rfind("\r"))
        self._line_out = delta[cut + 1:] if cut >= 0 else self._line_out + delta
        events.append(Event("delta", {"text": delta}))
        if self._support is not None and check:
            self._stream_support(events)

    def _trim(self) -> None:
        keep = self._W - 1
        if self._mode == _FENCE:
            keep = min(keep, self._block_start)
        elif self._line_state == _UNDECIDED or self._region_end is not None:
            keep = min(keep, self._ls)
        keep = max(keep, self._B)
        if keep - self._B > 64 or keep - self._B > len(self._buf) // 2:
            self._buf = self._buf[keep - self._B:]
            self._B = keep

    # ------------------------------------------------------------------ support (rule 8)

    def _passage_for(self, chunk_id: str | None, n: int | None = None) -> Passage | None:
        src = self._marker_src.get(n) if n is not None else None
        if src is not None and src.passage is not None:
            return src.passage
        for p in self._sources or ():
            if p.chunk.id == chunk_id:
                return p
        if chunk_id and self._resolver is not None:
            return self._resolver.chunk(chunk_id)
        return None

    def _check(self, index: int, start: int, end: int, text: str,
               cited: list[tuple[int, Passage]]) -> list[Event]:
        assert self._support is not None
        out: list[Event] = []
        self._checked.add((start, end))
        for n, passage in cited:
            out.append(Event("support", {"part_index": index, "start": start, "end": end, "citation": n,
                                         "chunk_id": passage.chunk.id, "support": self._support(text, passage)}))
        return out

    def _stream_support(self, events: list[Event]) -> None:
        """Check the parts of the sent text that are complete (all but the last)."""
        sent = "".join(self._sent)
        base = self._part_base
        window = sent[base:]
        markers = [Marker(m.start - base, m.end - base, m.citation, None) for m in self._markers if m.start >= base]
        verbatim = [(a - base, b - base, blk) for a, b, blk in self._verbatim if a >= base]
        bounds = part_bounds(window, markers, verbatim)
        for a, b in bounds[:-1]:
            cited: list[tuple[int, Passage]] = []
            for m in markers:
                if a <= m.start < b:
                    src = self._marker_src.get(m.citation)
                    if src is not None and src.passage is not None and \
                            all(p is not src.passage for _, p in cited):
                        cited.append((m.citation, src.passage))
            if cited:
                events.extend(self._check(self._part_index, base + a, base + b, window[a:b], cited[::-1]))
            self._part_index += 1
            self._part_base = base + b

    def _final_support(self, message: Message) -> list[Event]:
        out: list[Event] = []
        pos = 0
        for i, part in enumerate(message.parts):
            start, end = pos, pos + len(part.text)
            pos = end
            if (start, end) in self._checked:
                continue
            cited: list[tuple[int, Passage]] = []
            for ref in [part.source, *part.sources]:
                if ref is None:
                    continue
                extra = ref.model_extra or {}
                n = extra.get("citation")
                passage = self._passage_for(ref.chunk_id, n)
                if passage is not None:
                    cited.append((n, passage))
            if cited:
                out.extend(self._check(i, start, end, part.text, cited))
        return out


def _source_data(src: Any) -> dict[str, Any]:
    """The ``citation`` event of a numbered source of the streaming citer."""
    data: dict[str, Any] = {"citation": src.citation, "type": src.key[0]}
    if src.key[0] == "post":
        data["source"], data["id"] = src.key[1], src.key[2]
    p = src.passage
    if p is not None:
        data.update(chunk_id=p.chunk.id, resource_id=p.chunk.resource_id, resource_title=p.resource_title,
                    chunk_index=p.chunk.chunk_index, metadata=dict(p.chunk.metadata), text=p.chunk.text)
    elif src.key[0] == "chunk":
        data["chunk_id"] = src.key[1]
    return data


def _ref_data(ref: Any) -> dict[str, Any]:
    """The ``citation`` event of a numbered reference of the final message."""
    data: dict[str, Any] = {"citation": ref.citation, "type": ref.type}
    if ref.type == "post":
        data["source"], data["id"] = ref.source, ref.id
    if ref.chunk_id is not None:
        data.update(chunk_id=ref.chunk_id, resource_id=ref.resource_id, resource_title=ref.resource_title,
                    chunk_index=ref.chunk_index, metadata=dict(ref.metadata or {}), text=ref.text)
    return data


def stream_cite(chunks: Iterable[str], **kwargs: Any) -> Iterator[Event]:
    """Run a :class:`StreamingCiter` over ``chunks``; the last event is ``done`` with
    ``{"message": Message.model_dump(mode="json")}``."""
    citer = StreamingCiter(**kwargs)
    for chunk in chunks:
        yield from citer.feed(chunk)
    events, message = citer.close()
    yield from events
    yield Event("done", {"message": message.model_dump(mode="json")})
