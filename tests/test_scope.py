"""The scope check (citewell.scope) and relevance (citewell.cite.relevance) on a small real
corpus: an annual-report text for one company, a posts file that gives a company's
cashtag, ingested by the real pipeline and asked through Engine.ask."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from citewell.question import analyse
from hypothesis import given
from hypothesis import strategies as st

from citewell import Engine
from citewell.cite.relevance import judge_relevance, question_aspects
from citewell.scope.check import gather
from citewell.question.names import Name, mentions, question_names, ticker_definitions

REPORT = (
    "Acme Corp annual report. Acme net sales were $5,000 million in 2022 and $4,800 million in 2021.\n\n"
    "Acme issued notes due 2031 to fund a new plant in Ohio.\n\n"
    "Our filters block unwanted dust in every plant."
)
POSTS = [
    {"source": "reddit", "id": "p1", "text": "Thinking about puts on Activision Blizzard (ATVI) after the news."},
    {"source": "reddit", "id": "p2", "text": "$ATVI puts are printing today, huge volume."},
    {"source": "reddit", "id": "p3", "text": "Bought more $ATVI calls, the deal premium is real."},
]
DOCS = "Activision Blizzard reported revenue of $6,489 million for fiscal 2019 in its annual report."


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    """An engine (lexical retrieval) over: ACME_2022_report.txt, a posts file whose only
    definition of ATVI is 'Activision Blizzard (ATVI)', and a text that names Activision
    Blizzard without its ticker."""
    root = tmp_path_factory.mktemp("scope")
    docs = root / "docs"
    docs.mkdir()
    (docs / "ACME_2022_report.txt").write_text(REPORT, encoding="utf-8")
    (docs / "wallstreet_2022-01.jsonl").write_text("\n".join(json.dumps(p) for p in POSTS) + "\n", encoding="utf-8")
    (docs / "games_annual.txt").write_text(DOCS, encoding="utf-8")
    with Engine(root / "store.sqlite") as e:
        e.mode = "lexical"
        e.sync(docs)
        yield e, docs


def _ask(engine, question: str):
    e, docs = engine
    return e.ask(question, corpus=docs, sync=False)


def test_absent_company_abstains_without_citation(engine) -> None:
    """A company that no resource, post or ticker in scope names: 'not in the sources'."""
    message = _ask(engine, "What was Costco's total revenue in fiscal 2022?")
    assert message.text == "Not in the sources: none of them mentions Costco."
    assert message.references == [] and message.citations == [] and not message.grounded
    notice = [w for w in message.warnings if w.code == "NOT_IN_SOURCES"]
    assert len(notice) == 1 and notice[0].reason == "entity" and notice[0].subjects == ["Costco"]


def test_absent_future_year_abstains_though_the_text_names_it(engine) -> None:
    """2031 is named (a maturity) but after the period the Acme source reports on (2022)."""
    message = _ask(engine, "What were Acme's net sales in 2031?")
    assert message.text == "Not in the sources: the sources about Acme report on periods up to 2022, not on 2031."
    assert message.references == [] and message.warnings[-1].reason == "future_period"


def test_year_no_source_mentions_abstains_and_covered_year_answers(engine) -> None:
    """A past year the Acme source never names abstains; 2022 is answered, cited, relevant."""
    past = _ask(engine, "What were Acme's net sales in 2015?")
    assert past.text == "Not in the sources: no source about Acme mentions 2015."
    answered = _ask(engine, "What were Acme's net sales in 2022?")
    assert answered.references and "5,000" in answered.text
    assert not [w for w in answered.warnings if w.code == "NOT_IN_SOURCES"]
    occurrence = answered.references[0].occurrences[0]
    assert occurrence.relevance == {"verdict": "relevant", "score": 1.0, "reasons": []}
    assert answered.parts[0].relevance["verdict"] == "relevant"


def test_forward_looking_question_is_not_a_future_period(engine) -> None:
    """'expect' asks for what a source of an earlier period says about a later year."""
    message = _ask(engine, "What does Acme expect to happen with its notes in 2031?")
    assert not [w for w in message.warnings if w.code == "NOT_IN_SOURCES" and w.reason == "future_period"]


def test_company_name_finds_cashtag_posts_and_cashtag_finds_company_documents(engine) -> None:
    """'Activision Blizzard (ATVI)' in a post links the name and the ticker (ATVI is used as a
    cashtag there): the name finds the posts that only give $ATVI, and $ATVI finds the text
    that only gives the name."""
    e, docs = engine
    facts = gather(e.store, e.workspace_id, analyse("What are people saying about Activision puts?"), under=str(docs.resolve()))
    (activision,) = facts.names
    assert activision.aliases == ("ATVI",) and activision.held
    assert facts.query == "What are people saying about Activision (ATVI) puts?"
    found = e.retrieve("What are people saying about Activision puts?", k=5, corpus=docs)
    assert {p.chunk.metadata.get("id") for p in found} >= {"p1", "p2", "p3"}  # p2, p3 give only $ATVI
    back = gather(e.store, e.workspace_id, analyse("What revenue did $ATVI report?"), under=str(docs.resolve()))
    assert back.names[0].name.text == "ATVI" and back.names[0].aliases == ("Activision Blizzard",)
    assert back.query == "What revenue did $ATVI (Activision Blizzard) report?"
    titles = [p.resource_title for p in e.retrieve("What revenue did $ATVI report?", k=5, corpus=docs)]
    assert "games_annual" in titles


def test_abbreviation_in_parentheses_is_no_ticker(engine) -> None:
    """A code in parentheses that the sources never use as a cashtag defines an abbreviation."""
    e, docs = engine
    (docs / "boeing_note.txt").write_text("Boeing Capital Corporation (BCC) financed aircraft.", encoding="utf-8")
    e.sync(docs)
    facts = gather(e.store, e.workspace_id, analyse("What did Boeing finance?"), under=str(docs.resolve()))
    assert facts.names[0].name.text == "Boeing" and facts.names[0].aliases == ()
    assert facts.query == "What did Boeing finance?"


def test_common_word_company_name_does_not_match_the_word() -> None:
    """'block' in 'filters block dust' is not the company Block; a capital that starts a
    sentence is not a name's either when the sources use the word as a word."""
    block = Name("Block", "word")
    assert not mentions("Our filters block unwanted dust.", block)
    assert mentions("Shares of Block rose after the report.", block)
    assert mentions("Block grants rose.", block) and not mentions("Block grants rose.", block, common=True)
    assert mentions("We hold $ATVI calls", Name("ATVI", "code", ticker=True))


