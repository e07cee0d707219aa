"""Offset units of the citation contract (docs/architecture.md rule 3).

The cite stage computes every offset in Unicode code points (Python ``str`` indices).
Clients may ask for another unit:

- ``codepoint``: Python ``str`` index; ``text[start:end]``;
- ``utf16``: UTF-16 code units, what JavaScript/Java/C# strings index; an astral
  character (emoji, many CJK extension ideographs) counts 2;
- ``utf8``: bytes of the UTF-8 encoding; ``text.encode()[start:end]``.

:class:`OffsetMap` converts between them for one text; :func:`convert_offsets` returns
a copy of a :class:`~citewell.models.Message` whose every offset (references, their
occurrences, parts) is in the requested unit. Conversions go through code points, so
any unit converts to any other, and an offset that falls inside a character (half a
surrogate pair, the middle of a UTF-8 sequence) is rejected rather than rounded.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from typing import Any

from citewell.models import Message

UNITS: tuple[str, ...] = ("codepoint", "utf16", "utf8")

#: Characters wider than one unit: non-ASCII (utf8), astral (utf16).
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_ASTRAL = re.compile(r"[\U00010000-\U0010ffff]")


def check_unit(unit: str) -> str:
    """Return ``unit`` if it is one of :data:`UNITS`; raise ``ValueError`` otherwise."""
    if unit not in UNITS:
        raise ValueError(f"unknown offset unit {unit!r}: expected one of {', '.join(UNITS)}")
    return unit


def _width(ch: str, unit: str) -> int:
    o = ord(ch)
    if unit == "utf16":
        return 2 if o > 0xFFFF else 1
    # utf8; lone surrogates (possible in a Python str) count as their 3-byte surrogatepass form
    return 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4


class OffsetMap:
    """Code-point ↔ UTF-16 ↔ UTF-8 offsets of one text.

    ``to_unit(i, unit)`` maps code-point index ``i`` (``0 <= i <= len(text)``) to
    ``unit``; ``from_unit(j, unit)`` maps back and raises ``ValueError`` when ``j`` is
    out of range or not on a character boundary. Tables are built lazily per unit,
    O(len(text)) once.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        # per unit: (code-point positions of the characters wider than 1 unit, their
        # offsets in the unit, their widths, extra units after each); built lazily
        self._tables: dict[str, tuple[list[int], list[int], list[int], list[int]]] = {}

    def _table(self, unit: str) -> tuple[list[int], list[int], list[int], list[int]]:
        table = self._tables.get(unit)
        if table is None:
            text = self.text
            pos: list[int] = []
            upos: list[int] = []
            widths: list[int] = []
            extras: list[int] = []
            if not text.isascii():
                extra = 0
                for m in (_ASTRAL if unit == "utf16" else _NON_ASCII).finditer(text):
                    i = m.start()
                    w = _width(text[i], unit)
                    pos.append(i)
                    upos.append(i + extra)
                    widths.append(w)
                    extra += w - 1
                    extras.append(extra)
            table = (pos, upos, widths, extras)
            self._tables[unit] = table
        return table

    def length(self, unit: str) -> int:
        """Length of the text in ``unit``."""
        return self.to_unit(len(self.text), unit)

    def to_unit(self, index: int, unit: str) -> int:
        """Map a code-point index to ``unit``."""
        check_unit(unit)
        if not 0 <= index <= len(self.text):
            raise ValueError(f"code-point offset {index} outside 0..{len(self.text)}")
        if unit == "codepoint":
            return index
        pos, _, _, extras = self._table(unit)
        if not pos:
            return index
        k = bisect_left(pos, index)  # wide characters before index
        return index + extras[k - 1] if k else index

    def from_unit(self, index: int, unit: str) -> int:
        """Map an offset in ``unit`` back to a code-point index."""
        check_unit(unit)
        if unit == "codepoint":
            if not 0 <= index <= len(self.text):
                raise ValueError(f"code-point offset {index} outside 0..{len(self.text)}")
            return index
        pos, upos, widths, extras = self._table(unit)
        k = bisect_right(upos, index) - 1  # the last wide character starting at or before index
        if k < 0:
            i = index
        elif index == upos[k]:
            i = pos[k]
        elif index < upos[k] + widths[k]:
            i = -1  # inside that character
        else:
            i = index - extras[k]
        if not 0 <= i <= len(self.text):
            raise ValueError(f"{unit} offset {index} is not on a character boundary of this text")
        return i

    def convert(self, index: int, src: str, dst: str) -> int:
        """Map an offset from unit ``src`` to unit ``dst``."""
        if src == dst:
            check_unit(src)
            return index
        return self.to_unit(self.from_unit(index, src), dst)


def convert_offsets(message: Message, unit: str) -> Message:
    """Return a deep copy of ``message`` with every offset expressed in ``unit``.

    Converts ``start_index``/``end_index`` and ``occurrences`` of each numbered
    reference (from that reference's stated ``offset_unit``, else the message's) and the
    additive ``start_index``/``end_index`` of each part (from the part's
    ``offset_unit``, else the message's). Sets ``offset_unit`` on the message, every
    numbered reference and every part that carries offsets. Entity references (no
    offsets) are left alone. Raises ``ValueError`` for an unknown unit or an offset
    that is not on a character boundary of ``message.text``. The slice rule
    (``text[start:end] == "[N]"`` in the unit) is preserved because the text itself is
    never changed.
    """
    check_unit(unit)
    out = message.model_copy(deep=True)
    omap = OffsetMap(out.text)
    base = check_unit(message.offset_unit)

    for ref in out.references:
        if ref.start_index is None and ref.end_index is None and not ref.occurrences:
            continue
        src = ref.offset_unit or base
        if ref.start_index is not None:
            ref.start_index = omap.convert(ref.start_index, src, unit)
        if ref.end_index is not None:
            ref.end_index = omap.convert(ref.end_index, src, unit)
        for occ in ref.occurrences or []:
            occ.start_index = omap.convert(occ.start_index, src, unit)
            occ.end_index = omap.convert(occ.end_index, src, unit)
        ref.offset_unit = unit  # type: ignore[assignment]

    for part in out.parts:
        extra: dict[str, Any] = part.model_extra or {}
        if "start_index" not in extra and "end_index" not in extra:
            continue
        src = extra.get("offset_unit") or base
        for key in ("start_index", "end_index"):
            if extra.get(key) is not None:
                setattr(part, key, omap.convert(extra[key], src, unit))
        part.offset_unit = unit  # type: ignore[attr-defined]

    out.offset_unit = unit  # type: ignore[assignment]
    return out
