"""Statement facts: a figure question is answered from the row whose scope (consolidated,
a segment, attributable to shareholders) and period (a year, a quarter) match the question,
stated with its unit; a row of another scope or span is said to be one. Real filings of
../shared/corpus; the table readers on rows written as those filings write them."""

from __future__ import annotations

import pytest

from citewell import Engine
from citewell.domains.finance.facts import label_part, member_items, names_segment, row_scope, same_segment, scope_rank, segment_named
from citewell.domains.finance.measure import ReportingScope, read_scope
from citewell.ingest.pdf_tables import lead_in, page_tables
from citewell.text.numbers import Period, column_periods
from citewell.text.tables import paired_columns, value_cells

from .conftest import lexical_engine

FILINGS = ("AMCOR_2023_10K.pdf", "BOEING_2022_10K.pdf", "VERIZON_2022_10K.pdf", "ULTABEAUTY_2023Q4_EARNINGS.pdf",
           "BESTBUY_2024Q2_10Q.pdf", "PEPSICO_2023_8K_dated-2023-05-05.pdf")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    """An engine (lexical) over six companies' filings."""
    with lexical_engine(tmp_path_factory.mktemp("facts"), *(f"pdf/{name}" for name in FILINGS)) as (eng, _):
        yield eng


def _answer(engine: Engine, question: str, document: str, k: int = 5) -> tuple[str, list[int]]:
    message = engine.ask(question, k=k, sync=False, filters=[f"document_name={document}"])
    pages = [int(r.metadata.get("page") or 0) for r in message.references if r.citation]
    return message.text, pages


# -- consolidated vs segment ---------------------------------------------------------------

def test_the_company_figure_is_the_consolidated_row_not_a_segment(engine) -> None:
    text, pages = _answer(engine, "What were Amcor's net sales in fiscal 2023?", "AMCOR_2023_10K")
    assert "$14,694 (2023)" in text and ", in millions" in text
    assert "3,540" not in text and "11,154" not in text  # the Rigid Packaging and Flexibles segments' rows
    assert 32 in pages


def test_a_segment_asked_is_answered_from_that_segment_and_named(engine) -> None:
    text, pages = _answer(engine, "What were Amcor's Flexibles segment net sales in 2023?", "AMCOR_2023_10K")
    assert "Net sales (Flexibles segment): $11,154 (2023), $11,151 (2022), in millions" in text
    assert 32 in pages


def test_a_part_named_without_the_word_segment_is_read_from_its_rows(engine) -> None:
    text, pages = _answer(engine, "What were Boeing's Commercial Airplanes revenues in 2022?", "BOEING_2022_10K", k=10)
    # a member of the "Revenues:" section of the segment note, named with what it breaks down
    assert text.startswith("Commercial Airplanes (Revenues): $25,867 (2022), $19,493 (2021), $16,162 (2020), in millions")
    assert 62 in pages
    total, _ = _answer(engine, "What were Boeing's total revenues in 2022?", "BOEING_2022_10K")
    assert "66,608 (2022)" in total and "25,867" not in total


def test_a_label_that_names_a_part_before_its_caption_states_that_part() -> None:
    assert label_part("Las Vegas Strip Resorts net revenues") == "Las Vegas Strip Resorts"
    assert label_part("Total Digital Media revenue") == "Digital Media"
    assert label_part("North America Net Sales") == "North America"
    # a sentence-case label's first word, plain modifiers and title-case captions name no part
    for label in ("Product sales", "Total net revenues", "Total Net Revenues", "Net sales", "Cost of sales"):
        assert label_part(label) is None, label
    assert row_scope("Las Vegas Strip Resorts net revenues", "") == ReportingScope("segment", "Las Vegas Strip Resorts")


def test_a_row_whose_label_names_the_segment_asked_answers_for_it() -> None:
    assert names_segment("Total Digital Media revenue", "Digital Media")
    assert not names_segment("Total revenue", "Digital Media") and not names_segment("Total revenue", None)


def test_a_segment_that_is_a_member_of_a_breakdown_is_named_with_its_table(engine) -> None:
    # by its words alone (this engine is lexical) the segment table ranks below the first five
    text, pages = _answer(engine, "What were Verizon Consumer segment operating revenues in 2022?",
                          "VERIZON_2022_10K", k=10)
    assert "Consumer (Consolidated Operating Revenues): $103,506 (2022), $95,300 (2021), in millions" in text
    assert "8,206" not in text  # the change column is no period
    assert 23 in pages
    total, _ = _answer(engine, "What were Verizon's consolidated operating revenues in 2022?", "VERIZON_2022_10K")
    assert "136,835" in total and "103,506" not in total


