"""Image-only questions (docs/architecture.md rule 11): the image's own text is the query, or no evidence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from citewell import Engine
from citewell.engine import NO_IMAGE_TEXT

from .conftest import CORPUS, copy_corpus_files


@pytest.fixture
def loaded(engine: Engine, tmp_path: Path) -> Engine:
    copy_corpus_files(tmp_path / "c", "pdf/PEPSICO_2023_8K_dated-2023-05-05.pdf", "posts/stocktwits_2022-06_07.jsonl")
    engine.sync(tmp_path / "c")
    return engine


def test_an_image_with_a_text_layer_is_asked_with_its_text(loaded: Engine, tmp_path: Path) -> None:
    image = CORPUS / "pdf" / "scotus-transcript-p1.pdf"  # a one-page PDF with a text layer
    message = loaded.ask("", image=image)
    assert message.text.startswith("The question was taken from the image's text layer: \u201c")
    assert message.parts[0].source is None  # the preface cites nothing
    assert message.image_url == str(image.resolve())
    for ref in message.references:
        assert message.text[ref.start_index:ref.end_index] == f"[{ref.citation}]"


def test_an_image_without_text_retrieves_nothing_and_cites_nothing(loaded: Engine, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)  # no tesseract on this machine
    png = tmp_path / "photo.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    calls = []
    original = loaded.retriever.retrieve
    monkeypatch.setattr(loaded.retriever, "retrieve", lambda *a, **k: calls.append(a) or original(*a, **k))
    message = loaded.ask("", image=png)
    assert message.text == NO_IMAGE_TEXT and message.references == [] and message.grounded is False
    assert calls == []  # never retrieve with a placeholder word
    scanned = loaded.ask("", image=CORPUS / "pdf" / "ocr_test.pdf")  # a scan: no text layer
    assert scanned.text == NO_IMAGE_TEXT


def test_a_question_with_an_image_keeps_the_question(loaded: Engine) -> None:
    message = loaded.ask("Who chaired the annual meeting vote on net-zero emissions?",
                         image=CORPUS / "pdf" / "ocr_test.pdf")
    assert not message.text.startswith("The question was taken")
    assert message.image_url and message.image_url.endswith("ocr_test.pdf")


def test_cli_image_flag(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "citewell", "ask", "--image", str(CORPUS / "pdf" / "ocr_test.pdf"),
                           "--json", "--store", str(tmp_path / "s.sqlite")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["text"] == NO_IMAGE_TEXT
    empty = subprocess.run([sys.executable, "-m", "citewell", "ask", "", "--store", str(tmp_path / "s.sqlite")],
                           capture_output=True, text=True, timeout=120)
    assert empty.returncode == 2 and "question is empty" in empty.stderr
