"""Transcript ingestion (WebVTT, SubRip): cue times, text, provenance and errors.

Real files from the shared corpus, the citation cases BC-24, BC-25 (kind vtt-timestamp)
and BC-27 (kind media-time-provenance), and our own members of those kinds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citewell.errors import IngestError
from citewell.ingest import transcript as tr
from citewell.extraction import ChunkDraft, Extraction
from citewell.ingest.transcript import (
    GroupingConfig,
    extract_srt,
    extract_vtt,
    group_cues,
    parse_cues,
    parse_timestamp_ms,
)

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
TRANSCRIPTS = CORPUS / "transcripts"
CASES_FILE = CORPUS.parent / "cases" / "citation-cases.json"

TWIML_409 = "twiml-409_deep-learning-ocr_cha-zhang"


def _case(case_id: str) -> dict[str, Any]:
    cases = json.loads(CASES_FILE.read_text(encoding="utf-8"))
    return next(c for c in cases if c["id"] == case_id)


def _extract(path: Path) -> Extraction:
    extractor = extract_vtt if path.suffix == ".vtt" else extract_srt
    return extractor(path.read_bytes(), name=path.name)


def _extract_text(content: str, fmt: str) -> Extraction:
    extractor = extract_vtt if fmt == "vtt" else extract_srt
    return extractor(content.encode("utf-8"), name=f"test.{fmt}")


def _chunk_of(extraction: Extraction, cue_index: int) -> ChunkDraft:
    holders = [c for c in extraction.chunks if cue_index in c.metadata["blocks"]]
    assert len(holders) == 1, f"cue {cue_index} is in {len(holders)} chunks"
    return holders[0]


def _assert_cue_in_chunks(
    extraction: Extraction, index: int, start: float, end: float, text: str
) -> None:
    """The chunk holding cue ``index`` has its text as a line and covers its times."""
    chunk = _chunk_of(extraction, index)
    lines = chunk.text.split("\n")
    assert lines[chunk.metadata["blocks"].index(index)] == text
    meta = chunk.metadata
    if meta["blocks"] == [index]:
        assert meta["start_time"] == pytest.approx(start, abs=1e-3)
        assert meta["end_time"] == pytest.approx(end, abs=1e-3)
    else:
        assert meta["start_time"] <= start + 1e-9
        assert meta["end_time"] >= end - 1e-9


def _check_invariants(extraction: Extraction) -> None:
    assert extraction.kind == "transcript"
    assert extraction.chunks, "no chunks"
    duration = extraction.metadata["duration"]
    previous_last_block = -1
    for chunk in extraction.chunks:
        assert extraction.text[chunk.char_start : chunk.char_end] == chunk.text
        assert chunk.text_type == "transcript"
        meta = chunk.metadata
        assert meta["source_type"] == "transcript"
        blocks = meta["blocks"]
        assert blocks and all(a < b for a, b in zip(blocks, blocks[1:]))
        assert blocks[0] > previous_last_block
        previous_last_block = blocks[-1]
        assert len(chunk.text.split("\n")) == len(blocks)
        assert isinstance(meta["start_time"], float) and isinstance(meta["end_time"], float)
        assert 0.0 <= meta["start_time"] <= meta["end_time"] <= duration
        assert round(meta["start_time"], 3) == meta["start_time"]
        assert round(meta["end_time"], 3) == meta["end_time"]
        assert isinstance(meta["speakers"], list)
    assert extraction.text == "\n\n".join(c.text for c in extraction.chunks)
    assert previous_last_block < extraction.metadata["cue_count"]


# --------------------------------------------------------------------------------------
# Corpus files
# --------------------------------------------------------------------------------------

TWIML_VTT = {
    # file stem: (cue count, first cue, last cue) with (start, end, text)
    "twiml-129_information-extraction-documents_david-rosenberg": (
        658,
        (0.0, 16.32, "Hello and welcome to another episode of Twimble Talk, the podcast why interview "
         "interesting"),
        (2796.24, 2798.76, "Thanks once again for listening and catch you next time."),
    ),
    "twiml-22_alphavertex-financial-knowledge-graph": (
        248,
        (0.0, 19.44, "All right. So once again, I am at NYU Future Labs with the AI Nexus companies. "
         "And this time,"),
        (1530.8, 1540.8, "are doing and it sounds really exciting. Yeah, it was a pleasure. Thank you so "
         "much. Great. Thank you."),
    ),
    TWIML_409: (
        267,
        (0.0, 16.0, "All right, everyone. I am here with Cha Zhang. Cha is a partner engineering "
         "manager at Microsoft Cloud and AI. Cha, welcome to the 20 AI podcast."),
        (3716.0, 3731.0, "Thank you."),
    ),
    "twiml-492_bert-gpt-financial-services_jennifer-glore": (
        416,
        (0.0, 5.68, "All right, everyone. I am here with Jennifer Glor. Jennifer is the VP of customer "
         "engineering at"),
        (2647.12, 2655.12, "Thank you for having me."),
    ),
}


@pytest.mark.parametrize("stem", sorted(TWIML_VTT))
def test_twiml_vtt_cue_times(stem: str) -> None:
    count, first, last = TWIML_VTT[stem]
    path = TRANSCRIPTS / f"{stem}.vtt"
    parsed = parse_cues(path.read_bytes(), fmt="vtt", name=path.name)
    assert len(parsed.cues) == count == path.read_text(encoding="utf-8").count("-->")
    assert parsed.warnings == []
    for cue, (start, end, text) in ((parsed.cues[0], first), (parsed.cues[-1], last)):
        assert (cue.start, cue.end, cue.text) == (pytest.approx(start, abs=1e-3), pytest.approx(end, abs=1e-3), text)
    extraction = _extract(path)
    assert extraction.media_type == "text/vtt"
    assert extraction.warnings == []
    assert extraction.metadata["cue_count"] == count
    assert extraction.metadata["duration"] == pytest.approx(last[1], abs=1e-3)
    _assert_cue_in_chunks(extraction, 0, *first)
    _assert_cue_in_chunks(extraction, count - 1, *last)
    assert extraction.chunks[0].metadata["start_time"] == 0.0
    assert extraction.chunks[-1].metadata["end_time"] == pytest.approx(last[1], abs=1e-3)


def test_twiml_409_cue_across_the_hour() -> None:
    """``59:59.000 --> 01:00:17.000``: hour-less start, hour-ful end (3599.0 -> 3617.0)."""
    path = TRANSCRIPTS / f"{TWIML_409}.vtt"
    parsed = parse_cues(path.read_bytes(), fmt="vtt", name=path.name)
    lines = path.read_text(encoding="utf-8").split("\n")
    timing_line = lines.index("59:59.000 --> 01:00:17.000") + 1
    [cue] = [c for c in parsed.cues if c.line == timing_line]
    assert (cue.start_ms, cue.end_ms) == (3_599_000, 3_617_000)
    assert (cue.start, cue.end) == (3599.0, 3617.0)
    assert cue.text.startswith("You might need to train more than one model")
    previous, following = parsed.cues[cue.index - 1], parsed.cues[cue.index + 1]
    assert (previous.start, previous.end) == (3582.0, 3599.0)
    assert (following.start, following.end) == (3617.0, 3646.0)
    extraction = _extract(path)
    _assert_cue_in_chunks(extraction, cue.index, 3599.0, 3617.0, cue.text)


def test_twiml_409_srt_equals_vtt() -> None:
    vtt_path, srt_path = TRANSCRIPTS / f"{TWIML_409}.vtt", TRANSCRIPTS / f"{TWIML_409}.srt"
    vtt = parse_cues(vtt_path.read_bytes(), fmt="vtt")
    srt = parse_cues(srt_path.read_bytes(), fmt="srt")
    assert srt.warnings == [] and len(srt.cues) == 267
    assert [(c.start_ms, c.end_ms, c.text) for c in srt.cues] == [
        (c.start_ms, c.end_ms, c.text) for c in vtt.cues
    ]
    assert [c.identifier for c in srt.cues[:3]] == ["1", "2", "3"]
    srt_cue = srt.cues[258]
    assert (srt_cue.start, srt_cue.end, srt_cue.identifier) == (3599.0, 3617.0, "259")
    from_srt, from_vtt = _extract(srt_path), _extract(vtt_path)
    assert from_srt.media_type == "application/x-subrip"
    assert from_srt.text == from_vtt.text
    assert [c.metadata for c in from_srt.chunks] == [c.metadata for c in from_vtt.chunks]
    _assert_cue_in_chunks(from_srt, 258, 3599.0, 3617.0, srt_cue.text)


def test_elephants_dream_captions() -> None:
    path = TRANSCRIPTS / "elephants-dream_captions.en.vtt"
    parsed = parse_cues(path.read_bytes(), fmt="vtt")
    assert len(parsed.cues) == 78 and parsed.warnings == []
    first, last = parsed.cues[0], parsed.cues[-1]
    assert (first.identifier, first.start, first.end, first.text) == ("1", 15.0, 17.951, "At the left we can see...")
    assert (last.identifier, last.start, last.end, last.text) == ("78", 537.0, 539.867, "...it is.")
    # a two-line cue is one line of text
    fourth = parsed.cues[3]
    assert (fourth.identifier, fourth.start, fourth.end) == ("4", 21.999, 24.368)
    assert fourth.text == "Everything is safe. Perfectly safe."
    extraction = _extract(path)
    assert extraction.metadata["duration"] == 539.867
    _assert_cue_in_chunks(extraction, 0, 15.0, 17.951, "At the left we can see...")
    _assert_cue_in_chunks(extraction, 77, 537.0, 539.867, "...it is.")
    _assert_cue_in_chunks(extraction, 3, 21.999, 24.368, "Everything is safe. Perfectly safe.")
    # cue ids are not text
    assert not any(line.strip().isdigit() for line in extraction.text.split("\n"))


def test_elephants_dream_chapters_notes_are_not_cues() -> None:
    path = TRANSCRIPTS / "elephants-dream_chapters.en.vtt"
    parsed = parse_cues(path.read_bytes(), fmt="vtt")
    assert len(parsed.cues) == 9 and parsed.warnings == []
    assert [c.text for c in parsed.cues] == [
        "Prologue", "Switchboard trap", "Telephone/Lecture", "Typewriter", "Proog shows Emo stuff",
        "Which way", "Emo flips out", "Emo creates", "Closing credits",
    ]
    assert (parsed.cues[0].start, parsed.cues[0].end) == (0.0, 27.5)
    assert (parsed.cues[-1].start, parsed.cues[-1].end) == (565.0, 653.0)
    extraction = _extract(path)
    assert "NOTE" not in extraction.text and "Owen Edwards" not in extraction.text
    assert "Blender Foundation" not in extraction.text
    _assert_cue_in_chunks(extraction, 8, 565.0, 653.0, "Closing credits")
    _check_invariants(extraction)


def test_elephants_dream_descriptions_header_and_crlf() -> None:
    path = TRANSCRIPTS / "elephants-dream_descriptions.en.vtt"
    assert b"\r\n" in path.read_bytes()
    extraction = _extract(path)
    assert extraction.warnings == []
    assert extraction.metadata["license"] == "CC BY 4.0 http://creativecommons.org/licenses/by/4.0/"
    assert extraction.metadata["author"] == "Silvia Pfeiffer"
    assert extraction.metadata["cue_count"] == 63
    assert "License" not in extraction.text and "Silvia" not in extraction.text
    assert "\r" not in extraction.text
    _assert_cue_in_chunks(extraction, 0, 0.0, 5.0, "The orange open movie project presents")
    _assert_cue_in_chunks(
        extraction,
        62,
        647.5,
        653.0,
        "Produced By Ton Roosendaal Copyright 2006 Netherlands Media Art Institute / Montevideo "
        "Blender Foundation",
    )


def test_teams_style_short_timestamps_and_voices() -> None:
    path = TRANSCRIPTS / "teams-style-short-timestamps_webvtt-py-fixture.vtt"
    parsed = parse_cues(path.read_bytes(), fmt="vtt")
    assert [(c.start, c.end) for c in parsed.cues] == [(0.0, 0.57), (0.21, 1.13)]
    assert [c.speakers for c in parsed.cues] == [("Speaker 1",), ("Speaker 2",)]
    extraction = _extract(path)
    [chunk] = extraction.chunks  # overlapping cues: no silence between them
    assert chunk.text == "Speaker 1: There you go.\nSpeaker 2: Why hello there, Speaker 1."
    assert chunk.metadata == {
        "source_type": "transcript",
        "start_time": 0.0,
        "end_time": 1.13,
        "blocks": [0, 1],
        "speakers": ["Speaker 1", "Speaker 2"],
        "cue_times": [[0.0, 0.57], [0.21, 1.13]],
    }


def test_youtube_autocaptions_rolling_text() -> None:
    path = TRANSCRIPTS / "youtube-autocaption_webvtt-py-fixture.vtt"
    extraction = _extract(path)
    assert extraction.metadata["language"] == "en"
    assert extraction.metadata["cue_count"] == 4
    assert "<" not in extraction.text and "00:05" not in extraction.text and "::cue" not in extraction.text
    [chunk] = extraction.chunks
    assert chunk.text == "yeah\nwhat\nthis will happen is I'm telling"
    assert chunk.text.count("this will happen") == 1 and chunk.text.count("yeah") == 1
    # the last cue only repeats the previous one: it is in no chunk
    assert chunk.metadata["blocks"] == [0, 1, 2]
    assert chunk.metadata["start_time"] == 286.07
    assert chunk.metadata["end_time"] == 305.069
    assert extraction.metadata["duration"] == 305.4


@pytest.mark.parametrize("path", sorted(TRANSCRIPTS.iterdir()), ids=lambda p: p.name)
def test_corpus_invariants(path: Path) -> None:
    extraction = _extract(path)
    _check_invariants(extraction)
    assert extraction.warnings == []
    parsed = parse_cues(path.read_bytes(), fmt="vtt" if path.suffix == ".vtt" else "srt")
    assert extraction.metadata["cue_count"] == len(parsed.cues)
    # every cue with text is in exactly one chunk, as its own line
    in_chunks = [b for c in extraction.chunks for b in c.metadata["blocks"]]
    assert in_chunks == [c.index for c in parsed.cues if c.text]
    for chunk in extraction.chunks:
        for line, index in zip(chunk.text.split("\n"), chunk.metadata["blocks"]):
            assert line == parsed.cues[index].text
        cues = [parsed.cues[i] for i in chunk.metadata["blocks"]]
        assert chunk.metadata["start_time"] == cues[0].start
        assert chunk.metadata["end_time"] == max(c.end for c in cues)


@pytest.mark.parametrize("stem", [*sorted(TWIML_VTT), f"{TWIML_409}.srt"])
def test_corpus_passage_sizes(stem: str) -> None:
    """Podcast passages stay within the grouping limits unless one cue alone exceeds them."""
    path = TRANSCRIPTS / (stem if stem.endswith(".srt") else f"{stem}.vtt")
    extraction = _extract(path)
    config = GroupingConfig()
    for chunk in extraction.chunks:
        meta = chunk.metadata
        if len(meta["blocks"]) > 1:
            assert len(chunk.text.split()) <= config.max_words
            assert meta["end_time"] - meta["start_time"] <= config.max_seconds
    words = sorted(len(c.text.split()) for c in extraction.chunks)
    assert 40 <= words[len(words) // 2] <= 150


# --------------------------------------------------------------------------------------
# Citation cases
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case_id", ["BC-24", "BC-25"])
def test_case_parse_transcript_cues(case_id: str) -> None:
    case = _case(case_id)
    content, fmt = case["input"]["content"], case["input"]["format"]
    assert case["input"]["operation"] == "parse_transcript_cues"
    extraction = _extract_text(content, fmt)
    assert extraction.warnings == []
    for expected in case["expected"]["cues"]:
        _assert_cue_in_chunks(
            extraction, expected["index"], expected["start_time"], expected["end_time"], expected["text"]
        )
    parsed = parse_cues(content.encode(), fmt=fmt)
    assert [
        {"index": c.index, "start_time": c.start, "end_time": c.end, "text": c.text} for c in parsed.cues
    ] == [
        {**e, "start_time": pytest.approx(e["start_time"], abs=1e-3), "end_time": pytest.approx(e["end_time"], abs=1e-3)}
        for e in case["expected"]["cues"]
    ]


def test_case_bc27_transcript_chunk_provenance() -> None:
    case = _case("BC-27")
    assert case["input"]["operation"] == "transcript_chunk_provenance"
    extraction = _extract_text(case["input"]["content"], case["input"]["format"])
    index = case["input"]["chunk"]["chunk_index"]
    chunk = extraction.chunks[index]
    expected = case["expected"]["metadata"]
    assert chunk.metadata["blocks"] == expected["blocks"] == case["input"]["chunk"]["cue_indices"]
    assert chunk.metadata["start_time"] == pytest.approx(expected["start_time"], abs=1e-3)
    assert chunk.metadata["end_time"] == pytest.approx(expected["end_time"], abs=1e-3)
    assert chunk.text == "Today we cover pricing.\nIt changed last month."
    assert extraction.chunks[0].metadata["blocks"] == [0]
    _check_invariants(extraction)


def test_bc27_kind_times_never_default_to_zero() -> None:
    """Media-time provenance: every chunk carries its own cues' times, also for SRT."""
    content = (
        "1\n00:10:00,250 --> 00:10:04,000\nFirst.\n\n"
        "2\n00:10:06,000 --> 00:10:09,000\nSecond part\n\n"
        "3\n00:10:08,500 --> 00:10:12,125\nends here.\n"
    )
    extraction = _extract_text(content, "srt")
    assert [
        (c.metadata["start_time"], c.metadata["end_time"], c.metadata["blocks"]) for c in extraction.chunks
    ] == [(600.25, 604.0, [0]), (606.0, 612.125, [1, 2])]


