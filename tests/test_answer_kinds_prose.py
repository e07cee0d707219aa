"""Prose, transcript and post answers by the kind of answer wanted (issue 27, parts 3 and 4),
on real transcripts and posts of ../shared/corpus: a count, a date and a reason sentence;
a transcript citation with the times of its own cues; posts about the subject by name,
ticker or a linked alias; a name the sources write with other word breaks; "And why?"."""

from __future__ import annotations


import pytest

from citewell.generate.subjects import ABOUT, MENTIONS, UNRELATED, names_of, post_standing
from citewell.ingest.posts import extract_posts
from citewell.models import Chunk, Message, Passage, SourceRef
from citewell.question import analyse
from citewell.question.names import mentions, spelled, split_words
from citewell.text.stated import counts, states_count, states_date, states_reason

from .conftest import CORPUS, lexical_engine

DOCS = ("transcripts/twiml-409_deep-learning-ocr_cha-zhang.vtt",
        "transcripts/twiml-22_alphavertex-financial-knowledge-graph.vtt",
        "transcripts/twiml-492_bert-gpt-financial-services_jennifer-glore.vtt",
        "transcripts/twiml-129_information-extraction-documents_david-rosenberg.vtt",
        "posts/reddit_wallstreetbets_2022-01.jsonl",
        "posts/stocktwits_2022-06_07.jsonl")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    """An engine (lexical) over four podcast transcripts and two posts files: (engine, folder)."""
    with lexical_engine(tmp_path_factory.mktemp("prose"), *DOCS) as found:
        yield found


def _cited(message: Message) -> list[tuple[str, SourceRef]]:
    """(part text, its source) of every cited part, in answer order."""
    return [(p.text, p.source) for p in message.parts if p.source is not None]


def _post_ids(message: Message) -> list[str]:
    return [str(r.id) for r in message.references if r.type == "post"]


# --------------------------------------------------------------------------- what a sentence states


def test_sentence_readers_find_counts_dates_and_reasons() -> None:
    # the sentences as the transcripts and posts write them
    assert counts("We monitor 15 million private companies and we track about 200 million people", {"peopl"})
    assert not counts("there's about 2.5 billion bytes of data nowadays that people kind of have to keep track of",
                      {"peopl"})
    assert states_count("we have thousands of models that kind of work in Unison")
    assert not states_count("OCR for scan documents is sort of a solve the problem in 2016")  # a year is no count
    assert states_date("PayAABB is coming THIS July!") and states_date("it started 2000, early 2010-ish")
    assert not states_date("Maybe it'll be worth it.") and not states_date("we may see it")
    assert states_reason("Netflix just tanked 25% on earnings due to no guidance and growth in subscription.")
    assert states_reason("This is how Nflx presented it's earnings yesterday and therefore dropped")
    assert not states_reason("Netflix, an established blue chip stock lost 20% today alone.")
    # what a count question counts is read once, by the analysis
    assert analyse("How many private companies does Alpha Vertex monitor?").kind.counted == ("privat", "compani")
    assert analyse("When is PayAABB launching?").kind.counted == ()


# --------------------------------------------------------------------------- transcripts


def test_a_count_answer_quotes_the_count_and_cites_its_own_cues(corpus) -> None:
    engine, docs = corpus
    message = engine.ask("How many people does Alpha Vertex track?", corpus=docs, sync=False)
    [(text, source)] = _cited(message)
    assert "200 million people" in text and "2.5 billion bytes" not in message.text
    # the sentence runs over the cues 08:52.560-09:01.040, 09:01.040-09:08.000 and 09:08.000-09:13.120
    assert (source.metadata["start_time"], source.metadata["end_time"]) == (532.56, 553.12)
    assert source.metadata["passage_start_time"] < 532.56  # the passage's own range is kept beside it
    [citation] = message.citations
    assert citation.metadata["start_time"] == 532.56

    years = engine.ask("How many years has Cha Zhang been at Microsoft?", corpus=docs, sync=False)
    [(text, source)] = _cited(years)
    assert text.startswith("I actually have been at Microsoft for 16 years")
    assert (source.metadata["start_time"], source.metadata["end_time"]) == (70.0, 83.0)  # cue 01:10-01:23
    assert source.metadata["passage_start_time"] == 41.0  # its passage starts two cues earlier