def test_only_another_scope_in_the_sources_is_said_to_be_another(engine) -> None:
    # the five passages the words find hold the company's revenue only; asked for the
    # Consumer segment, the answer says its rows are the company's rather than passing them off
    text, _ = _answer(engine, "What were Verizon Consumer segment operating revenues in 2022?", "VERIZON_2022_10K")
    assert text.startswith("The passages found give no figure for the Verizon Consumer segment; the rows below are for "
                           "the company as a whole. Consolidated Operating Revenues: $136,835 (2022)")


def test_a_quarter_is_answered_from_the_quarter_columns_of_a_segment_table(engine) -> None:
    text, _ = _answer(engine, "What was Best Buy's International segment revenue in the second quarter of fiscal 2024?",
                      "BESTBUY_2024Q2_10Q")
    assert "Revenue (International segment): $693 (3 months to July 29, 2023), $760 (3 months to July 30, 2022)" in text
    assert "1,359" not in text  # the six-months columns are not the quarter asked


# -- attributable vs total -----------------------------------------------------------------

def test_attributable_to_shareholders_is_not_the_total_net_loss(engine) -> None:
    text, pages = _answer(engine, "What was Boeing's net loss attributable to shareholders in 2022?",
                          "BOEING_2022_10K")
    assert text.startswith("Net loss attributable to Boeing Shareholders: ($4,935) (2022)")
    assert "(5,053)" not in text
    total, _ = _answer(engine, "What was Boeing's net loss in 2022?", "BOEING_2022_10K")
    assert total.startswith("Net loss: (5,053) (2022)") and "4,935" not in total
    assert 55 in pages


def test_a_figure_its_companys_own_filings_do_not_state_is_not_in_the_sources(engine) -> None:
    # PepsiCo's 8-K reports a shareholder vote; Amcor's 10-K names PepsiCo among its peers and
    # states its own sales: PepsiCo's revenue is read from PepsiCo's filings or not at all
    message = engine.ask("What was PepsiCo's net revenue in the first quarter of 2023?", sync=False)
    assert message.text == "Not in the sources: no source about PepsiCo speaks of net revenue."
    [warning] = [w for w in message.warnings if w.code == "NOT_IN_SOURCES"]
    assert warning.model_extra["reason"] == "topic" and not any(r.citation for r in message.references)
    # a question that asks no figure may be answered by another company's text that names PepsiCo
    peers = engine.ask("Which companies are in Amcor's peer group alongside PepsiCo?", sync=False)
    assert not any(w.code == "NOT_IN_SOURCES" for w in peers.warnings)


# -- quarter vs year columns, units -------------------------------------------------------

def test_a_fiscal_year_is_answered_from_the_year_columns_and_a_quarter_from_the_quarter(engine) -> None:
    year, _ = _answer(engine, "What were Ulta Beauty's net sales in fiscal 2022?", "ULTABEAUTY_2023Q4_EARNINGS")
    assert "$10,208,580 (year ended January 28, 2023)" in year and "in thousands" in year
    assert "3,226,773" not in year
    quarter, _ = _answer(engine, "What were Ulta Beauty's net sales in the fourth quarter of fiscal 2022?",
                         "ULTABEAUTY_2023Q4_EARNINGS")
    assert "$3,226,773 (3 months to January 28, 2023)" in quarter and "in thousands" in quarter
    assert "100.0%" not in quarter and "10,208,580" not in quarter  # the share-of-sales column is no period


# -- the readers, on rows as the filings write them ---------------------------------------

def test_comparison_columns_are_no_periods_and_listed_dates_date_each_column() -> None:
    header = ("Consolidated Operating Revenues (dollars in millions) Increase/(Decrease) Years Ended December 31, "
              "2022 2021 2022 vs. 2021")
    assert column_periods(header) == [Period(2022, 12), Period(2021, 12)]
    assert column_periods("13 Weeks Ended January 28, January 29, 2023 2022 (Unaudited) (Unaudited)") == [
        Period(2023, 3, "January 28, 2023"), Period(2022, 3, "January 29, 2022")]
    assert column_periods("December 31, 2019 2018 2017") == [Period(2019), Period(2018), Period(2017)]


