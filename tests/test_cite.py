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
from citewell.cite.links import scan_label
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
    # the label cannot cross the blank line ("[a" stays literal), but the target after
    # "b]" is an orphan tail: it becomes the marker instead of reaching the text
    raw = "[a\n\nb](post:x:1)"
    m = cite(raw)
    assert m.text == "[a\n\nb[1]"
    assert [(r.source, r.id, r.start_index, r.end_index) for r in m.references] == [("x", "1", 5, 8)]


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


# --------------------------------------------------------------------------- hardening
# Fault kinds: a link target reaching the text; a marker turned into a link by what follows
# it; a fence in a container swallowing the rest; post sources with colons; markers
# glued to words. Every check compares real values.

_TARGET_IN_TEXT = __import__("re").compile(
    r"(?i)\]\s*\(\s*<?\s*(?:post|chunk|pattern|dataset|research_preview|resource|chat):")


def assert_no_target(message: Message) -> None:
    """No citation-link target outside code survives in the text (rule 9's spirit)."""
    prose = "".join(t.text for t in scan(message.text) if t.kind != "code")
    assert not _TARGET_IN_TEXT.search(prose), message.text
    assert not [t for t in scan(message.text) if t.kind in ("link", "tail")]


def _spans(m: Message) -> list[tuple]:
    return [(r.source, r.id, r.citation, [(o.start_index, o.end_index) for o in r.occurrences])
            for r in m.references if r.citation is not None]


@pytest.mark.parametrize("raw, text, spans", [
    # the inner link is numbered; the outer pair is a citation link whose label (holding
    # the inner marker) is kept, followed by the outer marker
    ("See [a [b](post:x:1) c](post:x:2).", "See a [1] c[2].",
     [("x", "1", 1, [(6, 9)]), ("x", "2", 2, [(11, 14)])]),
    ("[a [b](post:x:1)](post:x:1)", "a [1][1]", [("x", "1", 1, [(2, 5), (5, 8)])]),
    ("[[[a](post:x:1)](post:x:2)](post:x:3)!", "[1][2][3]!",
     [("x", "1", 1, [(0, 3)]), ("x", "2", 2, [(3, 6)]), ("x", "3", 3, [(6, 9)])]),
    ("[a [b](https://e.com/(p)) c](post:x:2)", "a [b](https://e.com/(p)) c[1]", [("x", "2", 1, [(26, 29)])]),
    ("[a `]` [b](post:x:1)](post:x:2)", "a `]` [1][2]", [("x", "1", 1, [(6, 9)]), ("x", "2", 2, [(9, 12)])]),
    # an outer ordinary link stays literal as CommonMark reads it (both brackets escaped)
    ("[a [b](post:x:1) c](https://e.com)", r"\[a [1] c\](https://e.com)", [("x", "1", 1, [(4, 7)])]),
    # orphan tails: a "]" closing no "[" (or escaped) still cannot show its target
    ("Revenue grew 5%](post:x:1).", "Revenue grew 5%[1].", [("x", "1", 1, [(15, 18)])]),
    ("[a](post:x:1)](post:x:2)", "[1][2]", [("x", "1", 1, [(0, 3)]), ("x", "2", 2, [(3, 6)])]),
    (r"\[a](post:x:1) b", r"\[a[1] b", [("x", "1", 1, [(3, 6)])]),
    (r"[a\](post:x:1) b", "[a[1] b", [("x", "1", 1, [(2, 5)])]),
    (r"a\\](post:x:1)", r"a\\[1]", [("x", "1", 1, [(3, 6)])]),
    # unclosed destinations end at whitespace / the line end
    ("Up [a](post:x:1", "Up [1]", [("x", "1", 1, [(3, 6)])]),
    ("Up [a](post:x:1 and more\nnext", "Up [1] and more\nnext", [("x", "1", 1, [(3, 6)])]),
    # whitespace (one line break) and <> around the destination
    ("Up [a](\npost:x:1) [b]( <post:x:2> )", "Up [1] [2]", [("x", "1", 1, [(3, 6)]), ("x", "2", 2, [(7, 10)])]),
])
def test_link_targets_never_reach_the_text(raw, text, spans):
    m = cite(raw)
    assert m.text == text
    assert _spans(m) == spans
    assert m.warnings == []
    assert_no_target(m)
    assert_slice_rule(m)
    assert_partition(m)


