"""The vocabulary of financial statements, as data, with a source on every entry.

Rule: **no entry without a source.** Every statement title, line-item caption, alias,
ratio name and question word below is a :class:`Term` naming the public source it comes
from (a :data:`SOURCES` id), where in that source (``ref``: an element name, a rule
paragraph, a glossary heading) and how far it was checked (``checked``):

- ``read``: the wording was read in that source, or in a copy of it (see the source's
  ``checked`` note for which copy);
- ``reworded``: a close rewording of wording that was read — the same words with
  punctuation dropped, a plural or singular, ``total``/``net`` added, or the parts of an
  element's standard label in statement order (``Property, Plant and Equipment, Net`` ->
  ``net property plant and equipment``), a function word (``from``, ``for``) or a form of
  the same word (``payments`` -> ``paid``) put in; no other word the source does not have, except that
  the two captions the taxonomy and Regulation S-X give for the owners' part of the
  balance sheet (``stockholders' equity``) are also read as ``shareholders' equity``;
- ``recalled``: recalled from that named source, not checked here.

The sources are public sources of the field only (:data:`SOURCES`): the FASB US GAAP
Financial Reporting Taxonomy (standard labels of elements), SEC Regulation S-X (the
captions of Rules 5-02 and 5-03, the statement titles of Article 3 and Rule 6-07), SEC
Exchange Act Rule 17a-5 (a broker-dealer's statement of financial condition), SEC staff
guidance (Staff Accounting Bulletins, the non-GAAP Compliance and Disclosure
Interpretations), the FASB Codification (Topics 230 and 718), the CFA Institute curriculum
reading "Financial Analysis Techniques" and four named published glossaries (Accounting
Simplified, Universal CPA Review, AccountingTools, Investopedia) for ratio names and
analysts' words, and the statutory definition of a forward-looking statement (Exchange
Act §21E, Securities Act §27A) for :data:`QUESTION_WORDS`. Each source records what of it
was read and in which copy, and what was only recalled. Entries of the earlier vocabulary with no such source were removed;
``REMOVED.md`` next to this module lists them, one a line, with what general source could
bring each back.

The structures are those of :mod:`citewell.text.vocabulary` (:data:`STATEMENTS`,
:data:`LINE_ITEMS`, :data:`RATIOS` and the statement-kind constants), with :class:`Term`
in place of a bare string, so that code can switch over by reading ``term.text``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BALANCE_SHEET", "CASH_FLOW", "CHECKED", "EQUITY", "INCOME_STATEMENT", "LINE_ITEMS", "QUESTION_WORDS",
           "RATIOS", "SOURCES", "STATEMENTS", "LineItem", "Ratio", "Source", "Term", "texts"]

BALANCE_SHEET = "balance_sheet"
INCOME_STATEMENT = "income_statement"
CASH_FLOW = "cash_flow"
EQUITY = "equity"

READ = "read"
REWORDED = "reworded"
RECALLED = "recalled"
#: How far a term was checked (module docstring).
CHECKED = (READ, REWORDED, RECALLED)


@dataclass(frozen=True)
class Source:
    """A public source of the field: what it is, who publishes it, where, which part of
    it this vocabulary uses, and how it was checked for this module."""

    title: str
    publisher: str
    url: str
    used: str
    checked: str


@dataclass(frozen=True)
class Term:
    """A phrase (lower case, as the matchers read it: no punctuation but ``-`` and ``&``)
    and its provenance: ``source`` (a :data:`SOURCES` id), ``ref`` (where in the source),
    ``checked`` (one of :data:`CHECKED`)."""

    text: str
    source: str
    ref: str = ""
    checked: str = READ


@dataclass(frozen=True)
class LineItem:
    """One line item of a primary statement.

    ``key``: the US-GAAP taxonomy element it reports; ``statement``: the statement kind
    that presents it; ``labels``: captions a statement gives it (a row label containing
    one of them states the item); ``aliases``: further names (analysts' abbreviations,
    names too loose to identify a row); ``spent``: an expense or an outflow of cash, which
    statements may show in parentheses (the US-GAAP element is a positive amount).
    """

    key: str
    statement: str
    labels: tuple[Term, ...]
    aliases: tuple[Term, ...] = ()
    spent: bool = False


@dataclass(frozen=True)
class Ratio:
    """A ratio or derived figure: its names and the line items (:data:`LINE_ITEMS` keys)
    it is computed from."""

    names: tuple[Term, ...]
    items: tuple[str, ...]


FASB = "fasb-taxonomy"
ASC = "fasb-asc"
SX_3 = "sx-article-3"
SX_502 = "sx-5-02"
SX_503 = "sx-5-03"
SX_607 = "sx-6-07"
SAB = "sec-sab"
NONGAAP = "sec-nongaap-cdi"
PSLRA = "pslra-safe-harbor"
CFA = "cfa-fat"
ACCSIMP = "accounting-simplified"
UCPA = "universal-cpa-review"
ACCTOOLS = "accountingtools"
INVESTOPEDIA = "investopedia"
SEC17A5 = "sec-17a-5"

#: Source id -> the source (module docstring).
SOURCES: dict[str, Source] = {
    FASB: Source(
        "US GAAP Financial Reporting Taxonomy", "Financial Accounting Standards Board (FASB)",
        "https://www.fasb.org/xbrl",
        "element names (line-item keys) and the standard labels of those elements",
        "Standard labels read as the SEC's XBRL API gives them (the 'label' field of "
        "data.sec.gov company-concept/company-facts answers, which carries the element's "
        "standard label) in public copies of those answers found with the research tools; "
        "the FASB label linkbase file itself was not opened. Labels so read: Cash and Cash "
        "Equivalents, at Carrying Value; Accounts Receivable, after Allowance for Credit "
        "Loss, Current; Marketable Securities, Current; Inventory, Net; Assets, Current; "
        "Property, Plant and Equipment, Net; Operating Lease, Right-of-Use Asset; Goodwill; "
        "Intangible Assets, Net (Excluding Goodwill); Accounts Payable, Current; Accrued "
        "Liabilities, Current; Contract with Customer, Liability, Current; Deferred Revenue, "
        "Current; Commercial Paper; Long-term Debt, Current Maturities; Long-term Debt, "
        "Excluding Current Maturities; Liabilities, Current; Retained Earnings (Accumulated "
        "Deficit); Stockholders' Equity Attributable to Parent; Liabilities and Equity; "
        "Revenues; Gross Profit; Selling, General and Administrative Expense; General and "
        "Administrative Expense; Research and Development Expense; Labor and Related "
        "Expense; Costs and Expenses; Operating Expenses; Operating Income (Loss); Interest "
        "Expense; Income Tax Expense (Benefit); Net Income (Loss); Earnings Per Share, "
        "Diluted; Weighted Average Number of Shares Outstanding, Diluted; Depreciation, "
        "Depletion and Amortization; Share-based Payment Arrangement, Noncash Expense; Net "
        "Cash Provided by (Used in) Operating/Investing/Financing Activities; Payments to "
        "Acquire Property, Plant, and Equipment; Payments of Dividends; Payments for "
        "Repurchase of Common Stock; Proceeds from Issuance of Long-term Debt; Repayments "
        "of Long-term Debt; Short-term Investments; Prepaid Expense and Other Assets, "
        "Current; Treasury Stock, Value; Assets; Liabilities; Effective Income Tax Rate "
        "Reconciliation, Percent. Labels of DebtCurrent "
        "('Debt, Current') and the key IncomeLossBeforeIncomeTaxes were not found in a "
        "copy: recalled."),
    ASC: Source(
        "FASB Accounting Standards Codification: Topic 230, Statement of Cash Flows; Topic 718, "
        "Compensation-Stock Compensation",
        "Financial Accounting Standards Board (FASB)", "https://asc.fasb.org/",
        "Topic 230's title, its three section headings (cash flows from operating, investing "
        "and financing activities) and the wording of its examples of investing and "
        "financing cash flows (230-10-45-13 to 45-15); Topic 718's title",
        "recalled, not checked (the Codification's text was not opened)"),
    SX_3: Source(
        "17 CFR 210.3-01 to 210.3-04 (Regulation S-X, Article 3)",
        "U.S. Securities and Exchange Commission (eCFR)",
        "https://www.ecfr.gov/current/title-17/chapter-II/part-210",
        "the titles of the required statements: balance sheets (3-01), statements of "
        "comprehensive income and cash flows (3-02), changes in stockholders' equity (3-04)",
        "section titles read in the Part 210 table of contents (law.cornell.edu copy)"),
    SX_502: Source(
        "17 CFR 210.5-02 Balance sheets (Regulation S-X)",
        "U.S. Securities and Exchange Commission (eCFR)",
        "https://www.ecfr.gov/current/title-17/chapter-II/part-210/section-210.5-02",
        "the numbered captions of the balance sheet of a commercial or industrial company",
        "the numbered caption list (5-02.1 Cash and cash items ... 5-02.32 Total liabilities "
        "and equity) read in a published summary of the rule (accountingstudy.com, "
        "'Section 2120: Balance Sheet'); sub-items (5-02.3(a) trade, 5-02.19(a) commercial "
        "paper and trade creditors) recalled from the rule text"),
    SX_503: Source(
        "17 CFR 210.5-03 Statements of comprehensive income (Regulation S-X)",
        "U.S. Securities and Exchange Commission (eCFR)",
        "https://www.ecfr.gov/current/title-17/chapter-II/part-210/section-210.5-03",
        "the numbered captions of the income statement; the rule's title (formerly "
        "'Income statements', now 'Statements of comprehensive income')",
        "captions 1 (Net sales and gross revenues, with (a) net sales of tangible products, "
        "(b) operating revenues) and 2 (Costs and expenses applicable to sales and revenues, "
        "(a) cost of tangible goods sold) and both titles read (federal.elaws.us and "
        "laws9.com copies); the later captions (4 selling, general and administrative "
        "expenses, 8 interest and amortization of debt discount and expense, 10 income or "
        "loss before income tax expense, 11 income tax expense, 20 net income or loss, "
        "25 earnings per share data) recalled, the SG&A and interest-expense captions "
        "corroborated in PwC's Financial statement presentation guide, section 3.11"),
    SX_607: Source(
        "17 CFR 210.6-07 Statements of operations (Regulation S-X)",
        "U.S. Securities and Exchange Commission (eCFR)",
        "https://www.ecfr.gov/current/title-17/chapter-II/part-210/section-210.6-07",
        "the title 'statements of operations' (the income statement of a registered "
        "investment company)",
        "recalled, not checked"),
    SAB: Source(
        "Staff Accounting Bulletins, Topic 11.B (Depreciation and depletion excluded from "
        "cost of sales) and Topic 14.F (Classification of compensation expense associated "
        "with share-based payment arrangements)",
        "U.S. Securities and Exchange Commission, staff",
        "https://www.sec.gov/regulation/staff-interpretations/accounting-bulletins",
        "the terms 'cost of sales', 'gross margin' and 'stock-based compensation'",
        "the topics and these terms read in KPMG's summary of SEC staff comments on "
        "income-statement presentation (frv.kpmg.us, October 2017) that cites S-X Rule 5-03.2 "
        "and SAB Topics 11.B and 14.F; the bulletins' own text not opened"),
    NONGAAP: Source(
        "Non-GAAP Financial Measures, Compliance and Disclosure Interpretations (Questions "
        "102.07 free cash flow, 103.01 EBIT and EBITDA), after Exchange Act Release No. 47226",
        "U.S. Securities and Exchange Commission, Division of Corporation Finance",
        "https://www.sec.gov/rules-regulations/staff-guidance/compliance-disclosure-interpretations/non-gaap-financial-measures",
        "the measures EBIT, EBITDA (earnings before interest, taxes, depreciation and "
        "amortization) and free cash flow (cash flows from operating activities less "
        "capital expenditures)",
        "that EBIT, EBITDA and free cash flow are the SEC staff's named examples read in "
        "Deloitte's Roadmap to Non-GAAP Financial Measures, section 2.2, and in a summary of "
        "the 2016 C&DI update; the definitions' wording in the C&DIs recalled"),
    PSLRA: Source(
        "Securities Exchange Act of 1934 §21E (15 U.S.C. 78u-5) and Securities Act of 1933 "
        "§27A (15 U.S.C. 77z-2), Application of safe harbor for forward-looking statements",
        "U.S. Congress (Private Securities Litigation Reform Act of 1995)",
        "https://www.law.cornell.edu/uscode/text/15/78u-5",
        "the definition of 'forward-looking statement' in subsection (i)(1): (A) a "
        "projection of revenues, income, earnings per share, capital expenditures, "
        "dividends, capital structure or other financial items; (B) the plans and "
        "objectives of management for future operations; (C) future economic performance; "
        "(D) the assumptions underlying them",
        "the section's title and subsections (a)-(b) read (trac.syr.edu and law.uc.edu "
        "copies); the wording of subsection (i)(1) recalled, not reached in those copies"),
    CFA: Source(
        "Financial Analysis Techniques (CFA Program curriculum, Level I, Financial Statement "
        "Analysis)", "CFA Institute", "https://www.cfainstitute.org/insights/professional-learning/refresher-readings/2024/financial-analysis-techniques",
        "the names, abbreviations and definitions of activity, liquidity, solvency and "
        "profitability ratios, and the abbreviations the reading uses for statement items "
        "(COGS, SG&A, PP&E, EBIT, EBT, CFO)",
        "the reading's list of activity and liquidity ratios (inventory turnover, days of "
        "inventory on hand, receivables turnover, days of sales outstanding, payables "
        "turnover, number of days of payables, fixed asset turnover, total asset turnover, "
        "current ratio, quick ratio, cash ratio, cash conversion cycle, debt-to-assets "
        "ratio) read in public study notes of the reading (brainscape.com 'Financial "
        "Analysis Techniques formula' cards; quizlet 'CFA - Financial Ratios - liquidity "
        "ratios'); the profitability and solvency ratios and the abbreviations recalled"),
    ACCSIMP: Source(
        "Accounting Simplified, 'Ratio Analysis'", "accounting-simplified.com",
        "https://accounting-simplified.com/category/financial/ratio-analysis/",
        "ratio names and their other names: quick ratio / acid test ratio; interest coverage "
        "ratio / times interest earned; current ratio / working capital ratio; days payables "
        "outstanding (DPO); gross, operating and net profit margin ratios; debt-to-equity",
        "headings and first sentences read in the index page (stored copy)"),
    UCPA: Source(
        "Universal CPA Review, 'Ask Joey' glossary", "Universal CPA Review",
        "https://www.universalcpareview.com/ask-joey/how-to-calculate-days-inventory-outstanding-dio/",
        "days inventory outstanding (DIO), days payable outstanding (DPO), days sales "
        "outstanding (DSO)",
        "the entries' headings and first sentences read (stored copy)"),
    ACCTOOLS: Source(
        "AccountingTools dictionary, entry 'Top line'", "AccountingTools (Steven M. Bragg)",
        "https://www.accountingtools.com/articles/2017/5/14/top-line",
        "'top line' (the revenue line item of the income statement) and, in the same entry, "
        "'bottom line' (the net profit)",
        "the entry read (stored copy)"),
    INVESTOPEDIA: Source(
        "Investopedia dictionary, entry 'Profit and Loss Statement (P&L)'", "Investopedia",
        "https://www.investopedia.com/terms/p/plstatement.asp",
        "'profit and loss' / 'P&L' as names of the income statement, and the entry's other "
        "names of it ('income statement', 'statement of operations')",
        "the entry's opening paragraph read as quoted in a 2017 copy "
        "(grupodeinvestigacioncontable.blogspot.com), not on investopedia.com itself"),
    SEC17A5: Source(
        "17 CFR 240.17a-5 (Exchange Act Rule 17a-5), Reports to be made by certain brokers "
        "and dealers", "U.S. Securities and Exchange Commission (eCFR)",
        "https://www.ecfr.gov/current/title-17/chapter-II/part-240/section-240.17a-5",
        "the title 'Statement of Financial Condition' of a broker-dealer's balance sheet",
        "read in the SEC's Paperwork Reduction Act supporting statement for Rule 17a-5(c) "
        "(OMB 3235-0199, omb.report copy) and EisnerAmper's 2015 summary of Rule 17a-5(d)"),
}


def _t(text: str, source: str, ref: str = "", checked: str = READ) -> Term:
    return Term(text, source, ref, checked)


def _label(element: str, *texts: str, checked: str = REWORDED) -> tuple[Term, ...]:
    """Captions worded from ``element``'s standard label (:data:`FASB`)."""
    return tuple(Term(text, FASB, element, checked) for text in texts)


