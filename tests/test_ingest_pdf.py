"""The PDF extractor on the real shared corpus: coverage of FinanceBench evidence,
boxes against docling's layout gold, rotated pages, multi-column reading order,
no-text-layer scans and error codes."""

from __future__ import annotations

import collections
import json
import re
from functools import lru_cache
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from citewell.errors import IngestError
from citewell.extraction import Extraction
from citewell.ingest.pdf import extract_pdf

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "corpus"
EVAL = CORPUS / "eval"


@lru_cache(maxsize=None)
def extraction(rel: str) -> Extraction:
    """Extract a corpus PDF once per session (``rel`` relative to the corpus)."""
    path = CORPUS / rel
    return extract_pdf(path.read_bytes(), name=path.name)


def norm(text: str) -> str:
    """Lowercase and keep letters and digits only."""
    return re.sub(r"[^0-9a-z]", "", text.lower())


def page_chunks(ex: Extraction, page: int):
    return [c for c in ex.chunks if c.metadata["page"] == page]


def chunk_with(ex: Extraction, needle: str):
    hits = [c for c in ex.chunks if needle in c.text]
    assert hits, needle
    return hits[0]


def _load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ----------------------------------------------------------------------------- invariants


@pytest.mark.parametrize("rel", sorted(p.relative_to(CORPUS).as_posix() for p in (CORPUS / "pdf").glob("*.pdf")))
def test_invariants_on_every_corpus_pdf(rel: str) -> None:
    ex = extraction(rel)
    assert ex.kind == "pdf" and ex.media_type == "application/pdf"
    doc = pdfium.PdfDocument(CORPUS / rel)
    n_pages = len(doc)
    doc.close()
    assert ex.metadata["page_count"] == n_pages
    last = (0, 0)
    for c in ex.chunks:
        assert ex.text[c.char_start:c.char_end] == c.text
        assert c.text and c.text == c.text.strip()
        assert c.text_type in ("paragraph", "table")
        meta = c.metadata
        assert meta["source_type"] == "pdf"
        assert 1 <= meta["page"] <= n_pages
        assert (meta["page"], c.char_start) >= last  # pages in order
        last = (meta["page"], c.char_start)
        assert meta["offset"], c.text[:80]
        for box in meta["offset"]:
            assert set(box) == {"page", "top", "left", "width", "height"}
            assert box["page"] == meta["page"]
            for k in ("top", "left", "width", "height"):
                assert 0.0 <= box[k] <= 1.0
                assert round(box[k], 4) == box[k]
            assert box["top"] + box["height"] <= 1.0 + 1e-4
            assert box["left"] + box["width"] <= 1.0 + 1e-4
        assert len(c.text.split()) <= 400  # split long blocks