def test_nested_link_with_unresolved_or_entity_outer_target():
    m = cite("[a [b](post:x:1) c](post:y:9) end", sources=[post_passage("x", "1")])
    assert m.text == "a [1] c end"
    assert [(w.code, w.model_extra["label"], w.model_extra["id"]) for w in m.warnings] == [
        ("unknown_target", "a [b](post:x:1) c", "9")]
    resolver = InMemoryResolver([], entities=[("pattern", "p1")])
    m = cite("[the [b](post:x:1) pattern](pattern:p1) and [c](post:x:1)", resolver=resolver)
    assert m.text == "the [1] pattern and [1]"
    assert [(r.type, r.id, r.citation) for r in m.references] == [("post", "1", 1), ("pattern", "p1", None)]
    assert m.warnings == []
    m = cite("Up [a](post:x:", sources=[])
    assert m.text == "Up a"
    assert [w.model_extra["target"] for w in m.warnings] == ["post:x:"]
    assert_no_target(m)


def test_deeply_nested_citation_links_without_recursion():
    raw = "[" * 3000 + "[b](post:x:1)" + "](post:x:2)" * 3000
    m = cite(raw)
    assert m.text == "[1]" + "[2]" * 3000
    assert [(r.id, len(r.occurrences)) for r in m.references] == [("1", 1), ("2", 3000)]
    assert_no_target(m)


@pytest.mark.parametrize("raw, text", [
    ("See [a](post:x:1)(more) now.", r"See [1]\(more) now."),
    ("See [a](post:x:1)[ref] now.", r"See [1]\[ref] now."),
    ("See [a](post:x:1)[] now.", r"See [1]\[] now."),
    ("See [a](post:x:1)[12] now.", r"See [1]\[12\] now."),
    ("See [a](post:x:1)[(b)](pattern:zz).", r"See [1]\(b)."),  # an entity label shown after it
    ("See [a](post:x:1)[b](post:x:2)(c).", r"See [1][2]\(c)."),  # markers may touch each other
    ("[a](post:x:1): a definition?", r"[1]\: a definition?"),
    ("> - [a](post:x:1):x", r"> - [1]\:x"),
    ("  [a](post:x:1) [b](post:x:2): y", r"  [1] [2]: y"),  # not first on the line: no definition
    ("Mid [a](post:x:1): y", "Mid [1]: y"),
    ("[ 1 ]: https://evil.example\n\nSee [a](post:x:1).", "\\[ 1 \\]: https://evil.example\n\nSee [1]."),
])
def test_markers_are_never_turned_into_links(raw, text):
    m = cite(raw)
    assert m.text == text
    assert_slice_rule(m)
    assert_partition(m)
    for unit in ("utf16", "utf8"):
        assert_slice_rule(convert_offsets(m, unit))


def test_escape_after_marker_keeps_offsets_in_every_unit():
    m = cite("😀[a](post:x:1)(x) 漢[b](post:x:2)[y]")
    assert m.text == "😀[1]\\(x) 漢[2]\\[y]"
    assert _spans(m) == [("x", "1", 1, [(1, 4)]), ("x", "2", 2, [(10, 13)])]
    u16 = cite("😀[a](post:x:1)(x) 漢[b](post:x:2)[y]", offset_unit="utf16")
    assert _spans(u16) == [("x", "1", 1, [(2, 5)]), ("x", "2", 2, [(11, 14)])]
    u8 = cite("😀[a](post:x:1)(x) 漢[b](post:x:2)[y]", offset_unit="utf8")
    assert _spans(u8) == [("x", "1", 1, [(4, 7)]), ("x", "2", 2, [(15, 18)])]
    for msg in (m, u16, u8):
        assert_slice_rule(msg)
        assert_partition(msg)


