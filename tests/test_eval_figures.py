"""Figure-in-answer (citewell.eval.figures): which gold answers are figures, and when an
answer text contains one, on real FinanceBench answer shapes."""

from __future__ import annotations

import pytest

from citewell.eval.figures import answer_text, figure_in_answer, gold_figure


@pytest.mark.parametrize("gold, figure, negative", [
    ("$1832.00", "$1832.00", False),
    ("24.26", "24.26", False),
    ("36%. The answer here assumes FY2023 refers to the 12 months ended on January 28, 2023", "36%", False),
    ("No. Verizon's debt decreased by $229 million.", "$229 million", False),  # a bare Yes/No is skipped
    ("No, American Water Works had negative working capital of -$1561M in FY 2022.", "$1561M", True),
    ("Yes, there was a decline of ~42% between FY2023 and Q2 of FY 2024.", "42%", False),  # periods are no figures
    ("Effective tax rate in FY2022 was 0.62%, compared to  -14.76% in FY2021.", None, None),  # two figures
    ("Yes, his name is Richard A. Johnson", None, None),
    ("The Real Growth was flat in FY 2023 vs FY 2022.", None, None),
    ("Corporate & Investment Bank. Its net income was $3725 million.", None, None),  # the answer is a name
    ("", None, None),
])
def test_gold_figure(gold: str, figure: str | None, negative: bool | None) -> None:
    """The first sentence (after a bare Yes/No) with exactly one quantity is a figure."""
    found = gold_figure(gold)
    assert (found.text if found else None, found.negative if found else None) == (figure, negative)


@pytest.mark.parametrize("gold, answer, expected", [
    # thousands separators and trailing zeros; a statement row in millions, in parentheses
    ("$1832.00", "Year ended December 31, (Millions) 2022 2021 Purchases of PP&E $ (1,832) $ (1,603) [1].", True),
    ("$1832.00", "Capital expenditure was $1,832 million [1].", True),       # FinanceBench's implicit millions
    ("$1832.00", "Capital expenditure was $1.8 billion [1].", True),         # rounded to what the answer shows
    ("$1832.00", "Capital expenditure was $1,833 million [1].", False),
    ("$1832.00", "Capital expenditure was 1,832 percent [1].", False),       # another kind
    ("$13.2 billion", "Cash proceeds 13,200 [2].", True),                    # a row without its unit
    # FinanceBench's implicit millions against a table in thousands, declared or not
    ("$303.00", "BALANCE SHEETS (In thousands, except share data) [2]. Accounts payable $ 302,578 $ 255,028 [2].",
     True),
    ("$382.00", "Net cash provided by operating activities 381,603 465,699 295,080 [1].", True),
    ("$382.00", "Net cash provided by operating activities 383,603 [1].", False),
    ("24.26", "It was 24,260 [1].", False),                                   # a ratio has no unit to guess
    ("$5 million", "It paid $5 billion [1].", False),                        # both scaled: the scales differ
    ("$20 billion", "It opened 20 stores [1].", False),                      # two digits are no unit-free reading
    ("24.26", "The ratio is 24.2649 [1].", True),                            # the answer rounded to the gold
    ("24.26", "The ratio is 24.3 [1].", True),                               # the gold rounded to the answer
    ("1.9%", "Margin grew 2% [1].", False),                                  # one significant digit: no rounding
    ("1.9%", "Gross margin % 1.9 [1].", True),                               # a bare number under a % header
    ("0.01", "A dividend of $0.01 per share [1].", True),
    ("No, it had negative working capital of -$1561M.", "Working capital $ (1,561) [1].", True),
    ("No, it had negative working capital of -$1561M.", "Working capital $ 1,561 [1].", False),  # sign
    ("93.86", "In 2022 [1] it was 93 [2].", False),                          # markers and years are no figures
    ("Yes, his name is Richard A. Johnson", "Richard A. Johnson [1].", None),
])
def test_figure_in_answer(gold: str, answer: str, expected: bool | None) -> None:
    """Normalised comparison: separators, scale words, parentheses, percent, rounding."""
    assert figure_in_answer(gold, answer) is expected


def test_answer_text_drops_markers_and_escapes() -> None:
    """Markers go with the blank before them; a quoted bracketed number keeps its digits."""
    assert answer_text(r"Revenue was $5 [1][2]. Note \[12\] [3].") == "Revenue was $5. Note [12]."