# --------------------------------------------------------------------------------------
# Timestamps (kind vtt-timestamp)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("00:00:00.000", 0),
        ("0:0:0.0", 0),
        ("0:0:0.570", 570),
        ("0:0:1.5", 1500),
        ("00:01.007", 1007),
        ("01:11.913", 71_913),
        ("59:59.000", 3_599_000),
        ("1:04:13.283", 3_853_283),
        ("01:00:17.000", 3_617_000),
        ("25:00:00.000", 90_000_000),
        ("100:00:00.001", 360_000_001),
        ("75:30.000", 4_530_000),
        ("00:00:42,540", 42_540),
        ("00:01:02,007", 62_007),
        ("00:00:04.3001", 4_300),
        ("00:00:05", 5_000),
        ("00:61:00.000", None),
        ("00:00:60.000", None),
        ("00:0x:03.000", None),
        ("banana", None),
        ("", None),
        ("9" * 5000 + ":00:00.000", None),  # past int()'s 4,300-digit limit: unreadable, not a crash
        ("00:" + "1" * 5000 + ":00.000", None),
    ],
)
def test_parse_timestamp_ms(value: str, ms: int | None) -> None:
    assert parse_timestamp_ms(value) == ms


def _cue_times(content: str, fmt: str) -> list[tuple[float, float, str]]:
    extraction = _extract_text(content, fmt)
    parsed = parse_cues(content.encode(), fmt=fmt)
    for cue in parsed.cues:
        _assert_cue_in_chunks(extraction, cue.index, cue.start, cue.end, cue.text)
    return [(c.start, c.end, c.text) for c in parsed.cues]


