"""Pages as a retrieval unit: the passages a question gets come from its best pages.

A filing answers most questions on one page: a statement, a note, a section of the
management's discussion. Ranking chunks alone loses that page to a better-matching
sentence elsewhere (a note that repeats the words of the question, a summary table of
another period), and the chunks of one statement page compete with each other instead of
adding up. :class:`PageRanker` re-ranks a retriever's deep candidate list by page:

1. the candidates (best first, with their retrieval scores) are grouped by page — a PDF
   chunk by ``(resource, page)``; a chunk without a page (transcripts, posts, text) is a
   unit of its own;
2. each page is scored from its chunks and from what the extractor recorded of it
   (:mod:`citewell.ingest.pdf_tables`)::

       page = best + support × Σ(next chunks' scores, halved at each step)
              + statement × [the page is a primary statement the question asks about]
              + items × (share of the question's line items that the page's rows state)
              + periods × (share of the question's years that the page's column headers report)

   where chunk scores are divided by the best candidate's, so ``best`` is at most 1. A
   question's statements and line items are what its domain pack asks of a page
   (:meth:`~citewell.domains.base.Domain.page_needs`; for filings, a statement it names
   or that presents a line item it names, directly or through a ratio: "inventory
   turnover" asks for cost of sales and inventories, so for the statement of income and
   the balance sheet); without a domain pack a page is scored by its chunks and years;
3. the passages returned are the chunks of the pages in page order: each page's best
   chunk first (so the top ``k`` cover ``k`` pages when there are that many), then the
   pages' further chunks, up to ``per_page`` per page, in the same page order.

The weights are in :class:`PageWeights`; they were set on one FinanceBench dev set and
checked on the other (``benchmarks/RESULTS.md``, "Pages as a retrieval unit").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..models import Passage
from ..store.base import ResourceStore
from ..domains.base import Domain, PageNeeds
from ..question.analysis import QuestionAnalysis

__all__ = ["CONTEXT_PAGES", "PAGE_CONTEXT", "PAGE_DEPTH", "PageRanker", "PageWeights", "page_context"]


#: How many of the best fused passages are re-ranked by page (the candidates).
PAGE_DEPTH = 40


@dataclass(frozen=True)
class PageWeights:
    """Weights of the page score (module docstring)."""

    support: float = 0.3
    statement: float = 0.3
    items: float = 0.3
    periods: float = 0.15


@dataclass
class _Page:
    key: tuple[str, int] | str
    passages: list[Passage] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    order: int = 0


def _page_key(passage: Passage) -> tuple[str, int] | str:
    page = passage.chunk.metadata.get("page")
    return (passage.chunk.resource_id, page) if isinstance(page, int) else passage.chunk.id


def _page_years(passage: Passage) -> frozenset[int]:
    """The years the column headers of a passage's table report (recorded at ingest,
    :mod:`citewell.ingest.pdf_tables`)."""
    meta: Mapping = passage.chunk.metadata
    table = meta.get("table") if isinstance(meta.get("table"), Mapping) else {}
    return frozenset(p.get("year") for p in table.get("periods") or () if isinstance(p, Mapping)
                     and isinstance(p.get("year"), int))


class PageRanker:
    """Re-ranks candidate passages by page (module docstring). ``weights``: the page
    score's weights; ``per_page``: most chunks of one page among the passages returned."""

    def __init__(self, weights: PageWeights | None = None, *, per_page: int = 3, lead: int = 1) -> None:
        if per_page < 1 or lead < 1:
            raise ValueError("per_page and lead must be at least 1")
        self.weights = weights or PageWeights()
        self.per_page = per_page
        self.lead = min(lead, per_page)

    def rerank(self, analysis: QuestionAnalysis, candidates: Sequence[Passage], *, k: int,
               domain: Domain | None = None) -> list[Passage]:
        """The top ``k`` passages of ``candidates`` (best first, ``score`` higher is
        better) drawn from the best pages, for the question of ``analysis`` (its years;
        with a domain pack, the kinds of page and the measures it needs:
        :meth:`~citewell.domains.base.Domain.page_needs`); ``rank`` 1..k and ``score``
        the page score, rounded to 9 places. Deterministic: ties keep candidate order."""
        if k <= 0 or not candidates:
            return []
        top = max(max(p.score for p in candidates), 1e-12)
        pages: dict[tuple[str, int] | str, _Page] = {}
        for i, p in enumerate(candidates):
            page = pages.setdefault(_page_key(p), _Page(_page_key(p), order=i))
            page.passages.append(p)
            page.scores.append(max(p.score, 0.0) / top)
        needs = domain.page_needs(analysis) if domain is not None else PageNeeds()
        years = analysis.years
        ranked = sorted(pages.values(), key=lambda pg: (-self._score(pg, needs, years, domain), pg.order))
        # the best page's first ``lead`` chunks, then each page's next chunk in page order
        order: list[tuple[_Page, Passage]] = [(ranked[0], p) for p in ranked[0].passages[:self.lead]]
        for depth in range(self.per_page):
            for page in ranked:
                if depth < len(page.passages) and not (page is ranked[0] and depth < self.lead):
                    order.append((page, page.passages[depth]))
        return [p.model_copy(update={"rank": i, "score": round(self._score(page, needs, years, domain), 9)})
                for i, (page, p) in enumerate(order[:k], start=1)]

    def _score(self, page: _Page, needs: PageNeeds, years: frozenset[int], domain: Domain | None) -> float:
        w = self.weights
        scores = sorted(page.scores, reverse=True)
        score = scores[0] + w.support * sum(s * 0.5 ** i for i, s in enumerate(scores[1:]))
        if not (needs.kinds or needs.items or years):
            return score
        kinds: set[str] = set()
        items: set[str] = set()
        reported: set[int] = set()
        for p in page.passages:
            if domain is not None and (needs.kinds or needs.items):
                kind, its = domain.page_facts(p)
                if kind:
                    kinds.add(kind)
                items |= its
            reported |= _page_years(p)
        if needs.kinds and kinds & needs.kinds:
            score += w.statement
        if needs.items:
            score += w.items * sum(1 for i in needs.items if i in items) / len(needs.items)
        if years:
            score += w.periods * len(years & reported) / len(years)
        return score



