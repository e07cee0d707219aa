"""Figure-in-answer: does the answer text state the gold answer's figure?

Gold figure
===========

A question's gold answer (FinanceBench ``answer``, or a generic row's ``answer``) *is a
figure* when its first sentence holds exactly one quantity; that quantity is the gold
figure. Sentences are :func:`citewell.text.sentences.sentence_spans` of each line; a first
sentence that is only ``Yes``/``No`` (``"No. Verizon's debt decreased by $229
million."``) is skipped, since the sentence after it states the figure. Quantities are
read as the support checks read numbers (:func:`citewell.text.quantities.quantities`):
thousands separators, a currency (``$ € £ ¥ ₹``, ``USD`` …), a scale word or letter
(``thousand``/``million``/``billion``/``trillion``, ``mn``/``bn``, ``$2.3B``, ``$1561M``),
percent and percentage points; years, quarters, fiscal-year labels (``FY2023``,
``Q2``), dates and label numbers (``Item 7``, ``10-K``) are not quantities. So
``"$1832.00"``, ``"24.26"``, ``"36%. The answer here assumes …"`` and ``"AMCOR's Adj.
EBITDA was $2,018mn in FY 2023"`` are figures; ``"Effective tax rate in FY2022 was
0.62%, compared to -14.76% in FY2021."`` (two quantities) and ``"Yes, his name is
Richard A. Johnson"`` (none) are not. A question without a gold figure has no
figure-in-answer value (``None``).

Matching
========

The answer text is read with its ``[N]`` markers removed and markdown escapes undone.
The answer *contains* the gold figure ``g`` when one of its quantities ``a``

- has a compatible kind: the same (amount, percent, percentage points), or one is a
  percent and the other a bare amount (no scale, no currency: a table row under a ``%``
  column header); currencies, when both state one, agree;
- has a compatible sign: a negative gold figure (``-$1,561M``, ``(1,561)``) needs a
  negative answer quantity (a ``-`` or parentheses before it, the statements' way of
  writing negatives); a positive one matches either sign, since a figure stated
  positive (``capital expenditure $1,749 million``) is an outflow a cash-flow statement
  shows in parentheses;
- has an equal magnitude under some pair of *readings*. A number written with a scale
  (``$2,018mn``) reads only as that (2,018,000,000). A number written without one reads
  as written and, for an amount of the answer, at each scale the answer declares
  (``(Millions)``, ``(In thousands)`` … quoted with a table row); and, when it has at
  least :data:`MIN_SIGNIFICANT_UNSCALED` significant digits, also at thousand, million
  and billion — for the answer's amounts because a quoted row need not carry its table's
  unit (``13,200`` for ``$13.2 billion``), for a gold currency amount because
  FinanceBench writes figures in millions without saying so (``$303.00`` for ``302,578``
  in a table in thousands); a gold number without a currency (a ratio such as
  ``24.26``) has no unit to guess. Trailing zeros after the decimal point of a gold
  currency amount are formatting (``$1832.00`` is 1,832 to the unit). Two readings are
  equal when they are equal as numbers (``1,832`` = ``1832``), or when the more precise
  one, rounded half-up to the precision of the other, gives the other: the answer's
  number rounded to the gold's precision (``24.2649`` for ``24.26``), or the gold
  rounded to the precision the answer shows if the answer's number has at least
  :data:`MIN_SIGNIFICANT` significant digits (``$34.2 billion`` for ``34,229``
  millions; but ``2%`` does not stand for ``1.9%``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal

from ..cite.verdict import unescape_markdown
from ..text.quantities import Quantity, declared_scales, quantities, rounds_to
from ..text.sentences import sentence_spans

#: Significant digits an answer number needs to count as a rounding of the gold figure.
MIN_SIGNIFICANT = 2
#: Significant digits an unscaled amount needs to be read at a scale nobody wrote.
MIN_SIGNIFICANT_UNSCALED = 3
#: Scales (powers of ten) an unscaled answer amount may be written in: thousand, million, billion.
IMPLIED_SCALES: tuple[int, ...] = (3, 6, 9)
_MARKER_RE = re.compile(r"[ \t]*(?<!\\)\[\d+\]")
_YES_NO_RE = re.compile(r"^\W*(?:yes|no)\W*$", re.IGNORECASE)


@dataclass(frozen=True)
class GoldFigure:
    """The figure of a gold answer: ``quantity`` as parsed, ``negative`` when written
    negative, ``text`` as written in the answer."""

    quantity: Quantity
    negative: bool

    @property
    def text(self) -> str:
        """The figure as the gold answer writes it (``$2,018mn``)."""
        return str(self.quantity.text)


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        out.extend(line[a:b] for a, b in sentence_spans(line))
    return out


def gold_figure(answer: str | None) -> GoldFigure | None:
    """The gold figure of ``answer`` (module docstring, "Gold figure"), or ``None`` when
    the answer is not a figure (no answer, no quantity, or several in its first
    sentence)."""
    if not answer or not answer.strip():
        return None
    sentences = _sentences(answer)
    if sentences and _YES_NO_RE.match(sentences[0]):
        sentences = sentences[1:]
    if not sentences:
        return None
    found = quantities(sentences[0])
    if len(found) != 1:
        return None
    quantity, negative = found[0]
    if quantity.currency is not None and quantity.raw_step < 1:  # "$1832.00": the zeros are formatting
        exponent = quantity.raw.normalize().as_tuple().exponent
        step = max(Decimal(1).scaleb(min(int(exponent), 0)), quantity.raw_step)
        factor = quantity.step / quantity.raw_step
        quantity = replace(quantity, raw_step=step, step=step * factor)
    return GoldFigure(quantity, negative)


def answer_text(text: str) -> str:
    """An answer's text as figures are read from it: ``[N]`` markers (and the blanks
    before them) removed, markdown escapes undone."""
    return unescape_markdown(_MARKER_RE.sub("", text))


def _significant(value: Decimal, step: Decimal) -> int:
    """Significant digits of a number written down to ``step`` (``34.2`` → 3, ``0.01`` → 1)."""
    if value == 0:
        return 1
    return max(1, value.adjusted() - step.adjusted() + 1)


def _kinds_ok(g: Quantity, a: Quantity) -> bool:
    if g.currency and a.currency and g.currency != a.currency:
        return False
    if g.kind == a.kind:
        return True
    bare = {g.kind, a.kind} == {"percent", "amount"}
    amount = g if g.kind == "amount" else a
    return bare and not amount.scaled and amount.currency is None


def _readings(q: Quantity, declared: tuple[int, ...], guess: bool) -> list[tuple[Decimal, Decimal]]:
    """(magnitude, step) readings of ``q``: as written (with its scale), then, for an
    unscaled amount, at the ``declared`` scales and, when ``guess`` and it has enough
    significant digits, at the implied ones."""
    out = [(q.value, q.step)]
    if q.kind != "amount" or q.scaled:
        return out
    scales = declared
    if guess and _significant(q.raw, q.raw_step) >= MIN_SIGNIFICANT_UNSCALED:
        scales = declared + IMPLIED_SCALES
    out.extend((q.raw * Decimal(1).scaleb(e), q.raw_step * Decimal(1).scaleb(e)) for e in dict.fromkeys(scales))
    return out


def _equal(gold: tuple[Decimal, Decimal], ans: tuple[Decimal, Decimal]) -> bool:
    (g, g_step), (a, a_step) = gold, ans
    if g == a:
        return True
    if a_step < g_step:  # the answer is more precise: rounded to the gold's precision
        return rounds_to(a, g, g_step)
    if a_step > g_step and _significant(a, a_step) >= MIN_SIGNIFICANT:  # the answer shows less
        return rounds_to(g, a, a_step)
    return False


def figure_in_text(figure: GoldFigure, text: str) -> bool:
    """Whether ``text`` (an answer's text, see :func:`answer_text`) contains ``figure``
    under the matching rules of the module docstring."""
    plain = answer_text(text)
    declared = tuple(declared_scales(plain))
    g = figure.quantity
    gold = _readings(g, (), guess=g.currency is not None)
    for a, negative in quantities(plain):
        if not _kinds_ok(g, a) or (figure.negative and not negative):
            continue
        if any(_equal(gr, ar) for gr in gold for ar in _readings(a, declared, guess=True)):
            return True
    return False


def figure_in_answer(gold_answer: str | None, text: str) -> bool | None:
    """``None`` when ``gold_answer`` is not a figure (:func:`gold_figure`), else whether
    the answer ``text`` contains it (:func:`figure_in_text`)."""
    figure = gold_figure(gold_answer)
    return None if figure is None else figure_in_text(figure, text)


__all__ = ["IMPLIED_SCALES", "MIN_SIGNIFICANT", "MIN_SIGNIFICANT_UNSCALED", "GoldFigure", "answer_text",
           "figure_in_answer", "figure_in_text", "gold_figure"]
