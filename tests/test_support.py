"""Support checks (docs/architecture.md rule 8): the hand-made verdict table, the extractive
generator's citations, policies ``flag`` and ``drop`` and their invariants.

Passages are real text or built from it: 3M's 2022 10-K (income statement as
FinanceBench's ``evidence_text_full_page`` gives it, one cell per line; cash-flow
statement one row per line; MD&A-style prose with the 10-K's figures), a TWIML podcast
transcript (one cue per line) and FinanceBench's evidence pages.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citewell.cite import build_citations, cite, convert_offsets, scan
from citewell.cite.support import LINE_KEEPER, apply_support, message_sentence
from citewell.cite.verdict import Support, check_rules, check_support, unescape_markdown
from citewell.domains.finance import FINANCE
from citewell.generate import ExtractiveGenerator, escape_quote
from citewell.models import Chunk, Message, Passage

from .conftest import CORPUS
from .test_cite_properties import _passages as _cite_passages
from .test_cite_properties import raw_texts

# --------------------------------------------------------------------------- passages

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
7,161
Earnings per share attributable to 3M common shareholders - basic
$
10.21 $
10.18 $
9.25"""

CASH_FLOW = """\
3M Company and Subsidiaries
Consolidated Statement of Cash Flows
Years ended December 31
(Millions) 2022 2021 2020
Net income including noncontrolling interest $ 5,791 $ 5,929 $ 5,453
Depreciation and amortization 1,831 1,915 1,911
Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)
Purchases of treasury stock (1,464) (2,199) (368)
Dividends paid to shareholders (3,369) (3,420) (3,388)"""

CAPEX_ROW = "Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)"

MARGIN_TABLE = """\
Segment results
(%) 2022 2021
Gross margin 44.2 47.1
Operating income margin 19.1 21.2"""

PROSE = (
    "In 2022, 3M's net sales were $34.2 billion, a decrease of 3.2 percent compared to 2021. "
    "Organic sales increased 1.2 percent. Operating income margin was 19.1 percent, down 2.1 "
    "percentage points. The company did not repurchase shares in the fourth quarter of 2022. "
    "In the third quarter of 2022, 3M recorded a pre-tax gain of $2.7 billion related to the "
    "split-off of its Food Safety business. Capital spending in fiscal 2022 was 1,234.5 million "
    "dollars. Cash and equivalents were $3,655 million as of December 31, 2022."
)

# Right number, several years: each sentence names its own year.
PROSE_YEARS = (
    "Net sales were $34.2 billion in 2022 and $35.4 billion in 2021. "
    "Operating income was $6.5 billion in 2022."
)

EURO_PROSE = "Group revenue reached €3,100 million in 2023, with an operating margin of 12.43%."

QUARTER_PROSE = (
    "Revenue for the fourth quarter of 2023 was $2.3 billion, up 9 percent. "
    "Gross margin expanded by 120 basis points."
)

# TWIML #129 (David Rosenberg), cues 20:05-20:14 and 32:01-32:13, one cue per line.
TRANSCRIPT = """\
The kind of the exact match rate isn't so high, and it's 40%.
But the errors are even when it makes errors that are pretty minor.
So we have a class of documents, which without any information about the individual page
or the individual document, the overall performance will be, say, 98% precision and recall while
human is 97 or 98."""

# Unicode: no-break spaces, a narrow no-break space as thousands separator, en dashes as minus.
UNICODE_PROSE = (
    "Net sales were $\u00a034.2\u00a0billion in fiscal\u00a02022. Operating cash flow changed by "
    "\u20131,863 million, and organic growth was \u20130.4\u00a0%. Employees numbered 92\u202f000."
)

