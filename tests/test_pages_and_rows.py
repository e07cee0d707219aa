"""Issue 12 parts 2-4: table structure recorded at ingest, the statement vocabulary, pages
as a retrieval unit, and figure and calculation questions answered with statement rows."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from citewell import Engine
from citewell.cite import apply_support, cite
from citewell.generate import ExtractiveGenerator
from citewell.domains.finance.answer import CALCULATION_TEXT, OTHER_PERIODS_TEXT
from citewell.domains.finance.rows import trailing_values
from citewell.ingest.pdf import extract_pdf
from citewell.models import Chunk, Passage
from citewell.domains.finance import FINANCE
from citewell.question import analyse
from citewell.retrieve.pages import PageRanker
from citewell.domains.finance.statements import caption_share, item_mentions, items_of_row, statement_of_heading, statements_named
from citewell.text.numbers import column_periods
from citewell.text.tables import column_header, is_header_row, row_label, table_metadata

from .conftest import SHARED

ATVI = SHARED / "financebench-dev2" / "pdf" / "ACTIVISIONBLIZZARD_2019_10K.pdf"


# --------------------------------------------------------------------------- text


def test_column_periods_name_each_column() -> None:
    labels = lambda h: [p.label() for p in column_periods(h)]  # noqa: E731
    assert labels("(Millions) 2022 2021 2020") == ["2022", "2021", "2020"]
    assert labels("For the Years Ended December 31, 2019 2018 2017") == ["2019", "2018", "2017"]
    assert labels("At December 31, 2019 At December 31, 2018") == ["December 31, 2019", "December 31, 2018"]
    # a two-line 10-Q header: the column groups stand before all the dates and share them out
    assert labels("Three Months Ended Six Months Ended July 29, 2023 July 30, 2022 July 29, 2023 July 30, 2022") == [
        "3 months to July 29, 2023", "3 months to July 30, 2022", "6 months to July 29, 2023",
        "6 months to July 30, 2022"]
    # retail calendars count weeks: 13 weeks is a quarter, 52 a year
    assert [(p.year, p.months) for p in column_periods("13 Weeks Ended 52 Weeks Ended 2023 2022 2023 2022")] == [
        (2023, 3), (2022, 3), (2023, 12), (2022, 12)]


def test_header_rows_and_row_labels() -> None:
    assert is_header_row("Year Ended December 31, 2015 2016 2017")
    assert is_header_row("At December 31, 2019 At December 31, 2018 Assets Current assets:")
    # a statement title set on the line of its column header
    assert is_header_row("Consolidated Statements of Cash Flows (In Millions) Fiscal Year 2020 2019 2018 Cash Flows")
    assert not is_header_row("Net sales 2,022 2,021")  # values, not years
    assert not is_header_row("(6) During the three months ended March 31, 2019, we identified an error in 2018 and")
    assert row_label("Total net revenues $ 6,489 $ 7,500") == "Total net revenues"
    assert row_label("Loss on extinguishment of debt — 40 12") == "Loss on extinguishment of debt"
    meta = table_metadata("Inventories 2,721 2,667\nTotal current assets 7,875 8,097",
                          "December 28, 2019 December 29, 2018")
    assert meta["rows"] == [[0, 23], [24, 56]]
    assert meta["periods"] == [{"year": 2019, "months": None, "date": "December 28, 2019"},
                               {"year": 2018, "months": None, "date": "December 29, 2018"}]
    assert column_header("Inventories 2,721 2,667", {"table": meta}) == "December 28, 2019 December 29, 2018"


def test_statement_vocabulary() -> None:
    # a ratio names the line items it is computed from; abbreviations name their items
    assert item_mentions("What is the FY2019 inventory turnover ratio?") == ["CostOfRevenue", "InventoryNet"]
    assert item_mentions("FY2018 COGS and capex") == ["CostOfRevenue", "PaymentsToAcquirePropertyPlantAndEquipment"]
    assert statements_named("Base your judgments on the P&L and the statement of financial position") == {
        "income_statement", "balance_sheet"}
    assert statement_of_heading("ACME CORP AND SUBSIDIARIES CONSOLIDATED BALANCE SHEETS (in millions)") == \
        "balance_sheet"
    # a guarantor schedule repeats the captions of a statement for part of the group: not the statement
    assert statement_of_heading("Condensed Consolidating Balance Sheets As of December 28, 2019") is None
    assert statement_of_heading("Notes to Consolidated Financial Statements") is None
    assert items_of_row("Property and equipment, net") == ["PropertyPlantAndEquipmentNet"]
    assert items_of_row("Cash dividends declared") == ["PaymentsOfDividends"]  # not cash: "cash" is an alias
    # a total is all of its item, a part only a part
    assert caption_share("Total net revenues", "Revenues") == 1.0
    assert caption_share("Product sales", "Revenues") == 0.5


def test_pdf_records_page_heading_and_carried_column_header() -> None:
    extraction = extract_pdf(ATVI.read_bytes(), name=ATVI.name)
    page70 = [c for c in extraction.chunks if c.metadata["page"] == 70]
    assert len(page70) == 2
    assert all("CONSOLIDATED STATEMENTS OF OPERATIONS" in c.metadata["page_heading"] for c in page70)
    second = page70[1]
    # the rows below the first chunk keep the column header of the page's table
    assert "Operating income 1,607 1,988 1,309" in second.text
    assert second.metadata["table"]["header"].startswith("For the Years Ended December 31, 2019 2018 2017")
    assert [p["year"] for p in second.metadata["table"]["periods"]] == [2019, 2018, 2017]
    a, b = second.metadata["table"]["rows"][0]
    assert second.text[a:b] == "Game operations and distribution costs 965 1,028 984"
    balance = [c for c in extraction.chunks if c.metadata["page"] == 69]
    assert "CONSOLIDATED BALANCE SHEETS" in balance[0].metadata["page_heading"]


# --------------------------------------------------------------------------- pages


def _passage(name: str, text: str, *, page: int, heading: str = "", text_type: str = "table", score: float = 1.0,
             header: str | None = None, resource: str = "r1", index: int = 0) -> Passage:
    meta: dict = {"source_type": "pdf", "page": page}
    if heading:
        meta["page_heading"] = heading
    if text_type == "table":
        meta["table"] = table_metadata(text, header)
    chunk = Chunk(id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"pages/{name}")), resource_id=resource, chunk_index=index,
                  text=text, text_type=text_type, char_start=0, char_end=len(text), metadata=meta)  # type: ignore[arg-type]
    return Passage(chunk=chunk, resource_title="ACME_2019_10K", resource_kind="pdf", score=score)  # type: ignore[arg-type]


NOTE = _passage("note", "Inventories consist of raw materials and finished goods. Inventories are valued at "
                        "the lower of cost and net realizable value; inventory turnover is monitored.",
                page=80, heading="Notes to Consolidated Financial Statements", text_type="paragraph", score=1.0)
BALANCE = _passage("bs", "December 28, 2019 December 29, 2018\nInventories 2,721 2,667\nTotal current assets 7,875 8,097",
                   page=52, heading="ACME CORP CONSOLIDATED BALANCE SHEETS (in millions)", score=0.8, index=1)
INCOME = _passage("is", "Net sales 24,977 26,268\nCost of products sold 16,830 17,347\nGross profit 8,147 8,921",
                  page=50, heading="ACME CORP CONSOLIDATED STATEMENTS OF INCOME (in millions)", score=0.7,
                  header="December 28, 2019 December 29, 2018", index=2)


def test_the_page_of_the_statement_a_question_needs_comes_first() -> None:
    q = "What is ACME's FY2019 inventory turnover ratio? Use the balance sheet and the P&L."
    needs = FINANCE.page_needs(analyse(q, domain=FINANCE))
    assert needs.kinds == {"balance_sheet", "income_statement"} and analyse(q).years == {2019}
    ranked = PageRanker().rerank(analyse(q, domain=FINANCE), [NOTE, BALANCE, INCOME], k=3, domain=FINANCE)
    # both statements before the note that repeats the question's words
    assert [p.chunk.metadata["page"] for p in ranked] == [52, 50, 80]
    assert [p.rank for p in ranked] == [1, 2, 3]


def test_a_question_asking_why_gets_no_statement_preference() -> None:
    q = "What drove the increase in ACME's inventories in FY2019?"
    assert FINANCE.page_needs(analyse(q, domain=FINANCE)).kinds == frozenset()
    ranked = PageRanker().rerank(analyse(q, domain=FINANCE), [NOTE, INCOME], k=2, domain=FINANCE)
    assert ranked[0].chunk.id == NOTE.chunk.id


def test_each_page_gives_its_best_chunk_before_any_page_gives_a_second() -> None:
    second = _passage("bs2", "Accounts payable 4,003 4,153\nTotal current liabilities 7,875 8,097", page=52,
                      heading="ACME CORP CONSOLIDATED BALANCE SHEETS (in millions)", score=0.9, index=3)
    ranked = PageRanker().rerank(analyse("What was ACME's accounts payable?", domain=FINANCE), [BALANCE, second, NOTE],
                                 k=3, domain=FINANCE)
    assert [p.chunk.metadata["page"] for p in ranked] == [52, 80, 52]


# --------------------------------------------------------------------------- rows


def test_a_ratio_question_is_answered_with_both_years_rows_and_no_abstention() -> None:
    # the rows give no FY2017 column, so the ratio cannot be computed: the rows, and a calculation to do
    q = ("What is ACME's FY2019 inventory turnover ratio? Inventory turnover ratio is defined as: (FY2019 COGS) / "
         "(average inventory between FY2017 and FY2019).")
    passages = [p.model_copy(update={"rank": i + 1}) for i, p in enumerate([BALANCE, INCOME, NOTE])]
    gen = ExtractiveGenerator()
    raw = gen.generate(q, passages)
    assert raw.startswith(CALCULATION_TEXT + " ")
    message = apply_support(cite(raw, sources=passages))
    assert message.text == (
        f"{CALCULATION_TEXT} Cost of products sold: 16,830 (December 28, 2019), 17,347 (December 29, 2018), in millions [1]. "
        "Inventories: 2,721 (December 28, 2019), 2,667 (December 29, 2018), in millions [2].")
    assert [r.metadata["page"] for r in message.references] == [50, 52]
    cited = [p for p in message.parts if p.source is not None]
    # each restated row is supported by its chunk: the values by the row, the dates by the column header
    # (in the chunk's text for the balance sheet, recorded by the extractor for the income statement chunk)
    assert [p.support["verdict"] for p in cited] == ["supported", "supported"]


def test_a_figure_row_is_quoted_with_the_periods_of_its_columns() -> None:
    q = "What was ACME's cost of goods sold in FY2019?"
    gen = ExtractiveGenerator()
    units = gen.select(q, [INCOME.model_copy(update={"rank": 1})])
    assert len(units) == 1 and units[0].restated
    assert units[0].text == "Cost of products sold 16,830 17,347"
    assert units[0].quote == "Cost of products sold: 16,830 (December 28, 2019), 17,347 (December 29, 2018), in millions"
    assert not gen.generate(q, [INCOME]).startswith(CALCULATION_TEXT)  # one figure: no calculation to announce


def test_a_row_whose_values_do_not_pair_with_the_header_is_quoted_with_it() -> None:
    odd = _passage("odd", "Net sales 24,977 26,268 25,076", page=50, header="December 28, 2019 December 29, 2018",
                   heading="ACME CONSOLIDATED STATEMENTS OF INCOME")
    [unit] = ExtractiveGenerator().select("What were ACME's net sales in FY2019?", [odd])
    assert unit.quote == "December 28, 2019 December 29, 2018 \u2026 Net sales 24,977 26,268 25,076"


@pytest.mark.skipif(not ATVI.is_file(), reason="needs ../shared/financebench-dev2")
def test_a_filing_answers_a_ratio_with_the_rows_of_both_statements(tmp_path: Path) -> None:
    q = ("What is the FY2019 fixed asset turnover ratio for Activision Blizzard? Fixed asset turnover ratio is "
         "defined as: FY2019 revenue / (average PP&E between FY2018 and FY2019).")
    with Engine(tmp_path / "s.sqlite", mode="lexical") as engine:
        engine.ingest([ATVI])
        message = engine.ask(q)
    assert message.text.startswith("Computed from the figures below: revenue / average PP&E = 24.26 "
                                   "(6,489 / ((282 + 253) / 2)). ")
    assert "Total net revenues: 6,489 (2019), 7,500 (2018), 7,017 (2017), in millions [1]" in message.text
    assert "Property and equipment, net: 253 (December 31, 2019), 282 (December 31, 2018), in millions [2]" in message.text
    assert [r.metadata["page"] for r in message.references] == [70, 69]
    assert message.parts[0].source is None  # the working
    assert all(p.support["verdict"] == "supported" for p in message.parts if p.source is not None)


# --------------------------------------------------------------------------- calculations


def test_formulas_in_words_are_parsed() -> None:
    from citewell.domains.finance.calc import parse

    tree = parse("FY2019 revenue / (average PP&E between FY2018 and FY2019)")
    assert tree is not None and tree.op == "/"
    assert (tree.left.op, tree.left.key, tree.left.year) == ("item", "Revenues", 2019)
    assert (tree.right.op, tree.right.key, tree.right.years) == ("avg", "PropertyPlantAndEquipmentNet", (2018, 2019))
    dpo = parse("365 * (average accounts payable between FY2016 and FY2017) / (FY2017 COGS + change in inventory "
                "between FY2016 and FY2017)")
    assert dpo is not None and dpo.op == "/" and dpo.right.op == "+" and dpo.right.right.op == "chg"
    assert parse("total current assets less total current liabilities").op == "-"  # type: ignore[union-attr]
    assert parse("revenue / the moon") is None  # an operand naming no line item: nothing computed


def test_a_defined_ratio_is_computed_from_the_rows_it_quotes() -> None:
    q = ("What is ACME's FY2019 inventory turnover ratio? Inventory turnover ratio is defined as: (FY2019 COGS) / "
         "(average inventory between FY2018 and FY2019). Round your answer to two decimal places.")
    passages = [p.model_copy(update={"rank": i + 1}) for i, p in enumerate([BALANCE, INCOME])]
    message = apply_support(cite(ExtractiveGenerator().generate(q, passages), sources=passages))
    # 16,830 / ((2,721 + 2,667) / 2) = 6.2472…
    assert message.text.startswith("Computed from the figures below: COGS / average inventory = 6.25 "
                                   "(16,830 / ((2,667 + 2,721) / 2)). Cost of products sold: 16,830")
    working = message.parts[0]
    assert working.source is None  # the working cites nothing; its inputs are the cited rows after it
    assert [p.support["verdict"] for p in message.parts if p.source is not None] == ["supported", "supported"]


def test_a_change_between_years_and_a_ratio_for_two_years() -> None:
    growth = "What was ACME's net sales growth rate from FY2018 to FY2019, in percent?"
    text = ExtractiveGenerator().generate(growth, [INCOME.model_copy(update={"rank": 1})])
    # (24,977 - 26,268) / 26,268 = -4.91%
    assert text.startswith("Computed from the figures below: change in total revenues / total revenues * 100 = -4.9% "
                           "((24,977 - 26,268) / 26,268 * 100).")
    both = "How did ACME's gross margin change between FY2018 and FY2019?"
    text = ExtractiveGenerator().generate(both, [INCOME.model_copy(update={"rank": 1})])
    assert text.startswith("Computed from the figures below, gross profit / revenue * 100 is 32.6% in 2019 "
                           "(8,147 / 24,977 * 100), 34.0% in 2018 (8,921 / 26,268 * 100).")


def test_an_expense_shown_in_parentheses_counts_by_its_size() -> None:
    cash = _passage("cf", "Year Ended December 31, 2022 2021\nNet cash provided by operating activities 5,591 7,454\n"
                          "Purchases of property, plant and equipment (1,749) (1,603)", page=49,
                    heading="ACME CONSOLIDATED STATEMENT OF CASH FLOWS")
    q = "What was ACME's FY2022 free cash flow?"
    text = ExtractiveGenerator().generate(q, [cash.model_copy(update={"rank": 1})])
    assert text.startswith("Computed from the figures below: net cash provided by operating activities - capital "
                           "expenditures = 3,842 (5,591 - 1,749).")


def test_an_adjusted_measure_is_read_not_computed() -> None:
    release = _passage("rel", "Twelve Months Ended June 30, 2023 2022\nOperating income 1,588 1,337\n"
                              "Depreciation and amortization 571 570\nAdjusted EBITDA 2,018 2,097", page=12,
                       heading="ACME RECONCILIATION OF NON-GAAP MEASURES")
    units = ExtractiveGenerator().select("What was ACME's adjusted EBITDA for FY2023?",
                                         [release.model_copy(update={"rank": 1})])
    assert [u.quote for u in units] == ["Adjusted EBITDA: 2,018 (2023), 2,097 (2022)"]


def _titled(p: Passage, title: str, rank: int) -> Passage:
    return p.model_copy(update={"resource_title": title, "rank": rank})


def test_a_ratio_is_never_computed_from_two_companies_statements() -> None:
    alpha = _titled(_passage("alpha", "(in millions) 2022 2021\nTotal current assets 400 380", page=3,
                             heading="ALPHA CONSOLIDATED BALANCE SHEETS", resource="alpha"), "ALPHA_2022_10K", 1)
    beta = _titled(_passage("beta", "(in millions) 2022 2021\nTotal current assets 2,000 1,900\n"
                                    "Total current liabilities 1,000 950\nTotal liabilities 5,000 4,800", page=4,
                            heading="BETA CONSOLIDATED BALANCE SHEETS", resource="beta"), "BETA_2022_10K", 2)
    gen = ExtractiveGenerator()
    # Alpha states no current liabilities: no ratio of Alpha's assets over Beta's liabilities
    ratio = gen.generate("What is Alpha's FY2022 current ratio?", [alpha, beta])
    assert "0.40" not in ratio and "1,000" not in ratio
    # a figure of the company the question names is never read from another company's filing
    liabilities = gen.generate("What were Alpha's total liabilities in FY2022?", [alpha, beta])
    assert "5,000" not in liabilities
    # the company named that states both: its own rows
    own = gen.generate("What is Beta's FY2022 current ratio?", [alpha, beta])
    assert own.startswith("Computed from the figures below: total current assets / total current liabilities = 2.00 "
                          "(2,000 / 1,000).")


def test_rows_in_thousands_and_in_millions_are_never_combined() -> None:
    income = _passage("inc-m", "(in millions) 2022 2021\nTotal revenue 6,489 5,900", page=1,
                      heading="ZORBLAX CONSOLIDATED STATEMENTS OF OPERATIONS", index=0)
    assets = _passage("bs-k", "(in thousands) 2022 2021\nProperty and equipment, net 253,000 282,000", page=2,
                      heading="ZORBLAX CONSOLIDATED BALANCE SHEETS", index=1)
    passages = [_titled(income, "ZORBLAX_2022_10K", 1), _titled(assets, "ZORBLAX_2022_10K", 2)]
    text = ExtractiveGenerator().generate("What is Zorblax's FY2022 fixed asset turnover ratio?", passages)
    assert not text.startswith("Computed")  # 6,489 / 267,500 = 0.02 would mix millions and thousands
    same = _passage("bs-m", "(in millions) 2022 2021\nProperty and equipment, net 253 282", page=2,
                    heading="ZORBLAX CONSOLIDATED BALANCE SHEETS", index=1)
    text = ExtractiveGenerator().generate("What is Zorblax's FY2022 fixed asset turnover ratio?",
                                          [passages[0], _titled(same, "ZORBLAX_2022_10K", 2)])
    assert text.startswith("Computed from the figures below: revenue / average property and equipment net = 24.26")


def test_a_years_ratio_is_not_computed_from_a_quarters_columns() -> None:
    quarter = _passage("q", "Three Months Ended June 30, 2023 2022\nTotal revenue 1,000 900\nNet loss (150) (90)",
                       page=3, heading="QUIBBO CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS")
    gen = ExtractiveGenerator()
    quarter = _titled(quarter, "QUIBBO_2023_10Q", 1)
    assert not gen.generate("What was Quibbo's FY2023 net margin?", [quarter]).startswith("Computed")
    asked = gen.generate("What was Quibbo's net margin in the second quarter of 2023?", [quarter])
    assert asked.startswith("Computed from the figures below: net income / revenue * 100 = -15.0%")


def test_a_row_quoted_for_a_prose_question_keeps_its_periods() -> None:
    # the header row (title, units and years in one line) cannot stand as one sentence
    statement = _titled(_passage(
        "zorblax-ops", "ZORBLAX INDUSTRIES, INC. CONSOLIDATED STATEMENTS OF OPERATIONS (in millions, except per share "
                       "data) Year Ended December 31, 2022 2021\nTotal revenue 6,489 5,900\nCost of revenue 3,000 2,800\n"
                       "Net income 900 800", page=1, heading="ZORBLAX CONSOLIDATED STATEMENTS OF OPERATIONS"),
        "ZORBLAX_2022_10K", 1)
    units = ExtractiveGenerator().select("Did Zorblax have higher total revenue in FY2022 than in FY2021?", [statement])
    rows = [u.quote for u in units if "6,489" in u.quote]
    assert rows == ["Total revenue: 6,489 (2022), 5,900 (2021)"]
    message = apply_support(cite(ExtractiveGenerator().generate(
        "Did Zorblax have higher total revenue in FY2022 than in FY2021?", [statement]), sources=[statement]))
    assert message.text.startswith("Total revenue: 6,489 (2022), 5,900 (2021) [1]")
    assert message.parts[0].support["verdict"] == "supported"


@pytest.mark.parametrize("label, items", [
    ("Sales and marketing", []),  # an expense whose label starts with a revenue caption
    ("Property, sales-related and other taxes", []),
    ("Assets held for sale", []),
    ("Purchases of property, plant and equipment", ["PaymentsToAcquirePropertyPlantAndEquipment"]),
    ("Revenues from contracts with customers", ["Revenues"]),
    ("Net income attributable to 3M", ["NetIncomeLoss"]),
    ("Net income (loss)", ["NetIncomeLoss"]),
    ("Property and equipment, net", ["PropertyPlantAndEquipmentNet"]),
    ("Cost of sales", ["CostOfRevenue"]),
    ("Product sales", ["Revenues"]),
])
def test_a_row_states_the_item_its_head_noun_names(label: str, items: list[str]) -> None:
    assert items_of_row(label) == items


def test_a_change_between_two_years_is_written_with_one_pair_of_brackets() -> None:
    sales = _titled(_passage("amzn", "Year Ended December 31, 2017 2016\nTotal net sales 177,866 135,987", page=37,
                             heading="AMAZON CONSOLIDATED STATEMENTS OF OPERATIONS"), "AMAZON_2017_10K", 1)
    text = ExtractiveGenerator().generate("What was the change in Amazon's total net sales between 2016 and 2017?",
                                          [sales])
    assert text.startswith("Computed from the figures below: change in total revenues = 41,879 "
                           "(177,866 - 135,987).")


def test_a_caption_with_a_dash_or_figures_of_its_own_states_its_row() -> None:
    # 10-K balance sheets caption "Accounts receivable — net of allowances of $174 and $189":
    # the values are the header's columns, the last cells; a change in receivables on the
    # statement of cash flows is no balance
    balance = _passage("bs-dash", "2022 2021\nCash and cash equivalents $ 3,655 $ 4,564\n"
                                  "Marketable securities \u2014 current 238 201\n"
                                  "Accounts receivable \u2014 net of allowances of $174 and $189 4,532 4,660\n"
                                  "Total current liabilities 9,523 9,035",
                       page=50, heading="ACME CORP CONSOLIDATED BALANCE SHEET (Dollars in millions)", score=0.9)
    flows = _passage("cf-change", "2022 2021 2020\nChanges in assets and liabilities\nAccounts receivable (105) (122) 165",
                     page=52, heading="ACME CORP CONSOLIDATED STATEMENT OF CASH FLOWS", score=1.0, index=1)
    q = "What was ACME's quick ratio in FY2022?"
    passages = [p.model_copy(update={"rank": i + 1}) for i, p in enumerate([flows, balance])]
    message = apply_support(cite(ExtractiveGenerator().generate(q, passages), sources=passages))
    assert "= 0.88 ((3,655 + 238 + 4,532) / 9,523)" in message.text
    assert ("Accounts receivable \u2014 net of allowances of $174 and $189: 4,532 (2022), 4,660 (2021), in millions [1]"
            in message.text)
    assert {r.metadata["page"] for r in message.references} == {50}
    assert all(p.support["verdict"] == "supported" for p in message.parts if p.source is not None)


def test_rows_of_other_years_are_never_given_as_the_asked_years() -> None:
    # the statement reports fiscal 2019 and 2018 only: asked for 2016, the answer says so first
    passages = [INCOME.model_copy(update={"rank": 1})]
    text = ExtractiveGenerator().generate("What was ACME's cost of goods sold in FY2016?", passages)
    assert text.startswith(OTHER_PERIODS_TEXT.format(years="2016") + " Cost of products sold: 16,830 (December 28, "
                                                                     "2019), 17,347 (December 29, 2018)")
    both = ExtractiveGenerator().generate("What was ACME's cost of goods sold in 2016 and 2019?", passages)
    assert not both.startswith(OTHER_PERIODS_TEXT.split("{")[0])  # 2019 is reported


def test_of_a_gross_and_a_net_row_the_net_one_states_a_net_element() -> None:
    balance = _passage("bs-net", "2022 2021\nProperty, plant and equipment 25,998 27,213\n"
                                 "Less: Accumulated depreciation (16,820) (17,784)\n"
                                 "Property, plant and equipment \u2014 net 9,178 9,429",
                       page=50, heading="ACME CORP CONSOLIDATED BALANCE SHEET (Dollars in millions)")
    text = ExtractiveGenerator().generate("What was ACME's net PP&E in FY2022?", [balance.model_copy(update={"rank": 1})])
    assert text.startswith("Property, plant and equipment \u2014 net: 9,178 (2022), 9,429 (2021)")


@pytest.mark.parametrize("row, count, expected", [
    ("Accounts receivable \u2014 net of allowances of $174 and $189 4,532 4,660", 2,
     ("Accounts receivable \u2014 net of allowances of $174 and $189", ["4,532", "4,660"])),
    ("Accounts receivable \u2014 net of allowances of $ 174 and $ 189 4,532 4,660", 2,
     ("Accounts receivable \u2014 net of allowances of $ 174 and $ 189", ["4,532", "4,660"])),
    # a blank column: the caption's figure is never taken for a value
    ("Accounts receivable \u2014 net of allowances of $174 and $189 4,532", 2, ("", [])),
    ("Pension net of tax of $0, ($2) and $0 (3) 6", 3, ("", [])),
    # more figures than periods (years of a schedule, a segment table): no row to read
    ("$241 and $284. Estimated amortization expense 2023 2024 2025 2026 2027", 2, ("", [])),
    ("Goodwill - January 1, 2016 $ 2,012 $ 719 $ 1,028 $ 3,759", 2, ("", [])),
])
def test_trailing_values_reads_only_the_columns_of_the_header(row: str, count: int, expected: tuple) -> None:
    assert trailing_values(row, count) == expected


def test_a_quarter_dated_in_the_year_before_its_fiscal_year_reports_it() -> None:
    # Q2 of fiscal 2023 ends on December 31, 2022: a dated column is within a year of the name
    quarter = _passage("q2", "Net sales $ 3,642 $ 3,799", page=7, header="Three Months Ended December 31, 2022 2021",
                       heading="ACME CONDENSED CONSOLIDATED STATEMENT OF INCOME (in millions)")
    text = ExtractiveGenerator().generate("What were ACME's net sales in Q2 FY2023?", [quarter.model_copy(update={"rank": 1})])
    assert "no figure" not in text and text.startswith("Net sales: $3,642 (3 months 2022), $3,799 (3 months 2021)")


@pytest.mark.parametrize("header,asked,note", [
    # a full year dated in November is the year it ends in: FY2019 is not among these columns
    ("December 2, 2022 December 3, 2021 November 27, 2020", 2019, True),
    ("December 2, 2022 December 3, 2021 November 27, 2020", 2020, False),
    # a retail year ending late in January is named by the year before, or by its end year
    ("January 28, 2023 January 29, 2022", 2021, False),
    ("January 28, 2023 January 29, 2022", 2023, False),
    ("January 28, 2023 January 29, 2022", 2020, True),
])
def test_a_dated_full_year_reports_the_year_it_ends_in_or_a_retail_year_before(header: str, asked: int,
                                                                                 note: bool) -> None:
    row = _passage("is", "Total revenue 17,606 15,785 12,868" if header.startswith("Dec") else
                   "Net sales 10,209 8,631", page=5, header=header,
                   heading="ACME CONSOLIDATED STATEMENTS OF INCOME (in millions)")
    text = ExtractiveGenerator().generate(f"What was ACME's total revenue in FY{asked}?",
                                          [row.model_copy(update={"rank": 1})])
    assert text.startswith(f"The sources give no figure for {asked}") is note, text
