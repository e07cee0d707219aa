"""The extractive generator: units, scoring, caps, links, escaping, determinism.

Passages are built by hand from real text: 3M's 2022 10-K (cash-flow statement as the
PDF text layer gives it, one row per line; income statement as FinanceBench's
``evidence_text_full_page`` gives it, one cell per line; MD&A prose with hard line
breaks) and cues of the TWIML #409 podcast captions (one cue per line).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citewell.generate import (
    NO_EVIDENCE_TEXT,
    ExtractiveGenerator,
    Generator,
    QuotedUnit,
    collapse_breaks,
    escape_quote,
    render_unit,
    unescape_quote,
)
from citewell.models import Chunk, Passage

# A link the generator wrote: not preceded by a backslash (escaped quote brackets are).
LINK_RE = re.compile(r"(?<!\\)\[([^\[\]]+)\]\(chunk:([^)\s]+)\)")

CASH_FLOW = """\
3M Company and Subsidiaries
Consolidated Statement of Cash Flows
Years ended December 31
(Millions) 2022 2021 2020
Cash Flows from Operating Activities
Net income including noncontrolling interest $ 5,791 $ 5,929 $ 5,453
Depreciation and amortization 1,831 1,915 1,911
Net cash provided by (used in) operating activities 5,591 7,454 8,113
Cash Flows from Investing Activities
Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)
Proceeds from sale of PP&E and other assets 200 51 128
Acquisitions, net of cash acquired — — (25)
Purchases of marketable securities and investments (1,250) (2,202) (1,579)
Net cash provided by (used in) investing activities (1,046) (1,317) (580)
Cash Flows from Financing Activities
Purchases of treasury stock (1,464) (2,199) (368)
Dividends paid to shareholders (3,369) (3,420) (3,388)
Net cash provided by (used in) financing activities (5,350) (6,145) (5,300)"""

CAPEX_ROW = "Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)"

# FinanceBench 3M_2022_10K page 47 (evidence_text_full_page): one cell per line.
INCOME_CELLS = """\
3M Company and Subsidiaries
Consolidated Statement of Income
Years ended December 31
(Millions, except per share amounts)
2022
2021
2020
Net sales
$
34,229 $
35,355 $
32,184 
Operating expenses
Cost of sales
19,232 
18,795 
16,605 
Selling, general and administrative expenses
9,049 
7,197 
6,929 
Operating income
6,539 
7,369 
7,161 """

MDA_PROSE = """\
Selling, General and Administrative Expenses:
SG&A, measured as a percent of sales, increased in 2022 when compared to the same period last year. SG&A was impacted by increased special item costs for significant
litigation primarily related to steps toward resolving Combat Arms Earplugs litigation (discussed in Note 16) resulting in a 2022 second quarter pre-tax charge of approximately
$1.2 billion, certain impairment costs related to exiting PFAS manufacturing (see Note 15), costs related to exiting Russia (see Note 15), divestiture-related restructuring
charges (see Note 5), and continued investment in key growth initiatives. These increases were partially offset by restructuring benefits and ongoing general 3M cost
management.
Gain on Business Divestitures:
In the third quarter of 2022, 3M recorded a pre-tax gain of $2.7 billion ($2.7 billion after tax) related to the split-off and combination of its Food Safety business with Neogen
Corporation. Refer to Note 3 for further details."""

# TWIML #409 captions, one cue per line; the "helmet" sentence spans two cues.
TRANSCRIPT = """\
The same thing happens in image net transfer learning where, you know, if it's a resonant train on image net, you learn a lot of visual information from the image net data set.
Then if you have a tiny detection task like detecting a helmet, let's say, and you can do the transfer learning and you can use a very small amount of data set
to actually train a very good helmet detector. What I'm saying, what I was saying just now was that for the problem with OCR where, you know, it is certainly a very important computer vision problem, and, you know, every company who invest in OCR tend to collect quite a bit of data, not to the level of, you know, billions, but, you know, hundreds of thousands, like millions.
To that level data model data is sufficient that you do not need to go transfer learning. You can train the model from scratch and you get very good result.
Got it. Got it."""


def cid(name: str) -> str:
    """A stable UUID-shaped chunk id per fixture name."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"citewell-test/{name}"))


def passage(
    name: str,
    text: str,
    *,
    text_type: str = "paragraph",
    rank: int = 1,
    title: str = "3M_2022_10K",
    kind: str = "pdf",
    metadata: dict[str, object] | None = None,
) -> Passage:
    meta: dict[str, object] = {"source_type": kind}
    if kind == "pdf":
        meta.update({"page": 52, "offset": [{"page": 52, "top": 0.1, "left": 0.05, "width": 0.9, "height": 0.8}]})
    meta.update(metadata or {})
    chunk = Chunk(
        id=cid(name),
        resource_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"citewell-test/resource/{title}")),
        chunk_index=rank - 1,
        text=text,
        text_type=text_type,  # type: ignore[arg-type]
        char_start=0,
        char_end=len(text),
        metadata=meta,
    )
    return Passage(chunk=chunk, resource_title=title, resource_kind=kind, rank=rank, score=1.0 / rank)  # type: ignore[arg-type]


def tenk_passages() -> list[Passage]:
    return [
        passage("cashflow", CASH_FLOW, text_type="table", rank=1),
        passage("mda", MDA_PROSE, rank=2, metadata={"page": 27}),
        passage("income", INCOME_CELLS, text_type="table", rank=3, metadata={"page": 48}),
    ]


def transcript_passage(rank: int = 1) -> Passage:
    return passage(
        "twiml409",
        TRANSCRIPT,
        text_type="transcript",
        rank=rank,
        title="twiml-409_deep-learning-ocr_cha-zhang",
        kind="transcript",
        metadata={"start_time": 1290.0, "end_time": 1352.5, "blocks": [97, 98, 99, 100, 101], "speakers": []},
    )


def links(answer: str) -> list[tuple[str, str]]:
    return LINK_RE.findall(answer)