#: Statement kind -> the titles a filing gives it (and a question may use).
STATEMENTS: dict[str, tuple[Term, ...]] = {
    BALANCE_SHEET: (
        _t("balance sheet", SX_502, "Rule 5-02 title 'Balance sheets'", REWORDED),
        _t("balance sheets", SX_502, "Rule 5-02 title"),
        _t("statement of financial position", CFA, "the reading's name for the balance sheet", RECALLED),
        _t("statements of financial position", CFA, "plural of the above", RECALLED),
        _t("statement of financial condition", SEC17A5, "17a-5(c), (d)"),
        _t("statements of financial condition", SEC17A5, "plural", REWORDED),
    ),
    INCOME_STATEMENT: (
        _t("income statement", SX_503, "Rule 5-03 former title 'Income statements'", REWORDED),
        _t("income statements", SX_503, "Rule 5-03 former title"),
        _t("statement of income", SX_503, "rewording of the former title", REWORDED),
        _t("statements of income", SX_503, "rewording of the former title", REWORDED),
        _t("statement of operations", INVESTOPEDIA, "Profit and Loss Statement: other names"),
        _t("statements of operations", SX_607, "Rule 6-07 title", RECALLED),
        _t("statement of comprehensive income", SX_503, "Rule 5-03 title", REWORDED),
        _t("profit and loss", INVESTOPEDIA, "Profit and Loss Statement (P&L)"),
        _t("p&l", INVESTOPEDIA, "Profit and Loss Statement (P&L)"),
        _t("statements of comprehensive income", SX_503, "Rule 5-03 title"),
        _t("statement of comprehensive loss", SX_503, "Rule 5-03 title, income -> loss", REWORDED),
        _t("statements of comprehensive loss", SX_503, "Rule 5-03 title, income -> loss", REWORDED),
    ),
    CASH_FLOW: (
        _t("statement of cash flows", ASC, "Topic 230 title", RECALLED),
        _t("statements of cash flows", SX_3, "Rule 3-02 title", REWORDED),
        _t("cash flow statement", ASC, "rewording of the Topic 230 title", RECALLED),
        _t("cash flows statement", ASC, "rewording of the Topic 230 title", RECALLED),
        _t("statement of cash flow", ASC, "rewording of the Topic 230 title", RECALLED),
    ),
    EQUITY: (
        _t("statement of stockholders equity", SX_3, "Rule 3-04 'changes in stockholders' equity'", REWORDED),
        _t("statements of stockholders equity", SX_3, "Rule 3-04", REWORDED),
        _t("statement of shareholders equity", SX_3, "Rule 3-04, stockholders -> shareholders", REWORDED),
        _t("statements of shareholders equity", SX_3, "Rule 3-04, stockholders -> shareholders", REWORDED),
        _t("statement of changes in equity", CFA, "the reading's name of the statement", RECALLED),
        _t("statements of changes in equity", CFA, "plural of the above", RECALLED),
        _t("statement of equity", SX_3, "Rule 3-04, shortened", REWORDED),
        _t("statements of equity", SX_3, "Rule 3-04, shortened", REWORDED),
        _t("statements of changes in stockholders equity", SX_3, "Rule 3-04 title", REWORDED),
    ),
}


