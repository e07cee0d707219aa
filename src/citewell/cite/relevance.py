"""Relevance: does a cited sentence state something about what the question asks?

Support (:mod:`citewell.cite.support`) says whether the cited passage backs the
sentence; relevance says whether the sentence is about the question at all. A quote can
be faithful and off-topic ("In October 2022, California passed legislation …" for
"What was 3M's revenue in 2030?"). Each (sentence, cited passage) pair gets
``relevance: {verdict: relevant | not_relevant | unchecked, score, reasons[]}`` beside
its ``support``, from three aspects of the question:

- **entity**: the question's names (:attr:`citewell.question.analysis.QuestionAnalysis.names`, weak
  first words left out) and their aliases (linked tickers or company names, when given). Met when the
  sentence, its passage or the passage's resource title mentions one of them
  (:func:`~citewell.question.names.mentions`, case-sensitive: ``block`` is not ``Block``; a
  title by its letters and digits, as ``BESTBUY_2024Q2_10Q`` names ``Best Buy``), or
  the question names none. Reason ``entity_missing:<names>``.
- **period**: the question's years (:func:`citewell.text.quantities.periods`). Met when the
  sentence or its passage names one of them (a table row's column header is in its
  passage), or the question names none. A passage that names no year speaks of the period
  of its document, when the document's title names one (``3M_2022_10K``). A question
  asking part of a fiscal year (a quarter) is also met by the calendar year before: a
  fiscal year is named by the year it ends in, so its first quarters may end in the
  calendar year before (a fiscal 2023 that ends June 30, 2023 has its second quarter end on
  December 31, 2022; SEC Regulation S-X Rule 3-01 and Article 10 date statements by their
  period's end). Reason ``period_missing:<years>``.
- **topic**: the question's topic concepts (:attr:`citewell.question.analysis.QuestionAnalysis.topics`:
  the concepts of its first sentence other than names, numbers and the words numbers and
  periods are written with). Met when the sentence itself has at least one of them
  (expansions count: *capital expenditure* is met by *purchases of property, plant and
  equipment*), or the question has none. Reason ``topic_missing``.

``relevant`` when all three are met; ``not_relevant`` otherwise; ``unchecked`` when the
passage is missing or the question has nothing to check (no name, year or topic
concept). ``score`` is the share of the aspects met (1.0 when unchecked for want of
aspects, 0 without a passage). :func:`apply_relevance` writes it on every reference
occurrence and, as the worst of its occurrences (``not_relevant`` < ``unchecked`` <
``relevant``), on every part that holds a marker; it changes nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..models import Message
from ..text.terms import content_terms
from .offsets import convert_offsets
from ..question.analysis import QuestionAnalysis
from ..question.names import Name, mentions
from ..text.quantities import periods
from .support import markers_by_part, message_sentence

VERDICT_ORDER: dict[str, int] = {"relevant": 0, "unchecked": 1, "not_relevant": 2}
_ALNUM_RE = re.compile(r"[^0-9a-z]+")


@dataclass(frozen=True)
class Relevance:
    """The relevance of one (sentence, passage) pair: ``verdict``, ``score`` in [0, 1]
    and machine-readable ``reasons``."""

    verdict: str
    score: float
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """``{"verdict": str, "score": float, "reasons": [str, ...]}``."""
        return {"verdict": self.verdict, "score": self.score, "reasons": list(self.reasons)}


@dataclass(frozen=True)
class QuestionAspects:
    """What relevance checks of a question: ``names`` (each with its aliases), ``years``
    and ``topics`` (concepts); ``partial``: the question asks part of a year (a quarter,
    a half), whose fiscal year may end in the calendar year after the period's own."""

    names: tuple[tuple[str, ...], ...]
    name_tickers: tuple[bool, ...]
    years: frozenset[int]
    topics: tuple[object, ...]
    partial: bool = False

    @property
    def empty(self) -> bool:
        """Nothing to check."""
        return not (self.names or self.years or self.topics)


def question_aspects(analysis: QuestionAnalysis, aliases: Mapping[str, Iterable[str]] | None = None) -> QuestionAspects:
    """The aspects of the analysed question (module docstring); ``aliases`` maps a name as
    the question writes it to its linked tickers or company names."""
    deciding = analysis.deciding_names
    aliases = aliases or {}
    names = tuple((n.text, *sorted(aliases.get(n.text, ()))) for n in deciding)
    return QuestionAspects(names, tuple(n.ticker for n in deciding), analysis.years, analysis.topics,
                           analysis.periods.partial or bool(analysis.periods.quarters))


