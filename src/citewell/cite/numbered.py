"""Numbered-passage citations: the forms models write when shown ``[1] … [2] …`` passages.

A generator that *declares* it numbers its passages (the prompt listed the retrieved
passages as 1, 2, 3 …) may cite them the way models usually do; :func:`expand_numbered`
rewrites those forms into the links of rule 1 before the cite stage runs, so one grammar
serves every generator:

- ``[3]``                     → ``[3](chunk:ID3)``
- ``[1, 2]`` ``[1,2,4]``      → ``[1](chunk:ID1)[2](chunk:ID2)…``
- ``[1-3]`` ``[1–3]``         → passages 1, 2 and 3
- ``【1】`` ``【1†source】``    → ``[1](chunk:ID1)`` (full-width brackets, OpenAI style)

Only prose is rewritten: code spans, fenced code, link labels and destinations, and
escaped brackets (``\\[3\\]``) are left alone. A number outside ``1..len(sources)`` (a
model citing a passage it was never shown) is not a citation: the text keeps the number
as plain prose (the cite stage escapes it, rule 5) and an ``unknown_target`` warning names
it. A post passage is linked as ``post:SOURCE:ID`` so it shares its number with other
links to that post (rule 1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from citewell.models import Passage

from .links import format_link, scan
from .resolver import post_key

_FORM = re.compile(
    r"\[(?P<list>\d+(?:\s*(?:,|[-\u2013])\s*\d+)*)\]"
    r"|\u3010(?P<wide>\d+(?:\s*(?:,|[-\u2013])\s*\d+)*)(?:\u2020[^\u3011\n]*)?\u3011"
)
#: Longest range a ``[a-b]`` form may span (a guard against ``[1-100000]``).
MAX_RANGE = 50


def _numbers(spec: str) -> list[int] | None:
    out: list[int] = []
    for item in re.split(r"\s*,\s*", spec.strip()):
        bounds = re.split(r"\s*[-\u2013]\s*", item)
        if len(bounds) == 1:
            out.append(int(bounds[0]))
        elif len(bounds) == 2:
            lo, hi = int(bounds[0]), int(bounds[1])
            if hi < lo or hi - lo > MAX_RANGE:
                return None
            out.extend(range(lo, hi + 1))
        else:
            return None
    return out


def _link(n: int, passage: Passage) -> str:
    key = post_key(passage)
    if key is not None:
        return format_link(str(n), post=key)
    return format_link(str(n), chunk_id=passage.chunk.id)


def expand_numbered(raw_text: str, sources: Sequence[Passage]) -> tuple[str, list[dict[str, Any]]]:
    """Rewrite numbered-passage citations of ``raw_text`` into rule-1 links.

    ``sources`` are the passages in the order the generator was shown them (``[1]`` is
    ``sources[0]``). Returns ``(text, warnings)``; each warning is
    ``{"code": "unknown_target", "message", "label", "citation"}`` for a number outside
    ``1..len(sources)``. Never raises.
    """
    warnings: list[dict[str, Any]] = []
    out: list[str] = []
    for token in scan(raw_text):
        if token.kind != "text":
            out.append(token.text)
            continue
        pos = 0
        for match in _FORM.finditer(token.text):
            slashes = len(token.text[:match.start()]) - len(token.text[:match.start()].rstrip("\\"))
            if slashes % 2:  # an escaped bracket (an even run of backslashes escapes only itself)
                continue
            spec = match.group("list") or match.group("wide")
            numbers = _numbers(spec)
            if numbers is None:
                continue
            links: list[str] = []
            for n in numbers:
                if 1 <= n <= len(sources):
                    links.append(_link(n, sources[n - 1]))
                else:
                    warnings.append({"code": "unknown_target", "label": str(n), "citation": n,
                                     "message": f"[{n}] cites passage {n}, but {len(sources)} passage(s) were given"})
            out.append(token.text[pos:match.start()])
            out.append("".join(links) if links else match.group())
            pos = match.end()
        out.append(token.text[pos:])
    return "".join(out), warnings


class NumberedExpander:
    """:func:`expand_numbered` for a stream: feed the model's chunks, get rule-1 text.

    ``feed(chunk)`` returns the expansion of the input up to the last point no later
    input can change — the end of its last complete paragraph, and nothing while the
    input holds a backtick or ``~~~`` (code decides at close) — so the streaming citer
    never sees half a numbered form; ``close()`` returns the rest. The concatenated output equals
    ``expand_numbered(whole input, sources)[0]`` for every split, and :attr:`warnings`
    then equals its warnings. Each call re-reads the held input only.
    """

    def __init__(self, sources: Sequence[Passage]) -> None:
        self.sources = list(sources)
        self.warnings: list[dict[str, Any]] = []
        self._done = ""  # input already expanded and returned
        self._held = ""  # input not yet returned

    def _safe_end(self, text: str) -> int:
        """Length of the settled prefix of ``text``: through its last blank line. No link,
        label, escape or numbered form spans a blank line, so what comes after cannot
        change how the paragraphs before it read; code (a backtick or ``~~~``) can, so
        input holding code waits for :meth:`close`."""
        if "`" in text or "~~~" in text:
            return 0
        last = text.rfind("\n\n")
        return last + 2 if last >= 0 else 0

    def feed(self, chunk: str) -> str:
        """Add ``chunk``; return the expanded text that is now settled (maybe ``""``)."""
        self._held += chunk
        end = self._safe_end(self._held)
        if end == 0:
            return ""
        ready, self._held = self._held[:end], self._held[end:]
        text, warnings = expand_numbered(ready, self.sources)
        self.warnings.extend(warnings)
        self._done += ready
        return text

    def close(self) -> str:
        """The expansion of what is still held."""
        text, warnings = expand_numbered(self._held, self.sources)
        self.warnings.extend(warnings)
        self._done += self._held
        self._held = ""
        return text
