"""The standard vocabulary of financial statements, as data: statements, line items, ratios.

Every entry is general vocabulary of the field, from public sources, never from the
questions of an evaluation set:

- statements and their titles: the primary financial statements that SEC Regulation
  S-X requires of a registrant (balance sheet, Rule 5-02; statement of comprehensive
  income, Rule 5-03; cash flows, Rule 3-02; changes in stockholders' equity, Rule 3-04),
  under the titles registrants commonly give them (ASC 205, 220, 230);
- line items: the US-GAAP Financial Reporting Taxonomy elements of those statements
  (the element name is each item's key), captioned as statements commonly caption them,
  and the abbreviations analysts use for them (COGS, PP&E, SG&A, D&A, capex);
- ratios: textbook definitions of liquidity, solvency, profitability, efficiency and
  cash-flow ratios (CFA Institute, "Financial Analysis Techniques") in terms of those
  line items.

:mod:`citewell.domains.finance.statements` finds these phrases in questions, page headings and row
labels; :mod:`citewell.text.terms` builds its question expansions from them (an alias
also searches its captions, a ratio the captions of what it is computed from).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BALANCE_SHEET", "CASH_FLOW", "EQUITY", "INCOME_STATEMENT", "LINE_ITEMS", "RATIOS", "STATEMENTS",
           "LineItem", "Ratio"]

BALANCE_SHEET = "balance_sheet"
INCOME_STATEMENT = "income_statement"
CASH_FLOW = "cash_flow"
EQUITY = "equity"

#: Statement kind -> the titles a filing gives it (and a question may use).
STATEMENTS: dict[str, tuple[str, ...]] = {
    BALANCE_SHEET: ("balance sheet", "balance sheets", "statement of financial position",
                    "statements of financial position", "statement of financial condition",
                    "statements of financial condition", "statement of condition"),
    INCOME_STATEMENT: ("income statement", "income statements", "statement of income", "statements of income",
                       "statement of operations", "statements of operations", "statement of earnings",
                       "statements of earnings", "profit and loss", "p&l", "statement of comprehensive income",
                       "statements of comprehensive income", "statement of comprehensive loss",
                       "statements of comprehensive loss"),
    CASH_FLOW: ("statement of cash flows", "statements of cash flows", "cash flow statement",
                "cash flows statement", "statement of cash flow"),
    EQUITY: ("statement of stockholders equity", "statements of stockholders equity",
             "statement of shareholders equity", "statements of shareholders equity",
             "statement of changes in equity", "statements of changes in equity", "statement of equity",
             "statements of equity", "statements of changes in stockholders equity"),
}


@dataclass(frozen=True)
class LineItem:
    """One line item of a primary statement.

    ``key``: the US-GAAP taxonomy element it reports; ``statement``: the statement kind
    that presents it; ``labels``: how statements caption it (a row label containing one
    of them states the item); ``aliases``: further names analysts use in questions
    (abbreviations, plain-English names) that are too loose to identify a row;
    ``spent``: an expense or an outflow of cash, which statements may show in parentheses:
    a calculation takes its size (the US-GAAP element is a positive amount).
    """

    key: str
    statement: str
    labels: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    spent: bool = False


LINE_ITEMS: tuple[LineItem, ...] = (
    # balance sheet (Regulation S-X Rule 5-02 captions)
    LineItem("CashAndCashEquivalentsAtCarryingValue", BALANCE_SHEET,
             ("cash and cash equivalents", "cash and equivalents", "cash and cash items"), ("cash",)),
    LineItem("ShortTermInvestments", BALANCE_SHEET,
             ("short-term investments", "marketable securities", "short-term marketable securities"),
             ("short term investments",)),
    LineItem("AccountsReceivableNetCurrent", BALANCE_SHEET,
             ("accounts receivable", "trade receivables", "receivables net", "trade accounts receivable",
              "accounts and notes receivable"), ("receivables",)),
    LineItem("InventoryNet", BALANCE_SHEET, ("inventories", "inventory", "merchandise inventories")),
    LineItem("PrepaidExpenseAndOtherAssetsCurrent", BALANCE_SHEET,
             ("prepaid expenses and other current assets", "prepaid expenses")),
    LineItem("AssetsCurrent", BALANCE_SHEET, ("total current assets",), ("current assets",)),
    LineItem("PropertyPlantAndEquipmentNet", BALANCE_SHEET,
             ("property and equipment net", "property plant and equipment net", "net property and equipment",
              "net property plant and equipment", "property plant and equipment", "property and equipment"),
             ("pp&e", "fixed assets", "net pp&e", "ppne")),
    LineItem("OperatingLeaseRightOfUseAsset", BALANCE_SHEET, ("operating lease right-of-use assets",)),
    LineItem("Goodwill", BALANCE_SHEET, ("goodwill",)),
    LineItem("IntangibleAssetsNetExcludingGoodwill", BALANCE_SHEET,
             ("intangible assets net", "other intangible assets", "intangible assets")),
    LineItem("Assets", BALANCE_SHEET, ("total assets",)),
    LineItem("AccountsPayableCurrent", BALANCE_SHEET,
             ("accounts payable", "trade accounts payable", "accounts payable and accrued liabilities"),
             ("payables",)),
    LineItem("AccruedLiabilitiesCurrent", BALANCE_SHEET,
             ("accrued liabilities", "accrued expenses", "accrued expenses and other current liabilities")),
    LineItem("ContractWithCustomerLiabilityCurrent", BALANCE_SHEET,
             ("deferred revenue", "deferred revenues", "unearned revenue", "contract liabilities")),
    LineItem("DebtCurrent", BALANCE_SHEET,
             ("short-term debt", "short-term borrowings", "current portion of long-term debt",
              "current maturities of long-term debt", "notes payable", "commercial paper")),
    LineItem("LiabilitiesCurrent", BALANCE_SHEET, ("total current liabilities",), ("current liabilities",)),
    LineItem("LongTermDebtNoncurrent", BALANCE_SHEET, ("long-term debt", "long-term borrowings"), ("debt",)),
    LineItem("Liabilities", BALANCE_SHEET, ("total liabilities",)),
    LineItem("RetainedEarningsAccumulatedDeficit", BALANCE_SHEET, ("retained earnings", "accumulated deficit")),
    LineItem("TreasuryStockValue", BALANCE_SHEET, ("treasury stock",), spent=True),
    LineItem("StockholdersEquity", BALANCE_SHEET,
             ("total stockholders equity", "total shareholders equity", "total equity",
              "total shareowners equity"), ("shareholders equity", "stockholders equity", "book value")),
    LineItem("LiabilitiesAndStockholdersEquity", BALANCE_SHEET,
             ("total liabilities and stockholders equity", "total liabilities and shareholders equity",
              "total liabilities and equity")),
    # statement of comprehensive income (Rule 5-03 captions)
    LineItem("Revenues", INCOME_STATEMENT,
             ("total revenues", "total net revenues", "net revenues", "total net sales", "net sales", "revenues",
              "revenue", "sales", "net revenue", "total revenue", "operating revenues"),
             ("top line", "topline", "turnover")),
    LineItem("CostOfRevenue", INCOME_STATEMENT,
             ("cost of revenues", "cost of revenue", "cost of sales", "cost of goods sold", "cost of products sold",
              "total cost of revenue", "total cost of sales", "cost of merchandise sold"), ("cogs",), spent=True),
    LineItem("GrossProfit", INCOME_STATEMENT, ("gross profit", "gross margin")),
    LineItem("SellingGeneralAndAdministrativeExpense", INCOME_STATEMENT,
             ("selling general and administrative", "general and administrative", "selling and administrative"),
             ("sg&a",), spent=True),
    LineItem("ResearchAndDevelopmentExpense", INCOME_STATEMENT,
             ("research and development", "product development"), ("r&d",), spent=True),
    LineItem("LaborAndRelatedExpense", INCOME_STATEMENT,
             ("salaries and wages", "wages", "salaries and benefits", "compensation and benefits",
              "employee compensation", "labor and related expense"), spent=True),
    LineItem("CostsAndExpenses", INCOME_STATEMENT,
             ("total operating expenses", "total costs and expenses", "operating expenses"), spent=True),
    LineItem("OperatingIncomeLoss", INCOME_STATEMENT,
             ("operating income", "income from operations", "operating profit", "earnings from operations",
              "operating loss", "operating earnings"), ("ebit",)),
    LineItem("InterestExpense", INCOME_STATEMENT, ("interest expense", "interest expense net"), spent=True),
    LineItem("IncomeLossBeforeIncomeTaxes", INCOME_STATEMENT,
             ("income before income taxes", "earnings before income taxes", "income before provision for income taxes",
              "income before taxes", "pretax income", "income before income tax expense"),
             ("pre-tax income", "ebt")),
    LineItem("IncomeTaxExpenseBenefit", INCOME_STATEMENT,
             ("provision for income taxes", "income tax expense", "income taxes", "income tax provision",
              "provision for taxes on income"), spent=True),
    LineItem("NetIncomeLoss", INCOME_STATEMENT,
             ("net income", "net earnings", "net income attributable", "net loss", "net earnings attributable"),
             ("profit", "bottom line")),
    LineItem("EarningsPerShareDiluted", INCOME_STATEMENT,
             ("diluted earnings per share", "earnings per share diluted", "diluted net income per share"),
             ("eps",)),
    LineItem("WeightedAverageNumberOfDilutedSharesOutstanding", INCOME_STATEMENT,
             ("weighted-average shares outstanding", "weighted average shares", "diluted shares")),
    # statement of cash flows (ASC 230)
    LineItem("DepreciationDepletionAndAmortization", CASH_FLOW,
             ("depreciation and amortization", "depreciation amortization", "depreciation"), ("d&a",), spent=True),
    LineItem("ShareBasedCompensation", CASH_FLOW,
             ("stock-based compensation", "share-based compensation", "stock compensation"), spent=True),
    LineItem("NetCashProvidedByUsedInOperatingActivities", CASH_FLOW,
             ("net cash provided by operating activities", "net cash provided by used in operating activities",
              "cash provided by operating activities", "net cash from operating activities",
              "cash flows from operating activities", "cash provided by operations", "net cash used in operating activities",
              "operating activities"),
             ("operating cash flow", "cash from operations", "cash flow from operations", "cfo")),
    LineItem("PaymentsToAcquirePropertyPlantAndEquipment", CASH_FLOW,
             ("purchases of property and equipment", "purchases of property plant and equipment",
              "capital expenditures", "additions to property and equipment", "payments for property and equipment",
              "additions to property plant and equipment", "capital spending", "purchases of pp&e"),
             ("capex",), spent=True),
    LineItem("NetCashProvidedByUsedInInvestingActivities", CASH_FLOW,
             ("net cash used in investing activities", "net cash provided by investing activities",
              "cash flows from investing activities", "investing activities")),
    LineItem("NetCashProvidedByUsedInFinancingActivities", CASH_FLOW,
             ("net cash used in financing activities", "net cash provided by financing activities",
              "cash flows from financing activities", "financing activities")),
    LineItem("PaymentsOfDividends", CASH_FLOW,
             ("dividends paid", "cash dividends paid", "payments of dividends", "dividends"), (), spent=True),
    LineItem("PaymentsForRepurchaseOfCommonStock", CASH_FLOW,
             ("repurchases of common stock", "purchases of treasury stock", "repurchase of common stock",
              "share repurchases", "stock repurchases", "purchases of common stock"), ("buybacks",), spent=True),
    LineItem("ProceedsFromIssuanceOfLongTermDebt", CASH_FLOW,
             ("proceeds from issuance of long-term debt", "proceeds from borrowings", "proceeds from long-term debt")),
    LineItem("RepaymentsOfLongTermDebt", CASH_FLOW,
             ("repayments of long-term debt", "repayment of debt", "payments of long-term debt"), spent=True),
)

@dataclass(frozen=True)
class Ratio:
    """A ratio or derived figure: its names and the line items it is computed from."""

    names: tuple[str, ...]
    items: tuple[str, ...]


#: Textbook ratios (CFA Institute, "Financial Analysis Techniques"), by the line items
#: (:data:`LINE_ITEMS` keys) they are computed from.
RATIOS: tuple[Ratio, ...] = (
    Ratio(("current ratio", "working capital ratio"), ("AssetsCurrent", "LiabilitiesCurrent")),
    Ratio(("quick ratio", "acid test ratio", "acid-test ratio"),
          ("CashAndCashEquivalentsAtCarryingValue", "ShortTermInvestments", "AccountsReceivableNetCurrent",
           "LiabilitiesCurrent")),
    Ratio(("cash ratio",), ("CashAndCashEquivalentsAtCarryingValue", "ShortTermInvestments", "LiabilitiesCurrent")),
    Ratio(("working capital", "net working capital"), ("AssetsCurrent", "LiabilitiesCurrent")),
    Ratio(("liquidity",), ("CashAndCashEquivalentsAtCarryingValue", "AssetsCurrent", "LiabilitiesCurrent")),
    Ratio(("debt to equity", "debt-to-equity", "leverage", "debt ratio"),
          ("DebtCurrent", "LongTermDebtNoncurrent", "StockholdersEquity", "Assets")),
    Ratio(("gross margin", "gross profit margin"), ("GrossProfit", "Revenues", "CostOfRevenue")),
    Ratio(("operating margin", "operating profit margin", "ebit margin"), ("OperatingIncomeLoss", "Revenues")),
    Ratio(("net margin", "net profit margin", "profit margin"), ("NetIncomeLoss", "Revenues")),
    Ratio(("ebitda",), ("OperatingIncomeLoss", "DepreciationDepletionAndAmortization")),
    Ratio(("ebitda margin",), ("OperatingIncomeLoss", "DepreciationDepletionAndAmortization", "Revenues")),
    Ratio(("return on assets", "roa"), ("NetIncomeLoss", "Assets")),
    Ratio(("return on equity", "roe"), ("NetIncomeLoss", "StockholdersEquity")),
    Ratio(("asset turnover", "total asset turnover"), ("Revenues", "Assets")),
    Ratio(("fixed asset turnover",), ("Revenues", "PropertyPlantAndEquipmentNet")),
    Ratio(("inventory turnover",), ("CostOfRevenue", "InventoryNet")),
    Ratio(("days inventory outstanding", "dio", "days of inventory"), ("InventoryNet", "CostOfRevenue")),
    Ratio(("receivables turnover",), ("Revenues", "AccountsReceivableNetCurrent")),
    Ratio(("days sales outstanding", "dso"), ("AccountsReceivableNetCurrent", "Revenues")),
    Ratio(("payables turnover",), ("CostOfRevenue", "AccountsPayableCurrent")),
    Ratio(("days payable outstanding", "dpo"), ("AccountsPayableCurrent", "CostOfRevenue", "InventoryNet")),
    Ratio(("cash conversion cycle",), ("InventoryNet", "AccountsReceivableNetCurrent", "AccountsPayableCurrent",
                                       "Revenues", "CostOfRevenue")),
    Ratio(("interest coverage", "times interest earned"), ("OperatingIncomeLoss", "InterestExpense")),
    Ratio(("effective tax rate",), ("IncomeTaxExpenseBenefit", "IncomeLossBeforeIncomeTaxes")),
    Ratio(("free cash flow", "fcf", "free cashflow"),
          ("NetCashProvidedByUsedInOperatingActivities", "PaymentsToAcquirePropertyPlantAndEquipment")),
    Ratio(("free cash flow conversion", "fcf conversion", "cash conversion", "free cashflow conversion"),
          ("NetCashProvidedByUsedInOperatingActivities", "PaymentsToAcquirePropertyPlantAndEquipment",
           "NetIncomeLoss")),
    Ratio(("capital intensity", "capital intensive", "capex intensity"),
          ("PaymentsToAcquirePropertyPlantAndEquipment", "Revenues", "PropertyPlantAndEquipmentNet", "Assets")),
    Ratio(("dividend payout ratio", "payout ratio"), ("PaymentsOfDividends", "NetIncomeLoss")),
)