# (sentence, passage, text_type, expected verdict, category)
TABLE: list[tuple[str, str, str | None, str, str]] = [
    # --- verbatim quotes (the extractive generator's case)
    ("Organic sales increased 1.2 percent.", PROSE, "paragraph", "supported", "verbatim"),
    (CAPEX_ROW + ".", CASH_FLOW, "table", "supported", "verbatim table row"),
    ("The kind of the exact match rate isn't so high, and it's 40%.", TRANSCRIPT, "transcript",
     "supported", "verbatim transcript"),
    (("or the individual document, the overall performance will be, say, 98% precision and recall while "
      "human is 97 or 98."), TRANSCRIPT, "transcript", "supported", "verbatim across cues"),
    # --- equal after scaling
    ("3M's net sales were $34,229 million in 2022.", INCOME_CELLS, "table", "supported", "scaling"),
    ("Net sales in 2022 were $34,229,000,000.", INCOME_CELLS, "table", "supported", "scaling"),
    ("Net sales were 34,229 in 2022.", INCOME_CELLS, "table", "supported", "as written"),
    ("Capital spending was $1,234.5 million in fiscal 2022.", PROSE, "paragraph", "supported", "1,234.5 = 1234.5"),
    ("The pre-tax gain was $2,700 million in the third quarter of 2022.", PROSE, "paragraph", "supported",
     "$2.7 billion = 2,700 million"),
    # --- rounding to the sentence's precision
    ("3M's net sales were $34.2 billion in 2022.", INCOME_CELLS, "table", "supported", "rounding"),
    ("3M's net sales were $34.23 billion in 2022.", INCOME_CELLS, "table", "supported", "rounding"),
    ("3M's capital expenditures were $1.7 billion in 2022.", CASH_FLOW, "table", "supported",
     "$1.7 billion vs 1,749 (millions)"),
    ("Operating income margin was 19 percent.", PROSE, "paragraph", "supported", "rounding percent"),
    ("The operating margin was about 12.4% in 2023.", EURO_PROSE, "paragraph", "supported", "rounding percent"),
    # --- rounding gone wrong, one digit off
    ("3M's capital expenditures were $1.74 billion in 2022.", CASH_FLOW, "table", "unsupported", "bad rounding"),
    ("3M's capital expenditures were $1.8 billion in 2022.", CASH_FLOW, "table", "uncertain",
     "another row's number"),
    ("3M's net sales were $34.3 billion in 2022.", INCOME_CELLS, "table", "unsupported", "one digit"),
    ("3M's net sales were $34,239 million in 2022.", INCOME_CELLS, "table", "unsupported", "one digit"),
    ("Cost of sales was $19,282 million in 2022.", INCOME_CELLS, "table", "unsupported", "one digit"),
    ("Purchases of PP&E were $1,794 million in 2022.", CASH_FLOW, "table", "unsupported", "transposed digits"),
    ("Organic sales increased 1.3 percent.", PROSE, "paragraph", "unsupported", "one digit"),
    ("Basic earnings per share were $10.12 in 2022.", INCOME_CELLS, "table", "unsupported", "one digit"),
    # --- thousands vs millions
    ("3M's net sales were $34,229 thousand in 2022.", INCOME_CELLS, "table", "unsupported", "thousands vs millions"),
    ("3M's net sales were $34.2 million in 2022.", INCOME_CELLS, "table", "unsupported", "millions vs billions"),
    ("Cash and equivalents were $3.655 billion at year end 2022.", PROSE, "paragraph", "supported",
     "millions = billions"),
    ("Cash and equivalents were $3,655 thousand as of December 31, 2022.", PROSE, "paragraph", "unsupported",
     "thousands vs millions"),
    # --- right number, wrong year (prose)
    ("In 2020, 3M's net sales were $34.2 billion.", PROSE, "paragraph", "unsupported", "wrong year"),
    ("In 2021, net sales were $34.2 billion.", PROSE_YEARS, "paragraph", "unsupported", "wrong year"),
    ("Net sales were $35.4 billion in 2021.", PROSE_YEARS, "paragraph", "supported", "right year"),
    ("Operating income was $6.5 billion in 2021.", PROSE_YEARS, "paragraph", "unsupported", "wrong year"),
    ("Capital spending in FY2020 was $1,234.5 million.", PROSE, "paragraph", "unsupported", "wrong fiscal year"),
    ("Capital spending in FY22 was $1,234.5 million.", PROSE, "paragraph", "supported", "FY22 = fiscal 2022"),
    ("Revenue was $2.3 billion in Q4 2023.", QUARTER_PROSE, "paragraph", "supported", "Q4 2023 = fourth quarter"),
    ("Revenue was $2.3 billion in Q3 2023.", QUARTER_PROSE, "paragraph", "unsupported", "wrong quarter"),
    ("Cash and equivalents were $3,655 million as of June 30, 2022.", PROSE, "paragraph", "unsupported",
     "wrong date"),
    ("Cash and equivalents were $3,655 million on 2022-12-31.", PROSE, "paragraph", "supported", "ISO date"),
    # --- negated claims and directions
    ("The company repurchased shares in the fourth quarter of 2022.", PROSE, "paragraph", "unsupported",
     "negation"),
    ("The company did not repurchase any shares in the fourth quarter of 2022.", PROSE, "paragraph", "supported",
     "negation agrees"),
    ("Organic sales did not increase 1.2 percent.", PROSE, "paragraph", "unsupported", "negation"),
    ("In 2022, 3M's net sales increased 3.2 percent compared to 2021.", PROSE, "paragraph", "unsupported",
     "direction"),
    # --- supported paraphrases
    ("Revenue fell 3.2% to $34.2 billion in 2022.", PROSE, "paragraph", "supported", "paraphrase"),
    ("Sales on an organic basis grew 1.2%.", PROSE, "paragraph", "supported", "paraphrase"),
    ("3M booked a $2.7 billion pre-tax gain on the Food Safety split-off in Q3 2022.", PROSE, "paragraph",
     "supported", "paraphrase"),
    ("Across the individual documents, precision and recall reach about 98%.", TRANSCRIPT, "transcript",
     "supported", "transcript paraphrase"),
    ("The exact match rate was 45%.", TRANSCRIPT, "transcript", "unsupported", "transcript number"),
    # --- percent vs percentage points
    ("Operating income margin fell 2.1 percentage points.", PROSE, "paragraph", "supported", "pp"),
    ("Operating income margin fell 210 basis points.", PROSE, "paragraph", "supported", "bps = pp"),
    ("Operating income margin fell 2.1 percent.", PROSE, "paragraph", "unsupported", "percent vs pp"),
    ("Gross margin expanded by 1.2 percentage points.", QUARTER_PROSE, "paragraph", "supported", "bps = pp"),
    ("Gross margin expanded by 1.2%.", QUARTER_PROSE, "paragraph", "unsupported", "pp vs percent"),
    ("Gross margin was 44.2% in 2022.", MARGIN_TABLE, "table", "supported", "percent column header"),
    # --- currency symbols
    ("Group revenue reached €3.1 billion in 2023.", EURO_PROSE, "paragraph", "supported", "euro scaling"),
    ("Group revenue reached $3.1 billion in 2023.", EURO_PROSE, "paragraph", "unsupported", "currency mismatch"),
    ("3M's net sales were €34.2 billion in 2022.", INCOME_CELLS, "table", "unsupported", "currency mismatch"),
    # --- negative numbers in parentheses
    ("Purchases of PP&E were -$1,749 million in 2022.", CASH_FLOW, "table", "supported", "parentheses"),
    ("Dividends paid to shareholders were (3,369) million in 2022.", CASH_FLOW, "table", "supported",
     "parentheses"),
    # --- a table row passage
    ("Purchases of PP&E were 1,749.", CAPEX_ROW, "table", "supported", "table row"),
    ("Purchases of PP&E were 1,794.", CAPEX_ROW, "table", "unsupported", "table row"),
    ("Purchases of PP&E were $1.7 billion.", CAPEX_ROW, "table", "uncertain", "scale unknown"),
    # --- unicode
    ("Net sales were $34.2 billion in fiscal 2022.", UNICODE_PROSE, "paragraph", "supported", "nbsp"),
    ("Net\u00a0sales were $34.2\u00a0billion in FY2022.", PROSE, "paragraph", "supported", "nbsp in sentence"),
    ("Operating cash flow changed by -1,863 million.", UNICODE_PROSE, "paragraph", "supported", "en dash minus"),
    ("Organic growth was \u22120.4%.", UNICODE_PROSE, "paragraph", "supported", "minus sign"),
    ("Employees numbered 92,000.", UNICODE_PROSE, "paragraph", "supported", "narrow nbsp thousands"),
    ("Operating cash flow changed by \u20131,868 million.", UNICODE_PROSE, "paragraph", "unsupported",
     "en dash, one digit"),
    # --- doubts
    ("Employees praised the new cafeteria.", PROSE, "paragraph", "uncertain", "low overlap"),
    ("Dividends were $34.2 billion in 2022.", INCOME_CELLS, "table", "uncertain", "number right, words wrong"),
    ("Apple's net sales were $34.2 billion in 2022.", INCOME_CELLS, "table", "uncertain", "entity"),
    ("3M's net sales were $34.2 billion in 2019.", INCOME_CELLS, "table", "uncertain", "table year missing"),
    ("Net sales were $34,229 million in 2022.", PROSE, "paragraph", "uncertain", "more precise than passage"),
    # --- nothing to check
    ("It is.", PROSE, "paragraph", "unchecked", "no content"),
    ("Net sales were $34.2 billion.", "", "paragraph", "unchecked", "no passage"),
]


