"""The scope check: the one place where an answer abstains, after retrieval and before generation.

A scope check reads the turn's question analysis with the passages retrieved for it and
the facts retrieval read about the scope, and returns None (go on and generate) or an
:class:`Abstention`: the
answer to give instead, written in plain text and citing nothing (for example "No passage
in the sources covers Acme's 2019 results." when the sources hold other years only).
:class:`~citewell.answer.pipeline.AnswerPipeline` runs the checks of
:data:`SCOPE_CHECKS` in order, right after retrieval; the first abstention wins and no
generator (no model) is called. To add one::

    # citewell/answer/scope.py
    SCOPE_CHECKS: tuple[ScopeCheck, ...] = (my_check,)

where ``my_check(analysis: QuestionAnalysis, passages: Sequence[Passage], facts: ScopeFacts | None)
-> Abstention | str | None`` (a ``str`` is the abstention's text; ``analysis``: the turn's
:class:`citewell.question.analysis.QuestionAnalysis`; ``facts``: what retrieval read about
the scope, :class:`citewell.scope.check.ScopeFacts`, None when it read nothing). A check
must be deterministic and cheap (it runs on every question) and must not raise.

:func:`not_in_sources` is the first check: :func:`citewell.scope.check.check_scope`
(a subject, period or topic that the scope does not hold, or retrieved passages that
mention none of the question's names) answers "Not in the sources: …" with a
``NOT_IN_SOURCES`` warning ``{code, message, reason, subjects}`` whose ``reason`` names
the rule. :func:`needs_clarification` is the second: a question that names no subject
over the filings of several companies is answered with a question back
(``CLARIFICATION_NEEDED``). The generators never abstain on their own: an extractive answer with nothing to
quote says that no passage answers (:data:`~citewell.generate.extractive.NO_EVIDENCE_TEXT`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..generate.base import ScopeVerdict
from ..models import Notice, Passage
from ..question.analysis import QuestionAnalysis
from ..domains.base import Domain
from ..scope.check import NOT_IN_SOURCES, ScopeFacts, check_scope
from ..scope.clarify import CLARIFICATION_NEEDED, clarification


@dataclass(frozen=True)
class Abstention:
    """The answer of a turn the sources cannot answer: ``text`` (plain, no links) and an
    optional warning ``{code, message, **details}`` to carry on the message."""

    text: str
    code: str | None = None
    message: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def notice(self) -> Notice | None:
        """The warning to carry, or None."""
        return Notice(code=self.code, message=self.message or self.text, **dict(self.details)) if self.code else None


#: ``check(analysis, passages, facts) -> Abstention | str | None``.
ScopeCheck = Callable[[QuestionAnalysis, Sequence[Passage], "ScopeFacts | None"], "Abstention | str | None"]


def not_in_sources(analysis: QuestionAnalysis, passages: Sequence[Passage],
                   facts: ScopeFacts | None) -> Abstention | None:
    """The scope check of :mod:`citewell.scope.check` on the turn's analysis (of its
    query: what the question asks, a follow-up's subject carried): None without facts."""
    if facts is None:
        return None
    found = check_scope(analysis, facts, passages)
    if found is None:
        return None
    return Abstention(found.text, NOT_IN_SOURCES, found.text,
                      {"reason": found.reason, "subjects": list(found.subjects)})


def needs_clarification(analysis: QuestionAnalysis, passages: Sequence[Passage],
                        facts: ScopeFacts | None) -> Abstention | None:
    """A question back when the question names no subject and the scope's filings are about
    several (:func:`citewell.scope.clarify.clarification`): the candidates listed, with a
    ``CLARIFICATION_NEEDED`` warning ``{code, message, candidates}``. None without facts or
    a domain pack."""
    domain = analysis.domain
    if facts is None or not isinstance(domain, Domain):
        return None
    filings = [r for r in facts.resources if domain.applies([r])]
    found = clarification(analysis, facts, filings)
    if found is None:
        return None
    return Abstention(found.text, CLARIFICATION_NEEDED, found.text, {"candidates": list(found.candidates)})


#: The checks every turn runs after retrieval and before generation, in order.
SCOPE_CHECKS: tuple[ScopeCheck, ...] = (not_in_sources, needs_clarification)


def scope_abstention(analysis: QuestionAnalysis, passages: Sequence[Passage],
                     checks: Sequence[ScopeCheck] | None = None, facts: ScopeFacts | None = None) -> Abstention | None:
    """The first abstention of ``checks`` (default: :data:`SCOPE_CHECKS` as it is now)
    for this turn, or None to generate."""
    for check in SCOPE_CHECKS if checks is None else checks:
        found = check(analysis, passages, facts)
        if found is None:
            continue
        return found if isinstance(found, Abstention) else Abstention(str(found))
    return None


#: Most document titles a :class:`~citewell.generate.base.ScopeVerdict` names.
VERDICT_DOCUMENTS = 3


def scope_verdict(analysis: QuestionAnalysis | None, facts: ScopeFacts | None,
                  passages: Sequence[Passage] = ()) -> ScopeVerdict:
    """What the scope check found for a turn it let through (no abstention), for the
    writer: the question's names the scope holds, the years asked that passages in scope
    name, and the titles of the in-scope documents about those names (else of the
    passages); ``checked`` False when there were no facts (the check did not run)."""
    if analysis is None or facts is None:
        return ScopeVerdict(checked=False)
    held = [f for f in facts.names if f.held and not f.name.weak]
    subjects = tuple(dict.fromkeys(f.name.text for f in held))
    years = tuple(sorted(y for y in analysis.years if facts.year_passages.get(y)))
    ids = {rid for f in held for rid in (*f.resources, *f.alias_resources)}
    titles = [r.title or r.file_name or r.id for r in facts.resources if r.id in ids]
    if not titles:
        titles = [p.resource_title or p.file_name or p.chunk.resource_id for p in passages]
    return ScopeVerdict(checked=True, subjects=subjects, years=years,
                        documents=tuple(dict.fromkeys(t for t in titles if t))[:VERDICT_DOCUMENTS])


__all__ = ["SCOPE_CHECKS", "VERDICT_DOCUMENTS", "Abstention", "ScopeCheck", "needs_clarification", "not_in_sources",
           "scope_abstention", "scope_verdict"]