def assert_exact(units: list[QuotedUnit], passages: list[Passage]) -> None:
    """Every unit is an exact span of its chunk, and its quote is that span with line
    breaks collapsed (and a cut marked by …)."""
    by_id = {p.chunk.id: p.chunk for p in passages}
    for u in units:
        chunk = by_id[u.chunk_id]
        assert chunk.text[u.start : u.end] == u.text
        assert u.text == u.text.strip() and u.text
        if u.restated:  # "Label: value (period), …[, in millions]": the row's label and each of its values
            label, _, values = u.quote.partition(": ")
            unit = re.search(r", in (thousands|millions|billions)$", values)
            if unit:  # the scale the statement declares
                values = values[:unit.start()]
                assert unit.group(1) in chunk.text.lower() or unit.group(1) in str(chunk.metadata).lower()
            assert collapse_breaks(u.text).startswith(label)
            flat = "".join(u.text.split())
            cells = [item.rsplit(" (", 1)[0] for item in values.split("), ")]
            assert cells and all(cell in flat for cell in cells), (u.quote, u.text)
        elif u.truncated:
            assert u.quote.endswith("…")
            assert collapse_breaks(u.text).startswith(u.quote[:-1])
        else:
            assert u.quote == collapse_breaks(u.text)


# --------------------------------------------------------------------------- tables


def test_capex_question_quotes_the_capex_row_of_the_cash_flow_table() -> None:
    ps = tenk_passages()
    gen = ExtractiveGenerator()
    units = gen.select("What was 3M's capex in FY2022?", ps)
    assert_exact(units, ps)
    assert units, "expected an answer"
    rows = [u for u in units if u.text == CAPEX_ROW]
    assert len(rows) == 1
    assert rows[0].chunk_id == cid("cashflow")
    # the row is a whole line of the chunk
    assert CAPEX_ROW in CASH_FLOW.splitlines()
    # the best-scored unit (a column header shares its row's score) is the capex row
    assert max((u for u in units if not u.header_words), key=lambda u: u.score).text == CAPEX_ROW

    assert units[0].restated and len(units) == 1  # a figure question: the statement row, restated
    answer = gen.generate("What was 3M's capex in FY2022?", ps)
    # the row with each value paired with the year of its column (the header says which figure is 2022)
    link = f"[1](chunk:{cid('cashflow')})"
    assert answer == ("Purchases of property, plant and equipment (PP&E): (1,749) (2022), (1,603) (2021), "
                      f"(1,501) (2020), in millions {link}.")


def test_capital_expenditures_phrase_also_finds_the_pp_and_e_row() -> None:
    units = ExtractiveGenerator().select("How much were capital expenditures in 2021?", tenk_passages())
    assert [u.text for u in units] == [CAPEX_ROW]
    assert units[0].quote.endswith("(1,603) (2021), (1,501) (2020), in millions")


def test_cell_per_line_table_gives_whole_rows() -> None:
    ps = tenk_passages()
    gen = ExtractiveGenerator()
    units = gen.select("What were 3M's net sales in FY2022?", ps)
    assert_exact(units, ps)
    net = [u for u in units if u.chunk_id == cid("income")]
    assert net, units
    assert net[0].text == "Net sales\n$\n34,229 $\n35,355 $\n32,184"
    # the header above ("(Millions, except per share amounts)\n2022\n2021\n2020", one cell a line)
    # names the year of each value
    assert net[0].quote == "Net sales: $34,229 (2022), $35,355 (2021), $32,184 (2020), in millions"
    answer = gen.generate("What were 3M's net sales in FY2022?", ps)
    assert f"Net sales: $34,229 (2022), $35,355 (2021), $32,184 (2020), in millions [3](chunk:{cid('income')})." in answer


def test_table_rows_with_crlf_line_ends_keep_exact_offsets() -> None:
    text = CASH_FLOW.replace("\n", "\r\n")
    ps = [passage("cashflow-crlf", text, text_type="table")]
    units = ExtractiveGenerator().select("Dividends paid to shareholders in 2022?", ps)
    assert_exact(units, ps)
    assert [u.text for u in units[:2]] == ["(Millions) 2022 2021 2020",
                                           "Dividends paid to shareholders (3,369) (3,420) (3,388)"]


# --------------------------------------------------------------------------- prose & transcript


def test_prose_sentence_link_goes_before_the_final_period() -> None:
    ps = tenk_passages()
    gen = ExtractiveGenerator()
    q = "Why did SG&A increase in 2022?"
    units = gen.select(q, ps)
    assert_exact(units, ps)
    mda = [u for u in units if u.chunk_id == cid("mda")]
    assert any(u.text.startswith("SG&A was impacted by increased special item costs") for u in mda)
    answer = gen.generate(q, ps)
    assert f"continued investment in key growth initiatives [2](chunk:{cid('mda')})." in answer
    # the prose had hard line breaks; the quote joins them with single spaces
    assert "for significant litigation primarily" in answer
    assert "\n" not in answer


def test_transcript_sentence_spanning_cues_is_quoted_from_its_exact_span() -> None:
    ps = [transcript_passage()]
    q = "How small a data set can train a helmet detector with transfer learning?"
    gen = ExtractiveGenerator()
    units = gen.select(q, ps)
    assert_exact(units, ps)
    helmet = [u for u in units if "helmet" in u.text]
    assert helmet
    u = helmet[0]
    assert u.text.startswith("Then if you have a tiny detection task like detecting a helmet")
    assert u.text.endswith("to actually train a very good helmet detector.")
    assert "\n" in u.text  # spans two cues
    assert u.quote == u.text.replace("\n", " ")
    answer = gen.generate(q, ps)
    assert f"a very small amount of data set to actually train a very good helmet detector [1](chunk:{cid('twiml409')})." in answer


# --------------------------------------------------------------------------- caps


def _dividend_passages() -> list[Passage]:
    texts = [
        "Dividends paid to shareholders were $3.4 billion in 2022. The Board declared a quarterly dividend of $1.49 per share. "
        "3M has paid dividends since 1916. Dividend increases continued for the 64th consecutive year.",
        "In 2022 the dividend payout ratio rose. Dividends are paid from operating cash flow. "
        "Share repurchases and dividends returned cash to shareholders.",
        "The dividend policy is reviewed by the Board each year. Dividends per share increased by one percent.",
        "Quarterly dividends were paid in March, June, September and December.",
    ]
    return [passage(f"div{i}", t, rank=i + 1) for i, t in enumerate(texts)]