@pytest.mark.parametrize(("sentence", "passage", "text_type", "expected", "category"), TABLE,
                         ids=[f"{i:02d}-{row[4]}" for i, row in enumerate(TABLE)])
def test_verdict_table(sentence: str, passage: str, text_type: str | None, expected: str, category: str) -> None:
    support = check_support(sentence, passage, text_type=text_type, expansions=FINANCE.expansions)  # filings' words
    assert support.verdict == expected, (category, support)
    assert 0.0 <= support.score <= 1.0
    assert support.reasons and all(isinstance(r, str) and r for r in support.reasons)
    if expected == "supported":
        assert support.score >= 0.5
    if expected == "unsupported":
        assert support.score <= 0.3


def test_table_covers_every_category() -> None:
    assert len(TABLE) >= 40
    verdicts = {row[3] for row in TABLE}
    assert verdicts == {"supported", "unsupported", "uncertain", "unchecked"}
    categories = " ".join(row[4] for row in TABLE)
    for needed in ("one digit", "wrong year", "negation", "paraphrase", "thousands vs millions", "rounding",
                   "currency", "percent vs pp", "parentheses", "$1.7 billion vs 1,749", "table row",
                   "transcript", "nbsp", "en dash"):
        assert needed in categories, needed


def test_verbatim_is_supported_with_score_one() -> None:
    s = check_support("SG&A, measured as a percent of sales, increased in 2022 when compared to the same "
                      "period last year.",
                      "SG&A, measured as a percent of sales, increased in 2022 when compared\nto the same "
                      "period last year. SG&A was impacted by costs.")
    assert s == Support("supported", 1.0, ("verbatim",))
    # a cut quote (extractive: whole words then an ellipsis) is verbatim too
    assert check_support("SG&A, measured as a percent…", "SG&A, measured as a percent of sales.").verdict == "supported"


def test_verbatim_needs_word_boundaries() -> None:
    assert check_support("Sales rose 1.", "Sales rose 12% in 2022.", text_type="paragraph").verdict != "supported"
    assert check_support("Sales rose 1.", "Sales rose 1.5% in 2022.", text_type="paragraph").verdict != "supported"


@pytest.mark.parametrize(("sentence", "passage", "reason"), [
    ("Net sales were $2.3 billion.", "Net sales were $2,400 million.", "number_not_found:$2.3 billion"),
    ("In 2021, net sales were $34.2 billion.", PROSE_YEARS, "period_mismatch:2021"),
    ("In 2020, net sales were $34.2 billion.", PROSE, "year_not_found:2020"),
    ("The company repurchased shares in the fourth quarter of 2022.", PROSE, "negation_mismatch"),
    ("In 2022, 3M's net sales increased 3.2 percent compared to 2021.", PROSE, "direction_mismatch"),
    ("Employees praised the new cafeteria.", PROSE, "low_overlap:0.00"),
    ("Revenue was $2.3 billion in Q3 2023.", QUARTER_PROSE, "quarter_not_found:Q3"),
    ("Apple's net sales were $34.2 billion in 2022.", INCOME_CELLS, "entity_not_found:apple"),
])
def test_reasons_are_machine_readable(sentence: str, passage: str, reason: str) -> None:
    assert reason in check_support(sentence, passage).reasons


def test_support_to_dict_shape() -> None:
    d = check_support("Organic sales increased 1.2 percent.", PROSE).to_dict()
    assert d == {"verdict": "supported", "score": 1.0, "reasons": ["verbatim"]}
    json.dumps(d)


def test_title_names_count_for_entities() -> None:
    sentence = "3M's net sales were $34.2 billion in 2022."
    passage = "Net sales were $34.2 billion in 2022, down from the prior year."
    assert check_support(sentence, passage).verdict == "uncertain"
    assert check_support(sentence, passage, title="3M_2022_10K").verdict == "supported"