def judge_relevance(aspects: QuestionAspects, sentence: str, passage: str | None, *,
                    title: str | None = None) -> Relevance:
    """The relevance of ``sentence`` citing ``passage`` (the chunk's exact text; None or
    blank: ``unchecked``) for a question's ``aspects``; ``title``: the resource's title
    or file name. Deterministic; never raises."""
    if passage is None or not passage.strip():
        return Relevance("unchecked", 0.0, ("no_passage",))
    if aspects.empty:
        return Relevance("unchecked", 1.0, ("nothing_to_check",))
    reasons: list[str] = []
    met = 0
    label = _ALNUM_RE.sub("", (title or "").lower())
    if aspects.names:
        ok = False
        for forms, ticker in zip(aspects.names, aspects.name_tickers):
            for i, form in enumerate(forms):
                name = Name(form, "word" if any(c.islower() for c in form) else "code",
                            ticker=ticker if i == 0 else form.isupper() and len(form) <= 6)
                key = name.key
                if mentions(sentence, name) or mentions(passage, name) or (len(key) >= 2 and key in label):
                    ok = True
                    break
            if ok:
                break
        met += ok
        if not ok:
            reasons.append("entity_missing:" + ",".join(forms[0] for forms in aspects.names))
    else:
        met += 1
    if aspects.years:
        stated = periods(sentence)[0] | periods(passage)[0]
        if not stated and title:  # a filing's text that names no year speaks of the report's own period
            stated = periods(title.replace("_", " "))[0]
        asked = aspects.years | ({y - 1 for y in aspects.years} if aspects.partial else set())
        ok = bool(asked & stated)
        met += ok
        if not ok:
            reasons.append("period_missing:" + ",".join(str(y) for y in sorted(aspects.years)))
    else:
        met += 1
    if aspects.topics:
        terms = content_terms(sentence)
        ok = any(c.matches(terms) for c in aspects.topics)  # type: ignore[attr-defined]
        met += ok
        if not ok:
            reasons.append("topic_missing")
    else:
        met += 1
    score = round(met / 3, 4)
    return Relevance("relevant" if not reasons else "not_relevant", score, tuple(reasons))


def apply_relevance(message: Message, analysis: QuestionAnalysis, *,
                    aliases: Mapping[str, Iterable[str]] | None = None) -> Message:
    """A copy of ``message`` with ``relevance`` on every numbered reference occurrence and
    on every part holding a marker (the worst of its occurrences), for the analysed
    question (module docstring). Offsets are read in the message's ``offset_unit``; nothing else
    changes."""
    unit = message.offset_unit
    msg = convert_offsets(message, "codepoint") if unit != "codepoint" else message.model_copy(deep=True)
    aspects = question_aspects(analysis, aliases)
    numbered = [r for r in msg.references if r.citation is not None]
    judged: dict[tuple[int, int], Relevance] = {}
    cache: dict[tuple[str, int], Relevance] = {}
    for index, ((a, b), inside) in enumerate(markers_by_part(msg)):
        if not inside:
            continue
        sentence = message_sentence(msg.text, a, b, [(x, y) for x, y, _ in inside])
        found: list[Relevance] = []
        for x, y, ref in inside:
            key = (sentence, id(ref))
            if key not in cache:
                title = " ".join(str(t) for t in (ref.resource_title, getattr(ref, "file_name", None)) if t)
                cache[key] = judge_relevance(aspects, sentence, ref.text, title=title or None)
            judged[(x, y)] = cache[key]
            found.append(cache[key])
        worst = max(found, key=lambda r: (VERDICT_ORDER.get(r.verdict, 1), -r.score))
        msg.parts[index].relevance = worst.to_dict()  # type: ignore[attr-defined]
    for ref in numbered:
        for occ in ref.occurrences or []:
            rel = judged.get((occ.start_index, occ.end_index))
            occ.relevance = rel.to_dict() if rel is not None else None
    return msg if unit == "codepoint" else convert_offsets(msg, unit)


__all__ = ["VERDICT_ORDER", "QuestionAspects", "Relevance", "apply_relevance", "judge_relevance",
           "question_aspects"]
