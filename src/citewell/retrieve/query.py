"""Question → search terms: Unicode word tokens, lower-cased, stop words dropped.

The terms are plain words; the store quotes each one before it reaches its query
language, so punctuation, quotes and operators in a question (``3M's``, ``-``, ``:``,
``AND``, ``NOT``, ``NEAR``, ``*``) can never raise.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

#: English function words and question words that carry no topic.
STOP_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having
he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
nor not of off on once only or other our ours ourselves out over own same she should so some such than
that the their theirs them themselves then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours yourself yourselves
s t give tell please based using show shown according describe explain details detail response question
relying much many
""".split())


def question_terms(question: str) -> list[str]:
    """Distinct content terms of ``question`` in order (lower-cased ``\\w+`` tokens).

    Stop words are dropped unless nothing else is left; ``3M's`` gives ``3m``.
    """
    tokens = [t.lower() for t in _WORD.findall(question)]
    terms = [t for t in tokens if t not in STOP_WORDS]
    return list(dict.fromkeys(terms or tokens))
