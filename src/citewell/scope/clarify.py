"""Clarification: a question that names no subject, over sources about several.

"How did revenue change?" over the filings of a dozen companies has no one answer: any
answer would be one company's figures chosen by ranking, and would look like the answer.
:func:`clarification` finds such a question and the candidates to ask about:

- the question asks for a measure of a reporting entity: the domain pack read a measure
  in it (for filings: a line item, ratio or statement) or it asks for a figure or a
  calculation;
- it names no subject the scope holds: none of its names (a weak first word included) is
  held by the scope (:attr:`~citewell.scope.check.NameFacts.held`), and it names no
  source by ticker, title or company (:func:`~citewell.question.naming.names_source`);
- the scope holds the documents of two or more reporting entities, told apart by their
  metadata (the first of ``company_names``, else of ``tickers``) or, for a file without
  metadata, by the words of its title before its first year or form name
  (``BESTBUY_2024Q2_10Q`` → ``BESTBUY``).

The answer is then a short question back that lists the candidates (at most
:data:`MAX_CANDIDATES`, then how many more), with a ``CLARIFICATION_NEEDED`` warning ``{code,
message, candidates}``; the user asks again naming one, or filters the question to one
document. A question about one entity's documents (a filter, a folder) is answered as
before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..models import Resource
from ..question.analysis import QuestionAnalysis
from ..question.naming import names_source
from .check import ScopeFacts
from .labelindex import metadata_strings

__all__ = ["CLARIFICATION_NEEDED", "MAX_CANDIDATES", "Clarification", "clarification", "entity_of"]

#: The code of the warning a clarification carries.
CLARIFICATION_NEEDED = "CLARIFICATION_NEEDED"
#: Candidates listed at most.
MAX_CANDIDATES = 8
#: Where a file name's subject ends: a year, a quarter, or an SEC form name.
_TITLE_END_RE = re.compile(r"[_\s-](?:(?:19|20)\d{2}(?:Q[1-4])?|Q[1-4]|10-?[KQ]|8-?K|20-?F|earnings)(?:[_\s.-]|$)", re.IGNORECASE)


@dataclass(frozen=True)
class Clarification:
    """A question back: ``text`` (plain, no citation) and the ``candidates`` it lists."""

    text: str
    candidates: tuple[str, ...]


def entity_of(resource: Resource) -> str | None:
    """The reporting entity a resource is about (module docstring), or None."""
    meta = resource.metadata or {}
    for key in ("company_names", "tickers"):
        found = metadata_strings(meta.get(key))
        if found and found[0].strip():
            return found[0].strip()
    title = resource.title or ""
    end = _TITLE_END_RE.search(title)
    if end is None or end.start() == 0:
        return None
    return " ".join(title[:end.start()].replace("_", " ").split()) or None


def clarification(analysis: QuestionAnalysis, facts: ScopeFacts,
                  filings: Sequence[Resource]) -> Clarification | None:
    """The question back for ``analysis`` (module docstring), or None to answer.
    ``filings``: the resources of the scope that hold the domain's documents."""
    measure = analysis.measure
    if analysis.domain is None or not ((measure is not None and measure.named) or analysis.kind.figure
                                       or analysis.kind.calculation):
        return None
    if any(f.held for f in facts.names):
        return None
    candidates: dict[str, str] = {}
    for resource in filings:
        if names_source(analysis.naming, resource.title or "",
                        metadata_strings((resource.metadata or {}).get("tickers")),
                        metadata_strings((resource.metadata or {}).get("company_names"))):
            return None  # the question names one of them
        entity = entity_of(resource)
        if entity:
            candidates.setdefault(entity.casefold(), entity)
    if len(candidates) < 2:
        return None
    names = sorted(candidates.values(), key=str.casefold)
    if len(names) > MAX_CANDIDATES:
        listed = ", ".join(names[:MAX_CANDIDATES]) + f" and {len(names) - MAX_CANDIDATES} more"
    else:
        listed = ", ".join(names[:-1]) + " or " + names[-1]
    return Clarification(f"Which company do you mean? The sources cover {listed}.", tuple(names))