def test_chunk_sizes_are_reasonable() -> None:
    words = [len(c.text.split()) for c in extraction("pdf/3M_2022_10K.pdf").chunks]
    words.sort()
    assert words[len(words) // 2] >= 50  # median within the 50–250 band
    assert words[len(words) // 2] <= 250
    assert max(words) <= 400


def test_headings_stay_with_what_follows() -> None:
    ex = extraction("pdf/ALCE.pdf")
    intro = chunk_with(ex, "1 Introduction")
    assert intro.text.index("1 Introduction") < intro.text.index("Large language models (LLMs; Brown")
    ex = extraction("pdf/amt_handbook_sample.pdf")
    c = chunk_with(ex, "Stainless Steel Self-Locking Nut")
    assert "The stainless steel self-locking nut may be spun on and off" in c.text


def test_3m_10k_tables_are_typed() -> None:
    ex = extraction("pdf/3M_2022_10K.pdf")  # its speed is measured in benchmarks/, not asserted here
    assert ex.metadata["page_count"] == 252
    income = [c for c in page_chunks(ex, 48) if "Net sales $ 34,229 $ 35,355 $ 32,184" in c.text]
    assert income and income[0].text_type == "table"
    assert any(c.text_type == "paragraph" for c in ex.chunks)


# ----------------------------------------------------------------------------- FinanceBench


def _evidence():
    for rec in _load_jsonl(EVAL / "financebench_dev.jsonl"):
        for i, ev in enumerate(rec["evidence"]):
            yield pytest.param(rec["pdf_path"], ev["page_number_1based"], ev["evidence_text"],
                               id=f"{rec['financebench_id']}-{i}")


@pytest.mark.parametrize("rel,page,quote", list(_evidence()))
def test_financebench_evidence_is_covered_by_its_page_chunks(rel: str, page: int, quote: str) -> None:
    ex = extraction(rel)
    joined = "".join(norm(c.text) for c in page_chunks(ex, page))
    assert norm(quote) in joined


# ----------------------------------------------------------------------------- layout gold


def _gold():
    for i, g in enumerate(_load_jsonl(EVAL / "layout_gold_docling.jsonl")):
        if g["pdf_path"] not in ("pdf/amt_handbook_sample.pdf", "pdf/2305.03393v1-pg9.pdf"):
            continue
        if g["label"] not in ("text", "section_header", "caption", "table", "page_footer"):
            continue
        yield pytest.param(g, id=f"{Path(g['pdf_path']).stem}-{i}-{g['label']}")


def _region_words(g: dict) -> list[str]:
    words = [norm(w) for w in g["text"].split()]
    words = [w for w in words if w]
    if words:
        return words
    # docling gives no text for some tables: take the words pdfium finds inside the box
    doc = pdfium.PdfDocument(CORPUS / g["pdf_path"])
    try:
        page = doc[g["page_number_1based"] - 1]
        tp = page.get_textpage()
        b = g["bbox"]
        text = tp.get_text_bounded(left=b["l"], bottom=b["b"], right=b["r"], top=b["t"])
        tp.close()
        page.close()
    finally:
        doc.close()
    return [w for w in (norm(x) for x in text.split()) if w]


@pytest.mark.parametrize("g", list(_gold()))
def test_gold_regions_lie_in_a_box_of_their_chunk(g: dict) -> None:
    ex = extraction(g["pdf_path"])
    page = g["page_number_1based"]
    W, H = g["page_width"], g["page_height"]
    b = g["bbox"]
    region = (b["l"] / W, (H - b["t"]) / H, b["r"] / W, (H - b["b"]) / H)  # left, top, right, bottom
    words = _region_words(g)
    chunks = page_chunks(ex, page)
    if not words:  # a lone "." in the gold: any chunk's box on the page must hold it
        words = [""]

    def score(c) -> int:
        have = collections.Counter(w for w in (norm(x) for x in c.text.split()) if w)
        return sum(1 for w in words if have[w] > 0)

    top_score = max(score(c) for c in chunks)
    best = [c for c in chunks if score(c) == top_score]
    # short regions ("Elastic Stop Nut") tie on word overlap: prefer the chunks that hold
    # the region's text itself
    exact = [c for c in best if "".join(words) in norm(c.text)]
    best = exact or best
    tol = 0.02
    assert any(
        box["left"] - tol <= region[0] and box["top"] - tol <= region[1]
        and box["left"] + box["width"] + tol >= region[2] and box["top"] + box["height"] + tol >= region[3]
        for c in best for box in c.metadata["offset"] if box["page"] == page
    ), (region, [c.metadata["offset"] for c in best], g["text"][:60])


# ----------------------------------------------------------------------------- rotated pages


def test_rotated_nics_table_reads_in_row_order_with_boxes_on_the_page() -> None:
    ex = extraction("pdf/nics-background-checks-2015-11-rotated.pdf")
    text = ex.text
    order = ["State / Territory", "Alabama 18,870 23,022", "Alaska 209 3,062", "Arizona", "Georgia", "Wyoming"]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    for c in ex.chunks:
        for box in c.metadata["offset"]:
            assert 0 <= box["left"] and box["left"] + box["width"] <= 1.0001
            assert 0 <= box["top"] and box["top"] + box["height"] <= 1.0001
    # /Rotate 90 on a landscape MediaBox displays portrait: the table's rows are vertical
    # strips, so a row box is tall and narrow, and the header row is at the right
    header = chunk_with(ex, "State / Territory").metadata["offset"][0]
    alabama = chunk_with(ex, "Alabama 18,870").metadata["offset"][0]
    assert header["height"] > 0.5 and header["width"] < 0.2
    assert header["left"] > alabama["left"]


def test_rotated_senate_page_reads_top_to_bottom() -> None:
    ex = extraction("pdf/senate-expenditures.pdf")
    text = ex.text
    order = ["DOCUMENT NO. DATE PAYEE NAME", "BAIN, J MATTHEW DISTRICT DIRECTOR 37,499.96",
             "SMITH, ALVARO R", "DHAW20190001 05/03/2019", "DHAW20190002", "DHAW20190003"]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    # the displayed page is landscape with horizontal text: the first row is near the top
    first = chunk_with(ex, "DOCUMENT NO.").metadata["offset"][0]
    assert first["top"] < 0.25 and first["width"] > 0.5
    for c in ex.chunks:
        for box in c.metadata["offset"]:
            assert box["left"] + box["width"] <= 1.0001 and box["top"] + box["height"] <= 1.0001


@pytest.mark.parametrize("rel", ["pdf/ocr_test.pdf", "pdf/nemotron_multipage.pdf",
                                 "pdf/sample_with_rotation_mismatch.pdf"])
def test_scans_without_text_layer_warn_per_page(rel: str) -> None:
    ex = extraction(rel)
    n = ex.metadata["page_count"]
    assert ex.chunks == [] and ex.text == ""
    assert [w["page"] for w in ex.warnings] == list(range(1, n + 1))
    assert all(w["code"] == "NO_TEXT_LAYER" and w["message"] for w in ex.warnings)


# ----------------------------------------------------------------------------- columns


def _one_side(box: dict, gutter: float) -> bool:
    return box["left"] + box["width"] <= gutter + 0.01 or box["left"] >= gutter - 0.01


def test_alce_left_column_sentence_is_contiguous_and_columns_never_share_a_box() -> None:
    ex = extraction("pdf/ALCE.pdf")
    # a sentence running down the left column of page 1 (the abstract)
    c = chunk_with(ex, "Large language models (LLMs) have emerged\nas a widely-used tool for information seeking,\n"
                       "but their generated outputs are prone to hallucination.")  # hyphenated word joined
    assert c.metadata["page"] == 1
    # left-column intro and right-column continuation: left read before right
    left = ex.text.index("Large language models (LLMs; Brown et al., 2020)")
    right = ex.text.index("In this work, we study a new generation")
    assert left < right
    gutter = 298.5 / 595.276  # between the columns (x 290.9 | 306.1 pt)
    for c in page_chunks(ex, 1) + page_chunks(ex, 2):
        for box in c.metadata["offset"]:
            if box["top"] > 0.25:  # below the title/author band of page 1
                assert _one_side(box, gutter), (c.text[:80], box)
    intro = chunk_with(ex, "Large language models (LLMs; Brown et al., 2020)")
    assert "information (Ji et al., 2023). This makes it harder" in intro.text


def test_amt_handbook_columns() -> None:
    ex = extraction("pdf/amt_handbook_sample.pdf")
    sentence = ("The two general types of self-locking nuts currently in use\n"
                "are the all-metal type and the fiber lock type.")
    assert any(sentence in c.text for c in ex.chunks)
    # left column read fully before the right column starts
    assert ex.text.index("Boots Self-Locking Nut") < ex.text.index("Stainless Steel Self-Locking Nut")
    gutter = 315.0 / 594.0
    for c in ex.chunks:
        for box in c.metadata["offset"]:
            assert _one_side(box, gutter), (c.text[:80], box)


def test_federal_register_three_columns_do_not_interleave() -> None:
    ex = extraction("pdf/federal-register-2020-17221.pdf")
    c = chunk_with(ex, "2The flight control system for 737 MAX airplanes")
    assert "includes two flight control computers, FCC A and" in c.text
    assert c.text.index("2The flight") < c.text.index("includes two flight control")
    for c in page_chunks(ex, 2):
        for box in c.metadata["offset"]:
            if 0.06 < box["top"] < 0.95:  # below the running head, above the print footer
                assert box["width"] < 0.34, (c.text[:80], box)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("data", [b"not a pdf at all", b"%PDF-1.7\n1 0 obj\n<<>>\ngarbage", b"\x00" * 64])
def test_corrupt_bytes_are_pdf_corrupt(data: bytes) -> None:
    with pytest.raises(IngestError) as err:
        extract_pdf(data, name="bad.pdf")
    assert err.value.code == "PDF_CORRUPT"


def test_empty_bytes_are_empty_file() -> None:
    with pytest.raises(IngestError) as err:
        extract_pdf(b"", name="empty.pdf")
    assert err.value.code == "EMPTY_FILE"


def _encrypted(user_password: str) -> bytes:
    fpdf = pytest.importorskip("fpdf")
    doc = fpdf.FPDF()
    doc.add_page()
    doc.set_font("helvetica", size=12)
    doc.cell(text="Quarterly revenue grew twelve percent.")
    doc.set_encryption(owner_password="owner-secret", user_password=user_password)
    return bytes(doc.output())


def test_user_password_pdf_is_encrypted_error() -> None:
    with pytest.raises(IngestError) as err:
        extract_pdf(_encrypted("user-secret"), name="locked.pdf")
    assert err.value.code == "PDF_ENCRYPTED"


def test_owner_password_only_pdf_opens() -> None:
    ex = extract_pdf(_encrypted(""), name="owner-only.pdf")
    assert [c.text for c in ex.chunks] == ["Quarterly revenue grew twelve percent."]


def test_title_metadata() -> None:
    ex = extraction("pdf/amt_handbook_sample.pdf")
    assert ex.metadata["pdf_title"] == "AMT General Handbook"


def test_words_hyphenated_across_lines_are_joined() -> None:
    text = extraction("pdf/ALCE.pdf").text
    assert "prone to hallucination." in text and "hal-\nlucination" not in text
    assert "\u00ad" not in text
    assert "Instruct-\nGPT" in text  # the next line starts upper-case: a real hyphen, kept


def test_boxes_use_a_mediabox_inherited_from_the_page_tree() -> None:
    from fpdf import FPDF

    pdf = FPDF(format="A4")  # fpdf2 writes /MediaBox on /Pages, not on each page
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.set_xy(10, 10)
    pdf.cell(150, 6, "Revenue grew in 2022 according to the annual report.")
    pdf.add_page()
    pdf.set_xy(10, 250)
    pdf.cell(150, 6, "Operating margin fell near the bottom of page two.")
    ex = extract_pdf(bytes(pdf.output()), name="a4.pdf")
    (first,), (second,) = [c.metadata["offset"] for c in ex.chunks]
    assert first["page"] == 1 and abs(first["top"] - 10.5 / 297) < 0.01 and 0.01 < first["height"] < 0.03
    assert second["page"] == 2 and abs(second["top"] - 250.5 / 297) < 0.01
    assert abs(first["left"] - 10 / 210) < 0.01


def test_running_footers_and_page_numbers_stand_apart_from_sentences() -> None:
    ex = extraction("pdf/VERIZON_2022_10K.pdf")
    last = page_chunks(ex, 22)[-1]
    assert last.text.endswith("certain pension and other employee\n\nVerizon 2022 Annual Report on Form 10-K 22")
    boeing = extraction("pdf/BOEING_2022_10K.pdf")
    assert page_chunks(boeing, 80)[-1].text.endswith("\n\n76")  # the printed page number of physical page 80