def test_caps_on_units_words_and_per_passage() -> None:
    ps = _dividend_passages()
    q = "What dividends did 3M pay to shareholders?"
    default = ExtractiveGenerator().select(q, ps)
    assert_exact(default, ps)
    assert 1 < len(default) <= 5
    assert sum(len(u.quote.split()) for u in default) <= 120
    per: dict[str, int] = {}
    for u in default:
        per[u.chunk_id] = per.get(u.chunk_id, 0) + 1
    assert max(per.values()) <= 2

    two = ExtractiveGenerator(max_sentences=2).select(q, ps)
    assert len(two) == 2
    one_each = ExtractiveGenerator(per_passage=1).select(q, ps)
    assert len({u.chunk_id for u in one_each}) == len(one_each)

    tight = ExtractiveGenerator(max_words=20).select(q, ps)
    assert sum(len(u.quote.split()) for u in tight) <= 20
    assert len(tight) >= 1
    # the answer text holds exactly one link per unit
    answer = ExtractiveGenerator(max_sentences=2).generate(q, ps)
    assert len(links(answer)) == 2


def test_first_unit_is_always_taken_but_cut_when_too_long() -> None:
    ps = tenk_passages()
    q = "What was SG&A impacted by in 2022?"
    units = ExtractiveGenerator(max_words=12).select(q, ps)
    assert len(units) == 1
    u = units[0]
    assert u.truncated and u.quote.endswith("…")
    assert len(u.quote.split()) == 12
    assert_exact(units, ps)
    answer = ExtractiveGenerator(max_words=12).generate(q, ps)
    assert answer == f"{escape_quote(u.quote)} [{u.label}](chunk:{u.chunk_id})."


def test_no_near_duplicates() -> None:
    sentence = "Dividends paid to shareholders were $3.4 billion in 2022."
    ps = [
        passage("dup-a", sentence + " The Board reviews dividends.", rank=1),
        passage("dup-b", "As reported, " + sentence[0].lower() + sentence[1:], rank=2),
        passage("dup-c", "Dividends paid to shareholders were $3.4 billion in 2022", rank=3),
        passage("dup-a", sentence + " The Board reviews dividends.", rank=4),  # same chunk again
    ]
    units = ExtractiveGenerator().select("What dividends were paid to shareholders in 2022?", ps)
    assert_exact(units, ps)
    texts = [u.text for u in units]
    assert sum("$3.4 billion" in t for t in texts) == 1
    assert len({(u.chunk_id, u.start) for u in units}) == len(units)


def test_units_without_content_word_overlap_are_never_chosen() -> None:
    ps = tenk_passages()
    units = ExtractiveGenerator(max_sentences=5, min_relative=0.0).select("Gain on divestitures in 2022?", ps)
    assert units
    for u in units:
        words = {w.lower() for w in re.findall(r"[A-Za-z]+", u.text)}
        assert words & {"gain", "divestitures", "divestiture"}, u.text


# --------------------------------------------------------------------------- order & links


def test_output_grouped_by_passage_rank_then_document_order() -> None:
    ps = _dividend_passages()
    units = ExtractiveGenerator().select("What dividends did 3M pay to shareholders?", ps)
    keys = [(u.passage_index, u.start) for u in units]
    assert keys == sorted(keys)
    answer = ExtractiveGenerator().generate("What dividends did 3M pay to shareholders?", ps)
    targets = [t for _, t in links(answer)]
    assert targets == [u.chunk_id for u in units]
    for label, target in links(answer):
        p = next(p for p in ps if p.chunk.id == target)
        assert label == str(p.rank)


def test_link_appended_after_space_when_no_final_punctuation() -> None:
    ps = [passage("row", "Dividends paid to shareholders (3,369) (3,420) (3,388)", text_type="table")]
    answer = ExtractiveGenerator().generate("dividends paid", ps)
    # the closing "." stands after the link, outside the verbatim quote
    assert answer == f"Dividends paid to shareholders (3,369) (3,420) (3,388) [1](chunk:{cid('row')})."
    assert render_unit("Caption without a stop", "2", "abc") == "Caption without a stop [2](chunk:abc)."
    assert render_unit("Ends with a question?!", "3", "abc") == "Ends with a question [3](chunk:abc)?!"
    assert render_unit("see [1]", "4", "abc") == r"see \[1\] [4](chunk:abc)."


def test_link_label_falls_back_to_position_when_rank_is_unset() -> None:
    p = passage("norank", "Dividends paid to shareholders rose in 2022!", rank=1)
    p = p.model_copy(update={"rank": 0})
    answer = ExtractiveGenerator().generate("Did dividends rise?", [p])
    assert answer == f"Dividends paid to shareholders rose in 2022 [1](chunk:{cid('norank')})!"


# --------------------------------------------------------------------------- no evidence


def test_no_evidence_for_unrelated_question_or_no_passages() -> None:
    gen = ExtractiveGenerator()
    assert gen.generate("What is the boiling point of liquid nitrogen?", tenk_passages()) == NO_EVIDENCE_TEXT
    assert gen.generate("What was 3M's capex in FY2022?", []) == NO_EVIDENCE_TEXT
    assert gen.generate("", tenk_passages()) == NO_EVIDENCE_TEXT
    # a year alone is not content-word overlap
    assert gen.generate("2022?", tenk_passages()) == NO_EVIDENCE_TEXT
    assert list(gen.stream("What is the boiling point of liquid nitrogen?", tenk_passages())) == [NO_EVIDENCE_TEXT]
    assert "](" not in NO_EVIDENCE_TEXT and NO_EVIDENCE_TEXT.endswith(".")
    assert NO_EVIDENCE_TEXT.count(".") == 1


# --------------------------------------------------------------------------- escaping


ESCAPE_TEXT = (
    "Dividends rose 5% (see Note [12]) as shown in `table_4` and [the filing](https://sec.gov/x) "
    "per [Item 7][ref]."
)