def test_value_cells_pair_with_periods_past_change_and_share_columns() -> None:
    years = [Period(2022, 12), Period(2021, 12)]
    change = "Years Ended December 31, 2022 2021 2022 vs. 2021"
    cells = value_cells("Consumer $ 103,506 $ 95,300 $ 8,206 8.6 %", "Consumer")
    assert cells == ["$103,506", "$95,300", "$8,206", "8.6%"]
    assert paired_columns(cells, years, change) == [(years[0], "$103,506"), (years[1], "$95,300")]
    shares = value_cells("Net sales $ 3,226,773 100.0% $ 2,729,388 100.0%", "Net sales")
    assert paired_columns(shares, years, "2023 2022") == [(years[0], "$3,226,773"), (years[1], "$2,729,388")]
    # without a header announcing changes, extra cells cannot be told apart
    assert paired_columns(cells, years, "2022 2021") == []


def test_a_tables_lead_in_titles_it_at_ingest() -> None:
    above = ("Our operating income rate increased, partially offset by an unfavorable SG&A rate.\n"
             "International Segment\n"
             "Selected financial data for the International segment was as follows ($ in millions):\n")
    assert lead_in(above) == ("International Segment Selected financial data for the International segment "
                              "was as follows ($ in millions):")
    assert lead_in("Revenue grew in every region.\n") is None
    table = "Three Months Ended\nJuly 29, 2023 July 30, 2022\nRevenue $ 693 $ 760\n"
    [none, meta] = page_tables([above, table], ["paragraph", "table"])
    assert none is None and meta["title"].startswith("International Segment")


def test_a_segment_name_joined_by_and_is_one_name_and_the_contents_link_is_no_title() -> None:
    # 3M's segments are written "Safety and Industrial Business Segment" under the running
    # "Table of Contents" link of every page
    assert segment_named("Safety and Industrial Business Segment") == "Safety and Industrial"
    assert read_scope("What were 3M's Safety and Industrial segment net sales in 2022?") == ReportingScope(
        "segment", "Safety and Industrial")
    assert lead_in("Table of Contents\nSafety and Industrial Business Segment\n") == (
        "Safety and Industrial Business Segment")


def test_the_scope_of_a_row_and_of_a_question() -> None:
    assert segment_named("Rigid Packaging Segment") == "Rigid Packaging"
    assert segment_named("Segment Results of Operations | Flexibles Segment") == "Flexibles"
    assert segment_named("Reportable Segments") is None
    assert row_scope("Net loss attributable to Boeing Shareholders", "") == ReportingScope("attributable")
    assert row_scope("Less: net loss attributable to noncontrolling interest", "").kind == "noncontrolling"
    assert row_scope("Net sales", "International Segment") == ReportingScope("segment", "International")
    assert member_items("Consumer", "Consolidated Operating Revenues") == (("Revenues",), "Consolidated Operating Revenues")
    assert member_items("Consolidated Operating Revenues", "Consolidated Operating Revenues") == ((), "")
    assert read_scope("What were Amcor's Flexibles segment net sales?") == ReportingScope("segment", "Flexibles")
    assert same_segment("Consumer", "Verizon Consumer") and not same_segment("Business", "Verizon Consumer")
    consolidated, segment = ReportingScope(), ReportingScope("segment", "Consumer")
    assert scope_rank(consolidated, None) < scope_rank(segment, None)
    assert scope_rank(segment, segment) < scope_rank(consolidated, segment)
    assert scope_rank(ReportingScope("attributable"), ReportingScope("attributable")) < scope_rank(
        consolidated, ReportingScope("attributable"))


def test_a_breakdowns_bare_total_states_the_titles_item_for_the_whole() -> None:
    """Boeing's segment table 'Capital Expenditures' ends with 'Total $1,222 …': that row
    is the company's capital expenditures, named with what it totals (a new user's
    finding: the answer gave Commercial Airplanes' $218 and said no company-wide figure)."""
    from citewell.domains.finance.facts import total_items

    assert total_items("Total", "Capital Expenditures") == (("PaymentsToAcquirePropertyPlantAndEquipment",),
                                                            "Capital Expenditures")
    assert total_items("Commercial Airplanes", "Capital Expenditures") == ((), "")
    assert total_items("Total", "") == ((), "")
    assert total_items("Total revenues", "Capital Expenditures") == ((), "")