class _BagEmbedder:
    """A tiny deterministic embedder: letter counts."""

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return [[float(t.lower().count(c)) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts]


class _OrthogonalEmbedder:
    def embed(self, texts):  # type: ignore[no-untyped-def]
        return [[1.0, 0.0]] + [[0.0, 1.0]] * (len(texts) - 1)


class _BrokenEmbedder:
    def embed(self, texts):  # type: ignore[no-untyped-def]
        raise RuntimeError("model not loaded")


def test_embedder_similarity() -> None:
    sentence = "Revenue fell 3.2% to $34.2 billion in 2022."
    ok = check_support(sentence, PROSE, embedder=_BagEmbedder(), expansions=FINANCE.expansions)
    assert ok.verdict == "supported" and any(r.startswith("similarity:") for r in ok.reasons)
    low = check_support(sentence, PROSE, embedder=_OrthogonalEmbedder(), expansions=FINANCE.expansions)
    assert low.verdict == "uncertain" and "low_similarity:0.00" in low.reasons
    broken = check_support(sentence, PROSE, embedder=_BrokenEmbedder(), expansions=FINANCE.expansions)
    assert broken.verdict == "supported" and "similarity_unavailable" in broken.reasons


def test_unescape_and_message_sentence() -> None:
    raw = "see [12] and `code` and a\\b [x](y)"
    assert unescape_markdown(escape_quote(raw)) == raw
    text = "First [1]. Second \\[12\\] part [2] [1]."
    a, b = text.index("[2]"), text.rindex("[1]")
    assert message_sentence(text, 10, len(text), [(6, 9), (a, a + 3), (b, b + 3)]) == "Second [12] part."


# --------------------------------------------------------------------------- messages


def _passage(cid: str, text: str, *, text_type: str = "paragraph", title: str = "3M_2022_10K",
             rank: int = 1, index: int = 0) -> Passage:
    chunk = Chunk(id=cid, resource_id=f"r-{title}", chunk_index=index, text=text, text_type=text_type,  # type: ignore[arg-type]
                  metadata={"source_type": "pdf", "page": index + 1})
    return Passage(chunk=chunk, resource_title=title, resource_kind="pdf", file_name=f"{title}.pdf", rank=rank)


def _post(source: str, pid: str, text: str) -> Passage:
    chunk = Chunk(id=f"post-{source}-{pid}", resource_id="posts", chunk_index=0, text=text, text_type="post",
                  metadata={"source_type": "post", "source": source, "id": pid})
    return Passage(chunk=chunk, resource_title="posts.jsonl", resource_kind="post")


def _content(text: str) -> str:
    """Text without markers ``[N]`` and without whitespace (drop keeps a line break that
    stood before a removed marker), escaped numbers unescaped (drop escapes a bracketed
    number that removing a marker creates: compare unescaped)."""
    text = text.replace(LINE_KEEPER, "")
    return re.sub(r"\s+", "", unescape_markdown(re.sub(r"(?<!\\)\[\d+\]", "", text)))


def check_invariants(m: Message) -> None:
    """Rules 2, 3, 6, 7 on a message in any offset unit."""
    cp = convert_offsets(m, "codepoint") if m.offset_unit != "codepoint" else m
    text = cp.text
    assert "".join(p.text for p in cp.parts) == text
    pos = 0
    for p in cp.parts:
        extra = p.model_extra or {}
        assert (extra["start_index"], extra["end_index"]) == (pos, pos + len(p.text))
        pos += len(p.text)
    numbered = [r for r in cp.references if r.citation is not None]
    assert [r.citation for r in numbered] == list(range(1, len(numbered) + 1))
    starts: list[tuple[int, int]] = []
    for r in numbered:
        occ = r.occurrences or []
        assert occ and (occ[0].start_index, occ[0].end_index) == (r.start_index, r.end_index)
        for o in occ:
            assert text[o.start_index:o.end_index] == f"[{r.citation}]"
            starts.append((o.start_index, r.citation))
    seen: list[int] = []
    for _, n in sorted(starts):
        if n not in seen:
            seen.append(n)
    assert seen == list(range(1, len(numbered) + 1))  # first-appearance numbering, gap-free
    citations, resource_ids = build_citations(cp.parts)
    assert [c.model_dump() for c in cp.citations] == [c.model_dump() for c in citations]
    assert cp.resource_ids == resource_ids
    if m.offset_unit != "codepoint":  # the slice rule in the message's own unit
        enc = m.text.encode("utf-16-le") if m.offset_unit == "utf16" else m.text.encode()
        width = 2 if m.offset_unit == "utf16" else 1
        for r in m.references:
            if r.citation is not None:
                assert r.start_index is not None and r.end_index is not None
                piece = enc[r.start_index * width:r.end_index * width]
                assert piece.decode("utf-16-le" if width == 2 else "utf-8") == f"[{r.citation}]"


def _load_financebench() -> list[dict]:
    path = CORPUS / "eval" / "financebench_dev.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("text_type", ["table", "paragraph"])
def test_every_extractive_citation_is_supported(text_type: str) -> None:
    rows = _load_financebench()
    assert len(rows) == 39
    gen = ExtractiveGenerator()
    by_doc: dict[str, list[Passage]] = {}
    for row in rows:
        for i, ev in enumerate(row["evidence"]):
            cid = f"{row['financebench_id']}-{i}"
            by_doc.setdefault(ev["doc_name"], []).append(
                _passage(cid, ev["evidence_text_full_page"], text_type=text_type, title=ev["doc_name"],
                         index=ev["evidence_page_num"]))
    cited = 0
    for row in rows:
        own = [p for p in by_doc[row["doc_name"]] if p.chunk.id.startswith(row["financebench_id"])]
        others = [p for p in by_doc[row["doc_name"]] if p not in own][:3]  # same-document distractors
        passages = [p.model_copy(update={"rank": k + 1}) for k, p in enumerate(own + others)]
        message = apply_support(cite(gen.generate(row["question"], passages), sources=passages))
        check_invariants(message)
        for part in message.parts:
            if part.source is not None:
                cited += 1
                assert part.support is not None and part.support["verdict"] == "supported", (part.text, part.support)
                assert part.support["score"] == 1.0
        for ref in message.references:
            for occ in ref.occurrences or []:
                assert occ.support is not None and occ.support["verdict"] == "supported"
        dropped = apply_support(cite(gen.generate(row["question"], passages), sources=passages), policy="drop")
        assert dropped.text == message.text and not [w for w in dropped.warnings if w.code == "citation_dropped"]
    assert cited >= 60


def test_extractive_transcript_and_escaped_quotes_are_supported() -> None:
    vtt = (CORPUS / "transcripts" / "twiml-129_information-extraction-documents_david-rosenberg.vtt").read_text()
    cues = [ln for ln in vtt.splitlines() if ln.strip() and "-->" not in ln and not ln.strip().isdigit()
            and not ln.startswith(("WEBVTT", "NOTE", "Kind:", "Language:"))]
    chunks = ["\n".join(cues[i:i + 12]) for i in range(0, min(len(cues), 360), 12)]
    passages = [_passage(f"t-{i}", c, text_type="transcript", title="twiml-129", rank=i + 1, index=i)
                for i, c in enumerate(chunks)]
    tricky = _passage("tricky", "Per note [12], revenue `grew` 5% to $1.2 billion (see [a](post:x:1)) \\o/.\n"
                                "Margins were flat.", rank=1)
    gen = ExtractiveGenerator()
    questions = ["What accuracy do they get?", "How many people are in the office of the CTO?",
                 "What is the exact match rate?", "How long has the company worked on these problems?"]
    for q in questions:
        message = apply_support(cite(gen.generate(q, passages), sources=passages))
        for part in message.parts:
            if part.source is not None:
                assert part.support and part.support["verdict"] == "supported", (part.text, part.support)
    message = apply_support(cite(gen.generate("How much did revenue grow per note 12?", [tricky]), sources=[tricky]))
    assert "\\[12\\]" in message.text
    sourced = [p for p in message.parts if p.source is not None]
    assert sourced and all(p.support and p.support["verdict"] == "supported" for p in sourced)


def test_flag_marks_without_removing() -> None:
    good = _passage("good", PROSE, rank=1)
    table = _passage("table", INCOME_CELLS, text_type="table", rank=2, index=1)
    raw = ("Organic sales increased 1.2 percent [a](chunk:good). "
           "Net sales were $36.1 billion in 2022 [b](chunk:table) [c](chunk:good).")
    message = cite(raw, sources=[good, table])
    flagged = apply_support(message)
    assert flagged.text == message.text and flagged.references[0].citation == 1
    assert message.parts[0].support is None  # the input is not changed
    verdicts = [p.support["verdict"] if p.support else None for p in flagged.parts]
    assert verdicts == ["supported", "unsupported"]
    second = flagged.parts[1].support
    assert second is not None and "number_not_found:$36.1 billion" in second["reasons"]
    occ = {(r.citation, i): o.support["verdict"] for r in flagged.references for i, o in enumerate(r.occurrences or [])
           if o.support}
    assert occ == {(1, 0): "supported", (1, 1): "unsupported", (2, 0): "unsupported"}
    check_invariants(flagged)


def test_drop_removes_unsupported_citation_and_renumbers() -> None:
    table = _passage("table", INCOME_CELLS, text_type="table", rank=1)
    prose = _passage("prose", PROSE, rank=2, index=1)
    raw = ("Net sales were $36.1 billion in 2022 [x](chunk:table). "
           "Organic sales increased 1.2 percent [y](chunk:prose).")
    message = cite(raw, sources=[table, prose])
    assert message.text == "Net sales were $36.1 billion in 2022 [1]. Organic sales increased 1.2 percent [2]."
    dropped = apply_support(message, policy="drop")
    assert dropped.text == "Net sales were $36.1 billion in 2022. Organic sales increased 1.2 percent [1]."
    check_invariants(dropped)
    assert [(r.citation, r.chunk_id) for r in dropped.references] == [(1, "prose")]
    assert dropped.parts[0].source is None and dropped.parts[0].support is None
    assert dropped.parts[1].source is not None and dropped.parts[1].source.chunk_id == "prose"
    assert dropped.parts[1].support and dropped.parts[1].support["verdict"] == "supported"
    assert [c.chunk_index for c in dropped.citations] == [1] and dropped.resource_ids == ["r-3M_2022_10K"]
    warnings = [w for w in dropped.warnings if w.code == "citation_dropped"]
    assert len(warnings) == 1
    w = warnings[0].model_dump()
    assert w["citation"] == 1 and "number_not_found:$36.1 billion" in w["reasons"] and w["message"]
    assert dropped.grounded


def test_drop_everything_ungrounds_and_keeps_other_warnings_and_entities() -> None:
    table = _passage("table", INCOME_CELLS, text_type="table", rank=1)
    from citewell.cite import InMemoryResolver

    resolver = InMemoryResolver([table], entities=[("pattern", "p1")])
    raw = "See [the pattern](pattern:p1). Net sales were $1 trillion [x](chunk:table) [gone](chunk:nope)."
    message = cite(raw, resolver=resolver)
    dropped = apply_support(message, policy="drop")
    assert dropped.text == "See the pattern. Net sales were $1 trillion gone."
    assert not dropped.grounded
    assert [r.type for r in dropped.references] == ["pattern"]
    assert [w.code for w in dropped.warnings] == ["unknown_target", "citation_dropped"]
    assert dropped.citations == [] and dropped.resource_ids == []
    check_invariants(dropped)


def test_drop_keeps_unchecked_posts_and_offset_unit() -> None:
    good = _passage("good", PROSE, rank=1)
    raw = ("😀 Fans say 3M is great [p](post:reddit:t3_x). Organic sales increased 1.2 percent [a](chunk:good). "
           "Organic sales increased 9.9 percent [b](chunk:good).")
    message = cite(raw, sources=[good, _post("reddit", "t3_x", "")], offset_unit="utf16")
    dropped = apply_support(message, policy="drop")
    assert dropped.offset_unit == "utf16"
    check_invariants(dropped)
    assert "[1]" in dropped.text and "[2]." in dropped.text and "9.9 percent." in dropped.text
    post = dropped.references[0]
    assert post.type == "post" and post.occurrences and post.occurrences[0].support
    assert post.occurrences[0].support["verdict"] == "unchecked"


def test_drop_repeats_when_parts_merge() -> None:
    # dropping the marker merges two sentences, whose new part is checked again
    p = _passage("p", "Net sales were 5 units. Costs were 7 units.", rank=1)
    raw = "Net sales were 5 units [a](chunk:p). 2023 costs were 8 units [a](chunk:p)."
    dropped = apply_support(cite(raw, sources=[p]), policy="drop")
    check_invariants(dropped)
    for part in dropped.parts:
        if part.support:
            assert part.support["verdict"] not in ("unsupported", "uncertain")


def test_unknown_policy_is_an_error() -> None:
    with pytest.raises(ValueError):
        apply_support(Message(text="x"), policy="hide")


# --------------------------------------------------------------------------- properties

SENTENCES = [
    "Organic sales increased 1.2 percent",
    "Organic sales increased 7.7 percent",
    "In 2022, 3M's net sales were $34.2 billion",
    "In 2020, net sales were $34.2 billion",
    "The company did not repurchase shares in the fourth quarter of 2022",
    "The company repurchased shares",
    "Employees praised the cafeteria",
    "Net sales were $34,229 million",
    "😀 漢字 [12] `x` \\[3\\]",
    "",
]
LINKS = ["[a](chunk:prose)", "[b](chunk:table)", "[c](post:reddit:t3_x)", "[d](chunk:nope)", "[e](pattern:p1)",
         "[f](https://e.com/(x))", ""]
ENDS = [". ", "! ", ".\n", "\n\n", " ", ""]

PROPERTY_SOURCES = [
    _passage("prose", PROSE, rank=1),
    _passage("table", INCOME_CELLS, text_type="table", rank=2, index=1),
    _post("reddit", "t3_x", "3M is great, sales increased 1.2 percent"),
]

sentences_with_links = st.lists(
    st.tuples(st.sampled_from(SENTENCES), st.lists(st.sampled_from(LINKS), max_size=3), st.sampled_from(ENDS)),
    max_size=8,
).map(lambda items: "".join(s + (" " if links and s else "") + " ".join(links) + end for s, links, end in items))


def _stray_numbers(m: Message) -> list[tuple[int, int]]:
    """Rule 5: unescaped bracketed numbers outside code and links that are no marker."""
    cp = convert_offsets(m, "codepoint") if m.offset_unit != "codepoint" else m
    markers = {(o.start_index, o.end_index) for r in cp.references for o in (r.occurrences or [])}
    skip = [(t.start, t.end) for t in scan(cp.text) if t.kind in ("code", "mdlink")]
    stray = []
    for match in re.finditer(r"\[\d+\]", cp.text):
        a = match.start()
        slashes = len(cp.text[:a]) - len(cp.text[:a].rstrip("\\"))
        if slashes % 2 or match.span() in markers or any(x <= a < y for x, y in skip):
            continue
        stray.append(match.span())
    return stray


def _drop_properties(raw: str, unit: str, with_sources: bool, sources: list[Passage] | None = None) -> None:
    from citewell.cite import InMemoryResolver

    sources = PROPERTY_SOURCES if sources is None else sources
    if with_sources:
        message = cite(raw, sources=sources, offset_unit=unit)
    else:
        message = cite(raw, resolver=InMemoryResolver(sources, entities=[("pattern", "p1")]), offset_unit=unit)
    dropped = apply_support(message, policy="drop")
    assert dropped.offset_unit == unit
    check_invariants(dropped)
    assert _content(dropped.text) == _content(message.text)
    def structure(text: str) -> list[tuple[str, str]]:
        return [(t.kind, _content(t.text)) for t in scan(text) if t.kind in ("code", "mdlink", "link", "tail")]

    assert structure(dropped.text) == structure(message.text)
    if not _stray_numbers(message):
        assert not _stray_numbers(dropped), dropped.text
    kept = any(w.code == "citation_kept" for w in dropped.warnings)
    for ref in dropped.references:
        for occ in ref.occurrences or []:
            assert occ.support is not None and (kept or occ.support["verdict"] in ("supported", "unchecked"))
    for part in dropped.parts:
        if part.support is not None:
            assert kept or part.support["verdict"] in ("supported", "unchecked")
    before = sum(len(r.occurrences or []) for r in message.references)
    after = sum(len(r.occurrences or []) for r in dropped.references)
    warned = [w for w in dropped.warnings if w.code == "citation_dropped"]
    assert (after < before) == bool(warned) and len(warned) <= before - after
    for w in warned:
        extra = w.model_dump()
        assert isinstance(extra["citation"], int) and extra["reasons"]
    flagged = apply_support(message)
    assert flagged.text == message.text
    check_invariants(flagged)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sentences_with_links, st.sampled_from(["codepoint", "utf16", "utf8"]), st.booleans())
