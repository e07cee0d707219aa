"""The finance domain pack's vocabulary: every entry has a source, and the entries that
had none are gone (citewell.domains.finance.vocabulary, REMOVED.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from citewell.domains.finance import vocabulary as v

ITEM_KEYS = {item.key for item in v.LINE_ITEMS}


def _all_terms() -> list[v.Term]:
    terms = [t for titles in v.STATEMENTS.values() for t in titles]
    terms += [t for item in v.LINE_ITEMS for t in item.labels + item.aliases]
    terms += [t for ratio in v.RATIOS for t in ratio.names]
    terms += list(v.QUESTION_WORDS)
    return terms


def _all_texts() -> set[str]:
    return {t.text for t in _all_terms()}


def test_every_term_names_a_known_source_and_check():
    terms = _all_terms()
    assert terms
    for term in terms:
        assert isinstance(term, v.Term)
        assert term.source in v.SOURCES, term
        assert term.checked in v.CHECKED, term
        assert term.text == term.text.strip().lower() and term.text, term


def test_sources_are_complete_records():
    for sid, source in v.SOURCES.items():
        assert source.title and source.publisher and source.used and source.checked, sid
        assert source.url.startswith("https://") or source.url.startswith("http://"), sid


def test_every_source_is_used():
    assert {t.source for t in _all_terms()} == set(v.SOURCES)


def test_statement_kinds_are_the_current_constants():
    assert set(v.STATEMENTS) == {v.BALANCE_SHEET, v.INCOME_STATEMENT, v.CASH_FLOW, v.EQUITY}
    assert all(item.statement in v.STATEMENTS for item in v.LINE_ITEMS)


def test_line_item_keys_are_unique_elements_with_a_label():
    assert len(ITEM_KEYS) == len(v.LINE_ITEMS)
    for item in v.LINE_ITEMS:
        assert item.key[:1].isupper() and item.key.isalnum(), item.key
        assert item.labels, item.key


def test_every_ratio_is_computed_from_line_items():
    for ratio in v.RATIOS:
        assert ratio.names and ratio.items
        assert set(ratio.items) <= ITEM_KEYS, ratio


def test_no_duplicate_texts_within_an_entry():
    for item in v.LINE_ITEMS:
        texts = [t.text for t in item.labels + item.aliases]
        assert len(texts) == len(set(texts)), item.key
    for ratio in v.RATIOS:
        texts = [t.text for t in ratio.names]
        assert len(texts) == len(set(texts)), ratio
    for kind, titles in v.STATEMENTS.items():
        texts = [t.text for t in titles]
        assert len(texts) == len(set(texts)), kind
    texts = [t.text for t in v.QUESTION_WORDS]
    assert len(texts) == len(set(texts))


def test_ratio_names_are_unique_across_ratios():
    names = [t.text for ratio in v.RATIOS for t in ratio.names]
    assert len(names) == len(set(names))


# The suspects named by the issue, and the other entries that no public source was found
# for (REMOVED.md): none may come back without a source.
REMOVED_SUSPECTS = (
    "liquidity", "free cashflow", "capital intensive", "topline", "wages", "merchandise inventories",
    "spend", "forecast", "based", "using", "shown", "details", "detail", "response", "question", "relying",
    "healthy", "reasonably", "profile", "useful", "metric", "relevant",
)
REMOVED_OTHERS = (
    "statement of condition", "statement of earnings", "statements of earnings", "ppne", "other intangible assets",
    "accrued expenses", "accrued expenses and other current liabilities", "unearned revenue", "long-term borrowings",
    "total shareowners equity", "turnover", "cost of merchandise sold", "selling and administrative",
    "product development", "salaries and benefits", "compensation and benefits", "employee compensation",
    "earnings from operations", "operating earnings", "income before provision for income taxes",
    "provision for income taxes", "income tax provision", "provision for taxes on income", "net earnings",
    "net earnings attributable", "profit", "diluted net income per share", "cash provided by operations",
    "additions to property and equipment", "additions to property plant and equipment", "capital spending",
    "cash dividends paid", "share repurchases", "buybacks", "leverage", "debt ratio",
    "ebit margin", "ebitda margin", "free cash flow conversion", "fcf conversion", "cash conversion",
    "free cashflow conversion", "capital intensity", "capex intensity",
)


@pytest.mark.parametrize("text", REMOVED_SUSPECTS)
def test_removed_suspect_is_absent(text):
    assert text not in _all_texts()


@pytest.mark.parametrize("text", REMOVED_OTHERS)
def test_removed_unsourced_entry_is_absent(text):
    assert text not in _all_texts()


def test_issue_suspects_by_name():
    texts = _all_texts()
    assert "liquidity" not in texts
    assert "free cashflow" not in texts
    assert "capital intensive" not in texts
    assert "topline" not in texts
    assert "wages" not in texts
    assert "merchandise inventories" not in texts
    assert "spend" not in texts
    assert "forecast" not in texts
    for word in ["based", "using", "shown", "details", "detail", "response", "question", "relying"]:
        assert word not in texts
    for word in ("healthy", "reasonably", "profile", "useful", "metric", "relevant"):
        assert word not in texts


def test_removed_list_names_every_suspect():
    removed = (Path(v.__file__).parent / "REMOVED.md").read_text(encoding="utf-8")
    for text in REMOVED_SUSPECTS + REMOVED_OTHERS:
        assert f"`{text}`" in removed, text


def test_forward_words_are_only_the_statutes():
    assert {t.source for t in v.QUESTION_WORDS} == {"pslra-safe-harbor"}
    texts = {t.text for t in v.QUESTION_WORDS}
    for issuer_word in ("anticipate", "believe", "expect", "intend", "target", "guidance", "outlook", "will"):
        assert issuer_word not in texts


def test_first_names_the_calculator_keys_by_are_kept():
    firsts = {ratio.names[0].text for ratio in v.RATIOS}
    for name in ("current ratio", "quick ratio", "cash ratio", "working capital", "gross margin", "operating margin",
                 "net margin", "ebitda", "return on assets", "return on equity", "free cash flow",
                 "days sales outstanding", "interest coverage", "effective tax rate", "dividend payout ratio"):
        assert name in firsts


def test_texts_helper():
    item = next(i for i in v.LINE_ITEMS if i.key == "Goodwill")
    assert v.texts(item.labels) == ("goodwill",)
