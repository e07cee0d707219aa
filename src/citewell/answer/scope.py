"""The scope check: the one place where an answer may abstain after retrieval, before generation.

A scope check reads the turn's question (and the query retrieval used) with the passages
retrieved for it and returns None (go on and generate) or an :class:`Abstention`: the
answer to give instead, written in plain text and citing nothing (for example "No passage
in the sources covers Acme's 2019 results." when the sources hold other years only).
:class:`~citewell.answer.pipeline.AnswerPipeline` runs the checks of
:data:`SCOPE_CHECKS` in order, right after retrieval; the first abstention wins and no
generator (no model) is called. To add one::

    # citewell/answer/scope.py
    SCOPE_CHECKS: tuple[ScopeCheck, ...] = (my_check,)

where ``my_check(question: str, query: str, passages: Sequence[Passage]) -> Abstention | str | None``
(a ``str`` is the abstention's text). A check must be deterministic and cheap (it runs on
every question) and must not raise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..models import Notice, Passage


@dataclass(frozen=True)
class Abstention:
    """The answer of a turn the sources cannot answer: ``text`` (plain, no links) and an
    optional warning ``{code, message}`` to carry on the message."""

    text: str
    code: str | None = None
    message: str | None = None

    def notice(self) -> Notice | None:
        """The warning to carry, or None."""
        return Notice(code=self.code, message=self.message or self.text) if self.code else None


#: ``check(question, query, passages) -> Abstention | str | None``.
ScopeCheck = Callable[[str, str, Sequence[Passage]], "Abstention | str | None"]

#: The checks every turn runs after retrieval and before generation, in order.
SCOPE_CHECKS: tuple[ScopeCheck, ...] = ()


def scope_abstention(question: str, query: str, passages: Sequence[Passage],
                     checks: Sequence[ScopeCheck] | None = None) -> Abstention | None:
    """The first abstention of ``checks`` (default: :data:`SCOPE_CHECKS` as it is now)
    for this turn, or None to generate."""
    for check in SCOPE_CHECKS if checks is None else checks:
        found = check(question, query, passages)
        if found is None:
            continue
        return found if isinstance(found, Abstention) else Abstention(str(found))
    return None


__all__ = ["SCOPE_CHECKS", "Abstention", "ScopeCheck", "scope_abstention"]