def test_drop_keeps_invariants(raw: str, unit: str, with_sources: bool) -> None:
    _drop_properties(raw, unit, with_sources)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_drop_keeps_invariants_on_hostile_markdown(data: st.DataObject) -> None:
    # the passages' texts ("text c-1", "post") support almost nothing: most citations go
    sources = [*_cite_passages(), _passage("c-9", "text c-9 of a passage", rank=5)]
    raw = data.draw(raw_texts)
    _drop_properties(raw, data.draw(st.sampled_from(["codepoint", "utf16"])), data.draw(st.booleans()), sources)



ELON = "Elon Musk want you to have more kids but won't help you to raise your kids"


@pytest.mark.parametrize("sentence, verdict", [
    ("Elon Musk wants you to have more kids", "supported"),  # the negation belongs to the other clause
    ("Elon Musk will help you raise your kids", "uncertain"),  # clauses tie: one negated, one not
    ("Elon Musk does not want you to have more kids", "unsupported"),
])
def test_negation_is_judged_clause_by_clause(sentence: str, verdict: str) -> None:
    assert check_support(sentence, ELON).verdict == verdict


def test_streamed_support_events_agree_with_the_final_message(tmp_path) -> None:
    from citewell import Engine

    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "capex.txt").write_text("3M's capital expenditure was $1,749 million in 2022. Sales fell.\n",
                                      encoding="utf-8")
    with Engine(tmp_path / "s.sqlite") as engine:
        events = list(engine.ask_stream("What was 3M's capital expenditure in 2022?", corpus=folder))
    streamed = [e.data["support"]["verdict"] for e in events if e.kind == "support"]
    final = events[-1].data["message"]
    assert streamed and set(streamed) == {"supported"}
    assert {p["support"]["verdict"] for p in final["parts"] if p["support"]} == {"supported"}


