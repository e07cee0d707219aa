"""The question analysis (citewell.question): read once per turn, read by every stage; the
domain pack applies only to a scope that holds its documents; abstention in one place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citewell import Engine
from citewell.domains import active_domain, domain_of_passages
from citewell.domains.finance import FINANCE
from citewell.models import Resource
from citewell.question import analyse
from citewell.question.names import lookup_words, mentions, name_parts, question_names

from .conftest import CORPUS


def test_names_subjects_and_spacing() -> None:
    analysis = analyse("What was SambaNova's revenue, and how does Best Buy compare?")
    names = {n.text: n for n in analysis.names}
    assert set(names) == {"SambaNova", "Best Buy"} and names["SambaNova"].subject
    assert name_parts("SambaNova") == ["Samba", "Nova"] and name_parts("Coca-Cola") == ["Coca", "Cola"]
    assert lookup_words("Samba Nova") == ["Samba", "Nova", "SambaNova"]
    # written run together, spaced or hyphenated: one name, both ways
    assert mentions("Chips from Samba Nova shipped.", names["SambaNova"])
    assert mentions("SambaNova shipped.", question_names("Did Samba Nova ship?")[0])
    assert mentions("BEST-BUY stores", names["Best Buy"])
    assert not mentions("the best buying season", names["Best Buy"])


def test_periods_are_read_once_in_every_form() -> None:
    p = analyse("What was the change from Q4 FY23 to a year earlier, as of December 31, 2022?").periods
    assert p.years == {2022, 2023} and p.quarters == {4} and (12, 31) in p.dates
    assert p.relative and p.partial and not p.ahead
    assert analyse("What capex does 3M expect for 2025?").periods.ahead
    assert analyse("Net sales in fiscal '22 and FY2021?").years == {2021, 2022}


@pytest.mark.parametrize("question, kind", [
    ("Why did operating margin fall in 2022?", "reason"),
    ("What was the change in net sales between 2021 and 2022?", "calculation"),
    ("How many employees did Acme have?", "figure"),
    ("When will the plant open?", "date"),
    ("Who is the chief executive officer?", "person"),
    ("Does Acme pay a dividend?", "yes_no"),
    ("List the risks the company names.", "list"),
    ("Tell me about the plant.", "passage"),
])
def test_the_kind_of_answer_wanted(question: str, kind: str) -> None:
    assert analyse(question).kind.name == kind


def test_the_domain_pack_reads_measure_and_reporting_scope() -> None:
    finance = analyse("What was net income attributable to shareholders in 2022?", domain=FINANCE)
    assert finance.domain is FINANCE and "NetIncomeLoss" in finance.measure.items
    assert finance.scope.kind == "attributable"
    segment = analyse("What were net sales of the Flexibles segment in 2023?", domain=FINANCE)
    assert (segment.scope.kind, segment.scope.name) == ("segment", "Flexibles")
    assert analyse("What was revenue in 2022?", domain=FINANCE).scope.kind == "consolidated"
    # without a pack: no measure, no scope, no expansions
    plain = analyse("What was the capex in 2022?")
    assert plain.domain is None and plain.measure is None and plain.scope is None
    assert not any(c.expanded for c in plain.concepts)
    assert any(c.expanded for c in analyse("What was the capex in 2022?", domain=FINANCE).concepts)


def test_followup_carries_the_previous_subject() -> None:
    analysis = analyse("And in 2021?", previous="What were Acme's net sales in 2022?")
    assert analysis.followup.refers_back and "acme" in analysis.query.lower() and analysis.years == {2021}
    assert analyse("Who is the head barista?", previous="What were Acme's net sales?").query == \
        "Who is the head barista?"


def _resource(title: str, file_name: str, **metadata: object) -> Resource:
    return Resource(id=title, workspace_id="w", title=title, kind="pdf", file_name=file_name, sha256="0" * 64,
                    size_bytes=1, status="ready", metadata=metadata)


def test_the_finance_pack_applies_only_to_filings() -> None:
    assert active_domain([_resource("3M_2022_10K", "3M_2022_10K.pdf")]) is FINANCE
    assert active_domain([_resource("report", "report.pdf", tickers=["ACME"])]) is FINANCE
    assert active_domain([_resource("twiml-episode", "twiml-episode.vtt"),
                          _resource("posts", "stocktwits_2022-06.jsonl")]) is None


def test_a_corpus_without_filings_is_read_without_the_finance_pack(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("Our capex plans were discussed. Purchases of property rose.\n", encoding="utf-8")
    with Engine(tmp_path / "store.sqlite", mode="lexical") as engine:
        engine.sync(docs)
        turn = engine._prepare("What was the capex?", k=5, filters=None, corpus=None, offsets="codepoint",
                               chat_id=None, policy="flag", image=None, image_url=None, user_id=None,
                               generator=None)
        passages = engine._retrieve_for(turn, sync=False, manifests=(), progress=None)
        assert turn.reading.analysis is not None and turn.reading.analysis.domain is None
        assert domain_of_passages(passages) is None


def test_the_question_is_analysed_once_per_ask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Engine.ask analyses the question once (retrieval), and the pipeline reads that analysis."""
    import citewell.answer.retrieval as retrieval

    calls: list[str] = []
    real = retrieval.analyse

    def counted(question: str, **kwargs: object):  # type: ignore[no-untyped-def]
        calls.append(question)
        return real(question, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(retrieval, "analyse", counted)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "3M_2022_10K.pdf").write_bytes((CORPUS / "pdf" / "3M_2022_10K.pdf").read_bytes())
    with Engine(tmp_path / "store.sqlite", mode="lexical") as engine:
        message = engine.ask("What was 3M's capital expenditure in FY2022?", corpus=docs)
    assert calls == ["What was 3M's capital expenditure in FY2022?"]
    assert "1,749" in message.text and message.references[0].metadata["page"] == 52