LINE_ITEMS: tuple[LineItem, ...] = (
    # ------------------------------------------------------------------ balance sheet
    LineItem("CashAndCashEquivalentsAtCarryingValue", BALANCE_SHEET,
             _label("CashAndCashEquivalentsAtCarryingValue", "cash and cash equivalents")
             + (_t("cash and equivalents", FASB, "CashAndCashEquivalentsAtCarryingValue", REWORDED),
                _t("cash and cash items", SX_502, "5-02.1")),
             (_t("cash", SX_502, "5-02.1 'Cash and cash items'", REWORDED),)),
    LineItem("ShortTermInvestments", BALANCE_SHEET,
             (_t("short-term investments", FASB, "ShortTermInvestments", REWORDED),
              _t("marketable securities", SX_502, "5-02.2"),
              _t("short-term marketable securities", FASB, "MarketableSecuritiesCurrent", REWORDED)),
             (_t("short term investments", FASB, "ShortTermInvestments", REWORDED),)),
    LineItem("AccountsReceivableNetCurrent", BALANCE_SHEET,
             (_t("accounts receivable", FASB, "AccountsReceivableNetCurrent", REWORDED),
              _t("trade receivables", SX_502, "5-02.3(a)(1) customers (trade)", RECALLED),
              _t("receivables net", FASB, "ReceivablesNetCurrent 'Receivables, Net, Current'", REWORDED),
              _t("trade accounts receivable", SX_502, "5-02.3(a)(1)", RECALLED),
              _t("accounts and notes receivable", SX_502, "5-02.3")),
             (_t("receivables", CFA, "receivables turnover"),)),
    LineItem("InventoryNet", BALANCE_SHEET,
             (_t("inventories", SX_502, "5-02.6"),
              _t("inventory", FASB, "InventoryNet 'Inventory, Net'", REWORDED))),
    LineItem("PrepaidExpenseAndOtherAssetsCurrent", BALANCE_SHEET,
             _label("PrepaidExpenseAndOtherAssetsCurrent", "prepaid expenses and other current assets")
             + (_t("prepaid expenses", SX_502, "5-02.7"),)),
    LineItem("AssetsCurrent", BALANCE_SHEET,
             (_t("total current assets", SX_502, "5-02.9"),),
             _label("AssetsCurrent", "current assets")),
    LineItem("PropertyPlantAndEquipmentNet", BALANCE_SHEET,
             _label("PropertyPlantAndEquipmentNet", "property and equipment net", "property plant and equipment net",
                    "net property and equipment", "net property plant and equipment")
             + (_t("property plant and equipment", SX_502, "5-02.13", REWORDED),
                _t("property and equipment", SX_502, "5-02.13, 'plant' dropped", REWORDED)),
             (_t("pp&e", CFA, "abbreviation of property, plant and equipment", RECALLED),
              _t("fixed assets", CFA, "fixed asset turnover"),
              _t("net pp&e", CFA, "abbreviation, net", RECALLED))),
    LineItem("OperatingLeaseRightOfUseAsset", BALANCE_SHEET,
             _label("OperatingLeaseRightOfUseAsset", "operating lease right-of-use assets")),
    LineItem("Goodwill", BALANCE_SHEET, _label("Goodwill", "goodwill", checked=READ)),
    LineItem("IntangibleAssetsNetExcludingGoodwill", BALANCE_SHEET,
             _label("IntangibleAssetsNetExcludingGoodwill", "intangible assets net")
             + (_t("intangible assets", SX_502, "5-02.15"),)),
    LineItem("Assets", BALANCE_SHEET, (_t("total assets", SX_502, "5-02.18"),)),
    LineItem("AccountsPayableCurrent", BALANCE_SHEET,
             _label("AccountsPayableCurrent", "accounts payable")
             + (_t("trade accounts payable", SX_502, "5-02.19(a) trade creditors", RECALLED),
                _t("accounts payable and accrued liabilities", FASB,
                   "AccountsPayableAndAccruedLiabilitiesCurrent", RECALLED)),
             (_t("payables", CFA, "payables turnover"),)),
    LineItem("AccruedLiabilitiesCurrent", BALANCE_SHEET,
             _label("AccruedLiabilitiesCurrent", "accrued liabilities")),
    LineItem("ContractWithCustomerLiabilityCurrent", BALANCE_SHEET,
             (_t("deferred revenue", FASB, "DeferredRevenueCurrent 'Deferred Revenue, Current'", REWORDED),
              _t("deferred revenues", FASB, "DeferredRevenueCurrent", REWORDED),
              _t("contract liabilities", FASB, "ContractWithCustomerLiabilityCurrent", REWORDED))),
    LineItem("DebtCurrent", BALANCE_SHEET,
             (_t("short-term debt", FASB, "DebtCurrent 'Debt, Current'; ShortTermBorrowings", RECALLED),
              _t("short-term borrowings", FASB, "ShortTermBorrowings (element name)", RECALLED),
              _t("current portion of long-term debt", FASB, "LongTermDebtCurrent", REWORDED),
              _t("current maturities of long-term debt", FASB,
                 "LongTermDebtCurrent 'Long-term Debt, Current Maturities'", REWORDED),
              _t("notes payable", SX_502, "5-02.19 'Accounts and notes payable'", REWORDED),
              _t("commercial paper", FASB, "CommercialPaper"))),
    LineItem("LiabilitiesCurrent", BALANCE_SHEET,
             (_t("total current liabilities", SX_502, "5-02.21"),),
             _label("LiabilitiesCurrent", "current liabilities")),
    LineItem("LongTermDebtNoncurrent", BALANCE_SHEET,
             _label("LongTermDebtNoncurrent", "long-term debt"),
             (_t("debt", SX_502, "5-02.22 'Bonds, mortgages and other long-term debt'", REWORDED),)),
    LineItem("Liabilities", BALANCE_SHEET, _label("Liabilities", "total liabilities")),
    LineItem("RetainedEarningsAccumulatedDeficit", BALANCE_SHEET,
             _label("RetainedEarningsAccumulatedDeficit", "retained earnings", "accumulated deficit")),
    LineItem("TreasuryStockValue", BALANCE_SHEET, _label("TreasuryStockValue", "treasury stock"), spent=True),
    LineItem("StockholdersEquity", BALANCE_SHEET,
             _label("StockholdersEquity", "total stockholders equity", "total shareholders equity")
             + (_t("total equity", SX_502, "5-02.32 'Total liabilities and equity'", REWORDED),),
             _label("StockholdersEquity", "shareholders equity", "stockholders equity")
             + (_t("book value", CFA, "book value per share", RECALLED),)),
    LineItem("LiabilitiesAndStockholdersEquity", BALANCE_SHEET,
             (_t("total liabilities and stockholders equity", SX_502, "5-02.32 with 'stockholders'", REWORDED),
              _t("total liabilities and shareholders equity", SX_502, "5-02.32 with 'shareholders'", REWORDED),
              _t("total liabilities and equity", SX_502, "5-02.32"))),
    # ------------------------------------------------------ statement of comprehensive income
    LineItem("Revenues", INCOME_STATEMENT,
             (_t("total revenues", FASB, "Revenues", REWORDED),
              _t("total net revenues", FASB, "Revenues", REWORDED),
              _t("net revenues", FASB, "Revenues", REWORDED),
              _t("total net sales", SX_503, "5-03.1(a) net sales", REWORDED),
              _t("net sales", SX_503, "5-03.1"),
              _t("revenues", FASB, "Revenues"),
              _t("revenue", FASB, "Revenues", REWORDED),
              _t("sales", SX_503, "5-03.1(a)", REWORDED),
              _t("net revenue", FASB, "Revenues", REWORDED),
              _t("total revenue", FASB, "Revenues", REWORDED),
              _t("operating revenues", SX_503, "5-03.1(b)")),
             (_t("top line", ACCTOOLS, "Top line"),)),
    LineItem("CostOfRevenue", INCOME_STATEMENT,
             (_t("cost of revenues", FASB, "CostOfRevenue 'Cost of Revenue'", REWORDED),
              _t("cost of revenue", FASB, "CostOfRevenue", REWORDED),
              _t("cost of sales", SAB, "Topic 11.B"),
              _t("cost of goods sold", SX_503, "5-03.2(a) 'cost of tangible goods sold'", REWORDED),
              _t("cost of products sold", SX_503, "5-03.2(a), goods -> products", REWORDED),
              _t("total cost of revenue", FASB, "CostOfRevenue", REWORDED),
              _t("total cost of sales", SAB, "Topic 11.B", REWORDED)),
             (_t("cogs", CFA, "abbreviation of cost of goods sold", RECALLED),), spent=True),
    LineItem("GrossProfit", INCOME_STATEMENT,
             (_t("gross profit", FASB, "GrossProfit"),
              _t("gross margin", SAB, "Topic 11.B (gross margin or gross profit subtotal)"))),
    LineItem("SellingGeneralAndAdministrativeExpense", INCOME_STATEMENT,
             (_t("selling general and administrative", SX_503, "5-03.4", REWORDED),
              _t("general and administrative", FASB, "GeneralAndAdministrativeExpense", REWORDED)),
             (_t("sg&a", CFA, "abbreviation", RECALLED),), spent=True),
    LineItem("ResearchAndDevelopmentExpense", INCOME_STATEMENT,
             _label("ResearchAndDevelopmentExpense", "research and development"),
             (_t("r&d", CFA, "abbreviation", RECALLED),), spent=True),
    LineItem("LaborAndRelatedExpense", INCOME_STATEMENT,
             (_t("salaries and wages", FASB, "SalariesAndWages (element name)", RECALLED),
              _t("labor and related expense", FASB, "LaborAndRelatedExpense")), spent=True),
    LineItem("CostsAndExpenses", INCOME_STATEMENT,
             (_t("total operating expenses", FASB, "OperatingExpenses 'Operating Expenses'", REWORDED),
              _t("total costs and expenses", FASB, "CostsAndExpenses 'Costs and Expenses'", REWORDED),
              _t("operating expenses", FASB, "OperatingExpenses", REWORDED)), spent=True),
    LineItem("OperatingIncomeLoss", INCOME_STATEMENT,
             _label("OperatingIncomeLoss", "operating income", "income from operations", "operating loss")
             + (_t("operating profit", CFA, "operating profit margin"),),
             (_t("ebit", NONGAAP, "Question 103.01"),)),
    LineItem("InterestExpense", INCOME_STATEMENT,
             _label("InterestExpense", "interest expense")
             + (_t("interest expense net", FASB, "InterestIncomeExpenseNet 'Interest Income (Expense), Net'",
                   REWORDED),), spent=True),
    LineItem("IncomeLossBeforeIncomeTaxes", INCOME_STATEMENT,
             (_t("income before income taxes", SX_503, "5-03.10 'Income or loss before income tax expense'",
                 REWORDED),
              _t("earnings before income taxes", CFA, "EBT, earnings before taxes", RECALLED),
              _t("income before taxes", SX_503, "5-03.10", REWORDED),
              _t("pretax income", CFA, "pretax margin", RECALLED),
              _t("income before income tax expense", SX_503, "5-03.10", RECALLED)),
             (_t("pre-tax income", CFA, "pretax margin", RECALLED),
              _t("ebt", CFA, "abbreviation (tax burden = net income / EBT)", RECALLED))),
    LineItem("IncomeTaxExpenseBenefit", INCOME_STATEMENT,
             (_t("income tax expense", SX_503, "5-03.11", RECALLED),
              _t("income taxes", FASB, "IncomeTaxExpenseBenefit 'Income Tax Expense (Benefit)'", REWORDED)),
             spent=True),
    LineItem("NetIncomeLoss", INCOME_STATEMENT,
             _label("NetIncomeLoss", "net income", "net income attributable", "net loss"),
             (_t("bottom line", ACCTOOLS, "Top line (by comparison, the bottom line)"),)),
    LineItem("EarningsPerShareDiluted", INCOME_STATEMENT,
             _label("EarningsPerShareDiluted", "diluted earnings per share", "earnings per share diluted"),
             (_t("eps", CFA, "abbreviation of earnings per share", RECALLED),)),
    LineItem("WeightedAverageNumberOfDilutedSharesOutstanding", INCOME_STATEMENT,
             _label("WeightedAverageNumberOfDilutedSharesOutstanding", "weighted-average shares outstanding",
                    "weighted average shares", "diluted shares")),
    # -------------------------------------------------------- statement of cash flows
    LineItem("DepreciationDepletionAndAmortization", CASH_FLOW,
             _label("DepreciationDepletionAndAmortization", "depreciation and amortization",
                    "depreciation amortization", "depreciation"),
             (_t("d&a", NONGAAP, "Question 103.01, depreciation and amortization in EBITDA", RECALLED),),
             spent=True),
    LineItem("ShareBasedCompensation", CASH_FLOW,
             (_t("stock-based compensation", SAB, "Topic 14.F"),
              _t("share-based compensation", FASB, "ShareBasedCompensation (element name)", REWORDED),
              _t("stock compensation", ASC, "Topic 718 'Compensation-Stock Compensation'", RECALLED)),
             spent=True),
    LineItem("NetCashProvidedByUsedInOperatingActivities", CASH_FLOW,
             _label("NetCashProvidedByUsedInOperatingActivities", "net cash provided by operating activities",
                    "net cash provided by used in operating activities", "cash provided by operating activities",
                    "net cash from operating activities", "net cash used in operating activities",
                    "operating activities")
             + (_t("cash flows from operating activities", ASC, "230-10-45-28", RECALLED),),
             (_t("operating cash flow", CFA, "cash flow from operating activities", RECALLED),
              _t("cash from operations", CFA, "cash flow from operations", RECALLED),
              _t("cash flow from operations", CFA, "CFO", RECALLED),
              _t("cfo", CFA, "abbreviation of cash flow from operating activities", RECALLED))),
    LineItem("PaymentsToAcquirePropertyPlantAndEquipment", CASH_FLOW,
             (_t("purchases of property and equipment", ASC, "230-10-45-13(c) purchase ... to acquire property, "
                 "plant, and equipment", RECALLED),
              _t("purchases of property plant and equipment", ASC, "230-10-45-13(c)", RECALLED))
             + _label("PaymentsToAcquirePropertyPlantAndEquipment", "payments for property and equipment")
             + (_t("capital expenditures", NONGAAP, "Question 102.07", RECALLED),
                _t("purchases of pp&e", CFA, "PP&E abbreviation", RECALLED)),
             (_t("capex", CFA, "abbreviation of capital expenditure", RECALLED),), spent=True),
    LineItem("NetCashProvidedByUsedInInvestingActivities", CASH_FLOW,
             _label("NetCashProvidedByUsedInInvestingActivities", "net cash used in investing activities",
                    "net cash provided by investing activities", "investing activities")
             + (_t("cash flows from investing activities", ASC, "230-10-45-12", RECALLED),)),
    LineItem("NetCashProvidedByUsedInFinancingActivities", CASH_FLOW,
             _label("NetCashProvidedByUsedInFinancingActivities", "net cash used in financing activities",
                    "net cash provided by financing activities", "financing activities")
             + (_t("cash flows from financing activities", ASC, "230-10-45-14", RECALLED),)),
    LineItem("PaymentsOfDividends", CASH_FLOW,
             _label("PaymentsOfDividends", "dividends paid", "payments of dividends",
                    "dividends"), spent=True),
    LineItem("PaymentsForRepurchaseOfCommonStock", CASH_FLOW,
             _label("PaymentsForRepurchaseOfCommonStock", "repurchases of common stock",
                    "repurchase of common stock", "purchases of common stock", "stock repurchases")
             + (_t("purchases of treasury stock", FASB, "TreasuryStockValue 'Treasury Stock, Value'", REWORDED),),
             spent=True),
    LineItem("ProceedsFromIssuanceOfLongTermDebt", CASH_FLOW,
             _label("ProceedsFromIssuanceOfLongTermDebt", "proceeds from issuance of long-term debt",
                    "proceeds from long-term debt")
             + (_t("proceeds from borrowings", ASC, "230-10-45-14(b)", RECALLED),)),
    LineItem("RepaymentsOfLongTermDebt", CASH_FLOW,
             _label("RepaymentsOfLongTermDebt", "repayments of long-term debt", "payments of long-term debt")
             + (_t("repayment of debt", ASC, "230-10-45-15(b) repayments of amounts borrowed", RECALLED),),
             spent=True),
)