#: Pages whose other chunks are offered after the retrieved passages (the best ones), and
#: the most chunks added in all.
CONTEXT_PAGES = 3
PAGE_CONTEXT = 8


def page_context(store: ResourceStore, workspace_id: str, passages: Sequence[Passage], *, pages: int = CONTEXT_PAGES,
                 limit: int = PAGE_CONTEXT) -> list[Passage]:
    """The rest of the best pages: the chunks on the pages of the first ``pages`` distinct
    pages among ``passages`` that are not among them (at most ``limit`` in all, page by
    page in rank order, each page in its own order), ranked after them.

    A statement page is cut into several chunks and a question's line items may sit in
    different ones (revenue at the top of the statement of income, operating income
    below), and a ratio may need two statements; retrieval ranks each page with its
    best-matching chunk, and this offers the generator the rest of those pages too, so an
    answer can quote every row it needs from the pages that state them. Passages without
    a page add nothing.
    """
    if not passages or limit <= 0:
        return []
    have = {p.chunk.id for p in passages}
    seen: set[tuple[str, object]] = set()
    rest: list[Passage] = []
    for passage in passages:
        page = (passage.chunk.resource_id, passage.chunk.metadata.get("page"))
        if page[1] is None or page in seen:
            continue
        seen.add(page)
        if len(seen) > pages:
            break
        for p in store.page_passages(workspace_id, passage.chunk.id):
            if p.chunk.id not in have:
                have.add(p.chunk.id)
                rest.append(p.model_copy(update={"resource_names": passage.resource_names}))
    start = max(p.rank for p in passages) + 1
    return [p.model_copy(update={"rank": start + i}) for i, p in enumerate(rest[:limit])]