def test_vtt_over_24_hours() -> None:
    content = "WEBVTT\n\n24:59:59.500 --> 25:00:00.000\nOne.\n\n25:00:00.000 --> 25:00:02.007\nTwo.\n"
    assert _cue_times(content, "vtt") == [(89999.5, 90000.0, "One."), (90000.0, 90002.007, "Two.")]


def test_srt_over_24_hours() -> None:
    content = "1\n25:00:00,000 --> 25:00:02,007\nLate.\n\n2\n100:00:00,000 --> 100:00:01,000\nLater.\n"
    assert _cue_times(content, "srt") == [(90000.0, 90002.007, "Late."), (360000.0, 360001.0, "Later.")]


def test_vtt_short_fields_and_millisecond_digits() -> None:
    content = (
        "WEBVTT\n\n0:0:0.0 --> 0:0:1.5\nA.\n\n0:0:3.007 --> 0:0:4.07\nB.\n\n"
        "00:06.007 --> 00:07.700\nC.\n\n75:30.000 --> 75:31.250\nD.\n"
    )
    assert _cue_times(content, "vtt") == [
        (0.0, 1.5, "A."),
        (3.007, 4.07, "B."),
        (6.007, 7.7, "C."),
        (4530.0, 4531.25, "D."),
    ]


