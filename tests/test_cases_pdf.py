"""Citation cases BC-19 (pdf_chunk_provenance), BC-21 and BC-22 (pdf_region_offset),
plus our own members of those kinds, on real PDFs built here and ingested through
``extract_pdf``. Case numbers are loaded from ``shared/cases/citation-cases.json``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ._pdfgen import PageSpec, build_pdf, filler, region_lines
from citewell.ingest.pdf import extract_pdf

SHARED = Path(__file__).resolve().parents[2] / "shared"
CASES = {c["id"]: c for c in json.loads((SHARED / "cases" / "citation-cases.json").read_text())}


def _region_pdf(page_index: int, mediabox, cropbox, rotate: int, region: dict) -> bytes:
    """A PDF whose page ``page_index`` (0-based) holds one text block exactly filling
    ``region`` (user space); earlier pages are blank (no text layer)."""
    width = region["x1"] - region["x0"]
    lines = region_lines(region["x0"], region["y0"], region["x1"], region["y1"], size=10.0,
                         chars=round(width / 5.0))
    pages = [PageSpec(mediabox=tuple(mediabox)) for _ in range(page_index)]
    pages.append(PageSpec(mediabox=tuple(mediabox), cropbox=tuple(cropbox) if cropbox else None,
                          rotate=rotate, lines=[(x, y, t, s, 100.0) for x, y, t, s, _ in lines]))
    return build_pdf(pages)


def _assert_offset(got: list[dict], expected: list[dict]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g["page"] == e["page"]
        for k in ("top", "left", "width", "height"):
            assert g[k] == pytest.approx(e[k], abs=1e-3), (k, g, e)
            assert 0.0 <= g[k] <= 1.0


# ----------------------------------------------------------------------------- BC-19


def test_bc19_pages_are_one_based_physical_pages() -> None:
    case = CASES["BC-19"]
    inp = case["input"]
    n_pages = inp["resource"]["page_count"]
    by_page: dict[int, str] = {c["parser_page_index_0_based"]: c["text"] for c in inp["chunks"]}
    pages = []
    for i in range(n_pages):
        lines = [(72.0, 700.0, by_page[i], 12.0, 100.0)] if i in by_page else []
        pages.append(PageSpec(mediabox=(0, 0, 612, 792), lines=lines))
    ex = extract_pdf(build_pdf(pages), name=inp["resource"]["title"])
    assert ex.metadata["page_count"] == n_pages
    expected = case["expected"]["chunk_metadata"]
    assert len(ex.chunks) == len(expected)
    for exp in expected:
        chunk = ex.chunks[exp["chunk_index"]]
        for key, value in exp["metadata"].items():
            assert chunk.metadata[key] == value
    assert [c.text for c in ex.chunks] == [c["text"] for c in inp["chunks"]]
    # the page without text is reported, by its 1-based number
    assert [w["page"] for w in ex.warnings if w["code"] == "NO_TEXT_LAYER"] == [2]


def test_first_page_is_page_one_and_labels_are_additive() -> None:
    pdf = build_pdf([PageSpec(lines=[(72, 700, filler(40), 10, 100)]) for _ in range(2)])
    ex = extract_pdf(pdf, name="two.pdf")
    assert [c.metadata["page"] for c in ex.chunks] == [1, 2]
    assert all(c.metadata["source_type"] == "pdf" for c in ex.chunks)


# ----------------------------------------------------------------------------- BC-21 / BC-22


@pytest.mark.parametrize("case_id", ["BC-21", "BC-22"])
def test_region_offset_cases(case_id: str) -> None:
    case = CASES[case_id]
    page = case["input"]["page"]
    region = case["input"]["region_pdf_user_space"]
    idx = page["physical_page_1_based"] - 1
    pdf = _region_pdf(idx, page["mediabox"], page["cropbox"], page["rotate"], region)
    ex = extract_pdf(pdf, name=f"{case_id}.pdf")
    chunks = [c for c in ex.chunks if c.metadata["page"] == page["physical_page_1_based"]]
    assert len(chunks) == 1
    _assert_offset(chunks[0].metadata["offset"], case["expected"]["offset"])


# Our own members of the kinds: each expected box worked out by hand from the page
# geometry (displayed frame: CropBox applied, then /Rotate clockwise).
OWN = [
    # /Rotate 180 on 600x800: x 120-240 → from the left 600-240=360..480; y 400-600 → from the top 400..600
    ("rotate-180", (0, 0, 600, 800), None, 180, dict(x0=120, y0=400, x1=240, y1=600),
     dict(page=1, top=0.5, left=0.6, width=0.2, height=0.25)),
    # /Rotate 270 on 600x800 displays 800x600: left = (800-600)/800, top = (600-240)/600
    ("rotate-270", (0, 0, 600, 800), None, 270, dict(x0=120, y0=400, x1=240, y1=600),
     dict(page=1, top=0.6, left=0.25, width=0.25, height=0.2)),
    # CropBox [50 100 550 700] (500x600) inside a 600x800 MediaBox
    ("cropbox-offset", (0, 0, 600, 800), (50, 100, 550, 700), 0, dict(x0=100, y0=300, x1=300, y1=500),
     dict(page=1, top=(700 - 500) / 600, left=(100 - 50) / 500, width=200 / 500, height=200 / 600)),
    # MediaBox with a negative origin: [-100 -200 500 600] is 600x800
    ("mediabox-origin", (-100, -200, 500, 600), None, 0, dict(x0=0, y0=200, x1=300, y1=360),
     dict(page=1, top=0.3, left=100 / 600, width=0.5, height=0.2)),
    # CropBox offset and /Rotate 90 together: crop 500 wide x 600 tall → displays 600x500
    ("cropbox-rotate-90", (0, 0, 600, 800), (50, 100, 550, 700), 90, dict(x0=100, y0=300, x1=300, y1=500),
     dict(page=1, top=(100 - 50) / 500, left=(300 - 100) / 600, width=200 / 600, height=200 / 500)),
    # second page, to check the box's page number as well
    ("second-page", (0, 0, 612, 792), None, 0, dict(x0=72, y0=392, x1=272, y1=492),
     dict(page=2, top=300 / 792, left=72 / 612, width=200 / 612, height=100 / 792)),
]


@pytest.mark.parametrize("label,mediabox,cropbox,rotate,region,expected", OWN, ids=[o[0] for o in OWN])
def test_region_offset_own_members(label, mediabox, cropbox, rotate, region, expected) -> None:
    idx = expected["page"] - 1
    ex = extract_pdf(_region_pdf(idx, mediabox, cropbox, rotate, region), name=f"{label}.pdf")
    chunks = [c for c in ex.chunks if c.metadata["page"] == expected["page"]]
    assert len(chunks) == 1
    _assert_offset(chunks[0].metadata["offset"], [expected])


def test_bc21_wrong_answer_is_not_given() -> None:
    """BC-21 names the mirrored answer (top 0.7) as the failure to catch."""
    case = CASES["BC-21"]
    page = case["input"]["page"]
    pdf = _region_pdf(0, page["mediabox"], None, 0, case["input"]["region_pdf_user_space"])
    box = extract_pdf(pdf, name="bc21.pdf").chunks[0].metadata["offset"][0]
    assert abs(box["top"] - 0.7) > 0.1


def test_text_outside_the_visible_page_is_neither_indexed_nor_boxed() -> None:
    page = PageSpec(mediabox=(0, 0, 600, 800), cropbox=(0, 400, 600, 800), lines=[
        (60, 700, "revenue rose to the recorded level", 10, 100),
        (60, 200, "the outlook started to be stable", 10, 100),  # below the CropBox: never shown
        (900, 700, "the latest results for the fiscal total", 10, 100),  # right of the MediaBox
    ])
    ex = extract_pdf(build_pdf([page]), name="cropped.pdf")
    assert [c.text for c in ex.chunks] == ["revenue rose to the recorded level"]
    (box,) = ex.chunks[0].metadata["offset"]
    assert abs(box["top"] - (800 - 710) / 400) < 1e-3 and abs(box["height"] - 10 / 400) < 1e-3


# ----------------------------------------------------------------------------- character stream


def test_a_character_without_a_box_only_separates_words(monkeypatch: pytest.MonkeyPatch) -> None:
    import citewell.ingest.pdf as pdf_module

    pdf = build_pdf([PageSpec(lines=[(72, 700, "revenue rose", 10, 100)])])
    assert extract_pdf(pdf, name="boxes.pdf").text == "revenue rose"
    real = pdf_module._get_loose_box

    def no_box_for_the_e(page: int, index: int, rect: int) -> int:
        return 0 if index == 1 else real(page, index, rect)

    monkeypatch.setattr(pdf_module, "_get_loose_box", no_box_for_the_e)
    assert extract_pdf(pdf, name="boxes.pdf").text == "r venue rose"


def test_segment_box_extremes_keep_the_first_of_equal_zeros() -> None:
    import math

    import numpy as np

    from citewell.ingest.pdf import _run_extremes

    values = np.array([0.0, -0.0, 3.0, -0.0, 0.0, 2.0, -1.5])
    starts, stops = np.array([0, 3, 5]), np.array([3, 5, 7])
    for pick in (min, max):
        got = _run_extremes(values, starts, stops, pick)
        want = [pick(values[a:b].tolist()) for a, b in zip(starts, stops)]
        assert got == want and all(type(v) is float for v in got)
        assert [math.copysign(1.0, v) for v in got] == [math.copysign(1.0, v) for v in want]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=300), st.data())
def test_window_max_is_the_sliding_window_maximum(values: list[int], data: st.DataObject) -> None:
    from citewell.ingest.pdf_layout import window_max

    window = data.draw(st.integers(min_value=1, max_value=len(values)))
    array = np.array(values, dtype=np.int64)
    expected = [max(values[j:j + window]) for j in range(len(values) - window + 1)]
    assert window_max(array, window).tolist() == expected