def test_abstention_states_its_true_reason(tmp_path: Path) -> None:
    """A subject the sources never mention: the scope check abstains (reason entity); names
    the sources hold but the retrieved passages do not mention: reason passages."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "acme_notes.txt").write_text("Acme opened a plant in Ohio in 2022.\n", encoding="utf-8")
    (docs / "posts.jsonl").write_text(json.dumps({"source": "x", "id": "1", "text": "Walmart is cheap."}) + "\n",
                                      encoding="utf-8")
    with Engine(tmp_path / "store.sqlite", mode="lexical") as engine:
        engine.sync(docs)
        absent = engine.ask("What did Costco open in 2022?")
        [notice] = [w for w in absent.warnings if w.code == "NOT_IN_SOURCES"]
        assert absent.text == "Not in the sources: none of them mentions Costco." and notice.reason == "entity"
        assert not any(r.citation for r in absent.references)


def test_measures_and_periods_written_in_capitals_are_no_subjects() -> None:
    """COGS, CapEx, EPS, Gross Margin (the finance pack reads them whole), YoY and month
    names are what a question asks or when, never whom: no entity to abstain on."""
    for question in ("What was COGS in 2022?", "What was CapEx in 2022?", "What was the EPS in 2022?",
                     "What was the Gross Margin in 2022?", "What was the YoY change in net sales?",
                     "What were net sales as of December 31, 2022?"):
        analysis = analyse(question, domain=FINANCE)
        assert analysis.names == () and analysis.name_words == (), question
    # without the pack a capitalised measure is still a name; a company stays one with it
    assert [n.text for n in analyse("What was COGS in 2022?").names] == ["COGS"]
    assert [n.text for n in analyse("What was Acme's COGS in 2022?", domain=FINANCE).names] == ["Acme"]


def test_a_name_in_any_spelling_or_in_capitals_is_answered(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("SambaNova Systems raised $676 million in 2021. Best Buy opened stores.\n",
                                    encoding="utf-8")
    with Engine(tmp_path / "store.sqlite", mode="lexical") as engine:
        engine.sync(docs)
        for question in ("How much did Samba Nova raise?", "How much did SAMBANOVA raise?",
                         "How much did Samba-Nova raise?"):
            message = engine.ask(question)
            assert "$676 million" in message.text and message.references[0].citation == 1, question
        assert "Best Buy opened stores" in engine.ask("Where did BestBuy open stores?").text
        many = engine.ask("What did Ferrari, Lotus, Alfa Romeo, Fiat, Lancia and Maserati sell?")
        assert many.text == "Not in the sources: none of them mentions Ferrari, Lotus, Alfa Romeo, Fiat, Lancia or 1 more."
