"""Citations by position or alias: the forms models write when shown numbered passages.

A generator that *declares* it numbers its passages (the prompt listed the retrieved
passages as 1, 2, 3 …, each with its per-turn alias ``S1``, ``S2`` …, see
:func:`citewell.generate.base.alias_for`) may cite them the way models usually do;
:func:`expand_numbered` rewrites those forms into the links of rule 1 before the cite
stage runs, so one grammar serves every generator:

- ``[3]`` ``[S3]`` ``[Source 3]``          → ``[3](chunk:ID3)``
- ``[1, 2]`` ``[S1, S2]`` ``[S1; S2]``     → ``[1](chunk:ID1)[2](chunk:ID2)``
- ``[1-3]`` ``[1–3]`` ``[S1-S3]``          → passages 1, 2 and 3
- ``【1】`` ``【1†source】`` ``【S1】``       → ``[1](chunk:ID1)`` (full-width brackets, OpenAI style)
- ``[label](S2)`` (a link whose destination is an alias) → ``[label](chunk:ID2)``

Aliases compare case-insensitively (``[s2]``). Only prose is rewritten: code spans,
fenced code, link labels and other link destinations, and escaped brackets (``\\[3\\]``)
are left alone. A number or alias outside ``1..len(sources)`` (a model citing a passage it
was never shown), or the position of a source that could not be resolved (``None``), is
not a citation: the text keeps it as plain prose (the cite stage escapes a bracketed
number, rule 5) and an ``unknown_target`` warning names it — alone (``[7]``) or inside a
list or range, where each such number stays as its own bracket of the form's kind
(``[1, 7]`` → ``[1](chunk:ID1)[7]``, ``【1, 7】`` → ``[1](chunk:ID1)【7】``) while the
others become links; ``[n]`` always names the ``n``-th source given. An alias form
(``[S9]``, ``[S1, S9]``) that names no source is removed instead (with the spaces before
it when nothing of it is linked), so nothing that looks like a citation stays. A post
passage, or a post given by ``(source, id)`` alone, is linked as ``post:SOURCE:ID`` so it
shares its number with other links to that post (rule 1).

:class:`NumberedExpander` does the same on a stream and holds back only what later input
could still change: an unfinished marker (an open ``[``/``【`` or a link destination not
yet closed) and, when the text holds code (a backtick or a ``~~~`` run), the paragraph the
code may still change.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from citewell.digits import whole_number
from citewell.models import Passage

#: What a position of the numbered sources names: a passage, a post given by
#: ``(source, id)`` alone (its text unknown), or None for a source that could not be resolved.
SourceAt = Passage | tuple[str, str] | None

from .links import Token, code_blocks, format_link, scan
from .resolver import post_key

_ITEM = r"(?:Source\s*|Passage\s*|S)?\d+"
_LIST = rf"{_ITEM}(?:\s*(?:,|;|[-\u2013]|and\b)\s*{_ITEM})*"
_FORM = re.compile(rf"\[(?P<list>{_LIST})\]|\u3010(?P<wide>{_LIST})(?:\u2020[^\u3011\n]*)?\u3011", re.IGNORECASE)
_ALIAS_DEST = re.compile(r"\s*<?\s*(?:Source\s*|Passage\s*|S)?(\d+)\s*>?\s*", re.IGNORECASE)
_PREFIX = re.compile(r"^(?:Source\s*|Passage\s*|S)", re.IGNORECASE)
#: Longest range a ``[a-b]`` form may span (a guard against ``[1-100000]``).
MAX_RANGE = 50


def _number(item: str) -> tuple[str, int | None]:
    """``(digits, value)`` of one item; ``value`` is None for more than
    :data:`~citewell.digits.MAX_DIGITS` digits (``int()`` refuses 4,301+, and no passage has
    such a number)."""
    digits = _PREFIX.sub("", item.strip())
    return digits, whole_number(digits)


def _numbers(spec: str) -> list[tuple[str, int | None]] | None:
    """The numbers a form cites, as :func:`_number` gives them, in order; None when the form
    is not a citation (a range backwards, too long, or with a bound of too many digits)."""
    out: list[tuple[str, int | None]] = []
    for item in re.split(r"\s*(?:,|;|\band\b)\s*", spec.strip(), flags=re.IGNORECASE):
        bounds = re.split(r"\s*[-\u2013]\s*", item)
        if len(bounds) == 1:
            out.append(_number(bounds[0]))
        elif len(bounds) == 2:
            lo, hi = _number(bounds[0])[1], _number(bounds[1])[1]
            if lo is None or hi is None or hi < lo or hi - lo > MAX_RANGE:
                return None
            out.extend((str(n), n) for n in range(lo, hi + 1))
        else:
            return None
    return out


def _link(label: str, target: Passage | tuple[str, str]) -> str:
    key = target if isinstance(target, tuple) else post_key(target)
    if key is not None:
        return format_link(label, post=key)
    assert isinstance(target, Passage)
    return format_link(label, chunk_id=target.chunk.id)


def _at(sources: Sequence[SourceAt], n: int | None) -> Passage | tuple[str, str] | None:
    """The source at 1-based position ``n``, or None (outside the list, or unresolved)."""
    return sources[n - 1] if n is not None and 1 <= n <= len(sources) else None


def _unknown(label: str, digits: str, n: int | None, count: int) -> dict[str, Any]:
    """The ``unknown_target`` warning of a number outside the sources, or of a source that
    could not be resolved (``citation`` only when it is a number at all: thousands of
    digits are shown shortened)."""
    shown = digits if len(digits) <= 40 else f"{digits[:20]}…({len(digits)} digits)"
    why = (f"but source {shown} could not be resolved" if n is not None and 1 <= n <= count
           else f"but {count} passage(s) were given")
    warning: dict[str, Any] = {"code": "unknown_target", "label": label,
                               "message": f"{label if len(label) <= 60 else shown} cites passage {shown}, {why}"}
    if n is not None:
        warning["citation"] = n
    return warning


def _expand_text(text: str, sources: Sequence[SourceAt], warnings: list[dict[str, Any]]) -> str:
    out: list[str] = []
    pos = 0
    for match in _FORM.finditer(text):
        slashes = len(text[:match.start()]) - len(text[:match.start()].rstrip("\\"))
        if slashes % 2:  # an escaped bracket (an even run of backslashes escapes only itself)
            continue
        spec = match.group("list") or match.group("wide")
        numbers = _numbers(spec)
        if numbers is None:
            continue
        pieces: list[str] = []
        linked = False
        open_, close = ("\u3010", "\u3011") if match.group("wide") is not None else ("[", "]")
        alias = re.search(r"[A-Za-z]", spec) is not None
        for digits, n in numbers:
            target = _at(sources, n)
            if target is not None:
                pieces.append(_link(str(n), target))
                linked = True
            else:  # a number stays as prose, in the form's own brackets; an alias goes
                warnings.append(_unknown(f"[{n if n is not None else digits}]", digits, n, len(sources)))
                if not alias:
                    pieces.append(f"{open_}{digits}{close}")
        before = text[pos:match.start()]
        if not linked and alias:
            # an alias the model made up: no citation, and no marker left that looks like one
            out.append(before.rstrip(" \t"))
        else:
            out.append(before)
            out.append("".join(pieces) if linked else match.group())
        pos = match.end()
    out.append(text[pos:])
    return "".join(out)


def _expand_mdlink(token: Token, sources: Sequence[SourceAt], warnings: list[dict[str, Any]]) -> str:
    """``[label](S2)`` → ``[label](chunk:ID2)``; an alias outside the sources leaves the
    label as plain text (with a warning); any other link stays as written."""
    tail, span = token.tail or "", token.dest_span
    if span is None:
        return token.text
    match = _ALIAS_DEST.fullmatch(tail[span[0]:span[1]])
    if match is None or tail[span[1]:].strip() != ")":
        return token.text
    digits = match.group(1)
    n = whole_number(digits)
    label = token.label or ""
    target = _at(sources, n)
    if target is not None:
        return _link(label or str(n), target)
    warnings.append(_unknown(f"({tail[span[0]:span[1]].strip()})", digits, n, len(sources)))
    return label


def expand_numbered(raw_text: str, sources: Sequence[SourceAt]) -> tuple[str, list[dict[str, Any]]]:
    """Rewrite position and alias citations of ``raw_text`` into rule-1 links.

    ``sources`` are the passages in the order the generator was shown them (``[1]`` and
    ``[S1]`` are ``sources[0]``); an item may also be a post's ``(source, id)`` (linked by
    that pair) or None (a source that could not be resolved: its number is not a
    citation, but the numbers after it keep their positions). Returns ``(text,
    warnings)``; each warning is ``{"code": "unknown_target", "message", "label",
    "citation"}`` for a number or alias outside ``1..len(sources)`` or at a None. Never
    raises.
    """
    warnings: list[dict[str, Any]] = []
    out: list[str] = []
    for token in scan(raw_text):
        if token.kind == "text":
            out.append(_expand_text(token.text, sources, warnings))
        elif token.kind == "mdlink":
            out.append(_expand_mdlink(token, sources, warnings))
        else:
            out.append(token.text)
    return "".join(out), warnings


_CODE_CHARS = re.compile(r"`|~~~")
_BLANK_END = re.compile(r"\n[ \t]*(?:\r?\n|\r)|\r[ \t]*\r")


#: Characters a line may start with while it could still open a fence (container
#: markers: block quotes, list items).
_CONTAINER_CHARS = frozenset(" \t>-*+0123456789.)")


def _prose_cut(text: str, at_line_start: bool) -> int:
    """Length of the longest prefix of ``text`` (code-free, starting at a settled point;
    ``at_line_start``: a line starts there) that later input cannot change: it ends after
    a line break, or after a space or tab on a line that can no longer open a fence, with
    no ``[``/``【`` open and no link destination pending. Labels never span a blank line,
    so a blank line closes whatever is open."""
    depth = 0  # open "[" (a link label holds balanced square brackets only)
    wide = 0  # open "【" (its own pairs: a "】" never closes a "[", as links.scan reads them)
    in_dest = False
    paren = 0
    safe = 0
    line_open = at_line_start  # the line so far holds container markers only
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            line_open = False
            i += 2
            continue
        if ch in "\r\n":
            line_open = True
        elif ch not in _CONTAINER_CHARS:
            line_open = False
        if in_dest:
            if ch == "(":
                paren += 1
            elif ch == ")":
                if paren:
                    paren -= 1
                else:
                    in_dest = False
            elif ch in "\r\n":
                in_dest, paren = False, 0
                depth = wide = 0
            i += 1
            continue
        if ch == "[":
            depth += 1
        elif ch == "\u3010":
            wide += 1
        elif ch == "]":
            depth = max(0, depth - 1)
            if i + 1 < n and text[i + 1] == "(":
                in_dest, paren = True, 0
                i += 2
                continue
        elif ch == "\u3011":
            wide = max(0, wide - 1)
        elif ch in "\r\n" and _BLANK_END.match(text, i):
            depth = wide = 0
        if ch == "\r" and i + 1 == n:  # "\r\n" may be cut in two
            break
        # a space is settled once the next character is known not to start a marker (an
        # alias the model made up is removed with the spaces before it)
        if depth == wide == 0 and (ch in "\r\n" or (ch in " \t" and not line_open and i + 1 < n
                                              and text[i + 1] not in " \t[\u3010")):
            safe = i + 1
        i += 1
    return safe


def _code_cut(text: str, at_line_start: bool) -> int:
    """Settled prefix of ``text`` that holds code: through the last blank line that is
    outside every fenced block and after every block that has closed (an unclosed fence
    runs to the end, so nothing after its start is settled)."""
    shift = 0 if at_line_start else 1
    blocks = [(a - shift, b - shift) for a, b in code_blocks(text if at_line_start else "x" + text)]
    best = 0
    for match in _BLANK_END.finditer(text):
        cut = match.end()
        if all(b <= match.start() or a >= cut for a, b in blocks) and not any(
                a < cut and b >= len(text) for a, b in blocks):
            best = cut
    return best


def _expand_window(text: str, sources: Sequence[SourceAt], at_line_start: bool) -> tuple[str, list[dict[str, Any]]]:
    """:func:`expand_numbered` of a window of a longer text; a window that starts inside a
    line is read as such (its first characters cannot open a fence)."""
    if at_line_start:
        return expand_numbered(text, sources)
    out, warnings = expand_numbered("x" + text, sources)
    return out[1:], warnings


class NumberedExpander:
    """:func:`expand_numbered` for a stream: feed the model's chunks, get rule-1 text.

    ``feed(chunk)`` returns the expansion of the input up to the last point no later
    input can change (see the module docstring: in prose that is the last whitespace with
    no marker or link destination open, so plain prose streams word by word); ``close()``
    returns the rest. The concatenated output equals ``expand_numbered(whole input,
    sources)[0]`` for every split, and :attr:`warnings` then equals its warnings.
    Each call re-reads the held input only.
    """

    def __init__(self, sources: Sequence[SourceAt]) -> None:
        self.sources = list(sources)
        self.warnings: list[dict[str, Any]] = []
        self._held = ""  # input not yet returned (it starts at a settled point)
        self._at_line_start = True  # a line starts where the held input starts

    def _safe_end(self, text: str) -> int:
        """Length of the settled prefix of ``text``."""
        if _CODE_CHARS.search(text):
            return _code_cut(text, self._at_line_start)
        return _prose_cut(text, self._at_line_start)

    def feed(self, chunk: str) -> str:
        """Add ``chunk``; return the expanded text that is now settled (maybe ``""``)."""
        self._held += chunk
        end = self._safe_end(self._held)
        if end == 0:
            return ""
        ready, self._held = self._held[:end], self._held[end:]
        text, warnings = _expand_window(ready, self.sources, self._at_line_start)
        self._at_line_start = ready[-1] in "\r\n"
        self.warnings.extend(warnings)
        return text

    def close(self) -> str:
        """The expansion of what is still held."""
        text, warnings = _expand_window(self._held, self.sources, self._at_line_start)
        self.warnings.extend(warnings)
        self._held = ""
        self._at_line_start = True
        return text
