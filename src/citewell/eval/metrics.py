"""The evaluation metrics of ``citewell eval``, defined exactly.

Matching
========

A *gold item* is one piece of evidence of a question: a document name plus either a
physical page (1-based, as ``Chunk.metadata["page"]``) or a character span
``[start, end)`` (code points of the resource's extracted text, as
``Chunk.char_start``/``char_end``). Gold items of a question are de-duplicated.

A *location* is where a retrieved passage or a cited reference lies: the names of its
resource (title, file name and file name without its extension), its page (PDF) and
its character range ``[char_start, char_end)``.

A location *matches* a gold item when

- the document is the same: the gold name equals one of the location's names,
  compared case-insensitively (after stripping surrounding whitespace); and
- for a page item: the location's page equals the gold page (same physical page);
- for a span item: the character ranges overlap, ``loc.start < gold.end and
  gold.start < loc.end`` (half-open ranges; touching ranges do not overlap).

Retrieval metrics (labelled "retrieval")
========================================

The retriever's top 20 passages for the question (``Engine.retrieve``, same filters as
the answer), ranked 1..20. Let ``r`` be the rank of the first passage that matches any
gold item (none: ``r = ∞``), ``G`` the gold items and ``found@k`` the gold items matched
by at least one passage of rank ≤ k.

- ``hit@k``    = 1 if ``r ≤ k`` else 0, for k in 5, 10, 20;
- ``recall@k`` = ``|found@k| / |G|``, for k in 5, 10, 20;
- ``mrr``      = ``1 / r`` (0 when no passage of the top 20 matches): the reciprocal
  rank, cut at 20.

Answer metrics (``Engine.ask``, its ``Message``)
=================================================

- ``evidence_hit@5`` = 1 if some numbered reference with ``citation`` 1–5 matches a gold
  item, else 0 (the reference's location is that of its chunk).
- *Citations* are the ``[N]`` markers of the answer: every ``occurrence`` of every
  numbered reference (the same source cited by two sentences is two citations). A
  citation is *correct* when its reference matches a gold item OR its occurrence's
  support verdict (docs/architecture.md rule 8) is ``supported``.
  ``citation_precision`` = ``correct citations / citations``; undefined (``None``)
  when the answer has no citation.
- ``relevant_citation_precision`` = ``citations whose support verdict is supported AND
  whose relevance verdict (:mod:`citewell.cite.relevance`) is relevant / citations``: a
  faithful quote that is not about what the question asks (another company, year or
  topic) does not count; undefined (``None``) when the answer has no citation.
- *Sentences* are the answer's ``parts`` whose text, with its ``[N]`` markers removed,
  contains a letter or a digit. A sentence *carries a supported citation* when a
  marker inside the part's ``[start_index, end_index)`` has the support verdict
  ``supported``. ``citation_recall`` = ``sentences carrying a supported citation /
  sentences``; undefined (``None``) when the answer has no sentence.

- ``figure_in_answer`` = 1 if the answer text contains the gold answer's figure, else 0;
  undefined (``None``) when the question has no gold answer or its gold answer is not a
  figure. Which gold answers are figures, and the number normalisation (separators,
  parentheses as negatives, scale words and letters, currency, percent, rounding to the
  precision shown) are defined in :mod:`citewell.eval.figures`.

Abstention (questions marked ``answerable``)
=============================================

An answer *abstains* when it has no numbered citation ("not in the sources", "no
passage answers"). Over the questions whose file says whether they are answerable:
``abstention_precision`` = ``unanswerable questions abstained / questions abstained``
(undefined without abstentions), ``abstention_recall`` = ``unanswerable questions
abstained / unanswerable questions``, and ``answered_controls`` = ``answerable questions
answered / answerable questions`` (the controls must not abstain).

Aggregation
===========

Overall and per ``question_type``, every metric is the mean of its per-question values
over the questions where it is defined (``n`` says how many); the retrieval and
``evidence_hit@5`` values are defined for every question that has gold evidence. The
JSON output also gives the counts behind each hit rate (``hits``, ``evidence_hits``,
``figure_hits``). Several question sets (``citewell eval A B``) are summarised each on
its own (``sets``) and all together (``overall``/``by_type``), every question counting
once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from ..cite.support import sentence_support
from ..models import Message, Passage

#: The k of the retrieval metrics; the harness retrieves ``max(KS)`` passages.
KS: tuple[int, ...] = (5, 10, 20)
#: References numbered 1..ANSWER_K count for the answer-level evidence hit.
ANSWER_K = 5


def norm_name(name: str) -> str:
    """A document name as compared: surrounding whitespace stripped, casefolded."""
    return name.strip().casefold()


@dataclass(frozen=True)
class GoldItem:
    """One piece of gold evidence: ``document`` plus a ``page`` (1-based) or a ``span``
    ``(start, end)`` of code points; exactly one of the two is set."""

    document: str
    page: int | None = None
    span: tuple[int, int] | None = None

    def key(self) -> tuple[str, int | None, tuple[int, int] | None]:
        """The identity used to de-duplicate gold items (name compared as :func:`norm_name`)."""
        return (norm_name(self.document), self.page, self.span)


@dataclass(frozen=True)
class Location:
    """Where a passage or reference lies: resource ``names`` (already normalised), its
    ``page`` (None when not a PDF) and ``span`` ``(char_start, char_end)``."""

    names: frozenset[str]
    page: int | None = None
    span: tuple[int, int] | None = None


def resource_names(title: str | None, file_name: str | None = None) -> frozenset[str]:
    """The normalised names a document is known by: its title, its file name and the
    file name without its extension."""
    names = {t for t in (title, file_name) if t}
    if file_name:
        names.add(PurePath(file_name).stem)
    return frozenset(norm_name(n) for n in names if n.strip())


def passage_location(passage: Passage) -> Location:
    """The :class:`Location` of a retrieved passage (or of a chunk resolved to one)."""
    chunk = passage.chunk
    page = chunk.metadata.get("page")
    span = (chunk.char_start, chunk.char_end) if chunk.char_end > chunk.char_start else None
    return Location(resource_names(passage.resource_title, passage.file_name),
                    page if isinstance(page, int) else None, span)


def matches(gold: GoldItem, loc: Location) -> bool:
    """True when ``loc`` lies on ``gold``: same document (case-insensitive name) and same
    physical page, or overlapping character ranges for a span item."""
    if norm_name(gold.document) not in loc.names:
        return False
    if gold.page is not None:
        return loc.page == gold.page
    if gold.span is not None and loc.span is not None:
        return loc.span[0] < gold.span[1] and gold.span[0] < loc.span[1]
    return False


def unique_gold(gold: Iterable[GoldItem]) -> list[GoldItem]:
    """Gold items without duplicates (same :meth:`GoldItem.key`), first occurrence kept."""
    seen: dict[tuple[Any, ...], GoldItem] = {}
    for item in gold:
        seen.setdefault(item.key(), item)
    return list(seen.values())


def first_gold_rank(ranked: Sequence[Location], gold: Sequence[GoldItem]) -> int | None:
    """The 1-based rank of the first location matching any gold item, or None."""
    for rank, loc in enumerate(ranked, start=1):
        if any(matches(g, loc) for g in gold):
            return rank
    return None


def retrieval_metrics(ranked: Sequence[Location], gold: Sequence[GoldItem],
                      ks: Sequence[int] = KS) -> dict[str, float]:
    """``hit@k``, ``recall@k`` (each k of ``ks``) and ``mrr`` of one question's ranking
    (best first) against its gold items, as defined in the module docstring."""
    gold = unique_gold(gold)
    rank = first_gold_rank(ranked, gold)
    out: dict[str, float] = {}
    for k in ks:
        out[f"hit@{k}"] = 1.0 if rank is not None and rank <= k else 0.0
    for k in ks:
        found = sum(1 for g in gold if any(matches(g, loc) for loc in ranked[:k]))
        out[f"recall@{k}"] = found / len(gold) if gold else 0.0
    out["mrr"] = 1.0 / rank if rank is not None and rank <= max(ks) else 0.0
    return out


@dataclass
class AnswerScore:
    """Answer-level figures of one message: ``evidence_hit`` (references 1–5 on gold
    evidence), ``citations``/``correct_citations`` and ``sentences``/``supported_sentences``
    (the counts behind precision and recall), ``relevant_citations`` (supported and
    relevant)."""

    evidence_hit: bool
    citations: int = 0
    correct_citations: int = 0
    sentences: int = 0
    supported_sentences: int = 0
    cited: list[dict[str, Any]] = field(default_factory=list)
    relevant_citations: int = 0

    @property
    def relevant_citation_precision(self) -> float | None:
        """``relevant_citations / citations`` (faithful and relevant); None without citations."""
        return self.relevant_citations / self.citations if self.citations else None

    @property
    def citation_precision(self) -> float | None:
        """``correct_citations / citations``; None without citations."""
        return self.correct_citations / self.citations if self.citations else None

    @property
    def citation_recall(self) -> float | None:
        """``supported_sentences / sentences``; None without sentences."""
        return self.supported_sentences / self.sentences if self.sentences else None


def _supported(support: Mapping[str, Any] | None) -> bool:
    return bool(support) and support.get("verdict") == "supported"  # type: ignore[union-attr]


def score_answer(message: Message, gold: Sequence[GoldItem],
                 locate: Mapping[int, Location], answer_k: int = ANSWER_K) -> AnswerScore:
    """Score one answer (offsets in code points) against its gold items.

    ``locate`` maps each reference ``citation`` number to the :class:`Location` of its
    chunk (see :func:`reference_location`); a reference without one matches nothing.
    """
    gold = unique_gold(gold)
    on_gold = {n: any(matches(g, loc) for g in gold) for n, loc in locate.items()}
    hit = any(on_gold.get(n, False) for n in locate if 1 <= n <= answer_k)
    score = AnswerScore(evidence_hit=hit)
    for ref in message.references:
        if ref.citation is None:
            continue
        loc = locate.get(ref.citation)
        score.cited.append({"citation": ref.citation, "document": ref.resource_title,
                            "page": loc.page if loc else None, "gold": on_gold.get(ref.citation, False)})
        for occ in ref.occurrences or []:
            score.citations += 1
            if on_gold.get(ref.citation, False) or _supported(occ.support):
                score.correct_citations += 1
            if _supported(occ.support) and (occ.relevance or {}).get("verdict") == "relevant":
                score.relevant_citations += 1
    score.supported_sentences, score.sentences = sentence_support(message)
    return score


def reference_location(title: str | None, file_name: str | None, metadata: Mapping[str, Any] | None,
                       span: tuple[int, int] | None = None) -> Location:
    """The :class:`Location` of a cited reference: its resource's names, its
    ``metadata["page"]`` and its chunk's character range when known."""
    page = (metadata or {}).get("page")
    return Location(resource_names(title, file_name), page if isinstance(page, int) else None, span)


def mean(values: Iterable[float | None]) -> tuple[float | None, int]:
    """``(mean, n)`` of the values that are not None; ``(None, 0)`` when there are none."""
    kept = [v for v in values if v is not None]
    return (sum(kept) / len(kept) if kept else None), len(kept)


__all__ = ["ANSWER_K", "KS", "AnswerScore", "GoldItem", "Location", "first_gold_rank", "matches", "mean",
           "norm_name", "passage_location", "reference_location", "resource_names", "retrieval_metrics",
           "score_answer", "unique_gold"]