@pytest.mark.parametrize("raw, text, cited", [
    # the repro: an unclosed fence ends with its block quote / list item
    ("> ```\n> code\n\nRevenue grew [a](post:x:1).", "> ```\n> code\n\nRevenue grew [1].", ["1"]),
    ("- ```\n  x\n\nRevenue grew [a](post:x:1).", "- ```\n  x\n\nRevenue grew [1].", ["1"]),
    ("> ```\n> code\nlazy [a](post:x:1)", "> ```\n> code\nlazy [1]", ["1"]),
    ("> ```\n>\n> [a](post:x:1)", "> ```\n>\n> [a](post:x:1)", []),  # ">" alone continues
    ("- ```\n  [a](post:x:1)\n- [b](post:x:2)", "- ```\n  [a](post:x:1)\n- [1]", ["2"]),
    ("- ```\n  x\n\n  [a](post:x:1)\n  ```\nDone [b](post:x:2).",
     "- ```\n  x\n\n  [a](post:x:1)\n  ```\nDone [1].", ["2"]),  # blank lines stay in the item
    ("1. Step:\n   ```\n   [a](post:x:1)\nDone [b](post:x:2).",
     "1. Step:\n   ```\n   [a](post:x:1)\nDone [1].", ["2"]),  # indented fence under an item
    ("> - ```\n>   [a](post:x:1)\n> [b](post:x:2)", "> - ```\n>   [a](post:x:1)\n> [1]", ["2"]),
    ("> ```\n> [a](post:x:1)\n> ```\n> [b](post:x:2)", "> ```\n> [a](post:x:1)\n> ```\n> [1]", ["2"]),
    ("> ```\n> x\n```\n[a](post:x:1)", "> ```\n> x\n```\n[a](post:x:1)", []),  # a new top-level fence
    ("```\nx\n> ```\n[a](post:x:1)", "```\nx\n> ```\n[a](post:x:1)", []),  # top level: "> ```" is code
])
def test_fence_in_a_container_ends_with_it(raw, text, cited):
    m = cite(raw)
    assert m.text == text
    assert [r.id for r in m.references] == cited
    assert m.warnings == []
    assert_no_target(m) if cited else None
    assert_slice_rule(m)
    assert_partition(m)


def test_fence_ended_by_its_container_ends_a_part():
    m = cite("> ```\n> code\n\nRevenue grew [a](post:x:1).", sources=[post_passage("x", "1")])
    assert [p.text for p in m.parts] == ["> ```\n> code\n", "\nRevenue grew [1]."]
    assert [p.source.chunk_id if p.source else None for p in m.parts] == [None, "chunk-x-1"]


def test_post_source_with_a_colon():
    assert encode_id("my:src", source=True) == "my%3Asrc"
    assert encode_id("my:src") == "my:src"  # ids keep their colons
    assert decode_id("my%3Asrc", source=True) == "my:src"
    assert decode_id("a%3Ab") == "a%3Ab"  # an id's %3A is compared as written
    for source in ["my:src", "a:b:c", "50% (x):y"]:
        assert decode_id(encode_id(source, source=True), source=True) == source
    link = format_link("clip", post=("Forum:EU", "t:1"))
    assert link == "[clip](post:Forum%3AEU:t:1)"
    t = parse_target("post:Forum%3aEU:t:1")
    assert (t.source, t.id) == ("forum:eu", "t:1")
    passage = post_passage("forum:eu", "t:1")
    m = cite(f"Seen {link} and [again](post:FORUM%3AEU:t:1).", sources=[passage])
    assert m.text == "Seen [1] and [1]."
    assert [(r.source, r.id, r.chunk_id, r.start_index) for r in m.references] == [
        ("forum:eu", "t:1", "chunk-forum:eu-t:1", 5)]
    assert m.warnings == []
    # unencoded, the source ends at the first colon: a different post
    m = cite("Seen [a](post:forum:eu:t:1).", sources=[passage])
    assert m.text == "Seen a." and [w.model_extra["source"] for w in m.warnings] == ["forum"]


@pytest.mark.parametrize("raw, text, cps, u16, u8", [
    ("word[a](post:x:1)", "word[1]", (4, 7), (4, 7), (4, 7)),
    ("[a](post:x:1)word", "[1]word", (0, 3), (0, 3), (0, 3)),
    ("漢字[a](post:x:1)漢字", "漢字[1]漢字", (2, 5), (2, 5), (6, 9)),
    ("😀[a](post:x:1)😀", "😀[1]😀", (1, 4), (2, 5), (4, 7)),
    ("e\u0301[a](post:x:1)", "e\u0301[1]", (2, 5), (2, 5), (3, 6)),
])
def test_markers_glued_to_words(raw, text, cps, u16, u8):
    for unit, span in (("codepoint", cps), ("utf16", u16), ("utf8", u8)):
        m = cite(raw, offset_unit=unit)
        assert m.text == text
        assert (m.references[0].start_index, m.references[0].end_index) == span
        assert_slice_rule(m)
        assert_partition(m)


def test_markers_glued_to_words_parts(docs):
    m = cite("Sales rose[a](chunk:c-a). Costs fell[b](chunk:c-b)[c](chunk:c-c).", sources=docs)
    assert m.text == "Sales rose[1]. Costs fell[2][3]."
    assert _parts(m) == [("Sales rose[1].", "c-a", []), (" Costs fell[2][3].", "c-c", ["c-b"])]
    assert [(p.model_extra["start_index"], p.model_extra["end_index"]) for p in m.parts] == [(0, 14), (14, 32)]
    assert_partition(m)