def test_dropping_a_marker_before_a_kept_one_keeps_the_space() -> None:
    from citewell.models import Chunk, Passage

    def passage(cid: str, text: str) -> Passage:
        return Passage(chunk=Chunk(id=cid, resource_id=f"r{cid}", chunk_index=0, text=text),
                       resource_title=f"d{cid}", resource_kind="text")

    capex = passage("a", "Capital expenditure was $1,749 million in 2022.")
    ppe = passage("b", "US net PP&E was $5,662 million at December 31, 2022.")
    message = cite("US net PP&E was $5,662 million [x](chunk:a)[y](chunk:b).", sources=[capex, ppe])
    dropped = apply_support(message, policy="drop")
    assert dropped.text == "US net PP&E was $5,662 million [1]."
    assert [r.chunk_id for r in dropped.references] == ["b"]
    (warning,) = dropped.warnings
    assert (warning.code, warning.model_extra["chunk_id"], warning.model_extra["citation"]) == ("citation_dropped", "a", 1)


# -- a table's cells belong to a row and a column (a figure computed from any two numbers,
#    or read from another year's column, is not supported) -------------------------------------------

_STATEMENT = """(in millions) 2022 2021
Total revenue 6,489 5,900
Cost of revenue 3,000 2,800
Gross profit 3,489 3,100
Net income 900 800"""


