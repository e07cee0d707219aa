"""Reranking of the BM25 pool: shared term analysis, concept coverage, priors, determinism."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from citewell import Engine
from citewell.models import Chunk, Passage, Resource
from citewell.retrieve.query import question_terms, search_terms
from citewell.retrieve.rerank import Reranker, resource_context, resource_priors
from citewell.domains.finance import FINANCE
from citewell.question import analyse
from citewell.question.naming import QuestionNames, names_source
from citewell.question.kinds import asks_for_figure
from citewell.text.terms import porter_stem, question_concepts, tokens

CASH_FLOW_ROWS = """\
(Millions) 2022 2021 2020
Cash Flows from Investing Activities
Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)
Proceeds from sale of PP&E and other assets 200 51 128
Net cash provided by (used in) investing activities (1,046) (1,317) (580)"""

SMALL_CORPUS = {
    "cashflow": ("table", CASH_FLOW_ROWS),
    # repeats the abbreviation, which mentions the line item; a question naming its caption wants the row
    "capex-outlook": ("paragraph", "We expect investment to stay disciplined; capex is a priority and capex "
                                   "guidance is given each year, capex capex."),
    "pension": ("paragraph", "Pension expense was 178 million dollars in 2022, and plan assets grew."),
    "sales": ("table", "Net sales $ 34,229 $ 35,355 $ 32,184\nCost of sales 19,232 18,795 16,605"),
}


def _passage(name: str, text_type: str, text: str, rank: int, *, resource: str = "r1") -> Passage:
    chunk = Chunk(id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"rerank/{name}")), resource_id=resource,
                  chunk_index=rank - 1, text=text, text_type=text_type,  # type: ignore[arg-type]
                  char_start=0, char_end=len(text), metadata={"source_type": "pdf", "page": rank})
    return Passage(chunk=chunk, resource_title="3M_2022_10K", resource_kind="pdf",  # type: ignore[arg-type]
                   rank=rank, score=10.0 / rank)


def _pool() -> list[Passage]:
    # BM25 order: the paragraph repeating "capex" first, the cash-flow row table last
    order = ["capex-outlook", "pension", "sales", "cashflow"]
    return [_passage(name, *SMALL_CORPUS[name], rank=i + 1) for i, name in enumerate(order)]


# --------------------------------------------------------------------------- terms


def test_porter_stems_like_fts5() -> None:
    assert porter_stem("cyclicality") == porter_stem("cyclical") == "cyclic"
    assert porter_stem("purchases") == porter_stem("purchased") == "purchas"
    assert [porter_stem(w) for w in ("caresses", "ponies", "relational", "generalization", "hopping")] == [
        "caress", "poni", "relat", "gener", "hop"]
    assert porter_stem("pp&e") == "pp&e" and porter_stem("10k") == "10k" and porter_stem("is") == "is"


def test_tokens_normalise_numbers_years_and_possessives() -> None:
    terms = [t.term for t in tokens("3M's FY22 capex was 1,749 (PP&E)") if t.content]
    assert terms == ["3m", "2022", "capex", "1749", "pp&e"]


def test_capex_concept_expands_to_the_cash_flow_line_item() -> None:
    [capex] = [c for c in question_concepts("What was the capex?", FINANCE.expansions) if c.expanded]
    row = frozenset(t.term for t in tokens("Purchases of property, plant and equipment") if t.content)
    assert capex.matches(row)
    assert not capex.matches(frozenset(t.term for t in tokens("Capital stock issued") if t.content))
    assert search_terms(analyse("capex?", domain=FINANCE))[:1] == ["capex"]
    assert {"purchases", "property", "equipment", "expenditures"} <= set(search_terms(analyse("capex?", domain=FINANCE)))
    assert search_terms(analyse("capex?")) == ["capex"]  # no domain pack: no expansions
    assert question_terms("capex?") == ["capex"]


def test_every_stage_reads_the_expansions_of_the_analysis_domain() -> None:
    analysis = analyse("What was the capex?", domain=FINANCE)
    assert analysis.expansions is FINANCE.expansions
    assert any(c.expanded for c in analysis.concepts)
    assert not any(c.expanded for c in analyse("What was the capex?").concepts)


# --------------------------------------------------------------------------- reranker


def test_capex_question_ranks_the_cash_flow_row_chunk_first() -> None:
    pool = _pool()
    counts = (100, {("capex",): 3, ("capital", "expenditures"): 2, ("purchases", "property", "plant", "equipment"): 2,
                    ("pp&e",): 4, ("additions", "property", "equipment"): 1, ("2022",): 40})
    top = Reranker().rerank(analyse("What was 3M's capex in FY2022 in USD millions?", domain=FINANCE), pool, k=3, counts=counts)
    assert top[0].chunk.text == CASH_FLOW_ROWS
    assert [p.rank for p in top] == [1, 2, 3]
    assert all(a.score >= b.score for a, b in zip(top, top[1:]))
    assert top[0].score == round(top[0].score, 9)


def test_reranker_without_counts_uses_pool_frequencies_and_is_deterministic() -> None:
    q = "How much did 3M spend on purchases of property, plant and equipment?"
    first = Reranker().rerank(analyse(q, domain=FINANCE), _pool(), k=4)
    again = Reranker().rerank(analyse(q, domain=FINANCE), list(reversed(_pool()))[::-1], k=4)
    assert [(p.chunk.id, p.rank, p.score) for p in first] == [(p.chunk.id, p.rank, p.score) for p in again]
    assert first[0].chunk.text == CASH_FLOW_ROWS
    assert Reranker().rerank(analyse(q, domain=FINANCE), [], k=4) == [] and Reranker().rerank(analyse(q, domain=FINANCE), _pool(), k=0) == []


def test_repeated_chunks_count_once() -> None:
    pool = _pool()
    top = Reranker().rerank(analyse("capex", domain=FINANCE), pool + pool, k=10)
    assert len(top) == len(pool) == len({p.chunk.id for p in top})


def test_table_bonus_only_for_figure_questions() -> None:
    assert asks_for_figure("How much was capex in 2022?")
    assert asks_for_figure("What is the quick ratio?", FINANCE.read_measure("What is the quick ratio?"))
    assert not asks_for_figure("Is the ratio of the current assets rising?".replace("ratio of the ", ""))
    assert not asks_for_figure("Who are the primary customers of Boeing?")


def _resource(title: str, **metadata: object) -> Resource:
    return Resource(id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"rerank/res/{title}")), workspace_id="w", title=title,
                    file_name=title + ".pdf", kind="pdf", media_type="application/pdf", sha256=title,
                    size_bytes=1, status="ready", metadata=metadata)


def test_resource_priors_follow_names_tickers_and_years() -> None:
    mgm = _resource("MGMRESORTS_2022Q4_EARNINGS", company_names=["MGM Resorts"], tickers=["MGM"], fiscal_year=2022,
                    fiscal_quarter=4)
    bby = _resource("BESTBUY_2024Q2_10Q", company_names=["Best Buy"], tickers=["BBY"], fiscal_year=2024)
    ba = _resource("BOEING_2022_10K", company_names=["Boeing"], tickers=["BA"], fiscal_year=2022)
    priors = resource_priors(QuestionNames.of("What was MGM's interest coverage in FY2022?"), [mgm, bby, ba])
    assert priors == {mgm.id: 1.5}
    assert resource_priors(QuestionNames.of("Which Best Buy category performed best?"), [mgm, bby, ba]) == {bby.id: 1.0}
    assert resource_priors(QuestionNames.of("Is Boeing cyclical?"), [mgm, bby, ba]) == {ba.id: 1.0}
    # a ticker must be written like a name: "ba" inside a sentence is not Boeing
    assert resource_priors(QuestionNames.of("what is the best way to ba careful"), [ba]) == {}
    assert {"mgm", "resort", "2022", "q4"} <= resource_context(mgm)


# --------------------------------------------------------------------------- through the store


@pytest.fixture
def filings(engine: Engine, tmp_path: Path) -> Engine:
    corpus = tmp_path / "filings"
    corpus.mkdir()
    docs = {
        "mmm.txt": ("3M", "MMM", "Purchases of property, plant and equipment were 1,749 million dollars in 2022.\n\n"
                                 "Pension expense was 178 million dollars in 2022.\n"),
        "pep.txt": ("PepsiCo", "PEP", "PepsiCo net revenue grew in 2022.\n\nPepsiCo pension plans were amended.\n"),
    }
    rows = []
    for name, (company, ticker, text) in docs.items():
        (corpus / name).write_text(text, encoding="utf-8")
        rows.append({"path": name, "company": company, "ticker": ticker, "doc_period": 2022})
    (corpus / "citewell-manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert not engine.sync(corpus).failed
    return engine


def test_expansions_find_a_passage_that_never_says_capex(filings: Engine) -> None:
    top = filings.retrieve("What was 3M's capex in FY2022?", k=3)
    assert top[0].resource_title == "mmm"
    assert top[0].chunk.text.startswith("Purchases of property, plant and equipment")
    assert [p.rank for p in top] == list(range(1, len(top) + 1))


def test_a_named_company_outranks_the_other_documents(filings: Engine) -> None:
    top = filings.retrieve("How did PepsiCo pension plans change?", k=2)
    assert top[0].resource_title == "pep"
    same = filings.retrieve("How did PepsiCo pension plans change?", k=2)
    assert [(p.chunk.id, p.score) for p in top] == [(p.chunk.id, p.score) for p in same]


def test_store_term_counts(filings: Engine) -> None:
    n, counts = filings.store.term_counts(filings.workspace_id, [["pension"], ["property", "plant"], ["zzz"], []])
    assert n == 2  # one chunk per short text file
    assert counts == [2, 1, 0, 0]


def test_identical_passages_from_two_files_count_once() -> None:
    from citewell.models import Chunk, Passage
    from citewell.retrieve.rerank import Reranker

    def p(cid: str, rid: str, text: str, score: float) -> Passage:
        return Passage(chunk=Chunk(id=cid, resource_id=rid, chunk_index=0, text=text, text_type="transcript"),
                       resource_title=rid, resource_kind="transcript", score=score)

    pool = [p("a", "talk.vtt", "Deep learning changed OCR.", 3.0), p("b", "talk.srt", "Deep learning  changed\nOCR.", 2.9),
            p("c", "other", "OCR engines were rule based.", 1.0)]
    ranked = Reranker().rerank(analyse("How did deep learning change OCR?", domain=FINANCE), pool, k=5)
    assert [x.chunk.id for x in ranked] == ["a", "c"]


def test_resource_priors_name_what_names_source_names_of_each_resource() -> None:
    """The indexed priors (NamedSources) are those of names_source asked of every resource,
    in resource order; a tuple's index is kept until another tuple (a new store generation)."""
    resources = (
        _resource("MGMRESORTS_2022Q4_EARNINGS", company_names=["MGM Resorts"], tickers=["MGM"], fiscal_year=2022),
        _resource("BESTBUY_2024Q2_10Q", company_names=["Best Buy"], tickers=["BBY"], fiscal_year=2024),
        _resource("BOEING_2022_10K", company_names=["Boeing", "The Boeing Company"], tickers=["BA"], fiscal_year=2022),
        _resource("3M_2023Q2_10Q", company_names=["3M Company"], tickers="MMM", fiscal_year="2023"),
        _resource("AMCOR_2023_10K", company_names=None, tickers=None),
        _resource("Johnson & Johnson annual report", company_names=["Johnson & Johnson"]),
        _resource("Inc report 2022", company_names=["", "Inc"]),
    )
    questions = ["What was MGM's interest coverage in FY2022?", "Which Best Buy category performed best?",
                 "Is Boeing cyclical?", "Does 3M pay a dividend in 2023?", "Does M pay?", "What did AMCOR report?",
                 "How did Johnson & Johnson do?", "What did the Boeing Company report in 2022?", "", "Inc report?",
                 "what is the best way to ba careful"]
    for question in questions:
        asked = QuestionNames.of(question)
        expected = {}
        for r in resources:
            meta = r.metadata or {}
            if names_source(asked, r.title, meta.get("tickers") or [], meta.get("company_names") or []):
                year = meta.get("fiscal_year")
                expected[r.id] = 1.5 if year is not None and str(year) in asked.years else 1.0
        priors = resource_priors(QuestionNames.of(question), resources)
        assert priors == expected and list(priors) == list(expected), question
    assert resource_priors(QuestionNames.of("Does 3M pay a dividend in 2023?"), resources) == {resources[3].id: 1.5}
    assert resource_priors(QuestionNames.of("Does M pay?"), resources) == {resources[3].id: 1.0}  # "MMM" iterated: its letters
    assert resource_priors(QuestionNames.of("What did the Boeing Company report in 2022?"), resources) == {resources[2].id: 1.5}
    assert resource_priors(QuestionNames.of("How did Johnson & Johnson do?"), resources) == {resources[5].id: 1.0}
    assert resource_priors(QuestionNames.of("Is Boeing cyclical?"), resources[:2]) == {}  # another tuple: its own index
    assert resource_priors(QuestionNames.of("Is Boeing cyclical?"), list(resources)) == {resources[2].id: 1.0}