def test_vtt_comma_separator_is_read() -> None:
    content = "WEBVTT\n\n00:00:01,500 --> 00:00:02,007\nComma.\n"
    assert _cue_times(content, "vtt") == [(1.5, 2.007, "Comma.")]


def test_srt_one_digit_hours_and_dot_separator() -> None:
    content = "1\n0:59:16.403 --> 1:04:13,283\nChapter.\n\n2\n1:04:15,007 --> 1:04:16,5\nNext.\n"
    assert _cue_times(content, "srt") == [(3556.403, 3853.283, "Chapter."), (3855.007, 3856.5, "Next.")]


def test_timing_line_settings_are_kept_out_of_text() -> None:
    content = "WEBVTT\n\n00:01.000 --> 00:02.000 align:start position:10% line:0\nPlaced.\n"
    assert _cue_times(content, "vtt") == [(1.0, 2.0, "Placed.")]


# --------------------------------------------------------------------------------------
# Malformed cues and files
# --------------------------------------------------------------------------------------


def test_vtt_malformed_timing_line_mid_file_is_reported() -> None:
    content = (
        "WEBVTT\n\n"
        "00:00:01.000 --> 00:00:03.000\nBefore the fault.\n\n"
        "7\n"
        "00:00:03.500 --> 00:0x:05.000\nLost words.\n\n"
        "00:00:05.000 --> 00:00:06.000\nAfter the fault.\n"
    )
    extraction = _extract_text(content, "vtt")
    assert extraction.warnings == [
        {"code": "CUE_DROPPED", "message": extraction.warnings[0]["message"], "line": 7}
    ]
    assert "line 7" in extraction.warnings[0]["message"]
    assert extraction.text == "Before the fault.\n\nAfter the fault."
    assert extraction.metadata["cue_count"] == 2
    _check_invariants(extraction)