@pytest.mark.parametrize("raw, text", [
    # no fence in the input (the info string holds a backtick), but the backtick is in the
    # rewritten link: the run is escaped so the output does not open a code block
    ("```[`]`](post:x:1) and [b](post:x:2)", "\\```[1] and [2]"),
    ("> ```a[`x](post:x:1)\nmore [b](post:x:2)", "> \\```a[1]\nmore [2]"),
    ("```a` [b](post:x:1)", "```a` [1]"),  # a backtick stays on the line: left as written
])
def test_rewriting_never_opens_a_fence(raw, text):
    m = cite(raw)
    assert m.text == text
    assert [r.id for r in m.references] == ["1", "2"][:len(m.references)]
    assert not [t for t in scan(m.text) if t.kind == "code"]
    assert_slice_rule(m)
    assert_partition(m)


@pytest.mark.parametrize("raw, text, cited", [
    # removed markup would leave "> " before a code span's backticks (a fence in a quote):
    # the fallback keeps the removed brackets as literals and escapes prose backticks
    ("[](chunk:zz)> ```\n[a](post:x:1)```", "\\[\\]> ```\n[a](post:x:1)```", []),
    ("[](chunk:zz)  ```\n> [a](post:x:1)\n", "\\[\\]  \\`\\`\\`\n> [1]\n", ["1"]),
    ("[](chunk:zz)~~~\nx [a](post:x:1)", "\\[\\]\\~~~\nx [1]", ["1"]),
    # the dropped "[" of a nested link would join two code spans: kept as "\[" instead
    ("``x``[`]` [a](post:x:1)](post:x:2)`", "``x``\\[`]` [1][2]\\`", ["1", "2"]),
])
def test_rewriting_that_would_change_code_falls_back_to_literal_markup(raw, text, cited):
    m = cite(raw, sources=[post_passage("x", "1"), post_passage("x", "2")])
    assert m.text == text
    assert [r.id for r in m.references] == cited
    assert_no_target(m)
    assert_slice_rule(m)
    assert_partition(m)
    code = [(t.start, t.end) for t in scan(m.text) if t.kind == "code"]
    assert not [r for r in m.references for o in r.occurrences if any(a <= o.start_index < b for a, b in code)]


def test_a_marker_with_final_punctuation_ends_its_part() -> None:
    """syntok reads '$ 3,393. 2023 results' as one sentence; the marker and its '.' end it."""
    m = cite("Net sales $ 3,540 $ 3,393 [a](post:x:1). 2023 financial results rose [b](post:x:2). "
             "Third one. [c](post:x:3) Fourth")
    assert [p.text for p in m.parts] == ["Net sales $ 3,540 $ 3,393 [1].", " 2023 financial results rose [2].",
                                         " Third one. [3]", " Fourth"]
    assert [p.model_extra["citation_numbers"] for p in m.parts] == [[1], [2], [3], []]


@pytest.mark.parametrize("raw, text", [
    ("😀> ```\n> [a](post:x:1)\n(post:x:1", "😀> ```\n> [1]\n\\(post:x:1"),  # found by hypothesis
    ("x [a](post:x:1) (post:x:1)", "x [1] \\(post:x:1)"),
    ("5%] (chunk:c-1)", "5%] \\(chunk:c-1)"),
    ("see [a](post:x:1) (more) and (post notes)", "see [1] (more) and (post notes)"),
])
def test_a_citation_destination_after_a_bracket_and_a_space_is_escaped(raw: str, text: str) -> None:
    # some renderers (Markdown.pl) link "[1] (post:x:1)" across the space: no target may survive
    assert cite(raw).text == text


# ------------------------------------------- bracket pairing (links.py rule 6), found by hypothesis

def _md_links(text: str) -> list[tuple[str, str]]:
    """(label, destination) of the ordinary inline links of ``text``, in order."""
    return [(t.label, t.tail[t.dest_span[0]:t.dest_span[1]]) for t in scan(text) if t.kind == "mdlink"]


