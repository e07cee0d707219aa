"""Adversarial cases of statement facts, answer kinds and relevance (issue 27's break
tests): each pins a defect found by attacking the new rules, on a real filing of
../shared/corpus or on rows written as filings write them."""

from __future__ import annotations

import shutil

import pytest

from citewell import Engine
from citewell.domains.finance.facts import scope_rank
from citewell.domains.finance.measure import ReportingScope, read_scope

from .conftest import CORPUS


@pytest.fixture(scope="module")
def amcor(tmp_path_factory: pytest.TempPathFactory):
    """An engine (lexical) over Amcor's fourth-quarter 2023 earnings release and Best Buy's
    second-quarter fiscal 2024 10-Q."""
    root = tmp_path_factory.mktemp("break27")
    docs = root / "docs"
    docs.mkdir()
    for name in ("AMCOR_2023Q4_EARNINGS.pdf", "BESTBUY_2024Q2_10Q.pdf"):
        shutil.copy(CORPUS / "pdf" / name, docs / name)
    with Engine(root / "store.sqlite", mode="lexical") as eng:
        eng.sync(docs)
        yield eng


# -- noncontrolling interests asked ------------------------------------------------------------

def test_a_question_about_noncontrolling_interests_reads_that_scope() -> None:
    assert read_scope("What was net income attributable to non-controlling interests in 2023?") == \
        ReportingScope("noncontrolling")
    assert read_scope("How much net income went to minority interests?") == ReportingScope("noncontrolling")
    assert read_scope("What was net income attributable to shareholders?") == ReportingScope("attributable")
    asked = ReportingScope("noncontrolling")
    assert scope_rank(ReportingScope("noncontrolling"), asked) == 0
    assert scope_rank(ReportingScope("attributable"), asked) > scope_rank(ReportingScope(), asked) > 0


def test_the_noncontrolling_interests_row_answers_them_not_the_parents(amcor) -> None:
    # before: the row "Net income attributable to Amcor plc" (805, 1,048) answered, read as "attributable"
    text = amcor.ask("What was Amcor's net income attributable to non-controlling interests in 2023?",
                     sync=False).text
    assert text.startswith("Net income attributable to non-controlling interests: (10) (2022), (10) (2023)")
    assert "1,048" not in text
    parent = amcor.ask("What was Amcor's net income attributable to shareholders in 2023?", sync=False).text
    assert parent.startswith("Net income attributable to Amcor plc: 805 (2022), 1,048 (2023)")


# -- a half year asked ---------------------------------------------------------------------------

def test_the_span_of_a_half_year_or_of_months_asked() -> None:
    from citewell.domains.finance.rows import HALF_SPAN, PART_SPAN, QUARTER_SPAN, YEAR_SPAN, asked_span
    from citewell.question.periods import question_periods

    def span(question: str) -> int:
        return asked_span(question_periods(question), question)

    assert span("What was net income in the first half of 2023?") == HALF_SPAN
    assert span("What was revenue in H1 fiscal 2024?") == HALF_SPAN
    assert span("What was revenue for the six months ended July 2023?") == 6
    assert span("What was revenue for the nine months ended September 30, 2022?") == 9
    assert span("What was net income year to date 2023?") == PART_SPAN
    assert span("What was net income in the second quarter of 2023?") == QUARTER_SPAN
    assert span("What was net income in 2023?") == YEAR_SPAN


def test_a_quarter_is_not_passed_off_as_a_half_year(amcor) -> None:
    # before: "Net income: 112 (3 months 2022), 184 (3 months 2023)" with no word that these are quarters
    text = amcor.ask("What was Amcor's net income in the first half of 2023?", sync=False).text
    assert text.startswith("The sources give no half-year figure for this; the rows below are for the periods "
                           "they report. Net income: 112 (3 months 2022), 184 (3 months 2023), 815 (2022)")


# -- quarters of other years, rows whose cells do not pair ---------------------------------------

def test_a_dated_quarter_of_the_next_calendar_year_is_no_quarter_of_the_year_asked() -> None:
    from citewell.domains.finance.rows import reports_year_of
    from citewell.text.numbers import Period

    assert not reports_year_of(Period(2022, 3, "July 30, 2022"), 2021)  # fiscal 2023's second quarter
    assert reports_year_of(Period(2022, 3, "January 29, 2022"), 2021)  # the last quarter of retail fiscal 2021
    assert reports_year_of(Period(2020, 3, "August 1, 2020"), 2021)  # a quarter of a fiscal 2021 ending in 2021
    assert reports_year_of(Period(2022, 3), 2021)  # undated: it may be
    assert reports_year_of(Period(2023, 12, "January 28, 2023"), 2022)
    assert not reports_year_of(Period(2023, 12, "July 29, 2023"), 2022)


def test_a_quarter_two_years_on_is_said_to_be_another_period(amcor) -> None:
    # before: the July 2022 and July 2023 quarters answered "Q2 2021" with no word that 2021 is not there
    text = amcor.ask("What was Best Buy's revenue in Q2 2021?", sync=False).text
    assert text.startswith("The sources give no figure for 2021; the rows below are for the periods they report. "
                           "Revenue (Domestic segment): $8,890 (3 months to July 29, 2023)")


def test_a_row_whose_cells_do_not_pair_never_outranks_a_known_row(amcor) -> None:
    # "Pacific Sales 20 - - 20 21 - - 21" is a count of stores (eight cells under a header of four
    # quarter and half-year columns); it answered Best Buy's revenue before the Domestic segment's row
    text = amcor.ask("What was Best Buy's revenue in 2024?", sync=False).text
    assert "Pacific Sales" not in text
    assert "Revenue (Domestic segment): $8,890 (3 months to July 29, 2023)" in text


