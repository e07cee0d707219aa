"""What a finance question asks for: its measure and the part of the entity it asks about.

- :func:`read_measure`: the statement titles, line items and ratios a question names
  (:func:`~citewell.domains.finance.statements.mentions`), as a :class:`Measure`;
- :func:`read_scope`: of which part of the reporting entity a question asks
  (:class:`ReportingScope`): the consolidated entity (the default), an operating segment
  or geographic area the question names (FASB ASC 280, Segment Reporting: "segment",
  "division", "region"), or the amount attributable to the parent's shareholders rather
  than the total that includes noncontrolling interests (FASB ASC 810-10-50-1A: "net
  income attributable to the parent"), or the amount attributable to the noncontrolling
  interests themselves (ASC 810-10-45-20: "noncontrolling interest", formerly "minority
  interest").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .statements import Mention, item_mentions, mentions, statements_named

__all__ = ["NONCONTROLLING_RE", "Measure", "ReportingScope", "read_measure", "read_scope"]


@dataclass(frozen=True)
class Measure:
    """The measure a question names: ``mentions`` (every vocabulary phrase found, in
    order), ``items`` (the line items it names directly or through a ratio), ``ratios``
    (ratio names) and ``statements`` (statement kinds named by title)."""

    mentions: tuple[Mention, ...]
    items: tuple[str, ...]
    ratios: tuple[str, ...]
    statements: frozenset[str]

    @property
    def named(self) -> bool:
        """The question names a statement, line item or ratio."""
        return bool(self.mentions)


@lru_cache(maxsize=4096)
def read_measure(text: str) -> Measure:
    """The :class:`Measure` that ``text`` names (module docstring)."""
    found = mentions(text)
    return Measure(found, tuple(item_mentions(text)), tuple(m.key for m in found if m.kind == "ratio"),
                   frozenset(statements_named(text)))


@dataclass(frozen=True)
class ReportingScope:
    """Of which part of the entity a question asks: ``kind`` ``consolidated`` (the
    default), ``segment`` (``name``: the segment or area as the question writes it, when it
    names one), ``attributable`` (to the parent's shareholders) or ``noncontrolling`` (to
    the noncontrolling interests)."""

    kind: str = "consolidated"
    name: str | None = None


_ATTRIBUTABLE_RE = re.compile(r"\battributable\s+to\b|\b(?:common\s+)?(?:share|stock)holders\b", re.IGNORECASE)
#: Noncontrolling (minority) interests named, in a question or a row label (ASC 810-10-45-20).
NONCONTROLLING_RE = re.compile(r"\bnon-?\s?controlling\b|\bminority\s+interests?\b", re.IGNORECASE)
_INCLUDING_NONCONTROLLING_RE = re.compile(r"\b(?:including|incl\.?|includes|with|and|plus)\s+(?:the\s+)?"
                                          r"(?:non-?\s?controlling|minority)\b", re.IGNORECASE)
_NAMED_SEGMENT_RE = re.compile(r"\b((?:[A-Z][\w&.'-]*\s+(?:(?:and|&)\s+)?){0,3}[A-Z][\w&.'-]*)\s+"
                               r"(?:segment|division|region)s?\b")
_POSSESSIVE_RE = re.compile(r"\S+['\u2019]s?(?=\s|$)")
_SEGMENT_RE = re.compile(r"\b(?:segments?|divisions?|regions?|geograph(?:y|ic|ical)|reportable)\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def read_scope(text: str) -> ReportingScope:
    """The :class:`ReportingScope` of ``text`` (module docstring)."""
    named = _NAMED_SEGMENT_RE.search(text)
    if named:
        # the words after a possessive name the segment ("Amcor's Flexibles segment": Flexibles)
        name = _POSSESSIVE_RE.split(named.group(1))[-1].strip()
        return ReportingScope("segment", name or None)
    if _SEGMENT_RE.search(text):
        return ReportingScope("segment")
    if NONCONTROLLING_RE.search(text) and not _INCLUDING_NONCONTROLLING_RE.search(text):
        # before "attributable to": the minority's share, not the parent's ("including
        # noncontrolling interests" asks the total that includes it: the consolidated figure)
        return ReportingScope("noncontrolling")
    if _ATTRIBUTABLE_RE.search(text):
        return ReportingScope("attributable")
    return ReportingScope()
