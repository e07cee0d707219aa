"""Numbered-passage citation forms of models ([1], [1, 2], [1-3], 【1】) map to their passages."""

from __future__ import annotations

from citewell.cite import cite
from citewell.cite.numbered import expand_numbered
from citewell.models import Chunk, Passage


def _p(cid: str, *, post: tuple[str, str] | None = None) -> Passage:
    meta = {"source_type": "post", "source": post[0], "id": post[1]} if post else {"source_type": "pdf", "page": 1}
    return Passage(chunk=Chunk(id=cid, resource_id=f"r-{cid}", chunk_index=0, text=f"passage {cid}",
                               text_type="post" if post else "paragraph", metadata=meta),
                   resource_title=f"doc {cid}", resource_kind="post" if post else "pdf")


SOURCES = [_p("c1"), _p("c2"), _p("c3", post=("reddit", "t3_x")), _p("c4")]


def test_model_forms_map_to_the_numbered_passages() -> None:
    raw = "Sales rose [2]. Margins fell [1, 3]. Costs grew [2-4]. Cash held 【4†source】. Debt 【1】."
    message = cite(expand_numbered(raw, SOURCES)[0], sources=SOURCES)
    assert message.text == "Sales rose [1]. Margins fell [2][3]. Costs grew [1][3][4]. Cash held [4]. Debt [2]."
    assert [(r.citation, r.chunk_id) for r in message.references] == [(1, "c2"), (2, "c1"), (3, "c3"), (4, "c4")]
    assert (message.references[2].source, message.references[2].id) == ("reddit", "t3_x")
    for r in message.references:
        assert message.text[r.start_index:r.end_index] == f"[{r.citation}]"


def test_numbers_outside_the_sources_code_and_escapes_are_not_citations() -> None:
    raw = "Real [2]. Invented [7]. Code `x[1]` and\n```\n[1]\n```\nescaped \\[3\\] and [link](https://x.org/[1])."
    text, warnings = expand_numbered(raw, SOURCES)
    assert [(w["code"], w["citation"]) for w in warnings] == [("unknown_target", 7)]
    message = cite(text, sources=SOURCES)
    assert message.text.startswith("Real [1]. Invented \\[7\\]. Code `x[1]` and\n```\n[1]\n```\nescaped \\[3\\]")
    assert [r.chunk_id for r in message.references] == ["c2"]


def test_a_marker_of_thousands_of_digits_is_an_unknown_number_not_a_crash() -> None:
    """Issue 14: ``int()`` refuses 4,301+ digits; such a marker names no passage."""
    huge = "9" * 5000
    text, warnings = expand_numbered(f"Real [2]. Huge [{huge}]. Range [1-{huge}].", SOURCES)
    assert text.startswith("Real [2](chunk:c2). Huge [" + huge + "]. Range [1-" + huge + "].")
    assert [(w["code"], w["label"], "citation" in w) for w in warnings] == [("unknown_target", f"[{huge}]", False)]
    assert warnings[0]["message"].startswith("9" * 20 + "…(5000 digits) cites passage " + "9" * 20)
    message = cite(text, sources=SOURCES)
    assert message.text == f"Real [1]. Huge \\[{huge}\\]. Range [1-{huge}]."  # no marker form: no escape
    assert [r.chunk_id for r in message.references] == ["c2"]
    alias, alias_warnings = expand_numbered(f"See [the filing](S{huge}).", SOURCES)
    assert alias == "See the filing." and [("citation" in w) for w in alias_warnings] == [False]


def test_ranges_that_are_too_long_or_reversed_stay_text() -> None:
    for raw in ("See [3-1].", "See [1-100000]."):
        text, warnings = expand_numbered(raw, SOURCES)
        assert text == raw and warnings == []


from hypothesis import given, settings
from hypothesis import strategies as st

from citewell.cite.numbered import NumberedExpander

def _assert_streamed_equals_whole(text: str, data: st.DataObject, *, max_cuts: int) -> None:
    """Fed in pieces cut at drawn places, the expander gives the whole text's expansion
    and the same warnings."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=max_cuts)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    expander = NumberedExpander(SOURCES)
    out = "".join(expander.feed(c) for c in chunks) + expander.close()
    whole, warnings = expand_numbered(text, SOURCES)
    assert out == whole
    assert [w["citation"] for w in expander.warnings] == [w["citation"] for w in warnings]


_PIECES = st.sampled_from(["Sales rose ", "[2]", "[1, 3]", "[2-4]", "【4†source】", "【1】", "[7]", " and ", ". ",
                           "[", "]", "【", "】", "x", "\n", "`code [1]`", "[link](https://a.org)", "\\[3\\]", "[1-", "(https://b.org)", "(", ")",
                           "\\", "[a ", " b]", "(post:reddit:t3_x)", "(https://x.org/a(b))", "\n\n"])


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES, max_size=20), st.data())
def test_streamed_expansion_equals_the_whole(pieces: list[str], data: st.DataObject) -> None:
    _assert_streamed_equals_whole("".join(pieces), data, max_cuts=8)


def test_alias_forms_map_to_the_offered_passages() -> None:
    raw = ("Sales rose [S2]. Margins fell [S1, S3]. Costs grew [s2-S4]. Cash held 【S4】. "
           "Debt rose [the note](S1). Capex [Source 2]. Made up [S9] and [x](S7).")
    text, warnings = expand_numbered(raw, SOURCES)
    message = cite(text, sources=SOURCES)
    assert message.text == ("Sales rose [1]. Margins fell [2][3]. Costs grew [1][3][4]. Cash held [4]. "
                            "Debt rose [2]. Capex [1]. Made up and x.")
    assert [(r.citation, r.chunk_id) for r in message.references] == [(1, "c2"), (2, "c1"), (3, "c3"), (4, "c4")]
    assert [(w["label"], w["citation"]) for w in warnings] == [("[9]", 9), ("(S7)", 7)]


def test_prose_streams_word_by_word_and_only_an_unfinished_marker_waits() -> None:
    expander = NumberedExpander(SOURCES)
    assert expander.feed("One paragraph answer: revenue ") == "One paragraph answer: "
    assert expander.feed("rose [S") == "revenue "  # the open marker waits, and the space before it
    assert expander.feed("2") == ""
    assert expander.feed("] and costs") == "rose [2](chunk:c2) and "
    assert expander.feed(" fell [label](S") == "costs "
    assert expander.feed("1). ") == ""  # a trailing space waits for the next character
    assert expander.feed("Next") == "fell [label](chunk:c1). "
    assert expander.close() == "Next"


_CHARS = st.sampled_from(list("ab S12[]【】()`~\\\n\t>-,.") + ["\r", "†", "chunk:c1", "S2", "https://x", "```",
                                                                "~~~", "  "])


@settings(max_examples=1500, deadline=None)
@given(st.lists(_CHARS, max_size=40), st.data())
def test_streamed_expansion_equals_the_whole_for_any_characters(pieces: list[str], data: st.DataObject) -> None:
    _assert_streamed_equals_whole("".join(pieces), data, max_cuts=12)


def test_a_wide_closing_bracket_does_not_close_a_link_label() -> None:
    # "】" closes only "【": the "[" before it still opens the label "】Sales rose [2]" of a
    # markdown link, so the [2] inside stays as written whether the text streams or not.
    text = "[】Sales rose [2]](https://b.org)"
    whole, _ = expand_numbered(text, SOURCES)
    assert whole == text
    expander = NumberedExpander(SOURCES)
    assert expander.feed(text) == ""  # the label is still open up to its destination's ")"
    assert expander.close() == text