def test_escaping_of_bracketed_numbers_backticks_and_link_like_text() -> None:
    ps = [passage("esc", ESCAPE_TEXT)]
    answer = ExtractiveGenerator().generate("How much did dividends rise?", ps)
    assert r"(see Note \[12\])" in answer
    assert r"\`table\_4\`" not in answer  # underscores are left alone
    assert r"\`table_4\`" in answer
    assert r"\[the filing\]\(https://sec.gov/x)" in answer
    assert r"\[Item 7\]\[ref\]" in answer
    # exactly one real link, the generator's, placed before the final period
    assert links(answer) == [("1", cid("esc"))]
    assert answer.endswith(f" [1](chunk:{cid('esc')}).")
    # support checks undo the escapes and get the exact source text back
    quoted = answer[: answer.index(" [1](chunk:")] + "."
    assert unescape_quote(quoted) == ESCAPE_TEXT
    # no bare bracketed number and no unescaped backtick remain
    stripped = LINK_RE.sub("", answer)
    assert not re.search(r"(?<!\\)\[\d+(?<!\\)\]", stripped)
    assert not re.search(r"(?<!\\)`", stripped)


def test_backslashes_round_trip() -> None:
    s = r"a \[b] c\\ `d` \\[12\]"
    assert unescape_quote(escape_quote(s)) == s


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1[]()`\\ :.\n")), max_size=40))
def test_escape_is_exactly_inverted_and_leaves_no_live_brackets(s: str) -> None:
    e = escape_quote(s)
    assert unescape_quote(e) == s
    # after escaping, every [, ] and ` is preceded by an odd number of backslashes
    for m in re.finditer(r"[\[\]`]", e):
        run = len(e[: m.start()]) - len(e[: m.start()].rstrip("\\"))
        assert run % 2 == 1


# --------------------------------------------------------------------------- streaming


def test_stream_yields_one_piece_per_sentence_and_joins_to_generate() -> None:
    ps = tenk_passages() + [transcript_passage(rank=4)]
    gen = ExtractiveGenerator()
    for q in (
        "What was 3M's capex in FY2022?",
        "Why did SG&A increase in 2022?",
        "What were 3M's net sales in FY2022?",
        "How small a data set can train a helmet detector with transfer learning?",
    ):
        pieces = list(gen.stream(q, ps))
        units = gen.select(q, ps)
        assert "".join(pieces) == gen.generate(q, ps)
        assert len(pieces) == len(units) >= 1
        for i, piece in enumerate(pieces):
            assert len(links(piece)) == 1
            assert piece.startswith(" ") == (i > 0)
            assert piece == (" " if i else "") + units[i].render()


def test_generator_protocol() -> None:
    gen: Generator = ExtractiveGenerator()
    assert isinstance(gen, Generator)
    with pytest.raises(ValueError):
        ExtractiveGenerator(max_sentences=0)


# --------------------------------------------------------------------------- determinism


QUESTIONS = (
    "What was 3M's capex in FY2022?",
    "Why did SG&A increase in 2022?",
    "What were 3M's net sales in FY2022?",
    "What was the pre-tax gain on the Food Safety split-off?",
    "How small a data set can train a helmet detector with transfer learning?",
)


def test_same_inputs_same_output_even_with_recreated_passages() -> None:
    gen = ExtractiveGenerator()
    first = [gen.generate(q, tenk_passages() + [transcript_passage(rank=4)]) for q in QUESTIONS]
    again = [gen.generate(q, tenk_passages() + [transcript_passage(rank=4)]) for q in QUESTIONS]
    copies = [
        gen.generate(q, [Passage.model_validate(json.loads(p.model_dump_json())) for p in tenk_passages() + [transcript_passage(rank=4)]])
        for q in QUESTIONS
    ]
    assert first == again == copies
    assert all(a != NO_EVIDENCE_TEXT for a in first)


def test_output_does_not_depend_on_hash_seed() -> None:
    script = (
        "import json, sys\n"
        "sys.path.insert(0, %r)\n"
        "import test_generate_extractive as t\n"
        "from citewell.generate import ExtractiveGenerator\n"
        "ps = t.tenk_passages() + [t.transcript_passage(rank=4)]\n"
        "print(json.dumps([ExtractiveGenerator().generate(q, ps) for q in t.QUESTIONS]))\n"
    ) % os.path.dirname(__file__)
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        outputs.add(run.stdout)
    assert len(outputs) == 1


# --------------------------------------------------------------------------- robustness


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(
        st.text(alphabet=st.sampled_from(list("abc XYZ 12,.?!\n[]()`$%-")), max_size=80), min_size=0, max_size=4
    ),
    types=st.lists(st.sampled_from(["paragraph", "table", "transcript", "post"]), min_size=4, max_size=4),
    question=st.text(alphabet=st.sampled_from(list("abc XYZ 12?")), max_size=20),
)
def test_never_raises_and_always_quotes_exact_spans(texts: list[str], types: list[str], question: str) -> None:
    ps = [passage(f"fuzz{i}", t, text_type=types[i], rank=i + 1) for i, t in enumerate(texts)]
    gen = ExtractiveGenerator(max_words=15)
    units = gen.select(question, ps)
    assert_exact(units, ps)
    answer = gen.generate(question, ps)
    assert answer == "".join(gen.stream(question, ps))
    if not units:
        assert answer == NO_EVIDENCE_TEXT
    else:
        assert [t for _, t in links(answer)] == [u.chunk_id for u in units]
        assert sum(len(u.quote.split()) - u.header_words for u in units) <= 15


def test_abstention_on_unmentioned_names_is_the_scope_checks_not_the_generators() -> None:
    """When no retrieved passage mentions any name of the question, the scope check (the one
    place that abstains) says so; the generator itself never abstains."""
    from citewell.question import analyse
    from citewell.scope.check import unmentioned_names

    capex = passage("capex", "Capital spending on projects was $1,749 million in 2022.", title="3M_2022_10K")
    assert unmentioned_names(analyse("What is the capital of Mongolia?"), [capex]) == ["mongolia"]
    assert unmentioned_names(analyse("What is Tesla's capital spending?"), [capex]) == ["tesla"]
    # a name found in the title (even run together, BESTBUY) or text counts as mentioned
    bby = passage("bby", "Capital spending was $200 million.", title="BESTBUY_2024Q2_10Q")
    assert unmentioned_names(analyse("What was Best Buy's capital spending?"), [bby]) == []
    # only some names missing (question wording capitalises freely): answer anyway
    # ("FY" before a year is no name: "FY 2022" reads as the year, like "FY2022")
    assert unmentioned_names(analyse("What Was 3M's Real capital spending in FY 2022?"), [capex]) == []
    gen = ExtractiveGenerator()
    assert "(chunk:" in gen.generate("What was Best Buy's capital spending?", [bby])
    assert "Mongolia" not in gen.generate("What is the capital of Mongolia?", [capex])


