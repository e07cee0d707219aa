"""The cite stage against the shared citation cases and the other members of their kinds.

Cases come from /work/shared/cases/citation-cases.json (BC-01, 03, 04, 06, 07, 08, 12, 14,
18 and the non-streamed baseline of BC-16); every test compares real values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from citewell.cite import (
    InMemoryResolver,
    build_citations,
    cite,
    convert_offsets,
    decode_id,
    encode_id,
    escape_numbers,
    format_link,
    parse_target,
    scan,
    unescape_numbers,
)
from citewell.models import Chunk, Message, Part, Passage

CASES_PATH = Path(os.environ.get("CITEWELL_CASES", "/work/shared/cases/citation-cases.json"))
CASES = {c["id"]: c for c in json.loads(CASES_PATH.read_text())} if CASES_PATH.exists() else {}
needs_cases = pytest.mark.skipif(not CASES, reason=f"{CASES_PATH} not available")

UNIT_NAMES = {"code_points": "codepoint", "utf16_code_units": "utf16", "utf8_bytes": "utf8"}
DATASET = "d5a0c1e2-0000-4000-8000-0000000000aa"


def post_passage(source: str, pid: str, index: int = 0, dataset: str = DATASET) -> Passage:
    chunk = Chunk(
        id=f"chunk-{source}-{pid}", resource_id=dataset, chunk_index=index,
        text=f"post {pid} on {source}", text_type="post",
        metadata={"source_type": "post", "source": source, "id": pid, "dataset_id": dataset},
    )
    return Passage(chunk=chunk, resource_title="posts.jsonl", resource_kind="post")


def doc_passage(chunk_id: str, resource_id: str, index: int, page: int, title: str = "Report.pdf") -> Passage:
    chunk = Chunk(id=chunk_id, resource_id=resource_id, chunk_index=index, text=f"passage {index}",
                  text_type="paragraph", metadata={"source_type": "pdf", "page": page})
    return Passage(chunk=chunk, resource_title=title, resource_kind="pdf")


def slice_unit(text: str, start: int, end: int, unit: str) -> str:
    if unit == "codepoint":
        return text[start:end]
    if unit == "utf16":
        return text.encode("utf-16-le")[2 * start:2 * end].decode("utf-16-le")
    return text.encode("utf-8")[start:end].decode("utf-8")


def assert_slice_rule(message: Message) -> None:
    unit = message.offset_unit
    for ref in message.references:
        if ref.citation is None:
            assert ref.start_index is None and ref.occurrences is None
            continue
        assert ref.offset_unit == unit
        marker = f"[{ref.citation}]"
        assert slice_unit(message.text, ref.start_index, ref.end_index, unit) == marker
        assert ref.occurrences and (ref.occurrences[0].start_index, ref.occurrences[0].end_index) == (
            ref.start_index, ref.end_index)
        for occ in ref.occurrences:
            assert slice_unit(message.text, occ.start_index, occ.end_index, unit) == marker


def assert_partition(message: Message) -> None:
    assert "".join(p.text for p in message.parts) == message.text
    for p in message.parts:
        extra = p.model_extra
        assert extra["offset_unit"] == message.offset_unit
        assert slice_unit(message.text, extra["start_index"], extra["end_index"], message.offset_unit) == p.text


def assert_named(actual: dict, expected: dict) -> None:
    """Every field ``expected`` names matches exactly (additive fields may be present)."""
    for key, value in expected.items():
        assert actual.get(key) == value, (key, actual.get(key), value)


def assert_refs(message: Message, expected: list[dict]) -> None:
    assert len(message.references) == len(expected)
    for ref, exp in zip(message.references, expected):
        assert_named(ref.model_dump(), exp)


# --------------------------------------------------------------------------- shared cases


@needs_cases
@pytest.mark.parametrize("case_id", ["BC-01", "BC-03"])
def test_offset_units_cases(case_id):
    case = CASES[case_id]
    raw, exp = case["input"]["assistant_raw_text"], case["expected"]
    message = cite(raw)
    assert message.text == exp["text"]
    assert message.offset_unit == "codepoint"
    assert_refs(message, exp["references"])
    for name, rows in exp["offsets_by_unit"].items():
        unit = UNIT_NAMES[name]
        direct = cite(raw, offset_unit=unit)
        converted = convert_offsets(message, unit)
        for m in (direct, converted):
            assert m.offset_unit == unit
            got = [{"citation": r.citation, "start_index": r.start_index, "end_index": r.end_index}
                   for r in m.references]
            assert got == rows
            assert_slice_rule(m)
            assert_partition(m)
        # and back to code points without loss
        assert convert_offsets(converted, "codepoint").model_dump() == message.model_dump()


@needs_cases
def test_bc04_numbering_by_first_appearance_not_rank():
    case = CASES["BC-04"]
    sources = [post_passage(p["source"], p["id"], i) for i, p in
               enumerate(case["input"]["retrieved_posts_in_rank_order"])]
    message = cite(case["input"]["assistant_raw_text"], sources=sources)
    assert message.text == case["expected"]["text"]
    assert_refs(message, case["expected"]["references"])
    assert message.grounded is True
    assert message.warnings == []


@needs_cases
def test_bc06_same_id_on_two_platforms_is_two_sources():
    case = CASES["BC-06"]
    message = cite(case["input"]["assistant_raw_text"])
    assert message.text == case["expected"]["text"]
    assert_refs(message, case["expected"]["references"])


@needs_cases
def test_bc07_citations_deduplicated_by_resource():
    case = CASES["BC-07"]
    parts_in = case["input"]["response"]["parts"]
    snapshot = json.loads(json.dumps(parts_in))
    citations, resource_ids = build_citations(parts_in)
    assert resource_ids == case["expected"]["resource_ids"]
    assert len(citations) == len(case["expected"]["citations"])
    for got, exp in zip(citations, case["expected"]["citations"]):
        assert_named(got.model_dump(), exp)
    # additive: every cited chunk of the resource, first-citation order
    assert [c.chunk_indices for c in citations] == [[7, 9], [2]]
    # the parts are the response's parts, unchanged
    assert parts_in == snapshot == case["expected"]["response"]["parts"]
    # the same through Part objects
    objs = [Part.model_validate(p) for p in parts_in]
    assert build_citations(objs) == (citations, resource_ids)


@needs_cases
def test_bc08_unretrieved_post_is_never_numbered():
    case = CASES["BC-08"]
    sources = [post_passage(p["source"], p["id"], i) for i, p in enumerate(case["input"]["retrieved_posts"])]
    message = cite(case["input"]["assistant_raw_text"], sources=sources)
    assert message.text == case["expected"]["text"]
    assert_refs(message, case["expected"]["references"])
    for named in case["expected"]["warnings_must_name"]:
        hits = [w for w in message.warnings if w.model_extra.get("source") == named["source"]
                and w.model_extra.get("id") == named["id"]]
        assert len(hits) == 1
        assert hits[0].code == "unknown_target"
        assert hits[0].model_extra["label"] == "viral clip"
    assert len(message.warnings) == 1


@needs_cases
def test_bc12_nested_brackets_in_label():
    case = CASES["BC-12"]
    message = cite(case["input"]["assistant_raw_text"])
    assert message.text == case["expected"]["text"]
    assert_refs(message, case["expected"]["references"])


@needs_cases
def test_bc14_link_in_fenced_code_is_literal():
    case = CASES["BC-14"]
    message = cite(case["input"]["assistant_raw_text"])
    assert message.text == case["expected"]["text"]
    assert [r.model_dump() for r in message.references] == case["expected"]["references"] == []
    assert message.warnings == []
    assert message.grounded is False
    assert_partition(message)


@needs_cases
def test_bc18_legacy_row_conversion_equals_fresh_cite():
    case = CASES["BC-18"]
    message = cite(case["input"]["stored_row"]["text"])
    assert message.text == case["expected"]["text"]
    assert_refs(message, case["expected"]["references"])
    # a repeat reuses its number and is listed as an occurrence
    first = message.references[0]
    assert [(o.start_index, o.end_index) for o in first.occurrences] == [(14, 17), (37, 40)]
    # cite() is for raw generator output only: on an already cited text every [N] is a
    # literal bracketed number (rule 5), so a current row must never be cited again (rule 10)
    assert cite(message.text).text == r"Great reviews \[1\] and \[2\], echoed by \[1\]."


@needs_cases
def test_bc16_non_streamed_baseline():
    case = CASES["BC-16"]
    message = cite("".join(case["input"]["model_chunks"]))
    assert message.text == case["expected"]["final_text"]
    assert_refs(message, case["expected"]["references"])


# --------------------------------------------------------------------------- offsets


@pytest.mark.parametrize("raw, cps, u16, u8", [
    # astral emoji before the link
    ("😀 [a](post:x:1)", (2, 5), (3, 6), (5, 8)),
    # flag (two regional indicators), combining mark, CJK
    ("\U0001F1EB\U0001F1F7e\u0301\u6f22 [a](post:x:1)", (6, 9), (8, 11), (15, 18)),
    # RTL text and an astral CJK extension ideograph
    ("שלום 𠀋 [a](post:x:1)", (7, 10), (8, 11), (14, 17)),
])
def test_offsets_in_every_unit(raw, cps, u16, u8):
    for unit, expected in (("codepoint", cps), ("utf16", u16), ("utf8", u8)):
        m = cite(raw, offset_unit=unit)
        assert (m.references[0].start_index, m.references[0].end_index) == expected
        assert_slice_rule(m)
        assert_partition(m)


def test_convert_offsets_is_a_copy_and_rejects_bad_input():
    m = cite("😀 [a](post:x:1)")
    u = convert_offsets(m, "utf16")
    assert m.references[0].start_index == 2 and u.references[0].start_index == 3
    assert m.offset_unit == "codepoint" and u.offset_unit == "utf16"
    with pytest.raises(ValueError):
        convert_offsets(m, "bytes")
    with pytest.raises(ValueError):
        cite("x", offset_unit="graphemes")
    broken = m.model_copy(deep=True)
    broken.offset_unit = "utf16"
    broken.references[0].offset_unit = "utf16"
    broken.references[0].start_index = 1  # the middle of the surrogate pair of 😀
    with pytest.raises(ValueError):
        convert_offsets(broken, "utf8")


# --------------------------------------------------------------------------- links grammar


def test_escaped_brackets_in_label():
    m = cite(r"A [the \] odd \[one\]](post:tiktok:9) here.")
    assert m.text == "A [1] here."
    assert (m.references[0].source, m.references[0].id) == ("tiktok", "9")


def test_code_span_inside_label_may_hold_a_bracket():
    m = cite("See [`]` code](post:x:1).")
    assert m.text == "See [1]."


def test_inline_code_is_never_parsed_or_rewritten():
    raw = "Use `[a](post:x:1)` or ``[b](post:x:2) [12]`` then [c](post:x:3)."
    m = cite(raw)
    assert m.text == "Use `[a](post:x:1)` or ``[b](post:x:2) [12]`` then [1]."
    assert [(r.source, r.id) for r in m.references] == [("x", "3")]
    assert m.warnings == []


def test_unmatched_backticks_are_literal():
    m = cite("Odd ` tick [a](post:x:1) and `` two")
    assert m.text == "Odd ` tick [1] and `` two"


@pytest.mark.parametrize("raw, cited", [
    ("~~~\n[a](post:x:1) [12]\n~~~\nDone [b](post:y:2).", ["2"]),
    ("````md\n```\n[a](post:x:1)\n```\n````\nDone [b](post:y:2).", ["2"]),
    ("> ```\n> [a](post:x:1)\n> ```\nDone [b](post:y:2).", ["2"]),
    ("- ```\n  [a](post:x:1)\n  ```\nDone [b](post:y:2).", ["2"]),
    ("```\n[a](post:x:1)\nDone [b](post:y:2).", []),  # unclosed: code to the end
])
def test_fenced_blocks_of_every_shape_are_code(raw, cited):
    m = cite(raw)
    assert [r.id for r in m.references] == cited
    assert m.text == (raw.replace("[b](post:y:2)", "[1]") if cited else raw)
    assert m.warnings == []
    assert_partition(m)


def test_tilde_fence_needs_matching_closer():
    raw = "~~~~\n[a](post:x:1)\n~~~\nstill code\n~~~~\nafter [c](post:x:3)"
    m = cite(raw)
    assert m.text == "~~~~\n[a](post:x:1)\n~~~\nstill code\n~~~~\nafter [1]"
    assert [r.id for r in m.references] == ["3"]


def test_backtick_fence_info_with_backtick_is_not_a_fence():
    m = cite("```a` [b](post:x:1)")
    assert m.text == "```a` [1]"


def test_ordinary_links_stay_untouched():
    raw = ("See [wiki](https://en.wikipedia.org/wiki/Foo_(bar)) and "
           "[x](https://a.com/post:reddit:1 \"title\") and ![img](<a b.png>) [y](post:reddit:t3_a).")
    m = cite(raw)
    assert m.text == ("See [wiki](https://en.wikipedia.org/wiki/Foo_(bar)) and "
                      "[x](https://a.com/post:reddit:1 \"title\") and ![img](<a b.png>) [1].")
    assert [(r.source, r.id) for r in m.references] == [("reddit", "t3_a")]
    assert m.warnings == []


def test_post_in_plain_url_is_not_a_link():
    raw = "Raw https://x.com/post:reddit:1 and (post:reddit:2) stay."
    assert cite(raw).text == raw


def test_ids_with_colons_and_percent_encoded_characters():
    raw = "IDs [a](post:Reddit:a:b:c) and [b](post:reddit:x%29y%20z) then [c](post:REDDIT:a:b:c)."
    m = cite(raw)
    assert m.text == "IDs [1] and [2] then [1]."
    assert [(r.source, r.id, r.citation) for r in m.references] == [
        ("reddit", "a:b:c", 1), ("reddit", "x)y z", 2)]


def test_id_with_balanced_parentheses():
    m = cite("See [a](post:x:f(1)) now.")
    assert m.text == "See [1] now."
    assert m.references[0].id == "f(1)"


def test_ids_compare_exactly_sources_case_insensitively():
    m = cite("[a](post:TikTok:Ab) [b](post:tiktok:ab) [c](post:TIKTOK:Ab)")
    assert m.text == "[1] [2] [1]"
    assert [(r.source, r.id) for r in m.references] == [("tiktok", "Ab"), ("tiktok", "ab")]


def test_link_encoding_round_trip():
    for value in ["a:b", "x)y", "50% (off)", "tab\there", "%29 literal", "ünï"]:
        assert decode_id(encode_id(value)) == value
        link = format_link("the [odd] label", post=("reddit", value))
        m = cite(f"See {link}.")
        assert m.text == "See [1]."
        assert m.references[0].id == value
    assert decode_id("%41%29") == "%41)"  # only the encoded set is decoded
    assert parse_target("https://x") is None
    assert parse_target("post:reddit").id == ""
    with pytest.raises(ValueError):
        format_link("x")


def test_scan_is_lossless():
    raw = "a [b](post:x:1) `c` [d](http://e) ```\nf\n``` [g"
    tokens = scan(raw)
    assert "".join(t.text for t in tokens) == raw
    assert [t.kind for t in tokens] == ["text", "link", "text", "code", "text", "mdlink", "text", "code"]


def test_inner_link_wins_over_outer_brackets():
    m = cite("x [a [b](post:x:1) c] y")
    assert m.text == "x [a [1] c] y"


def test_label_spanning_a_blank_line_is_not_a_link():
    raw = "[a\n\nb](post:x:1)"
    m = cite(raw)
    assert m.references == []
    assert m.text == raw


def test_malformed_post_target_is_a_warning():
    m = cite("See [a](post:reddit) and [b](post::5).")
    assert m.text == "See a and b."
    assert [w.code for w in m.warnings] == ["unknown_target", "unknown_target"]
    assert m.grounded is False


# --------------------------------------------------------------------------- resolution


def test_chunk_link_and_post_link_to_one_post_share_a_number():
    post = post_passage("reddit", "t3_a")
    for kwargs in ({"sources": [post]}, {"resolver": InMemoryResolver([post])}):
        m = cite(f"Seen [a](chunk:{post.chunk.id}) and [b](post:Reddit:t3_a).", **kwargs)
        assert m.text == "Seen [1] and [1]."
        assert len(m.references) == 1
        ref = m.references[0]
        assert (ref.type, ref.source, ref.id, ref.chunk_id) == ("post", "reddit", "t3_a", post.chunk.id)
        assert [(o.start_index, o.end_index) for o in ref.occurrences] == [(5, 8), (13, 16)]


def test_chunk_links_with_sources():
    p1 = doc_passage("c-1", "r-1", 3, 2)
    p2 = doc_passage("c-2", "r-1", 5, 4)
    m = cite("A [x](chunk:c-2). B [y](chunk:c-1). C [z](chunk:c-9).", sources=[p1, p2])
    assert m.text == "A [1]. B [2]. C z."
    assert [(r.type, r.chunk_id, r.citation, r.chunk_index, r.resource_title, r.text)
            for r in m.references] == [("chunk", "c-2", 1, 5, "Report.pdf", "passage 5"),
                                       ("chunk", "c-1", 2, 3, "Report.pdf", "passage 3")]
    assert m.references[0].metadata == {"source_type": "pdf", "page": 4}
    assert m.references[0].id is None and m.references[0].source is None
    assert [(w.code, w.model_extra["chunk_id"], w.model_extra["label"]) for w in m.warnings] == [
        ("unknown_target", "c-9", "z")]
    assert m.resource_ids == ["r-1"]
    assert [(c.resource_id, c.chunk_index, c.chunk_indices) for c in m.citations] == [("r-1", 5, [5, 3])]


def test_unknown_chunk_ids_without_sources():
    p1 = doc_passage("c-1", "r-1", 0, 1)
    m = cite("A [x](chunk:c-1) B [y](chunk:nope).", resolver=InMemoryResolver([p1]))
    assert m.text == "A [1] B y."
    assert [w.model_extra["chunk_id"] for w in m.warnings] == ["nope"]
    # without any resolver a chunk link cannot be checked: never numbered
    m2 = cite("A [x](chunk:c-1).")
    assert m2.text == "A x."
    assert m2.warnings[0].model_extra["chunk_id"] == "c-1"
    assert m2.grounded is False


def test_post_links_without_sources_count_and_are_enriched_when_known():
    known = post_passage("reddit", "t3_a", index=4)
    m = cite("[a](post:reddit:t3_a) [b](post:tiktok:1)", resolver=InMemoryResolver([known]))
    assert m.text == "[1] [2]"
    r1, r2 = m.references
    assert (r1.chunk_id, r1.resource_id, r1.chunk_index, r1.text, r1.text_type) == (
        known.chunk.id, DATASET, 4, "post t3_a on reddit", "post")
    assert r2.model_dump(exclude_none=True) == {
        "type": "post", "source": "tiktok", "id": "1", "citation": 2, "start_index": 4, "end_index": 7,
        "occurrences": [{"start_index": 4, "end_index": 7}], "offset_unit": "codepoint"}
    assert m.warnings == []
    # only the known post has a passage: it is the one citation
    assert [(c.resource_id, c.model_extra["source"], c.model_extra["id"]) for c in m.citations] == [
        (DATASET, "reddit", "t3_a")]


def test_sources_restrict_even_when_resolver_knows():
    known = post_passage("reddit", "t3_a")
    m = cite("[a](post:reddit:t3_a)", sources=[], resolver=InMemoryResolver([known]))
    assert m.text == "a"
    assert m.references == [] and m.grounded is False
    assert m.warnings[0].model_extra == {"label": "a", "target": "post:reddit:t3_a",
                                         "source": "reddit", "id": "t3_a"}


def test_entity_links_known_and_unknown():
    resolver = InMemoryResolver(entities=[("pattern", "p1"), ("dataset", "ds:9")])
    raw = ("See [the pattern](pattern:p1), [data](dataset:ds:9), [again](pattern:p1) and "
           "[ghost](chat:c0) with [a](post:x:1).")
    m = cite(raw, resolver=resolver)
    assert m.text == "See the pattern, data, again and ghost with [1]."
    assert [r.model_dump(exclude_none=True) for r in m.references][1:] == [
        {"type": "pattern", "id": "p1"}, {"type": "dataset", "id": "ds:9"}]
    assert m.references[0].type == "post"
    assert [(w.code, w.model_extra["type"], w.model_extra["id"], w.model_extra["label"])
            for w in m.warnings] == [("unknown_target", "chat", "c0", "ghost")]
    # entity links never make a message grounded
    assert cite("[p](pattern:p1)", resolver=resolver).grounded is False


def test_repeated_unknown_target_warns_once():
    m = cite("[a](post:x:1) [b](post:x:1)", sources=[])
    assert m.text == "a b"
    assert len(m.warnings) == 1 and m.warnings[0].model_extra["label"] == "a"


# --------------------------------------------------------------------------- rule 5 escaping


@pytest.mark.parametrize("raw, text", [
    ("Passage says [12] and [a](post:x:1).", r"Passage says \[12\] and [1]."),
    (r"Already \[12\] escaped [a](post:x:1).", r"Already \[12\] escaped [1]."),
    (r"Half \[3] and [4\] [a](post:x:1).", r"Half \[3\] and \[4\] [1]."),
    ("Label [[7](post:x:unknown)] stays [a](post:x:1).", r"Label \[7\] stays [1]."),
    ("A link [12](https://x.org) [a](post:x:1).", "A link [&#49;2](https://x.org) [1]."),
    ("Not numbers [a] [1a] [ 1] [a](post:x:1).", "Not numbers [a] [1a] [ 1] [1]."),
    ("Code `[12]` and\n```\n[3]\n```\n[a](post:x:1)", "Code `[12]` and\n```\n[3]\n```\n[1]"),
    (r"Escaped backslash \\[12] [a](post:x:1)", r"Escaped backslash \\\[12\] [1]"),
])
def test_literal_bracketed_numbers_are_escaped(raw, text):
    m = cite(raw, sources=[post_passage("x", "1")])
    assert m.text == text
    assert m.references[0].start_index == text.index("[1]")
    assert [r.citation for r in m.references] == [1]


def test_escape_helpers():
    assert escape_numbers("[1] [22] \\[3\\]") == "\\[1\\] \\[22\\] \\[3\\]"
    assert unescape_numbers("\\[1\\] x") == "[1] x"


# --------------------------------------------------------------------------- parts (rule 6)


def _parts(message: Message) -> list[tuple[str, str | None, list[str]]]:
    return [(p.text, p.source.chunk_id if p.source else None, [s.chunk_id for s in p.sources])
            for p in message.parts]


@pytest.fixture
def docs():
    return [doc_passage("c-a", "r-1", 0, 1), doc_passage("c-b", "r-2", 1, 2, "Handbook.pdf"),
            doc_passage("c-c", "r-1", 2, 3)]


def test_parts_marker_before_and_after_the_period(docs):
    m = cite("Sales rose [a](chunk:c-a). Costs fell. [b](chunk:c-b) Margins held.", sources=docs)
    assert m.text == "Sales rose [1]. Costs fell. [2] Margins held."
    assert _parts(m) == [("Sales rose [1].", "c-a", []), (" Costs fell. [2]", "c-b", []),
                         (" Margins held.", None, [])]
    assert [p.model_extra["citation_numbers"] for p in m.parts] == [[1], [2], []]
    assert_partition(m)


def test_parts_two_markers_in_one_sentence(docs):
    m = cite("Both agree [a](chunk:c-a) and [b](chunk:c-b) [c](chunk:c-c). Then [a2](chunk:c-a) again.",
             sources=docs)
    assert m.text == "Both agree [1] and [2] [3]. Then [1] again."
    assert _parts(m) == [("Both agree [1] and [2] [3].", "c-c", ["c-a", "c-b"]),
                         (" Then [1] again.", "c-a", [])]
    # citations: first-citation order r-1 (c-a), r-2 (c-b); r-1 also c-c
    assert [(c.resource_id, c.chunk_index, c.chunk_indices) for c in m.citations] == [
        ("r-1", 0, [0, 2]), ("r-2", 1, [1])]
    assert m.resource_ids == ["r-1", "r-2"]
    # build_citations over the message's parts reproduces the message's citations
    assert build_citations(m.parts) == (m.citations, m.resource_ids)


def test_parts_final_source_cited_earlier_keeps_first_citation_order(docs):
    m = cite("X [a](chunk:c-b) then [b](chunk:c-a) and [c](chunk:c-b).", sources=docs)
    assert m.text == "X [1] then [2] and [1]."
    assert _parts(m) == [("X [1] then [2] and [1].", "c-b", ["c-a"])]
    assert m.resource_ids == ["r-2", "r-1"]


def test_parts_uncited_sentences_and_trailing_text(docs):
    m = cite("Intro line.  Claim [a](chunk:c-a)!\n\nno punctuation at the end", sources=docs)
    assert _parts(m) == [("Intro line.", None, []), ("  Claim [1]!", "c-a", []),
                         ("\n\nno punctuation at the end", None, [])]
    assert_partition(m)


def test_parts_marker_after_closing_quote_and_paren(docs):
    m = cite('He said "yes." [a](chunk:c-a) (Really.) [b](chunk:c-b) End.', sources=docs)
    assert [p.text for p in m.parts][:2] == ['He said "yes." [1]', " (Really.) [2]"]
    assert_partition(m)


def test_parts_of_post_sources():
    p = post_passage("reddit", "t3_a")
    m = cite("Fans agree [a](post:reddit:t3_a). Others [b](post:tiktok:2).", resolver=InMemoryResolver([p]))
    first, second = m.parts
    assert first.source.chunk_id == p.chunk.id
    assert (first.source.model_extra["source"], first.source.model_extra["id"]) == ("reddit", "t3_a")
    assert first.source.model_extra["citation"] == 1
    # an unknown post has no passage: the part names its marker number only
    assert second.source is None and second.model_extra["citation_numbers"] == [2]


def test_parts_empty_and_whitespace_text():
    assert cite("").parts == []
    m = cite("  \n ")
    assert [p.text for p in m.parts] == ["  \n "]


def test_parts_offsets_follow_the_unit(docs):
    m = cite("😀 one [a](chunk:c-a). Two 👩‍💻 [b](chunk:c-b).", sources=docs, offset_unit="utf16")
    assert_partition(m)
    assert [(p.model_extra["start_index"], p.model_extra["end_index"]) for p in m.parts] == [(0, 11), (11, 26)]


# --------------------------------------------------------------------------- rule 7


def test_each_post_is_its_own_resource():
    a, b = post_passage("reddit", "t3_a", 0), post_passage("reddit", "t3_b", 1)
    m = cite("A [x](post:reddit:t3_a). B [y](post:reddit:t3_b). C [z](post:reddit:t3_a).", sources=[a, b])
    assert [(c.model_extra["source"], c.model_extra["id"], c.chunk_index) for c in m.citations] == [
        ("reddit", "t3_a", 0), ("reddit", "t3_b", 1)]
    assert m.resource_ids == [DATASET]


def test_build_citations_without_numbers_uses_source_then_sources():
    def ref(cid, rid, title, index):
        return {"chunk_id": cid, "resource_id": rid, "resource_title": title, "chunk_index": index,
                "metadata": {"page": index}}
    parts = [Part(text="a", source=None),
             Part.model_validate({"text": "b", "source": ref("c2", "r2", "T2", 2),
                                  "sources": [ref("c1", "r1", "T1", 1), ref("c3", "r2", "T2", 3)]})]
    citations, ids = build_citations(parts)
    assert ids == ["r2", "r1"]
    assert [(c.resource_title, c.chunk_index, c.chunk_indices, c.metadata) for c in citations] == [
        ("T2", 2, [2, 3], {"page": 2}), ("T1", 1, [1], {"page": 1})]


def test_pathological_nesting_is_handled_without_recursion():
    raw = "[a " * 3000 + "[b](post:x:1)" + "]" * 3000
    m = cite(raw)
    assert m.text == "[a " * 3000 + "[1]" + "]" * 3000
    assert [r.id for r in m.references] == ["1"]
    assert cite("[" * 20000).text == "[" * 20000
