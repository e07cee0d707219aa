"""Clarification when a question names no subject over several companies' filings, and
follow-ups that keep the subject and ask something new ("And why?", "What about 2021?"),
on real filings of ../shared/corpus."""

from __future__ import annotations


import pytest

from citewell.models import Resource
from citewell.question import analyse
from citewell.scope.clarify import entity_of

from .conftest import lexical_engine

FILINGS = ("BOEING_2022_10K.pdf", "3M_2022_10K.pdf")


@pytest.fixture(scope="module")
def filings(tmp_path_factory: pytest.TempPathFactory):
    """An engine (lexical) over two companies' 10-Ks: (engine, folder)."""
    with lexical_engine(tmp_path_factory.mktemp("clarify"), *(f"pdf/{name}" for name in FILINGS)) as found:
        yield found


def test_a_question_without_a_subject_over_two_companies_asks_which(filings) -> None:
    engine, docs = filings
    message = engine.ask("How did revenue change in 2022?", corpus=docs, sync=False)
    assert message.text == "Which company do you mean? The sources cover 3M or BOEING."
    [warning] = [w for w in message.warnings if w.code == "CLARIFICATION_NEEDED"]
    assert warning.model_extra["candidates"] == ["3M", "BOEING"]
    assert not any(r.citation for r in message.references)
    # naming one (or filtering to one document) answers
    named = engine.ask("How did Boeing's revenue change in 2022?", corpus=docs, sync=False)
    assert not any(w.code == "CLARIFICATION_NEEDED" for w in named.warnings) and "66,608" in named.text
    one = engine.ask("How did revenue change in 2022?", corpus=docs, sync=False,
                     filters=["document_name=BOEING_2022_10K"])
    assert not any(w.code == "CLARIFICATION_NEEDED" for w in one.warnings)
    # a question that asks for no figure of a company is answered as it is
    plain = engine.ask("What is a reach-forward loss?", corpus=docs, sync=False)
    assert not any(w.code == "CLARIFICATION_NEEDED" for w in plain.warnings)


def test_the_entity_of_a_filing_comes_from_its_metadata_or_its_title() -> None:
    def res(title: str, **meta: object) -> Resource:
        return Resource(id=title, workspace_id="w", title=title, kind="pdf", file_name=f"{title}.pdf",
                        sha256="0" * 64, size_bytes=1, status="ready", metadata=meta)

    assert entity_of(res("AMCOR_2023Q2_10Q")) == "AMCOR"
    assert entity_of(res("JOHNSON_JOHNSON_2023_8K_dated-2023-08-30")) == "JOHNSON JOHNSON"
    assert entity_of(res("report", company_names=["Acme Corp"], tickers=["ACME"])) == "Acme Corp"
    assert entity_of(res("notes")) is None


def test_followups_keep_the_subject_and_ask_something_new(filings) -> None:
    engine, docs = filings
    chat = engine.chat()
    first = engine.ask("What was Boeing's total revenue in 2022?", corpus=docs, sync=False, chat_id=chat.id)
    assert first.text.startswith("Total revenues: 66,608 (2022), 62,286 (2021), 58,158 (2020), in millions")
    why = engine.ask("And why?", corpus=docs, sync=False, chat_id=chat.id)
    # a reason is stated in sentences: no table row, nothing the previous answer quoted
    assert "66,608" not in why.text and why.references and "Total revenues:" not in why.text
    assert all(r.text_type != "table" or r.metadata.get("page") for r in why.references if r.citation)
    # the analysis of a follow-up that asks no kind of its own takes the previous one's
    again = analyse("What about 2021?", previous="What was Boeing's total revenue in 2022?")
    assert again.kind.figure and again.years == {2021} and "Boeing" in again.query
