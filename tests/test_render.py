"""Terminal rendering: where a citation points, and the excerpt shown under it."""

from __future__ import annotations

from citewell import Reference
from citewell.cite import cite
from citewell.cli.render import cue_range, excerpt, format_time, render_answer, where
from citewell.cite.resolver import InMemoryResolver
from citewell.models import Chunk, Passage

TRANSCRIPT = Chunk(
    id="c-1", resource_id="r-1", chunk_index=4, text_type="transcript",
    text="So let's start.\nDeep learning changed OCR\ncompletely in five years.\nThat was the big shift.",
    metadata={"source_type": "transcript", "start_time": 3590.0, "end_time": 3640.5, "blocks": [10, 11, 12, 13],
              "speakers": [], "cue_times": [[3590.0, 3599.0], [3599.0, 3617.0], [3617.0, 3630.0], [3630.0, 3640.5]]})


def test_format_time() -> None:
    assert [format_time(s) for s in (0, 75.9, 3599.999, 3617, 36000)] == ["0:00", "1:15", "59:59", "1:00:17",
                                                                          "10:00:00"]


def test_transcript_moment_is_narrowed_to_the_cues_of_the_sentence() -> None:
    ref = Reference(type="chunk", citation=1, text=TRANSCRIPT.text, metadata=TRANSCRIPT.metadata)
    assert cue_range(ref, "Deep learning changed OCR completely in five years.") == (3599.0, 3630.0)
    assert where(ref, "Deep learning changed OCR completely in five years.") == "59:59–1:00:30"
    assert where(ref, "That was the big shift.") == "1:00:30–1:00:40"
    assert where(ref, "not in the passage") == where(ref) == "59:50–1:00:40"


def test_where_for_pages_posts_and_text() -> None:
    assert where(Reference(type="chunk", metadata={"source_type": "pdf", "page": 48})) == "p. 48"
    assert where(Reference(type="chunk", metadata={"page": 5, "page_label": "iii"})) == "p. 5 (printed iii)"
    assert where(Reference(type="post", source="reddit", id="t3_x", metadata={"source_type": "post"})) == "reddit/t3_x"
    assert where(Reference(type="chunk", metadata={"char_start": 10, "char_end": 99})) == "chars 10–99"


def test_rendered_answer_lists_sources_with_moment_and_excerpt() -> None:
    passage = Passage(chunk=TRANSCRIPT, resource_title="talk", resource_kind="transcript", file_name="talk.vtt")
    message = cite("Deep learning changed OCR completely in five years [1](chunk:c-1).", sources=[passage],
                   resolver=InMemoryResolver([passage]))
    out = render_answer(message)
    assert out.splitlines()[0] == "Deep learning changed OCR completely in five years [1]."
    assert "[1] talk.vtt, 59:59–1:00:30" in out.splitlines()
    ref = message.references[0]
    assert excerpt(message, ref, limit=40).startswith("…") and "Deep learning changed OCR" in excerpt(message, ref)
    assert excerpt(message, ref, full=True) == TRANSCRIPT.text


def test_control_characters_from_sources_never_reach_the_terminal() -> None:
    evil = Chunk(id="c-2", resource_id="r-2", chunk_index=0, text_type="post",
                 text="Revenue \x1b]0;PWNED\x07 rose \x1b[31mfast\x1b[0m today.",
                 metadata={"source_type": "post", "source": "reddit", "id": "t3_e"})
    passage = Passage(chunk=evil, resource_title="evil\nname\x1b[2J", resource_kind="post", file_name="e.jsonl")
    message = cite("Revenue rose fast today [1](chunk:c-2).", sources=[passage], resolver=InMemoryResolver([passage]))
    out = render_answer(message)
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;PWNED\\x07" in out


def test_a_table_row_excerpt_shows_the_column_header() -> None:
    rows = ["Year ended December 31, (Millions) 2022 2021"] + [f"Line item {i} $ {i},000 $ {i},500" for i in range(40)]
    rows.append("Purchases of property, plant and equipment (PP&E) $ (1,749) $ (1,603)")
    table = Chunk(id="t-1", resource_id="r-3", chunk_index=0, text_type="table", text="\n".join(rows),
                  metadata={"source_type": "pdf", "page": 39})
    passage = Passage(chunk=table, resource_title="3M_2022_10K", resource_kind="pdf", file_name="3M_2022_10K.pdf")
    message = cite("Purchases of property, plant and equipment (PP&E) $ (1,749) $ (1,603) [1](chunk:t-1).",
                   sources=[passage], resolver=InMemoryResolver([passage]))
    shown = excerpt(message, message.references[0])
    assert shown.startswith("Year ended December 31, (Millions) 2022 2021 …")
    assert shown.endswith("Purchases of property, plant and equipment (PP&E) $ (1,749) $ (1,603)")
    # the row restated as "Label: value (period)" is found by its label
    restated = cite("Purchases of property, plant and equipment (PP&E): $(1,749) (2022), $(1,603) (2021) "
                    "[1](chunk:t-1).", sources=[passage], resolver=InMemoryResolver([passage]))
    assert excerpt(restated, restated.references[0]) == shown


def test_each_cited_sentence_of_a_transcript_passage_gets_its_moment() -> None:
    passage = Passage(chunk=TRANSCRIPT, resource_title="talk", resource_kind="transcript", file_name="talk.vtt")
    message = cite("So let's start [1](chunk:c-1). That was the big shift [2](chunk:c-1).", sources=[passage],
                   resolver=InMemoryResolver([passage]))
    assert "[1] talk.vtt, 59:50–59:59, 1:00:30–1:00:40" in render_answer(message).splitlines()


def test_a_window_that_cuts_into_the_column_header_shows_it_once_and_whole() -> None:
    rows = ["ZORBLAX INDUSTRIES, INC. CONSOLIDATED BALANCE SHEETS (in thousands) December 31, 2022 2021",
            "Cash and cash equivalents 50,000 40,000", "Inventories 120,000 110,000",
            "Total current assets 400,000 350,000", "Property and equipment, net 282,000 253,000",
            "Total assets 900,000 800,000", "Total current liabilities 200,000 190,000"]
    table = Chunk(id="t-2", resource_id="r-4", chunk_index=0, text_type="table", text="\n".join(rows),
                  metadata={"source_type": "pdf", "page": 2})
    passage = Passage(chunk=table, resource_title="ZORBLAX_2022_10K", resource_kind="pdf", file_name="Z.pdf")
    message = cite("Total current liabilities: 200,000 (2022), 190,000 (2021) [1](chunk:t-2).", sources=[passage],
                   resolver=InMemoryResolver([passage]))
    shown = excerpt(message, message.references[0], limit=300)  # the window starts inside the header
    assert shown.count("CONSOLIDATED BALANCE SHEETS") == 1
    assert shown.startswith("ZORBLAX INDUSTRIES, INC. CONSOLIDATED BALANCE SHEETS (in thousands) December 31, 2022 2021")
    assert "Total current liabilities 200,000 190,000" in shown