def test_common_word_company_abstains(engine) -> None:
    """The scope uses 'block' only as a word: a question about the company Block abstains."""
    message = _ask(engine, "What was Block's revenue in 2022?")
    assert message.text == "Not in the sources: none of them mentions Block."


def test_question_names() -> None:
    """Runs of name-cased words; a sentence's capitalised first word is weak; periods and
    stop words are no names; a cashtag is a ticker."""
    found = question_names("Boeing total revenues in FY2022 for Johnson & Johnson? Answer in USD. $ATVI too")
    assert [(n.text, n.kind, n.ticker, n.weak) for n in found] == [
        ("ATVI", "code", True, False), ("Boeing", "word", False, True), ("Johnson & Johnson", "word", False, False),
        ("Answer", "word", False, True), ("USD", "code", True, False)]


def test_relevance_reasons() -> None:
    """Entity, period and topic of the question, each with its reason when missing."""
    aspects = question_aspects(analyse("What was Acme's revenue in 2022?"))
    passage = "Acme revenue was $5,000 million in 2022."
    assert judge_relevance(aspects, passage, passage).verdict == "relevant"
    other = judge_relevance(aspects, "In October 2022, California passed a law.", "In October 2022, California passed a law.")
    assert (other.verdict, other.reasons, other.score) == ("not_relevant", ("entity_missing:Acme", "topic_missing"),
                                                           round(1 / 3, 4))
    year = judge_relevance(aspects, "Acme revenue was $4,800 million.", "Acme revenue was $4,800 million in 2021.")
    assert year.reasons == ("period_missing:2022",)
    titled = judge_relevance(aspects, "Revenue 5,000 4,800", "Revenue 5,000 4,800 (2022 2021)", title="ACME_2022_report")
    assert titled.verdict == "relevant"  # the resource title names the company
    assert judge_relevance(aspects, "x", None).verdict == "unchecked"