@pytest.mark.parametrize("raw, text, links", [
    # an ordinary link whose URL holds balanced parentheses and "post:…", then "(post:…"
    # prose: nothing is a citation target, the text is unchanged (the property test's old
    # oracle glued "[a]" to the "(post:" after the link)
    ("[a](https://e.com/post:reddit:1/(x))(post:x:1", "[a](https://e.com/post:reddit:1/(x))(post:x:1",
     [("a", "https://e.com/post:reddit:1/(x)")]),
    ("[a](https://e.com/post:reddit:1/(x))(post:x:1) [b](post:x:1)",
     "[a](https://e.com/post:reddit:1/(x))(post:x:1) [1]", [("a", "https://e.com/post:reddit:1/(x)")]),
    # a pair holding a link, followed by "(": both of its brackets are escaped; with only
    # the "[" escaped, its "]" closed the earlier "[" and formed a new link around markers
    ("[[[a](post:reddit:1)](post:x:1)> ```\n[a](post:reddit:1)> ```\n[[a](post:reddit:1)](https://e.com/(x))",
     "[[1][2]> ```\n[a](post:reddit:1)> ```\n\\[[1]\\](https://e.com/(x))", []),
    ("[0 [[a](post:x:1)](https://e.com)", r"[0 \[[1]\](https://e.com)", []),
    ("[[[`]`](chunk:c-9) [d]](https://e.com/(x))z", "[\\[`]` [d]\\](https://e.com/(x))z", []),
    # half-escaped numbers: escape_numbers completes them, the partner bracket goes too
    (r"[a \[12] b](https://e.com) [c](post:x:1)", r"\[a \[12\] b](https://e.com) [1]", []),
    (r"[x [a](post:x:1) \[12] y](https://e.com)", r"\[x [1] \[12\] y](https://e.com)", []),
    (r"[w [12\] x] y](https://e.com) [c](post:x:1)", r"[w \[12\] x\] y](https://e.com) [1]",
     [(r"w \[12\] x\] y", "https://e.com")]),
    # a padded number label: "\[ 1 \]:", so the link around it stays one
    ("[w [ 1 ]: x](https://e.com) [c](post:x:1)", r"[w \[ 1 \]: x](https://e.com) [1]",
     [(r"w \[ 1 \]: x", "https://e.com")]),
    # a link may hold an image (CommonMark): a linked badge stays a link, also next to a
    # citation; a link beside it still makes the pair literal
    ("[![build](https://e.com/b.svg)](https://e.com/ci) ok [a](post:x:1)",
     "[![build](https://e.com/b.svg)](https://e.com/ci) ok [1]",
     [("![build](https://e.com/b.svg)", "https://e.com/ci")]),
    ("[![i](a.png) [b](https://z)](https://x)", "\\[![i](a.png) [b](https://z)\\](https://x)",
     [("i", "a.png"), ("b", "https://z")]),
    (r"[\![i](a.png)](https://x)", r"\[\![i](a.png)\](https://x)", [("i", "a.png")]),
    # the dropped "[" of a nested link joined backticks into a code span swallowing an
    # ordinary link: the literal-markup fallback keeps it
    ("``[`]` [a](https://e.com) `x`](post:x:1)", "\\`\\`\\[`]` [a](https://e.com) `x`[1]",
     [("a", "https://e.com")]),
])
def test_rewriting_never_forms_or_breaks_an_ordinary_link(raw, text, links):
    m = cite(raw)
    assert m.text == text
    assert _md_links(m.text) == links
    assert_no_target(m)
    assert_slice_rule(m)
    assert_partition(m)


def test_literal_pair_and_half_escape_partners_are_bracket_tokens():
    tokens = scan("[0 [[a](post:x:1)](https://e.com)")
    assert [(t.kind, t.start, t.text) for t in tokens if t.kind != "text"] == [
        ("bracket", 3, "["), ("link", 4, "[a](post:x:1)"), ("bracket", 17, "]")]
    tokens = scan(r"[w [12\] x] y](u) [a \[3] b]")
    assert [(t.kind, t.start, t.text) for t in tokens if t.kind == "bracket"] == [("bracket", 18, "[")]
    assert [t.kind for t in tokens].count("mdlink") == 1
    # the mdlink's label, scanned on its own, escapes the "]" closing "[12\]"
    label = [t for t in tokens if t.kind == "mdlink"][0].label
    assert [(t.kind, t.start) for t in scan_label(label) if t.kind == "bracket"] == [("bracket", 9)]
    # "\\\\[12]": the backslash is escaped, "[12]" is a whole pair: nothing to balance
    assert [t.kind for t in scan(r"[a \\[12] b](u)")] == ["mdlink"]
    assert cite(r"[a \\[12] b](u)").text == r"[a \\\[12\] b](u)"