#: Textbook ratios and SEC-named measures, by the line items they are computed from.
#: The first name of each is the one :mod:`citewell.generate.calc` keys its formulas by.
RATIOS: tuple[Ratio, ...] = (
    Ratio((_t("current ratio", CFA, "liquidity ratios"),
           _t("working capital ratio", ACCSIMP, "Current ratio, also known as ... working capital ratio")),
          ("AssetsCurrent", "LiabilitiesCurrent")),
    Ratio((_t("quick ratio", CFA, "liquidity ratios"),
           _t("acid test ratio", ACCSIMP, "Quick Ratio - Acid Test Ratio"),
           _t("acid-test ratio", ACCSIMP, "Quick Ratio - Acid Test Ratio", REWORDED)),
          ("CashAndCashEquivalentsAtCarryingValue", "ShortTermInvestments", "AccountsReceivableNetCurrent",
           "LiabilitiesCurrent")),
    Ratio((_t("cash ratio", CFA, "liquidity ratios"),),
          ("CashAndCashEquivalentsAtCarryingValue", "ShortTermInvestments", "LiabilitiesCurrent")),
    Ratio((_t("working capital", CFA, "working capital turnover (current assets - current liabilities)"),
           _t("net working capital", CFA, "working capital", REWORDED)),
          ("AssetsCurrent", "LiabilitiesCurrent")),
    Ratio((_t("debt to equity", CFA, "debt-to-equity ratio (solvency ratios)", REWORDED),
           _t("debt-to-equity", CFA, "debt-to-equity ratio", RECALLED)),
          ("DebtCurrent", "LongTermDebtNoncurrent", "StockholdersEquity")),
    Ratio((_t("debt-to-assets ratio", CFA, "solvency ratios"),),
          ("DebtCurrent", "LongTermDebtNoncurrent", "Assets")),
    Ratio((_t("gross margin", SAB, "Topic 11.B"),
           _t("gross profit margin", CFA, "profitability ratios", RECALLED)),
          ("GrossProfit", "Revenues", "CostOfRevenue")),
    Ratio((_t("operating margin", CFA, "operating profit margin", REWORDED),
           _t("operating profit margin", CFA, "profitability ratios", RECALLED)),
          ("OperatingIncomeLoss", "Revenues")),
    Ratio((_t("net margin", CFA, "net profit margin", REWORDED),
           _t("net profit margin", CFA, "profitability ratios", RECALLED),
           _t("profit margin", ACCSIMP, "Net Profit Margin Ratio", REWORDED)),
          ("NetIncomeLoss", "Revenues")),
    Ratio((_t("ebitda", NONGAAP, "Question 103.01"),),
          ("OperatingIncomeLoss", "DepreciationDepletionAndAmortization")),
    Ratio((_t("return on assets", CFA, "profitability ratios", RECALLED), _t("roa", CFA, "ROA", RECALLED)),
          ("NetIncomeLoss", "Assets")),
    Ratio((_t("return on equity", CFA, "profitability ratios", RECALLED), _t("roe", CFA, "ROE", RECALLED)),
          ("NetIncomeLoss", "StockholdersEquity")),
    Ratio((_t("asset turnover", CFA, "total asset turnover", REWORDED),
           _t("total asset turnover", CFA, "activity ratios")),
          ("Revenues", "Assets")),
    Ratio((_t("fixed asset turnover", CFA, "activity ratios"),), ("Revenues", "PropertyPlantAndEquipmentNet")),
    Ratio((_t("inventory turnover", CFA, "activity ratios"),), ("CostOfRevenue", "InventoryNet")),
    Ratio((_t("days inventory outstanding", UCPA, "days inventory outstanding (DIO)"),
           _t("dio", UCPA, "DIO"),
           _t("days of inventory", CFA, "days of inventory on hand (DOH)", REWORDED)),
          ("InventoryNet", "CostOfRevenue")),
    Ratio((_t("receivables turnover", CFA, "activity ratios"),), ("Revenues", "AccountsReceivableNetCurrent")),
    Ratio((_t("days sales outstanding", UCPA, "days sales outstanding (DSO)"),
           _t("dso", CFA, "days of sales outstanding (DSO)")),
          ("AccountsReceivableNetCurrent", "Revenues")),
    Ratio((_t("payables turnover", CFA, "activity ratios"),), ("CostOfRevenue", "AccountsPayableCurrent")),
    Ratio((_t("days payable outstanding", UCPA, "days payable outstanding (DPO)"),
           _t("dpo", UCPA, "DPO")),
          ("AccountsPayableCurrent", "CostOfRevenue", "InventoryNet")),
    Ratio((_t("cash conversion cycle", CFA, "liquidity ratios"),),
          ("InventoryNet", "AccountsReceivableNetCurrent", "AccountsPayableCurrent", "Revenues", "CostOfRevenue")),
    Ratio((_t("interest coverage", ACCSIMP, "Interest Coverage Ratio", REWORDED),
           _t("times interest earned", ACCSIMP, "Interest Coverage Ratio - Times Interest Earned")),
          ("OperatingIncomeLoss", "InterestExpense")),
    Ratio((_t("effective tax rate", FASB,
              "EffectiveIncomeTaxRateContinuingOperations 'Effective Income Tax Rate Reconciliation, Percent'",
              REWORDED),),
          ("IncomeTaxExpenseBenefit", "IncomeLossBeforeIncomeTaxes")),
    Ratio((_t("free cash flow", NONGAAP, "Question 102.07"), _t("fcf", NONGAAP, "abbreviation", RECALLED)),
          ("NetCashProvidedByUsedInOperatingActivities", "PaymentsToAcquirePropertyPlantAndEquipment")),
    Ratio((_t("dividend payout ratio", CFA, "valuation ratios", RECALLED),
           _t("payout ratio", CFA, "dividend payout ratio", RECALLED)),
          ("PaymentsOfDividends", "NetIncomeLoss")),
)