def test_a_name_the_transcript_spaces_is_found_asked_in_one_word(corpus) -> None:
    engine, docs = corpus
    for asked in ("Sambanova", "SAMBANOVA"):
        message = engine.ask(f"Why can {asked} customers start with a smaller configuration?", corpus=docs,
                             sync=False)
        assert not any(w.code == "NOT_IN_SOURCES" for w in message.warnings), asked
        [(text, source)] = _cited(message)
        assert "Samba Nova Systems allows people to basically deploy at a smaller configuration" in text
        assert "because of some of the enhancements" in text  # the stated reason
        assert (source.metadata["start_time"], source.metadata["end_time"]) == (1415.68, 1436.32)
    # and the reverse: asked spaced, written run together (``TensorFlow``)
    spaced = engine.ask("What does Alpha Vertex use Tensor Flow models for?", corpus=docs, sync=False)
    assert "we're using a lot of TensorFlow models" in spaced.text
    assert spelled("And so Samba Nova Systems allows people", "Sambanova") == "Samba Nova"
    assert spelled("we're using a lot of TensorFlow models", "Tensor Flow") == "TensorFlow"
    assert spelled("the samba nova of it", "Sambanova") is None  # not written as a name
    assert mentions("And so Samba Nova Systems allows", "SAMBANOVA") and "samba" in split_words("Sambanova")


def test_and_why_answers_the_reason_for_the_previous_claim(corpus) -> None:
    engine, docs = corpus
    chat = engine.chat()
    first = engine.ask("What has been a blocking issue for an end to end OCR approach at Microsoft?",
                       corpus=docs, sync=False, chat_id=chat.id)
    assert "collecting OCR data has been a major kind of, I would say, a blocking issue" in first.text
    why = engine.ask("And why?", corpus=docs, sync=False, chat_id=chat.id)
    [(text, source)] = _cited(why)
    assert text.startswith("Because if you think about a lot of the document that we actually care")
    assert "blocking issue" not in why.text  # never the previous answer again
    assert (source.metadata["start_time"], source.metadata["end_time"]) == (1120.0, 1131.0)  # cue 18:40-18:51
    assert source.resource_id == _cited(first)[0][1].resource_id


# --------------------------------------------------------------------------- posts


def test_a_when_question_takes_the_post_with_the_month(corpus) -> None:
    engine, docs = corpus
    message = engine.ask("When is PayAABB launching?", corpus=docs, sync=False)
    assert _post_ids(message)[0] == "469763718"
    assert "PayAABB is coming THIS July!" in message.text
    assert all(states_date(text) for text, _ in _cited(message))


def test_a_why_question_quotes_a_reason_from_posts_about_the_subject(corpus) -> None:
    engine, docs = corpus
    message = engine.ask("Why did NFLX drop?", corpus=docs, sync=False)
    assert _post_ids(message) == ["t3_s9a9x8"]  # the post about it that states why ("… and therefore dropped")
    assert "therefore dropped" in message.text and "GAINS" not in message.text
    # a post about another company (SRTY) that mentions Netflix in passing, without a reason, is not quoted
    netflix = engine.ask("Why did Netflix stock drop?", corpus=docs, sync=False)
    assert "t3_s8xq9v" not in _post_ids(netflix) and "blue chip stock lost 20%" not in netflix.text


def _posts(name: str) -> dict[str, Passage]:
    """The posts of a real posts file as passages, by post id (first piece of each)."""
    extraction = extract_posts((CORPUS / "posts" / name).read_bytes(), name=name)
    out: dict[str, Passage] = {}
    for i, draft in enumerate(extraction.chunks):
        chunk = Chunk(id=f"c{i}", resource_id="r", chunk_index=i, text=draft.text, text_type="post",
                      metadata=draft.metadata)
        out.setdefault(str(draft.metadata["id"]), Passage(chunk=chunk, resource_title=name, resource_kind="post"))
    return out


def test_a_post_is_about_a_subject_by_name_ticker_or_linked_alias() -> None:
    reddit = _posts("reddit_wallstreetbets_2022-01.jsonl")
    netflix = names_of(analyse("Why did Netflix drop?"))
    assert post_standing(reddit["t3_s940ir"], netflix) == ABOUT  # "Netflix Pain…"
    assert post_standing(reddit["t3_s8xq9v"], netflix) == MENTIONS  # about SRTY; Netflix further on
    assert post_standing(reddit["t3_s9a9x8"], netflix) == UNRELATED  # says only "Nflx"
    # when the sources link the ticker to the name (the scope check's aliases), both ways
    linked = names_of(analyse("Why did Netflix drop?"), {"Netflix": ("NFLX",)})
    assert post_standing(reddit["t3_s9a9x8"], linked) == ABOUT
    ticker = names_of(analyse("Why did $NFLX drop?"))
    assert post_standing(reddit["t3_s9a9x8"], ticker) == ABOUT  # "Nflx" in its title-line, any case
    assert post_standing(reddit["t3_s940ir"], ticker) == UNRELATED
    assert post_standing(reddit["t3_s940ir"], names_of(analyse("Why did $NFLX drop?"), {"NFLX": ("Netflix",)})) \
        == ABOUT
    stocktwits = _posts("stocktwits_2022-06_07.jsonl")
    assert post_standing(stocktwits["469763718"], names_of(analyse("When is PayAABB launching?"))) == ABOUT