@pytest.mark.parametrize("sentence, verdict, reason", [
    ("Zorblax total revenue was $6,489 million in 2022.", "supported", None),
    ("Zorblax total revenue was $5,900 million in 2022.", "unsupported", "period_mismatch:2022"),
    ("Net income was $900 million in 2021.", "unsupported", "period_mismatch:2021"),
    ("Total revenue: 6,489 (2022), 5,900 (2021)", "supported", None),
    ("Zorblax net income increased by $100 million in 2022.", "supported", "computed:$100 million"),
    ("Zorblax net income increased by $200 million in 2022.", "unsupported", "number_not_found:$200 million"),
    ("Net income increased by $589 million.", "unsupported", "number_not_found:$589 million"),
    ("Net income grew 12.5%.", "supported", "computed:12.5%"),
    ("Net income grew 10%.", "unsupported", "number_not_found:10%"),
    ("Zorblax net margin was 13.9% in 2022.", "supported", "computed:13.9%"),
    ("Zorblax net margin was 46.2% in 2022.", "unsupported", "number_not_found:46.2%"),
    ("Zorblax gross margin was 53.8% in 2022.", "supported", "computed:53.8%"),
    ("Zorblax gross margin was 13.9% in 2022.", "unsupported", "number_not_found:13.9%"),
])
def test_table_figures_are_read_from_their_row_and_column(sentence: str, verdict: str, reason: str | None) -> None:
    support = check_support(sentence, _STATEMENT, text_type="table", title="ZORBLAX 10-K")
    assert support.verdict == verdict
    if reason is not None:
        assert reason in support.reasons


def test_a_rows_period_length_is_no_figure_to_find() -> None:
    # the statement-rows answer writes each column as "3 months to <date>"; the header says
    # "Three Months Ended": the 3 is the period's length, not a figure the passage must hold
    header = "Three Months Ended December 31, 2022 2021"
    passage = "Las Vegas Strip Resorts net revenues $ 2,297,282 $ 1,850,000"
    sentence = ("Las Vegas Strip Resorts net revenues: $2,297,282 (3 months to December 31, 2022), "
                "$1,850,000 (3 months to December 31, 2021).")
    found = check_rules(sentence, passage, text_type="table", header=header)
    assert found.verdict == "supported"
    assert "numbers_found:2/2" in found.reasons
    # a figure that the passage does not hold is still not found
    wrong = check_rules(sentence.replace("2,297,282", "2,397,282"), passage, text_type="table", header=header)
    assert wrong.verdict == "unsupported" and "number_not_found:$2,397,282" in wrong.reasons


#: One sentence that states two periods' figures (the example of issue 28).
TWO_PERIODS = ("Revenue was 5,000 million dollars in 2023, up from 4,000 million dollars in 2022. The company "
               "had 3,100 employees at year end.")


@pytest.mark.parametrize(("sentence", "verdict"), [
    ("Revenue was 4,000 million dollars in 2023.", "unsupported"),  # the other period's figure
    ("Revenue was 5,000 million dollars in 2022.", "unsupported"),
    ("Revenue was 4,000 million dollars in 2022.", "supported"),
    ("Revenue was $5 billion in 2023.", "supported"),  # another scale
    ("In 2023 revenue rose from $4 billion to $5 billion.", "supported"),  # a comparison states both
    ("Revenue grew 25% in 2023.", "supported"),  # computed from the right figures
])
def test_a_figure_is_bound_to_the_year_its_sentence_states_it_for(sentence: str, verdict: str) -> None:
    support = check_support(sentence, TWO_PERIODS, text_type="paragraph")
    assert support.verdict == verdict, support.reasons
    if verdict == "unsupported":
        assert any(r.startswith("period_mismatch:") for r in support.reasons)
    # before the number, with no other number between: "In 2022, revenue was $5,000 million"
    before = "In 2022, revenue was $5,000 million, compared with $4,000 million in 2021."
    assert check_support("Revenue was $4,000 million in 2022.", before, text_type="paragraph").verdict == "unsupported"
    assert check_support("Revenue was $4,000 million in 2021.", before, text_type="paragraph").verdict == "supported"


# -- what a figure is stated for (issue 28; cases an adversarial pass found) -----------------------

_INCOME = """(In millions, except per share data) Year Ended December 31, 2023 2022 2021
Total revenues 5,000 4,500 4,050
Cost of revenues 3,100 2,900 2,700
Gross profit 1,900 1,600 1,350
Research and development 420 390 350
Operating income 870 630 430
Interest expense (45) (52) (60)
Net income 640 455 300
Diluted earnings per share $ 2.14 $ 1.52 $ 1.00"""
_MDNA = ("Net sales for fiscal 2023 were $12.4 billion, compared with $11.1 billion a year earlier, an increase of 12%. "
         "Gross margin was 34.2% in fiscal 2023, down from 35.8% in the prior year. Capital expenditures were "
         "$640 million in fiscal 2023 and $710 million in fiscal 2022. In the prior year, operating income was "
         "$1.43 billion.")
