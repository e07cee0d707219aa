"""What a filing's page shows, and what a finance question asks of a page.

The page ranker (:mod:`citewell.retrieve.pages`) scores a page higher when it is a
primary statement the question asks about and when its rows state the line items the
question names. A question asks about a statement when it names it (``balance sheet``,
``P&L``) or names a line item it presents, directly or through a ratio: "inventory
turnover" asks for cost of sales and inventories, so for the statement of income and the
balance sheet. A question asking why needs no statement: its answer is in the discussion
of the figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from ...models import Passage
from ...question.analysis import QuestionAnalysis
from ...text.tables import row_label
from ..base import PageNeeds
from .statements import (captions_in, items_of_row, measure_items, measures_of_row, statement_of_heading,
                         statements_named, statements_of_items)

__all__ = ["page_facts", "page_needs"]


def page_needs(analysis: QuestionAnalysis) -> PageNeeds:
    """The statements (``kinds``) and line items (``items``) the question of ``analysis``
    asks a page for (module docstring)."""
    measure = analysis.measure
    items = tuple(measure.items) if measure is not None else ()
    if analysis.kind.reason:  # a reason is written in the discussion of the figures, not in the statements
        return PageNeeds(frozenset(), items)
    return PageNeeds(frozenset(statements_named(analysis.query) | statements_of_items(items)), items)


@lru_cache(maxsize=16384)
def _chunk_facts(chunk_id: str, heading: str, rows: tuple[str, ...], prose: str) -> tuple[str | None, frozenset[str]]:
    """``(statement, line items)`` a chunk shows: the statement its page heading titles;
    the items its row labels state by caption, or state through a measure computed from
    them (a row ``Adjusted EBITDA`` states EBITDA's items), or that its running text
    (``prose``: the text of a chunk without rows) names by caption. Cached by chunk id: a
    chunk's text and metadata never change."""
    items = {k for label in rows for k in items_of_row(label)}
    items |= {k for label in rows for name in measures_of_row(label) for k in measure_items(name)}
    if prose:
        items |= set(captions_in(prose))
    return statement_of_heading(heading), frozenset(items)


def page_facts(passage: Passage) -> tuple[str | None, frozenset[str]]:
    """``(statement, line items)`` that ``passage``'s chunk shows, from what the PDF
    extractor recorded of it (its page heading and table rows)."""
    meta: Mapping = passage.chunk.metadata
    table = meta.get("table") if isinstance(meta.get("table"), Mapping) else {}
    text = passage.chunk.text
    rows = tuple(row_label(text[a:b]) for a, b in table.get("rows") or ())
    return _chunk_facts(passage.chunk.id, str(meta.get("page_heading") or ""), rows, "" if rows else text)
