"""Domain packs: a field's knowledge behind a small interface (:mod:`.base`).

:data:`DOMAINS` lists the installed packs in the order they are tried;
:func:`active_domain` gives the pack a scope's resources call for (None: the question is
read with no domain knowledge). Today: :mod:`.finance` (financial statements and filings).
"""

from __future__ import annotations

from collections.abc import Sequence

from types import SimpleNamespace

from ..models import Passage, Resource
from .base import Domain, FigureAnswer, PageNeeds, RowQuote

__all__ = ["DOMAINS", "Domain", "FigureAnswer", "PageNeeds", "RowQuote", "active_domain", "domain_of_passages"]


def _installed() -> tuple[Domain, ...]:
    from .finance import FINANCE

    return (FINANCE,)


#: The installed domain packs, in the order :func:`active_domain` tries them.
DOMAINS: tuple[Domain, ...] = _installed()


def active_domain(resources: Sequence[Resource]) -> Domain | None:
    """The first pack of :data:`DOMAINS` that applies to ``resources`` (a scope), or None."""
    for domain in DOMAINS:
        if domain.applies(resources):
            return domain
    return None


def domain_of_passages(passages: Sequence[Passage]) -> Domain | None:
    """The pack that the resources of ``passages`` call for, judged by what a passage
    carries of its resource (title, file name, tickers and company names): for a
    generator handed passages without a question analysis."""
    seen: dict[str, SimpleNamespace] = {}
    for p in passages:
        if p.chunk.resource_id not in seen:
            names = list(p.resource_names)
            seen[p.chunk.resource_id] = SimpleNamespace(
                title=p.resource_title, file_name=p.file_name, metadata={"company_names": names} if names else {})
    return active_domain(list(seen.values()))  # type: ignore[arg-type] - read as resources (labels only)