#: Words of a question that asks about what a source expects of the future: the words
#: by which the safe-harbor statute defines a forward-looking statement (15 U.S.C.
#: 78u-5(i)(1); the same definition is 15 U.S.C. 77z-2(i)(1)). Not included: the lists of
#: "anticipate", "believe", "expect" … that issuers print in their own safe-harbor
#: paragraphs (those lists are each issuer's wording, not the SEC's or the statute's).
QUESTION_WORDS: tuple[Term, ...] = (
    _t("forward-looking", PSLRA, "(i)(1) 'forward-looking statement'", RECALLED),
    _t("projection", PSLRA, "(i)(1)(A) 'a projection of revenues, income ...'", RECALLED),
    _t("projections", PSLRA, "(i)(1)(A), plural", RECALLED),
    _t("plans", PSLRA, "(i)(1)(B) 'the plans and objectives of management for future operations'", RECALLED),
    _t("objectives", PSLRA, "(i)(1)(B)", RECALLED),
    _t("future", PSLRA, "(i)(1)(B) 'future operations', (C) 'future economic performance'", RECALLED),
    _t("assumptions", PSLRA, "(i)(1)(D) 'the assumptions underlying or relating to'", RECALLED),
)


def texts(terms: tuple[Term, ...]) -> tuple[str, ...]:
    """The phrases of ``terms`` (what :mod:`citewell.text.vocabulary` holds as strings)."""
    return tuple(term.text for term in terms)