def test_a_timing_line_of_thousands_of_digits_drops_its_cue_only() -> None:
    content = ("WEBVTT\n\n00:00:01.000 --> 00:00:03.000\nKept.\n\n"
               f"{'9' * 5000}:00:00.000 --> {'9' * 5000}:00:01.000\nLost.\n\n00:00:05.000 --> 00:00:06.000\nAlso kept.\n")
    extraction = _extract_text(content, "vtt")
    assert [(w["code"], w["line"]) for w in extraction.warnings] == [("CUE_DROPPED", 6)]
    assert extraction.text == "Kept.\n\nAlso kept."


def test_srt_malformed_timing_line_mid_file_is_reported_and_not_merged() -> None:
    content = (
        "1\r\n00:00:01,000 --> 00:00:03,000\r\nBefore the fault.\r\n\r\n"
        "2\r\n00:00:03,500 --> banana\r\nLost words.\r\n\r\n"
        "3\r\n00:00:03,600 --> 00:00:06,000\r\nAfter the fault.\r\n"
    )
    extraction = _extract_text(content, "srt")
    assert [(w["code"], w["line"]) for w in extraction.warnings] == [("CUE_DROPPED", 6)]
    assert "Lost words" not in extraction.text and "banana" not in extraction.text
    assert extraction.text == "Before the fault.\nAfter the fault."
    [chunk] = extraction.chunks
    assert chunk.metadata["blocks"] == [0, 1]
    assert (chunk.metadata["start_time"], chunk.metadata["end_time"]) == (1.0, 6.0)