def test_cashtags_match_their_ticker() -> None:
    post = passage("eth", "$ETH.X $BTC.X They are refusing to make it go above a certain price.", kind="post",
                   text_type="post", title="stocktwits")
    assert "(chunk:" in ExtractiveGenerator().generate("What do people say about ETH price?", [post])


def test_prose_lines_inside_a_table_chunk_are_quoted_as_sentences() -> None:
    from citewell.generate.extractive import _unit_spans

    text = ("(Millions) 2022 2021\n"
            "Purchases of property, plant and equipment (PP&E) $ (1,749) $ (1,603)\n"
            "Total $ 9,178 $ 9,429\n"
            "United States net PP&E was $5,662 million at December 31, 2022. China/Hong Kong net property,\n"
            "plant and equipment (PP&E) was $518 million and $578 million at December 31, 2022 and 2021.")
    units = [text[a:b] for a, b in _unit_spans(text, "table")]
    assert units == [
        "(Millions) 2022 2021",
        "Purchases of property, plant and equipment (PP&E) $ (1,749) $ (1,603)",
        "Total $ 9,178 $ 9,429",
        "United States net PP&E was $5,662 million at December 31, 2022.",
        "China/Hong Kong net property,\nplant and equipment (PP&E) was $518 million and $578 million at "
        "December 31, 2022 and 2021.",
    ]


def test_quantity_questions_prefer_units_with_numbers() -> None:
    prose = passage("hc", "Verizon respects the rights of its employees to join unions. Verizon had approximately "
                          "117,100 employees at year end.")
    units = ExtractiveGenerator(max_sentences=1).select("How many employees did Verizon have?", [prose])
    assert [u.quote for u in units] == ["Verizon had approximately 117,100 employees at year end."]


def test_a_question_in_the_source_is_not_quoted_as_the_answer() -> None:
    talk = passage("talk", "How has deep learning changed OCR over the past few years?\n"
                           "Deep learning changed OCR by making recognition of handwriting and layouts far more "
                           "accurate.", text_type="transcript", kind="transcript")
    units = ExtractiveGenerator(max_sentences=1).select("How has deep learning changed OCR?", [talk])
    assert [u.quote for u in units] == ["Deep learning changed OCR by making recognition of handwriting and layouts "
                                        "far more accurate."]


def test_a_ticker_from_the_resource_metadata_counts_as_mentioned() -> None:
    capex = passage("capex", "Purchases of property, plant and equipment (PP&E) $ (1,749) $ (1,603)",
                    text_type="table", title="3M_2022_10K").model_copy(update={"resource_names": ["MMM", "3M"]})
    assert "(chunk:" in ExtractiveGenerator().generate("What was MMM's capital expenditure in FY2022?", [capex])


def test_quoted_link_syntax_never_becomes_a_citation() -> None:
    from citewell.cite import cite

    post = passage("p2", "Gizmo revenue doubled, see [the proof](post:x:1) for details.", kind="post",
                   text_type="post", title="posts", metadata={"source": "x", "id": "2"})
    raw = ExtractiveGenerator().generate("gizmo revenue", [post])
    message = cite(raw, sources=[post])
    assert [(r.source, r.id) for r in message.references] == [("x", "2")]
    assert message.text == "Gizmo revenue doubled, see \\[the proof\\]\\(post:x:1) for details [1]."


def test_list_bullets_and_fullwidth_questions() -> None:
    notes = passage("notes", "- Revenue grew 12% in 2022.\n- Costs fell.", kind="text")
    answer = ExtractiveGenerator().generate("ＲＥＶＥＮＵＥ growth", [notes])
    assert answer.startswith("Revenue grew 12% in 2022 [1](chunk:")


# --------------------------------------------------------------------------- padding (answers enough by itself)
#
# Passages a new user's questions retrieved from ../shared/corpus (texts verbatim), with a
# made-up notes file: every other sentence shares one word with the question and used to
# be quoted, cited and "supported" after the right one.

CAFE_NOTES = """\
# Cafe staff notes

Maria Lopez is the head barista at the Elm Street cafe. She trains every new hire on the espresso machine.
The new oven arrives on Tuesday, March 14. The old oven will be collected the same day.
Opening hours stay 7am to 6pm on weekdays.
"""
STARBUCKS_POST = (
    "Starbucks Union?\n\nI am seeing reports that many stores are starting to unionize and the stock has taken a "
    "massive hit. With barista being such a low skill job doesn't it make sense for Starbucks to just close the "
    "union stores and find more people? I see they are already preparing for this by accepting workers regardless "
    "of vaccines.")
GME_POST = "Popular Opinion: GME is headed for $250 before $50"
CAPTIONS = "At the left we can see...\nAt the right we can see the...\n...the head-snarlers\nEverything is safe.\nPerfectly safe."
VERIZON_SEGMENTS = ("See Note 3 to the consolidated financial statements for additional information on the sale of "
                    "Verizon Media. Revenues for our segments are discussed separately below under the heading "
                    "\"Segment Results of Operations.\"")
PFAS_CASH = ("The 2022 non-cash impairment expenses added back to net income in arriving at net cash provided by "
             "operating activities above primarily relate to 3M's commitment to a plan to exit per- and "
             "polyfluoroalkyl substance (PFAS) manufacturing as described in Note 15.")


def cafe_passages() -> list[Passage]:
    return [
        passage("cafe", CAFE_NOTES, title="cafe_staff", kind="text"),
        passage("starbucks", STARBUCKS_POST, text_type="post", kind="post", rank=2, title="reddit_wallstreetbets"),
        passage("gme", GME_POST, text_type="post", kind="post", rank=3, title="reddit_wallstreetbets"),
        passage("captions", CAPTIONS, text_type="transcript", kind="transcript", rank=4,
                title="elephants-dream_captions.en"),
        passage("verizon", VERIZON_SEGMENTS, rank=5, title="VERIZON_2022_10K"),
        passage("pfas", PFAS_CASH, rank=6, title="3M_2022_10K"),
    ]