_RESPECTIVELY = "Net sales were $12.4 billion and $11.1 billion in fiscal 2023 and 2022, respectively."
_TAXES = """Income Taxes The following is a reconciliation of the federal statutory income tax rate to income tax
expense in fiscal 2019, fiscal 2018 and fiscal 2017 ($ in millions): 2019 2018 2017
Federal income tax at the statutory rate $ 396 $ 613 $ 635
Benefit from foreign operations — (85) (46)
Income tax expense $ 424 $ 818 $ 609
Reserves and accrued liabilities(1) 144 145 150"""
_LEVELS = "The generic dispensing rate grew to 87.5% in 2018 compared to 87.3% in 2017."
_TITLED = """Exhibit 1
Acme Beauty, Inc.
Consolidated Statements of Income
(In thousands, except per share data)
13 Weeks Ended January 28, January 29, 2023 2022
Net sales $ 3,226,773 100.0% $ 2,729,388 100.0%
Cost of sales 2,014,270 62.4% 1,702,059 62.4%
52 Weeks Ended January 28, January 29, 2023 2022
Net sales $ 10,208,580 100.0% $ 8,630,889 100.0%"""
_PASTED = ("Consolidated Balance Sheets ($ in millions) As of June 30, 2023 2022 Assets Current assets: Cash and cash "
           "equivalents $ 689 $ 775 Trade receivables, net of allowance for credit losses of $21 and $25, "
           "respectively 1,875 1,935 Inventories, net 2,119 2,348")


@pytest.mark.parametrize(("passage", "text_type", "sentence", "supported"), [
    # a sentence about several rows, an abbreviation, a comparison with the year before
    (_INCOME, "table", "Net income was $640 million in 2023, or $2.14 per diluted share.", True),
    (_INCOME, "table", "Revenue was $5.0 billion and net income was $640 million in 2023.", True),
    (_INCOME, "table", "Revenue increased to $5.0 billion in 2023 from $4.5 billion.", True),
    (_INCOME, "table", "Interest expense decreased to $45 million in 2023 from $52 million.", True),
    (_INCOME, "table", "Diluted EPS was $2.14 in 2023.", None),  # not a company: never scope_mismatch
    (_INCOME, "table", "Net income was $455 million in 2023, compared with $640 million in 2022.", False),
    # computed: adjacent years, the right row, the right base and direction, a margin of revenue
    (_INCOME, "table", "Revenue grew 11% in 2023.", True),
    (_INCOME, "table", "Revenue grew 23% in 2023.", False),  # 2021 to 2023
    (_INCOME, "table", "Revenue grew 15% in 2023.", False),  # cost of revenues' growth
    (_INCOME, "table", "Interest expense fell 13.5% in 2023.", True),
    (_INCOME, "table", "Interest expense grew 15.6% in 2023.", False),  # it fell
    (_INCOME, "table", "Net income increased by $185 million in 2023.", True),
    (_INCOME, "table", "Net income increased by $185 million in 2022.", False),
    (_INCOME, "table", "Net margin was 12.8% in 2023.", True),
    (_INCOME, "table", "Net margin was 21% in 2023.", False),  # net income over cost of revenues
    (_INCOME, "table", "Globex reported operating income of $870 million in 2023.", False),
    (_MDNA, "paragraph", "Net sales rose 12% to $12.4 billion in fiscal 2023.", True),
    (_MDNA, "paragraph", "Net sales were $11.1 billion in fiscal 2022.", True),
    (_MDNA, "paragraph", "Net sales were more than $11.1 billion in fiscal 2023.", False),
    (_MDNA, "paragraph", "Capital expenditures fell 9.9% in fiscal 2023.", True),
    (_MDNA, "paragraph", "Capital expenditures rose 10.9% in fiscal 2023.", False),
    (_MDNA, "paragraph", "Operating income was $1.43 billion in 2022.", True),
    (_RESPECTIVELY, "paragraph", "Net sales were $11.1 billion in fiscal 2022.", True),
    (_RESPECTIVELY, "paragraph", "Net sales were $11.1 billion in fiscal 2023.", False),
    # cells keep their column's year: a nil dash, a footnote marker, years at the end of a lead-in
    (_TAXES, "table", "The benefit from foreign operations was $85 million in fiscal 2018.", True),
    (_TAXES, "table", "The benefit from foreign operations was $85 million in fiscal 2019.", False),
    (_TAXES, "table", "Income tax expense was $609 million in fiscal 2017.", True),
    (_TAXES, "table", "Income tax expense was $609 million in fiscal 2018.", False),
    (_TAXES, "table", "Reserves and accrued liabilities were $145 million in fiscal 2018.", True),
    (_TAXES, "table", "Reserves and accrued liabilities were $145 million in fiscal 2019.", False),
    # an answer's rendered row against a statement pasted as one line (its header's years
    # bind no figure; "respectively" in a label pairs nothing after it)
    (_PASTED, "paragraph", "Cash and cash equivalents: $689 (2023), $775 (2022), in millions.", True),
    (_PASTED, "paragraph", "Trade receivables, net of allowance for credit losses of $21 and $25, respectively: "
                           "1,875 (2023), 1,935 (2022), in millions.", True),
    (_INCOME, "table", "Operating income: 870 (year ended December 31, 2023), 630 (year ended December 31, 2022), "
                       "in millions.", True),
    # the lines above a column header title the table; they are no caption of its rows
    (_TITLED, "table", "Net sales: $3,226,773 (13 weeks ended January 28, 2023), in thousands.", True),
    # a level reached is the year's, a change the comparison's
    (_LEVELS, "paragraph", "The generic dispensing rate grew to 87.5% in 2018.", True),
    (_LEVELS, "paragraph", "The generic dispensing rate grew to 87.3% in 2018.", False),
])
def test_a_figure_supports_only_what_the_passage_states_it_for(passage: str, text_type: str, sentence: str,
                                                                  supported: bool | None) -> None:
    from citewell.domains.finance import FINANCE

    support = check_support(sentence, passage, text_type=text_type, title="ACME_2023_10K",
                            expansions=FINANCE.expansions)
    if supported is None:
        assert not any(r.startswith("scope_mismatch") for r in support.reasons), support.reasons
    else:
        assert (support.verdict == "supported") is supported, support.reasons