@pytest.mark.parametrize("fmt", ["vtt", "srt"])
def test_end_before_start_is_dropped(fmt: str) -> None:
    sep = "." if fmt == "vtt" else ","
    head = "WEBVTT\n\n" if fmt == "vtt" else ""
    content = (
        f"{head}00:00:01{sep}000 --> 00:00:02{sep}000\nFine.\n\n"
        f"00:00:09{sep}000 --> 00:00:03{sep}000\nBackwards.\n\n"
        f"00:00:03{sep}000 --> 00:00:04{sep}000\nFine again.\n"
    )
    extraction = _extract_text(content, fmt)
    line = content.split("\n").index(f"00:00:09{sep}000 --> 00:00:03{sep}000") + 1
    assert [(w["code"], w["line"]) for w in extraction.warnings] == [("CUE_DROPPED", line)]
    assert "Backwards" not in extraction.text
    _check_invariants(extraction)


def test_srt_cue_without_blank_line_is_not_merged() -> None:
    content = "1\n00:00:01,000 --> 00:00:02,000\nA.\n2\n00:00:02,000 --> 00:00:03,000\nB.\n"
    parsed = parse_cues(content.encode(), fmt="srt")
    assert [(c.start, c.end, c.text, c.line) for c in parsed.cues] == [(1.0, 2.0, "A.", 2), (2.0, 3.0, "B.", 5)]
    assert parsed.warnings == []