def test_a_sentence_sharing_one_word_with_the_question_is_not_quoted() -> None:
    gen = ExtractiveGenerator()
    ps = cafe_passages()
    assert gen.generate("Who is the head barista?", ps) == (
        f"Maria Lopez is the head barista at the Elm Street cafe [1](chunk:{cid('cafe')}).")
    assert gen.generate("When does the new oven arrive?", ps) == (
        f"The new oven arrives on Tuesday, March 14 [1](chunk:{cid('cafe')}).")


def test_when_no_sentence_covers_the_key_concepts_nothing_is_quoted() -> None:
    gen = ExtractiveGenerator()
    ps = cafe_passages()
    # "head" alone (head barista, headed, head-snarlers, heading) does not answer it
    assert gen.generate("Who is the head chef?", ps) == NO_EVIDENCE_TEXT
    assert gen.generate("When does the new dishwasher arrive?", ps) == NO_EVIDENCE_TEXT


def test_later_sentences_must_cover_about_as_much_as_the_best_one() -> None:
    milk = passage("milk", "Milk is delivered by Greenfield Dairy every Monday and Thursday.", title="cafe_staff",
                   kind="text")
    breakfast = passage("breakfast", "2.15am-breakfast,almonds, breast milk bought off Facebook Marketplace, 50mg "
                        "adderall", text_type="post", kind="post", rank=2, title="reddit_wallstreetbets")
    ps = [milk, breakfast]
    units = ExtractiveGenerator().select("Who delivers the milk?", ps)
    assert [u.chunk_id for u in units] == [cid("milk")]
    # without the right passage, "milk" alone is not enough either
    assert ExtractiveGenerator().select("Who delivers the milk?", [breakfast]) == []


def test_a_title_word_counts_for_the_passage_it_names() -> None:
    club = passage("club", "Book club\n\nThe next book is The Overstory by Richard Powers.\n"
                           "We meet on the first Thursday of each month at Dana's house.", title="book_club", kind="text")
    books = passage("books", "Good books to read for fundamentals, good email newsletters to subscribe to, just good "
                             "reliable sources for learning really.", text_type="post", kind="post", rank=2,
                    title="reddit_wallstreetbets")
    units = ExtractiveGenerator().select("What is the book club reading next?", [club, books])
    # "book club" names the notes file: its sentence answers, although it never says "club"
    assert units[0].quote == "The next book is The Overstory by Richard Powers."
    assert units[0].chunk_id == cid("club")



# --------------------------------------------------------------------------- questions and fragments

INTERVIEW = (
    "But I'd love to get the conversation started by having you share a little bit about what, you know, what's new "
    "and interesting in the space. How has it changed over the past few years?\n"
    "Actually, it wasn't very long ago when people talk about OCR, you know, what comes out the mind was firstly scan "
    "documents in many people's eyes. OCR for scan documents is sort of a solve the problem.\n"
    "More lately, I think there's two major development.")


def test_a_question_is_never_quoted_as_evidence() -> None:
    talk = passage("interview", INTERVIEW, text_type="transcript", kind="transcript",
                   title="twiml-409_deep-learning-ocr_cha-zhang")
    gen = ExtractiveGenerator()
    answer = gen.generate("How has OCR changed over the past few years?", [talk])
    assert "How has it changed" not in answer and "?" not in answer
    # a question is all that matches: no answer rather than the question
    only = passage("only", "How has it changed over the past few years?\nGot it.", text_type="transcript",
                   kind="transcript", title="twiml-409_deep-learning-ocr_cha-zhang")
    assert gen.generate("How has OCR changed over the past few years?", [only]) == NO_EVIDENCE_TEXT


EARPLUGS_CHUNK_END = (
    "3M has committed $1.0 billion to fund this trust and has committed an additional $0.2 billion to fund projected "
    "related\ncase expenses. Under the terms of the agreement, the Company will provide additional funding if required "
    "by the Aearo Entities. Related to these actions, which represent a\nchange in strategy for managing the Combat "
    "Arms Version 2 earplugs and Aearo respirator mask/asbestos alleged litigation liabilities, 3M reflected a pre-tax "
    "charge of")


def test_a_sentence_cut_by_the_chunk_edge_is_not_quoted() -> None:
    p = passage("earplugs", EARPLUGS_CHUNK_END, metadata={"page": 108})
    p = p.model_copy(update={"chunk": p.chunk.model_copy(update={"char_start": 439259, "chunk_index": 399})})
    gen = ExtractiveGenerator()
    # the only sentence about the charge is cut before its figure: no answer rather than half a sentence
    assert gen.generate("What pre-tax charge did 3M reflect for the Combat Arms earplugs?", [p]) == NO_EVIDENCE_TEXT
    units = gen.select("How much has 3M committed to fund the trust?", [p])
    assert [u.quote for u in units] == [("3M has committed $1.0 billion to fund this trust and has committed an "
                                         "additional $0.2 billion to fund projected related case expenses.")]
    # a chunk that starts mid-sentence: its first, lower-case piece is not quoted either
    mid = passage("mid", "manufacturing by the end of 2025. As a result, the Company recorded a pre-tax charge of "
                         "$0.8 billion related to PFAS impairment.")
    mid = mid.model_copy(update={"chunk": mid.chunk.model_copy(update={"char_start": 5000, "chunk_index": 7})})
    units = ExtractiveGenerator().select("What pre-tax charge did 3M record for exiting PFAS manufacturing?", [mid])
    assert [u.quote for u in units] == [
        "As a result, the Company recorded a pre-tax charge of $0.8 billion related to PFAS impairment."]


BESTBUY_STORES = """\
Outlet Centers 20 1 (1) 20 16 2 - 18
Total 966 5 (2) 969 977 7 (2) 982
We continuously monitor store performance as part of a market-driven, omnichannel strategy. As we approach the expiration of leases, we evaluate various
options for each location, including whether a store should remain open. We currently expect to close a total of 20 to 30 Best Buy stores and open approximately
5 Outlet Centers in fiscal 2024.
Domestic segment revenue mix percentages and comparable sales percentage changes by revenue category were as follows:"""

CASH_FLOW_WRAPPED = """\
Cash Flows from Operating Activities
Net income including noncontrolling interest $ 5,791 $ 5,929 $ 5,453
Adjustments to reconcile net income including noncontrolling interest to net cash provided by operating
activities
Depreciation and amortization 1,831 1,915 1,911"""


