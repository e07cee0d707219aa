"""The question, read once per turn: :func:`~citewell.question.analysis.analyse` gives the
:class:`~citewell.question.analysis.QuestionAnalysis` every stage reads.

- :mod:`~citewell.question.analysis`: the analysis and how it is built;
- :mod:`~citewell.question.names`: the names a question asks about, and how a text mentions them;
- :mod:`~citewell.question.naming`: whether a question names a source (by ticker, title or company);
- :mod:`~citewell.question.periods`: the periods it asks about;
- :mod:`~citewell.question.kinds`: the kind of answer it wants;
- :mod:`~citewell.question.followup`: what a follow-up carries over from the previous turn.
"""

from .analysis import AnswerKind, FollowUp, QuestionAnalysis, analyse

__all__ = ["AnswerKind", "FollowUp", "QuestionAnalysis", "analyse"]