def test_cue_the_library_drops_silently_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Safety net: a cue the parsing library leaves out is found by counting timing lines."""
    real = tr._library_vtt

    def lossy(text: str, *, name: str) -> list[tuple[int, int, list[str], str | None]]:
        cues = real(text, name=name)
        return cues[:1] + cues[2:]

    monkeypatch.setattr(tr, "_library_vtt", lossy)
    content = "WEBVTT\n\n00:01.000 --> 00:02.000\nOne.\n\n00:02.000 --> 00:03.000\nTwo.\n\n00:03.000 --> 00:04.000\nThree.\n"
    extraction = _extract_text(content, "vtt")
    assert [(w["code"], w["line"]) for w in extraction.warnings] == [("CUE_DROPPED", 6)]
    # blocks are positions among the cues that were parsed; the gap left is a silence
    assert extraction.text == "One.\n\nThree."
    assert [c.metadata["blocks"] for c in extraction.chunks] == [[0], [1]]
    assert extraction.metadata["cue_count"] == 2


@pytest.mark.parametrize(
    ("content", "fmt", "code"),
    [
        ("WEBVTT\n\n00:01.000 --> nope\nText.\n", "vtt", "VTT_MALFORMED"),
        ("WEBVTT\n\nNOTE only a note\n", "vtt", "VTT_MALFORMED"),
        ("WEBVTT\n\nJust some text.\n", "vtt", "VTT_MALFORMED"),
        ("00:01.000 --> 00:02.000\nNo signature.\n", "vtt", "VTT_MALFORMED"),
        ("WEBVTTX\n\n00:01.000 --> 00:02.000\nBad signature.\n", "vtt", "VTT_MALFORMED"),
        ("1\n00:00:01,000 --> 00:00:0x,000\nText.\n", "srt", "SRT_MALFORMED"),
        ("Hello there,\nthis is not a subtitle file.\n", "srt", "SRT_MALFORMED"),
        ("", "vtt", "EMPTY_FILE"),
        (" \n\t\n", "srt", "EMPTY_FILE"),
        ("\ufeff", "vtt", "EMPTY_FILE"),
        ("WEBVTT\n\n00:01.000 --> 00:02.000\n<i> </i>\n", "vtt", "EMPTY_FILE"),
    ],
)
def test_bad_files_raise_coded_errors(content: str, fmt: str, code: str) -> None:
    with pytest.raises(IngestError) as info:
        _extract_text(content, fmt)
    assert info.value.code == code
    assert info.value.message


@pytest.mark.parametrize("fmt", ["vtt", "srt"])
def test_non_utf8_is_text_encoding(fmt: str) -> None:
    head = b"WEBVTT\n\n" if fmt == "vtt" else b"1\n"
    data = head + b"00:00:01.000 --> 00:00:02.000\nCaf\xe9 cr\xe8me.\n"
    with pytest.raises(IngestError) as info:
        (extract_vtt if fmt == "vtt" else extract_srt)(data, name=f"latin1.{fmt}")
    assert info.value.code == "TEXT_ENCODING"
    with pytest.raises(IngestError) as info:
        extract_vtt("WEBVTT\n\n00:01.000 --> 00:02.000\nHi\n".encode("utf-16"), name="u16.vtt")
    assert info.value.code == "TEXT_ENCODING"


def test_bom_and_cr_line_endings() -> None:
    data = "\ufeffWEBVTT\r\rNOTE x\r\r00:01.000 --> 00:02.500\rCafé.\r".encode()
    extraction = extract_vtt(data, name="bom.vtt")
    assert extraction.text == "Café."
    assert extraction.chunks[0].metadata["end_time"] == 2.5


# --------------------------------------------------------------------------------------
# Cue text
# --------------------------------------------------------------------------------------


def test_tags_entities_and_lines() -> None:
    content = (
        "WEBVTT\n\n"
        "00:01.000 --> 00:02.000\n<i>Fish</i> &amp; <b>chips</b> &lt;3\n<c.yellow>and</c> peas&nbsp;too\n\n"
        "00:02.000 --> 00:03.000\n<v.loud Ann Lee>Hello\nthere.</v>\n\n"
        "00:03.000 --> 00:04.000\n<v Bob>Hi.</v> <v Ann Lee>Bye.</v>\n\n"
        "00:04.000 --> 00:05.000\n<ruby>漢<rt>kan</rt></ruby> <00:00:04.500>word\n"
    )
    parsed = parse_cues(content.encode(), fmt="vtt")
    assert [c.text for c in parsed.cues] == [
        "Fish & chips <3 and peas too",
        "Ann Lee: Hello there.",
        "Bob: Hi. Ann Lee: Bye.",
        "漢kan word",
    ]
    assert [c.speakers for c in parsed.cues] == [(), ("Ann Lee",), ("Bob", "Ann Lee"), ()]
    extraction = _extract_text(content, "vtt")
    assert extraction.chunks[0].metadata["speakers"] == ["Ann Lee", "Bob"]


def test_srt_formatting_tags_are_stripped() -> None:
    content = '1\n00:00:01,000 --> 00:00:02,000\n{\\an8}<font color="#ff0000">Red</font> <i>alert</i>\n- 5 < 6 &amp; more\n'
    parsed = parse_cues(content.encode(), fmt="srt")
    assert [c.text for c in parsed.cues] == ["Red alert - 5 < 6 & more"]


def test_repeated_lines_outside_rolling_captions_are_kept() -> None:
    content = "WEBVTT\n\n00:01.000 --> 00:02.000\nNo.\n\n00:02.000 --> 00:03.000\nNo.\n"
    assert _extract_text(content, "vtt").text == "No.\nNo."


def test_rolling_captions_without_inline_timestamps() -> None:
    content = (
        "WEBVTT\n\n"
        "00:01.000 --> 00:02.000\nfirst line here\n\n"
        "00:02.000 --> 00:03.000\nfirst line here\nsecond line now\n\n"
        "00:03.000 --> 00:04.000\nsecond line now\nthird one follows\n\n"
        "00:04.000 --> 00:04.010\nthird one follows\n \n"
    )
    extraction = _extract_text(content, "vtt")
    assert extraction.text == "first line here\nsecond line now\nthird one follows"
    assert extraction.chunks[0].metadata["blocks"] == [0, 1, 2]


# --------------------------------------------------------------------------------------
# Grouping
# --------------------------------------------------------------------------------------


def _cue(index: int, start: float, end: float, text: str) -> tr.Cue:
    return tr.Cue(index, round(start * 1000), round(end * 1000), text)


def test_grouping_breaks_at_silence_of_one_second() -> None:
    cues = [_cue(0, 0, 2, "a."), _cue(1, 2.999, 4, "b."), _cue(2, 5, 6, "c."), _cue(3, 6.5, 7, "d")]
    assert [[c.index for c in g] for g in group_cues(cues)] == [[0, 1], [2, 3]]


def test_grouping_prefers_sentence_ends_and_respects_limits() -> None:
    cues = []
    for i in range(60):
        text = " ".join(["word"] * 12) + ("." if i % 3 == 2 else "")
        cues.append(_cue(i, i * 3.0, i * 3.0 + 3.0, text))
    groups = group_cues(cues)
    assert [c.index for g in groups for c in g] == list(range(60))
    for group in groups:
        words = sum(len(c.text.split()) for c in group)
        assert 40 <= words <= 150
        assert group[-1].end_ms - group[0].start_ms <= 90_000
        assert group[-1].text.endswith(".")


def test_grouping_time_limit_without_sentence_ends() -> None:
    cues = [_cue(i, i * 10.0, i * 10.0 + 10.0, "two words") for i in range(30)]
    groups = group_cues(cues, GroupingConfig(max_seconds=60.0))
    assert all(g[-1].end_ms - g[0].start_ms <= 60_000 for g in groups)
    assert [c.index for g in groups for c in g] == list(range(30))


def test_single_long_cue_is_its_own_passage() -> None:
    cues = [_cue(0, 0, 5, "short."), _cue(1, 5, 200, " ".join(["w"] * 400) + "."), _cue(2, 200, 201, "end.")]
    assert [[c.index for c in g] for g in group_cues(cues)] == [[0], [1], [2]]


_cue_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<>&-{\u2028\u2029\x85"),
    min_size=0,
    max_size=40,
)


def _spell(ms: int, style: int, fmt: str) -> str:
    """A timestamp as different tools write it (all must read back as ``ms``)."""
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    sep = "." if fmt == "vtt" else ","
    if style == 1 and hours == 0 and fmt == "vtt":  # hour-less
        return f"{minutes:02d}:{seconds:02d}{sep}{millis:03d}"
    if style == 2:  # one-digit fields, as Teams writes them
        fraction = f"{millis:03d}".rstrip("0") or "0"
        return f"{hours}:{minutes}:{seconds}{sep}{fraction}"
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{sep}{millis:03d}"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5_000), st.integers(0, 40_000), _cue_text, st.integers(0, 2)),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from(["vtt", "srt"]),
    st.integers(0, 90_000_000),
)
def test_generated_transcripts_keep_invariants(
    cues: list[tuple[int, int, str, int]], fmt: str, offset: int
) -> None:
    """Any cue list written as a file: times read back, slices equal texts, blocks increase."""
    blocks = []
    now = offset
    expected: list[tuple[int, int, str]] = []
    for n, (gap, length, text, style) in enumerate(cues, start=1):
        start, end = now + gap, now + gap + length
        now = end
        line = " ".join(text.split())
        head = "" if fmt == "vtt" else f"{n}\n"
        blocks.append(f"{head}{_spell(start, style, fmt)} --> {_spell(end, style, fmt)}\n{line}\n")
        expected.append((start, end, line))
    content = ("WEBVTT\n\n" if fmt == "vtt" else "") + "\n".join(blocks)
    if not any(e[2] for e in expected):
        with pytest.raises(IngestError) as info:
            _extract_text(content, fmt)
        assert info.value.code == "EMPTY_FILE"
        return
    extraction = _extract_text(content, fmt)
    _check_invariants(extraction)
    assert extraction.warnings == []
    parsed = parse_cues(content.encode(), fmt=fmt)
    assert [(c.start_ms, c.end_ms) for c in parsed.cues] == [(s, e) for s, e, _ in expected]
    assert [c.text for c in parsed.cues if c.text] == [t for _, _, t in expected if t]
    assert [b for c in extraction.chunks for b in c.metadata["blocks"]] == [
        i for i, (_, _, t) in enumerate(expected) if t
    ]
    for chunk in extraction.chunks:
        cues_in = [parsed.cues[i] for i in chunk.metadata["blocks"]]
        assert chunk.metadata["start_time"] == cues_in[0].start
        assert chunk.metadata["end_time"] == max(c.end for c in cues_in)


def test_cues_out_of_time_order_are_never_one_passage() -> None:
    content = ("WEBVTT\n\n99:59:59.000 --> 100:00:01.000\nLate remark.\n\n"
               "00:00.000 --> 00:02.000\nOpening words.\n")
    chunks = extract_vtt(content.encode(), name="odd.vtt").chunks
    assert [(c.text, c.metadata["start_time"], c.metadata["end_time"]) for c in chunks] == [
        ("Late remark.", 359999.0, 360001.0), ("Opening words.", 0.0, 2.0)]