def test_a_line_that_finishes_a_sentence_or_a_label_is_joined_to_it() -> None:
    from citewell.generate.extractive import _unit_spans

    units = [BESTBUY_STORES[a:b] for a, b in _unit_spans(BESTBUY_STORES, "table")]
    assert ("We currently expect to close a total of 20 to 30 Best Buy stores and open approximately\n"
            "5 Outlet Centers in fiscal 2024.") in units
    p = passage("bby", BESTBUY_STORES, text_type="table", title="BESTBUY_2024Q2_10Q")
    answer = ExtractiveGenerator().generate("How many Outlet Centers does Best Buy expect to open in fiscal 2024?", [p])
    assert "open approximately 5 Outlet Centers in fiscal 2024 [1](chunk:" in answer
    assert "open approximately [1]" not in answer

    rows = [CASH_FLOW_WRAPPED[a:b] for a, b in _unit_spans(CASH_FLOW_WRAPPED, "table")]
    assert ("Adjustments to reconcile net income including noncontrolling interest to net cash provided by operating\n"
            "activities") in rows
    # a sentence that syntok ended at a comma (a paragraph break in the chunk) runs on: the
    # quote, with its line breaks collapsed, is one sentence
    notes = "Revenue grew in all regions,\n\nled by the Americas.\nCosts fell."
    assert [notes[a:b] for a, b in _unit_spans(notes, "paragraph")] == [
        "Revenue grew in all regions,\n\nled by the Americas.", "Costs fell."]
    # but not where syntok would split the quote again: every unit is one sentence of the answer
    notes = "Priya Nair is on call this week; Tom Becker takes over next Monday."
    assert [notes[a:b] for a, b in _unit_spans(notes, "paragraph")] == [
        "Priya Nair is on call this week;", "Tom Becker takes over next Monday."]


def test_bullets_are_units_of_their_own_and_read_with_their_heading() -> None:
    from citewell.generate.extractive import _unit_spans

    text = ("Regional Operations\n• Net revenues of $991 million in the current quarter compared to $900 million in the "
            "prior year\nquarter, an increase of 10% due to an increase in business volume;\n• Adjusted Property EBITDAR "
            "of $320 million in the current quarter compared to $309 million in\nthe prior year quarter.\n"
            "• Closed on the sale of the operations of The Mirage for $1.1 billion in cash")
    assert [text[a:b] for a, b in _unit_spans(text, "paragraph")] == [
        "Regional Operations",
        ("Net revenues of $991 million in the current quarter compared to $900 million in the prior year\nquarter, "
         "an increase of 10% due to an increase in business volume;"),
        ("Adjusted Property EBITDAR of $320 million in the current quarter compared to $309 million in\nthe prior "
         "year quarter."),
        "Closed on the sale of the operations of The Mirage for $1.1 billion in cash",
    ]
    p = passage("mgm", text, title="MGMRESORTS_2022Q4_EARNINGS", metadata={"page": 2})
    units = ExtractiveGenerator().select("What were net revenues in the Regional Operations this quarter?", [p])
    assert units[0].quote.startswith("Net revenues of $991 million")


# --------------------------------------------------------------------------- tables: headers and the asked figure

AMCOR_RESULTS = """\
Results of Operations
Consolidated Results of Operations
($ in millions, except per share data) 2023 2022
Net sales $ 14,694 $ 14,544
Operating income 1,508 1,239"""

PPE_BY_REGION = """\
Property, Plant and Equipment - net (Millions) 2022 2021
Americas $ 6,066 $ 5,864
Total Company $ 9,178 $ 9,429
United States net property, plant and equipment (PP&E) was $5,662 million and $5,484 million at December 31, 2022 and 2021, respectively. China/Hong Kong net property,
plant and equipment (PP&E) was $518 million and $578 million at December 31, 2022 and 2021, respectively.

124"""

CAPEX_PAGE = """\
Year ended December 31, (Millions) 2022 2021
Purchases of property, plant and equipment (PP&E) $ (1,749) $ (1,603)
Proceeds from sale of PP&E and other assets 200 51
Net cash provided by (used in) investing activities $ (1,046) $ (1,317)"""


def test_a_table_row_is_quoted_with_its_column_header() -> None:
    p = passage("amcor", AMCOR_RESULTS, text_type="table", title="AMCOR_2023_10K", metadata={"page": 32})
    units = ExtractiveGenerator().select("What were Amcor's net sales in 2023?", [p])
    assert_exact(units, [p])
    # the row, each value with the year of its column from the header right above
    assert units[0].text == "Net sales $ 14,694 $ 14,544"
    assert AMCOR_RESULTS[units[0].start:units[0].end] == units[0].text
    answer = ExtractiveGenerator().generate("What were Amcor's net sales in 2023?", [p])
    assert answer.startswith("Net sales: $14,694 (2023), $14,544 (2022), in millions [1](chunk:")
    # a header alone is never an answer
    assert all(u.text != "($ in millions, except per share data) 2023 2022" for u in units)


def test_the_row_carrying_the_asked_figure_comes_first() -> None:
    ps = [passage("ppe", PPE_BY_REGION, text_type="table", rank=1, metadata={"page": 124}),
          passage("capex", CAPEX_PAGE, text_type="table", rank=2, metadata={"page": 39})]
    gen = ExtractiveGenerator()
    units = gen.select("What was 3M's capital expenditure in FY2022?", ps)
    assert_exact(units, ps)
    assert units[0].chunk_id == cid("capex")
    assert units[0].quote == "Purchases of property, plant and equipment (PP&E): $(1,749) (2022), $(1,603) (2021), in millions"
    # net PP&E (a balance) is not capital expenditure: it is another line item
    assert all("net property, plant and equipment" not in u.quote.lower() for u in units)
    answer = gen.generate("What was 3M's capital expenditure in FY2022?", ps)
    assert answer.startswith("Purchases of property, plant and equipment (PP&E): $(1,749) (2022)")
    # the cite stage numbers the first cited passage [1]: the capex page
    from citewell.cite import cite
    message = cite(answer, sources=ps)
    assert message.text.startswith("Purchases of property, plant and equipment (PP&E): $(1,749) (2022), $(1,603) "
                                   "(2021), in millions [1].")
    assert message.references[0].metadata["page"] == 39


