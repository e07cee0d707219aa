"""Sentence spans: exact, ordered, trimmed, and covering every non-space character."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from citewell.sentences import sentence_spans


def test_known_sentences() -> None:
    text = "Net sales were $34,229 million in 2022. Dr. Smith agreed!  Capex rose (see p. 5)"
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Net sales were $34,229 million in 2022.", "Dr. Smith agreed!", "Capex rose (see p. 5)"]
    assert sentence_spans("  \n ") == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\t,()[]1😀é中")), max_size=80) | st.text(max_size=60))
def test_spans_partition_the_non_space_text(text: str) -> None:
    spans = sentence_spans(text)
    pos = 0
    for start, end in spans:
        assert pos <= start < end <= len(text)
        assert not text[start].isspace() and not text[end - 1].isspace()
        assert text[pos:start].strip() == ""
        pos = end
    assert text[pos:].strip() == ""