def test_relevance_reads_a_reports_period_and_a_fiscal_quarters_calendar_year() -> None:
    """A filing's sentence that names no year speaks of its report's period (the title's
    year); a fiscal quarter may end in the calendar year before its fiscal year."""
    aspects = question_aspects(analyse("What was Acme's revenue in 2022?"))
    plain = "Acme revenue grew on higher volumes."
    assert judge_relevance(aspects, plain, plain, title="ACME_2022_10K").verdict == "relevant"
    assert judge_relevance(aspects, plain, plain, title="ACME_2021_10K").reasons == ("period_missing:2022",)
    other_year = "Acme revenue grew on higher volumes in 2021."
    assert judge_relevance(aspects, other_year, other_year, title="ACME_2022_10K").reasons == ("period_missing:2022",)
    quarter = question_aspects(analyse("What was Acme's revenue in Q2 of fiscal 2023?"))
    ended = "Acme revenue for the quarter ended December 31, 2022 was $900 million."
    assert judge_relevance(quarter, ended, ended).verdict == "relevant"
    assert judge_relevance(aspects, "Acme revenue in 2021 was $800 million.", "Acme revenue in 2021.").verdict == (
        "not_relevant")  # a whole year asked: the year before is another year


def test_relevance_in_every_profile(engine) -> None:
    """The sessions profile renders relevance beside support; analytics occurrences carry it."""
    from citewell.profiles import sessions
    from citewell.profiles.analytics import render_reference

    message = _ask(engine, "What were Acme's net sales in 2022?")
    rendered = sessions.render_message(message)
    cited = [p for p in rendered["response"]["parts"] if p.get("support")]
    assert cited and all(p["relevance"]["verdict"] == "relevant" for p in cited)
    occ = render_reference(message.references[0], None)["occurrences"][0]
    assert occ["relevance"]["verdict"] == "relevant" and occ["support"]["verdict"] == "supported"


def test_facts_of_a_question_without_names(tmp_path: Path) -> None:
    """No name, no year: nothing to decide on but the topic."""
    docs = tmp_path / "d"
    docs.mkdir()
    (docs / "a.txt").write_text("Deep learning changed optical character recognition.", encoding="utf-8")
    with Engine(tmp_path / "s.sqlite") as e:
        e.mode = "lexical"
        e.sync(docs)
        absent = e.ask("What is the boiling point of mercury?", corpus=docs, sync=False)
        assert absent.text.startswith("Not in the sources: no source speaks of ") and not absent.references
        present = e.ask("How did deep learning change character recognition?", corpus=docs, sync=False)
        assert present.references


ZORBLAX_PAGES = [
    "Zorblax Inc. Annual Report on Form 10-K for the fiscal year ended December 31, 2022.",
    "Zorblax total revenue was $1,250 million in fiscal 2022 and $1,100 million in fiscal 2021.",
    "Zorblax operates two segments, Widgets and Services. Widgets revenue was $900 million in 2022.",
    "Chief Executive Officer Dana Whitfield leads Zorblax. Each gadget we sell carries a warranty.",
]
ZORBLAX_POSTS = [
    {"source": "reddit", "id": "z1", "text": "Zorblax puts are printing money, I bought 50 contracts at strike 40."},
    {"source": "reddit", "id": "z2", "text": "Anyone else holding calls on the widget maker into earnings?"},
]