def test_a_sentence_about_another_year_is_dropped_when_the_asked_year_is_there() -> None:
    p2022 = passage("div22", "During the third quarter of 2022, our Board of Directors increased our quarterly "
                             "dividend payment by 2.0% to $0.6525 from $0.6400 per share in the preceding quarter.",
                    title="VERIZON_2022_10K")
    p2021 = passage("div21", "Dividends During the third quarter of 2021, our Board of Directors increased our "
                             "quarterly dividend payment by 2.0% to $0.6400 per share.", rank=2, title="VERIZON_2022_10K")
    units = ExtractiveGenerator().select("By how much did Verizon increase its quarterly dividend in 2022?",
                                         [p2022, p2021])
    assert [u.chunk_id for u in units] == [cid("div22")]


def test_code_is_not_quoted() -> None:
    code = passage("code", "#define SWAP_ALLOCATE(nr) (e)\nThe paper defines creativity as the ability to produce "
                           "new ideas.", title="arxiv-1601.03642-creativity-in-ml")
    units = ExtractiveGenerator().select("How does the paper define creativity?", [code])
    assert [u.quote for u in units] == ["The paper defines creativity as the ability to produce new ideas."]


def test_a_follow_up_answers_its_own_question_first() -> None:
    # a follow-up's query carries the previous question's words after its own "?"
    globex = passage("globex", "Globex revenue was $55.0 million in 2022. Globex gross margin was 18 percent in 2022.",
                     title="globex", kind="text")
    units = ExtractiveGenerator().select("And what about its revenue? gross margin 2022", [globex])
    assert units[0].quote == "Globex revenue was $55.0 million in 2022."


def test_every_quoted_unit_is_one_cited_sentence_of_the_answer() -> None:
    from citewell.cite import apply_support, cite

    cases = [
        ("Who is the head barista?", cafe_passages()),
        ("Who is on call this week?", [passage("oncall", "Priya Nair is on call this week; Tom Becker takes over "
                                                         "next Monday.", title="it_oncall", kind="text")]),
        ("How many Outlet Centers does Best Buy expect to open in fiscal 2024?",
         [passage("bby", BESTBUY_STORES, text_type="table", title="BESTBUY_2024Q2_10Q")]),
        ("What was 3M's capital expenditure in FY2022?",
         [passage("ppe", PPE_BY_REGION, text_type="table", rank=1), passage("capex", CAPEX_PAGE, text_type="table",
                                                                             rank=2)]),
        ("What were 3M's net sales in FY2022?", tenk_passages()),
    ]
    gen = ExtractiveGenerator()
    for question, ps in cases:
        units = gen.select(question, ps)
        assert units, question
        message = apply_support(cite(gen.generate(question, ps), sources=ps))
        cited = [part for part in message.parts if part.source is not None]
        assert len(cited) == len(message.parts) == len(units), question
        for part, unit in zip(cited, units):
            assert part.source.chunk_id == unit.chunk_id
            assert part.support["verdict"] == "supported", (question, part.text)


def test_phrasing_words_do_not_block_the_answer() -> None:
    # "total" and "occurred" frame the question, "spend" is the filing's "cost", and "FY 2023"
    # is the year: the repurchase sentences answer it (before, nothing was quoted)
    text = ("Merchandise inventories, net at the end of the fourth quarter of fiscal 2023 totaled "
            "$1.6 billion.\nShare Repurchase Program\n"
            "During the fourth quarter of fiscal 2023, the Company repurchased 722,457 shares of its "
            "common stock at a cost of $328.1 million. During fiscal 2023, the Company repurchased 2.2 "
            "million shares of its common stock at a cost of $900.0 million.")
    p = passage("ulta", text, title="ULTABEAUTY_2023Q4_EARNINGS")
    question = ("What percent of Ulta Beauty's total spend on stock repurchases for FY 2023 occurred in "
                "Q4 of FY2023?")
    units = ExtractiveGenerator().select(question, [p])
    assert_exact(units, [p])
    assert [u.text.split(",")[0] for u in units] == [
        "Share Repurchase Program\nDuring the fourth quarter of fiscal 2023", "During fiscal 2023"]


def test_a_lead_in_ending_in_a_colon_is_never_the_answer() -> None:
    text = ("Fourth Quarter 2022 Financial Highlights:\n"
            "• Consolidated net revenues of $3.6 billion, an increase of 18% compared to the prior year quarter.")
    p = passage("mgm", text, title="MGMRESORTS_2022Q4_EARNINGS")
    units = ExtractiveGenerator().select("What were MGM's net revenues in the fourth quarter of 2022?", [p])
    assert_exact(units, [p])
    assert [u.text for u in units] == [text.split("\n", 1)[1].removeprefix("• ")]
    lead_in = passage("debt", "Outstanding long-term debt obligations as of December 31, 2022 and 2021 are as "
                              "follows:", title="VERIZON_2022_10K")
    assert ExtractiveGenerator().select("What was Verizon's long-term debt in 2022?", [lead_in]) == []


def _post(pid: str, text: str, created_at: str, rank: int) -> Passage:
    meta = {"source_type": "post", "source": "stocktwits", "id": pid, "created_at": created_at}
    chunk = Chunk(id=f"post-{pid}", resource_id="posts", chunk_index=rank, text=text, text_type="paragraph",
                  char_start=0, char_end=len(text), metadata=meta)  # type: ignore[arg-type]
    return Passage(chunk=chunk, resource_title="messages", resource_kind="post", file_name="messages.jsonl",
                   rank=rank)  # type: ignore[arg-type]


def test_a_posts_source_and_month_count_as_what_the_post_is_about() -> None:
    july = _post("1", "Bitcoin holders are not selling and miners keep their coins.", "2022-07-17T20:25:58Z", 1)
    june = _post("2", "Bitcoin crashed below twenty thousand and everyone is panic selling.", "2022-06-18T10:00:00Z", 2)
    answer = ExtractiveGenerator().generate("What did StockTwits users say about Bitcoin in June 2022?", [july, june])
    assert answer.startswith("Bitcoin crashed below twenty thousand and everyone is panic selling [2]")
    assert "(chunk:post-2)" in answer and "(chunk:post-1)" not in answer