# -- a title that names a breakdown, not a segment ----------------------------------------------

def test_a_title_case_breakdown_title_names_no_segment() -> None:
    from citewell.domains.finance.facts import row_scope, segment_named, table_context

    # before: "Net Sales", "About", "Revenue" and "Geographic" were read as segments' names, and the
    # total row of each table was answered as "Total net sales (About segment)"
    assert segment_named("Net Sales By Segment") is None
    assert segment_named("Information About Our Segments") is None
    assert segment_named("Revenue By Reportable Segment") is None
    assert segment_named("Sales by Geographic Region") is None
    assert row_scope("Total net sales", table_context("Information About Our Segments", None)) == ReportingScope()
    assert segment_named("Results for the Flexibles Segment") == "Flexibles"
    assert segment_named("Rigid Packaging Segment ($ in millions)") == "Rigid Packaging"
    assert segment_named("Aerospace And Defense Segment") == "Aerospace And Defense"
    assert segment_named("Selected financial data for the International segment was as follows") == "International"


# -- an earnings release's quarter and full-year columns ----------------------------------------

def test_quarter_and_full_year_columns_of_an_earnings_release_are_told_apart() -> None:
    from citewell.domains.finance.rows import YEAR_SPAN, FoundRow, shown_columns
    from citewell.text.numbers import Period, column_periods
    from citewell.text.tables import is_header_row, paired_columns

    # before: every column was a bare year, so the fourth quarter's 1,020 answered "revenue in 2023" as "(2023)"
    header = "Fourth Quarter 2023 2022 Full Year 2023 2022"
    assert column_periods(header) == [Period(2023, 3), Period(2022, 3), Period(2023, 12), Period(2022, 12)]
    assert column_periods("Q4 2023 Q4 2022 FY 2023 FY 2022") == column_periods(header)
    assert is_header_row("Q4 2023 Q4 2022 FY 2023 FY 2022")
    assert column_periods("Fourth Quarter Ended December 31, 2022 2021") == [Period(2022, 3), Period(2021, 3)]
    assert column_periods("Fiscal Year 2020 2019 2018") == [Period(2020), Period(2019), Period(2018)]
    values = ("1,020", "980", "4,100", "3,900")
    columns = tuple(paired_columns(values, column_periods(header), header))
    row = FoundRow("Revenues", 0, 0, 0, "Revenues", values, header, None, frozenset({2023, 2022}), columns=columns)
    assert shown_columns(row, YEAR_SPAN) == [(Period(2023, 12), "4,100"), (Period(2022, 12), "3,900")]


# -- "And why?" after an abstention ---------------------------------------------------------------

def test_a_follow_up_carries_the_previous_questions_topics() -> None:
    from citewell.question.analysis import analyse

    previous = "What did Cha Zhang say about the price of bananas in 1850?"
    why = analyse("And why?", previous=previous)
    assert why.followup.refers_back and why.kind.reason
    topics = {alt for c in why.topics for alt in c.alternatives}
    assert frozenset({"banana"}) in topics and frozenset({"price"}) in topics
    assert analyse("And why?").topics == ()


def test_and_why_after_an_abstention_abstains_too(tmp_path) -> None:
    # before: "And why?" after the abstention quoted the transcript's sentences with "because"
    # about text detection ("Because let's just think about, you know, you have a ground to text …")
    docs = tmp_path / "docs"
    docs.mkdir()
    name = "twiml-409_deep-learning-ocr_cha-zhang.vtt"
    shutil.copy(CORPUS / "transcripts" / name, docs / name)
    with Engine(tmp_path / "store.sqlite", mode="lexical") as engine:
        engine.sync(docs)
        chat = engine.chat()
        first = engine.ask("What did Cha Zhang say about the price of bananas in 1850?", sync=False, chat_id=chat.id)
        assert first.text.startswith("Not in the sources")
        why = engine.ask("And why?", sync=False, chat_id=chat.id)
        assert why.text.startswith("Not in the sources")
        assert not why.references


# -- a segment named after a span word of its table's title ---------------------------------------

def test_a_segment_named_after_a_span_word_of_the_title_keeps_its_scope() -> None:
    from citewell.domains.finance.facts import row_scope, table_context

    # before: everything from "Fiscal" / "Year" / "at" on was cut from the title, and the segment's
    # rows were read as the company's (consolidated)
    for title, name in (("Fiscal 2023 Flexibles Segment Results ($ in millions)", "Flexibles"),
                        ("Year over year results of the International segment were as follows:", "International"),
                        ("Results at the Americas Segment", "Americas")):
        assert row_scope("Net sales", table_context(title, None)) == ReportingScope("segment", name)
    # the title of a breakdown still states its item, its span words parted off
    assert table_context("Consolidated Operating Revenues Years Ended December 31,", None) == \
        "Consolidated Operating Revenues | December 31,"


def test_including_noncontrolling_interests_asks_the_consolidated_total() -> None:
    """"Net income, including noncontrolling interests" is the total that includes them (the
    consolidated figure), not the noncontrolling interests' share (a README-only user's question)."""
    from citewell.domains.finance.measure import ReportingScope, read_scope

    assert read_scope("What was MGM Resorts' total net income, including noncontrolling interests, in 2022?") == \
        ReportingScope()
    assert read_scope("What was net income attributable to noncontrolling interests in 2022?").kind == "noncontrolling"