def _zorblax_pdf(path: Path, pages: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    pdf.output(str(path))


@pytest.fixture(scope="module")
def zorblax(tmp_path_factory: pytest.TempPathFactory):
    """An engine (lexical retrieval) over a 10-K PDF of Zorblax (its file name names the
    company) and a posts file, one of whose posts mentions Zorblax by name."""
    root = tmp_path_factory.mktemp("zorblax")
    docs = root / "docs"
    docs.mkdir()
    _zorblax_pdf(docs / "ZORBLAX_2022_10K.pdf", ZORBLAX_PAGES)
    (docs / "wallstreet_2022-01.jsonl").write_text("\n".join(json.dumps(p) for p in ZORBLAX_POSTS) + "\n",
                                                   encoding="utf-8")
    with Engine(root / "store.sqlite") as e:
        e.mode = "lexical"
        e.sync(docs)
        yield e, docs


def _not_in_sources(message) -> list:
    return [w for w in message.warnings if w.code == "NOT_IN_SOURCES"]


def test_post_mentioning_a_company_with_a_filing_is_about_it(zorblax) -> None:
    """The sources about Zorblax are its 10-K (named by the file name) and the post that
    mentions it: the post's words are no absent topic, and the post is cited."""
    e, docs = zorblax
    facts = gather(e.store, e.workspace_id, analyse("What strike did people buy Zorblax puts at?"), under=str(docs.resolve()))
    (name,) = facts.names
    pdf = next(r.id for r in facts.resources if r.file_name == "ZORBLAX_2022_10K.pdf")
    assert name.resources == (pdf,)
    assert any("strike 40" in p.text for p in name.passages)  # the post z1
    message = _ask(zorblax, "What strike did people buy Zorblax puts at?")
    assert not _not_in_sources(message)
    assert message.text == "Zorblax puts are printing money, I bought 50 contracts at strike 40 [1]."
    assert (message.references[0].type, message.references[0].id) == ("post", "z1")


def test_post_is_found_when_the_filing_fills_the_name_lookup(zorblax, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every passage of the 10-K matches 'Zorblax' (its title does); with a lookup shorter
    than the filing, the post is still found among the other resources."""
    from citewell.scope import check

    monkeypatch.setattr(check, "LOOKUP_LIMIT", 2)
    e, docs = zorblax
    facts = gather(e.store, e.workspace_id, analyse("What strike did people buy Zorblax puts at?"), under=str(docs.resolve()))
    assert any("strike 40" in p.text for p in facts.names[0].passages)  # the post z1
    message = _ask(zorblax, "What strike did people buy Zorblax puts at?")
    assert not _not_in_sources(message) and (message.references[0].type, message.references[0].id) == ("post", "z1")


@pytest.mark.parametrize("question", [
    "What was Quuxco's total revenue in FY2022, according to Zorblax?",
    "What was Zorblax's subsidiary Quuxco's total revenue in FY2022?",
    "What was the total revenue of Quuxco in FY2022, according to Zorblax?",
    "How much revenue did Quuxco Labs' unit book in 2022, per Zorblax?",
])
def test_unknown_subject_abstains_though_another_name_is_held(zorblax, question: str) -> None:
    """The company the asked figure belongs to (a possessive, or a name after 'of') is
    nowhere in scope in any form: 'not in the sources', though Zorblax is."""
    message = _ask(zorblax, question)
    (notice,) = _not_in_sources(message)
    shown = "Quuxco Labs" if "Labs" in question else "Quuxco"
    assert message.text == f"Not in the sources: none of them mentions {shown}."
    assert (notice.reason, notice.subjects) == ("entity", [shown])
    assert message.references == [] and message.citations == []


@pytest.mark.parametrize(("question", "quoted"), [
    ("What was Zorblax's total revenue in FY2022?", "$1,250 million"),
    ("What was Widgets' revenue at Zorblax in 2022?", "$900 million"),  # a segment
    ("Who is Dana Whitfield's employer, Zorblax?", "Dana Whitfield"),  # a person
    ("What does Zorblax sell with each Gadget's warranty?", "gadget"),  # written only in lower case there
    ("What was the Company's total revenue in FY2022, per Zorblax?", "$1,250 million"),  # "the" + a defined term
])
def test_subject_the_sources_hold_in_any_form_is_answered(zorblax, question: str, quoted: str) -> None:
    """A possessive name the sources hold in any form (a segment, a person, a word they
    write in lower case) or a defined term after 'the' does not abstain."""
    message = _ask(zorblax, question)
    assert not _not_in_sources(message), message.text
    assert message.references and quoted in message.text


def test_question_name_subjects() -> None:
    """Possessives and word names after 'of' are subjects; codes after 'of', names after
    'the' and a sentence's weak first word are not."""
    found = question_names("What was Zorblax's subsidiary Quuxco's share of Total Revenue and of EBITDA, "
                           "per the Board's report? Acme's view?")
    assert [(n.text, n.subject) for n in found] == [
        ("Zorblax", True), ("Quuxco", True), ("Total Revenue", True), ("EBITDA", False), ("Board", False),
        ("Acme", False)]
    assert [(n.text, n.subject) for n in question_names("How did $ZBX's volume and Acme Holdings' debt move?")] == [
        ("ZBX", True), ("Acme Holdings", True)]
    assert [(n.text, n.subject) for n in question_names("What was Acme's debt as of March 31, 2022?")] == [
        ("Acme", True), ("March", False)]


#: The definition of ``Name (CODE)`` as one regular expression (scope/names.py's module
#: docstring, "Links"): the specification that the faster scan of ``_text_definitions``
#: must read exactly.
_ONE_PATTERN = re.compile(
    r"((?:[A-Z0-9][\w&.'\u2019]*(?:[ \t]+&)?[ \t-]+){0,3}[A-Z0-9][\w&.'\u2019-]*)[ \t]*\(\s*(?:[A-Z][A-Za-z]*\s*:\s*)?\$?"
    r"([A-Z]{1,5}(?:\.[A-Z])?)\s*[;,)]")


def _one_pattern_definitions(text: str) -> list[tuple[str, str, bool]]:
    out = []
    for m in _ONE_PATTERN.finditer(text):
        company = m.group(1).strip(" -")
        if any(c.islower() for c in company):
            inner = text[m.end(1):m.end()]
            out.append((company, m.group(2), "$" in inner or ":" in inner))
    return out


def test_ticker_definitions_read_names_and_codes() -> None:
    text = ("Activision Blizzard (ATVI) and Amcor ($AMCR), 3M Company (NYSE: MMM); Boeing Capital "
            "Corporation (BCC). Johnson & Johnson (JNJ) x(AB) ab Cd Ef Gh Ij Kl (MN) Foo- (X) Foo & (Y)")
    assert ticker_definitions([text]) == [
        ("Activision Blizzard", "ATVI", False), ("Amcor", "AMCR", True), ("3M Company", "MMM", True),
        ("Boeing Capital Corporation", "BCC", False), ("Johnson & Johnson", "JNJ", False),
        ("Ef Gh Ij Kl", "MN", False), ("Foo", "X", False)]


@given(st.lists(st.sampled_from(["Acme", "Co", "inc", "3M", "&", "-", " ", "\t", "\n", "(", ")", "$", "NYSE:",
                                 "AB", "X", ";", ",", ".", "'", "\u2019", "Ünï", "b_c", "Q.R"]), max_size=40))
def test_ticker_definitions_match_the_one_pattern(parts: list[str]) -> None:
    text = "".join(parts)
    assert ticker_definitions([text]) == _one_pattern_definitions(text)


def test_ticker_definitions_after_long_runs_of_name_characters() -> None:
    # four words before the code, whatever precedes them
    text = "Word " * 2000 + "Foo Bar (AB)"
    assert ticker_definitions([text]) == _one_pattern_definitions(text) == [("Word Word Foo Bar", "AB", False)]
    # a 20,000-digit token is no name (read in bounded time: a name starts at most MAX_NAME_CHARS before its code)
    assert ticker_definitions(["Acme " + "1" * 20000 + " x (AB)"]) == []
