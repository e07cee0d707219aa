"""BM25 retrieval: hostile questions never raise; filters follow docs/architecture.md "Filters"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citewell import Engine, FilterError
from citewell.retrieve import parse_filters, question_terms
from citewell.store.sqlite import fts_query

DOCS = [
    {"path": "mmm.txt", "ticker": "MMM", "company": "3M", "doc_type": "10k", "doc_period": 2022,
     "gics_sector": "Industrials", "text": "3M's capital expenditure in 2022 was 1,749 million dollars."},
    {"path": "pep.txt", "ticker": "PEP", "company": "PepsiCo", "doc_type": "8k", "doc_period": 2023,
     "gics_sector": "Consumer Staples", "text": "PepsiCo capital expenditure guidance NEAR term: AND not * stable."},
    {"path": "amcr.txt", "tickers": ["AMCR", "AMC"], "company": "Amcor", "doc_type": "Earnings", "doc_period": 2023,
     "fiscal_quarter": "Q4", "calendar_date": "2023-08-15T00:00:00Z", "publisher": "Amcor plc",
     "text": "Amcor capital expenditure for the fourth quarter rose."},
]
POSTS = [
    {"source": "reddit", "id": "t3_x1", "text": "capital expenditure memes", "created_at": "2022-01-18T10:00:00Z"},
    {"source": "stocktwits", "id": "9", "text": "capital expenditure is boring", "created_at": "2022-07-01T10:00:00Z"},
]


@pytest.fixture
def loaded(engine: Engine, tmp_path: Path) -> Engine:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rows = []
    for doc in DOCS:
        (corpus / doc["path"]).write_text(doc["text"] + "\n", encoding="utf-8")
        rows.append({k: v for k, v in doc.items() if k != "text"})
    (corpus / "citewell-manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (corpus / "posts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in POSTS), encoding="utf-8")
    report = engine.sync(corpus)
    assert not report.failed
    return engine


HOSTILE = ["3M's capex?", 'say "hello', "a - b", "key: value", "AND", "NOT capex", "x NEAR y", "capex*",
           "(((", ")", "^", "col:umn", '"', "''", "-", "*", "NEAR(capex, 2)", "{a b}", "+", "🙂", "",
           "   ", "ÀÉÎ capex", "a\x00b", "SELECT * FROM chunks; --"]


@pytest.mark.parametrize("question", HOSTILE)
def test_hostile_questions_never_raise(loaded: Engine, question: str) -> None:
    passages = loaded.retrieve(question or " ", k=5)
    assert isinstance(passages, list)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=60))
def test_any_text_is_a_safe_question(loaded: Engine, question: str) -> None:
    for passage in loaded.retrieve(question, k=3):
        assert passage.rank >= 1


def test_terms_are_quoted_for_fts() -> None:
    # FY2022 is read as the year a filing's text writes: 2022
    assert question_terms("What was 3M's CapEx in FY2022?") == ["3m", "capex", "2022"]
    # and so is "FY 2022" (FY alone is a marker, not a word to search)
    assert question_terms("What was 3M's CapEx in FY 2022?") == ["3m", "capex", "2022"]
    # two digits too, with or without a space; the nineties stay in their century
    assert question_terms("Amazon's net sales in FY 17?") == question_terms("Amazon's net sales in FY17?")
    assert "2017" in question_terms("Amazon's net sales in FY 17?")
    assert "1999" in question_terms("Apple's revenue in FY99") and "2068" in question_terms("FY68 sales")
    assert question_terms("the 17 stores") == ["17", "stores"]  # a bare number stays a number
    assert fts_query(['say"x', "near"]) == '"say""x" OR "near"'


def test_generic_words_have_no_expansions_without_a_domain_pack() -> None:
    """Everyday words are read as they are: an expansion ("forecasting" also finds "expects"
    and "plans") needs a public source, and only a domain pack's vocabulary has one."""
    from citewell.domains.finance import FINANCE
    from citewell.text.terms import content_terms, question_concepts

    for expansions in ((), (FINANCE.expansions,)):
        forecast = next(c for c in question_concepts("What production rates is Boeing forecasting for 2023?",
                                                     *expansions) if c.head == "forecast")
        assert not forecast.expanded
        assert not forecast.matches(content_terms("We plan to gradually increase 737 production rates."))


def test_bm25_ranks_the_matching_document_first(loaded: Engine) -> None:
    top = loaded.retrieve("What was 3M's capital expenditure in 2022?", k=5)
    assert top[0].resource_title == "mmm" and top[0].rank == 1
    assert [p.rank for p in top] == list(range(1, len(top) + 1))
    assert all(a.score >= b.score for a, b in zip(top, top[1:]))


def _titles(engine: Engine, *filters: str) -> set[str]:
    passages = engine.retrieve("capital expenditure", k=20, filters=list(filters))
    return {p.resource_title if p.resource_kind != "post" else p.chunk.metadata["id"] for p in passages}


