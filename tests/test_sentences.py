"""Sentence spans: exact, ordered, trimmed, and covering every non-space character."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from citewell.text.sentences import sentence_spans


def test_known_sentences() -> None:
    text = "Net sales were $34,229 million in 2022. Dr. Smith agreed!  Capex rose (see p. 5)"
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Net sales were $34,229 million in 2022.", "Dr. Smith agreed!", "Capex rose (see p. 5)"]
    assert sentence_spans("  \n ") == []


def test_format_characters_stay_inside_a_sentence() -> None:
    # syntok skips U+200B (zero-width space) between tokens, but it is no whitespace to Python
    assert sentence_spans("\u200b") == [(0, 1)]
    assert sentence_spans("\u200bNet sales rose.") == [(0, 16)]
    assert sentence_spans("Net sales rose. \u200b") == [(0, 17)]
    assert sentence_spans(" \u200b ") == [(1, 2)]


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


def test_word_count_measures_text_without_spaces() -> None:
    from citewell.text.sentences import cut_at_words, word_count

    assert word_count("Net sales rose 4%.") == 4
    assert word_count("東" * 120) == 20 and word_count("x" * 20) == 1
    assert cut_at_words("a b c d e", 3) == len("a b c")
    assert cut_at_words("東" * 120, 5) == 30
    url = "see https://example.com/" + "a" * 60
    assert cut_at_words(url, 5) == len("see")  # never inside a word or URL after the first
    assert cut_at_words("short", 5) == len("short")


def test_text_without_spaces_is_chunked_and_quotes_are_bounded() -> None:
    from citewell.generate import ExtractiveGenerator
    from citewell.ingest.text import MAX_WORDS, extract_text
    from citewell.models import Chunk, Passage
    from citewell.text.sentences import word_count

    text = "東京の寿司は美味しい" * 20_000
    ex = extract_text(text.encode(), name="jp.txt")
    assert len(ex.chunks) > 100
    assert all(word_count(c.text) <= MAX_WORDS and ex.text[c.char_start:c.char_end] == c.text for c in ex.chunks)
    chunk = Chunk(id="c", resource_id="r", chunk_index=0, text="revenue " + "x" * 1_000_000)
    answer = ExtractiveGenerator(max_words=50).generate("revenue", [Passage(chunk=chunk, resource_title="t",
                                                                                  resource_kind="text")])
    assert len(answer) < 600