def test_filters_by_key(loaded: Engine) -> None:
    assert _titles(loaded, "ticker=mmm") == {"mmm"}
    assert _titles(loaded, "tickers=AMC") == {"amcr"}  # a list field matches when it contains the value
    assert _titles(loaded, "ticker=MMM", "ticker=PEP") == {"mmm", "pep"}  # repeated key: any
    assert _titles(loaded, "ticker=MMM", "fiscal_year=2023") == set()  # different keys: all
    assert _titles(loaded, "company_names=pepsico") == {"pep"}
    assert _titles(loaded, "document_category=filing") == {"mmm", "pep"}
    assert _titles(loaded, "document_subcategory=10-K") == {"mmm"}
    assert _titles(loaded, "document_category=corporate_data", "document_subcategory=earning") == {"amcr"}
    assert _titles(loaded, "fiscal_quarter=4") == _titles(loaded, "fiscal_quarter=Q4") == {"amcr"}
    assert _titles(loaded, "sector=industrials") == {"mmm"}
    assert _titles(loaded, "publisher=AMCOR PLC") == {"amcr"}
    assert _titles(loaded, "calendar_date>=2023-01-01") == {"amcr"}
    assert _titles(loaded, "calendar_date<=2023-01-01") == set()
    assert _titles(loaded, "calendar_date=2023-08-15") == {"amcr"}
    assert _titles(loaded, "calendar_date<=2023-08-15") == {"amcr"}  # a date bound includes its whole day
    assert _titles(loaded, "calendar_date<=2023-08") == {"amcr"}
    assert _titles(loaded, "calendar_date<=2023-08-14") == set()
    assert _titles(loaded, "document_name=pep") == _titles(loaded, "document_name=PEP.txt") == {"pep"}
    assert _titles(loaded, "kind=post") == {"t3_x1", "9"}
    assert _titles(loaded, "source=Reddit") == {"t3_x1"}
    assert _titles(loaded, "created_at>=2022-06-01") == {"9"}
    assert _titles(loaded, "created_at<=2022-06-01") == {"t3_x1"}
    assert _titles(loaded, "created_at<=2022-07-01") == {"t3_x1", "9"}


def test_filter_by_resource_id(loaded: Engine) -> None:
    mmm = next(r for r in loaded.resources() if r.title == "mmm")
    assert _titles(loaded, f"resource_id={mmm.id}") == {"mmm"}


@pytest.mark.parametrize("bad", ["colour=red", "ticker", "fiscal_quarter=5", "fiscal_quarter=Q0", "kind=video",
                                 "fiscal_year=twenty", "calendar_date>=yesterday", "calendar_date>=2022-13-45",
                                 "created_at<=2022-02-30", "ticker>=A", "=x",
                                 "calendar_date>=2020-01-01 ", "ticker="])
def test_bad_filters_raise_invalid_filter(bad: str) -> None:
    if bad == "calendar_date>=2020-01-01 ":
        assert parse_filters([bad])[0].values == ("2020-01-01",)  # surrounding space is fine
        return
    with pytest.raises(FilterError) as info:
        parse_filters([bad])
    assert info.value.code == "INVALID_FILTER"


def test_filters_from_a_mapping() -> None:
    conditions = parse_filters({"ticker": ["MMM", "pep"], "fiscal_quarter": "Q2"})
    assert [(c.key, c.op, c.values) for c in conditions] == [("tickers", "eq", ("mmm", "pep")),
                                                             ("fiscal_quarter", "eq", ("2",))]


def test_workspaces_never_see_each_other(store_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "a.txt").write_text("Quarterly revenue was 12 million.\n", encoding="utf-8")
    with Engine(store_path, workspace="alpha") as alpha:
        alpha.sync(folder)
        chunk_id = alpha.retrieve("revenue", k=1)[0].chunk.id
    with Engine(store_path, workspace="beta") as beta:
        assert beta.retrieve("revenue", k=5) == []
        assert beta.resources() == []
        assert beta.store.chunks(beta.workspace_id, [chunk_id]) == {}
        message = beta.cite(f"Revenue was 12 million [x](chunk:{chunk_id}).")
        assert message.references == [] and message.warnings[0].code == "unknown_target"


def test_filters_that_match_nothing_say_so(loaded: Engine) -> None:
    message = loaded.ask("capital expenditure", filters=["document_subcategory=earnings"])  # the value is 'earning'
    assert message.references == []
    assert [w.code for w in message.warnings] == ["NO_MATCHING_RESOURCES"]
    assert "filters" in message.warnings[0].message
    answered = loaded.ask("capital expenditure", filters=["document_subcategory=earning"])
    assert answered.references and answered.warnings == []
    unmatched = loaded.ask("zyzzyva quokka", filters=["document_subcategory=earning"])
    # the filter matched: the question did not (its topic is in no source: the scope check says so)
    assert unmatched.references == [] and [w.code for w in unmatched.warnings] == ["NOT_IN_SOURCES"]


def test_document_name_matches_every_present_file_name(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a_b%.txt").write_text("Gizmo output alpha was strong.\n", encoding="utf-8")
    (folder / "copy.txt").write_text("Gizmo output alpha was strong.\n", encoding="utf-8")  # same bytes
    engine.sync(folder)
    assert len(engine.resources()) == 1
    for name in ("a_b%.txt", "copy.txt", "COPY.TXT"):
        assert engine.retrieve("gizmo output", filters=[f"document_name={name}"]), name
    assert engine.retrieve("gizmo output", filters=["document_name=a_bx.txt"]) == []  # _ is not a wildcard
    (folder / "copy.txt").unlink()
    engine.sync(folder)
    assert engine.retrieve("gizmo output", filters=["document_name=copy.txt"]) == []


def test_a_mapping_value_may_be_a_bound() -> None:
    from citewell.retrieve.filters import parse_filters

    as_mapping = parse_filters({"fiscal_year": [">=2021", "<= 2022"], "ticker": "MMM"})
    as_strings = parse_filters(["fiscal_year>=2021", "fiscal_year<=2022", "ticker=MMM"])
    assert as_mapping == as_strings
    assert [(c.key, c.op, c.values) for c in as_mapping] == [
        ("fiscal_year", "ge", ("2021",)), ("fiscal_year", "le", ("2022",)), ("tickers", "eq", ("mmm",))]
