"""The text an image carries, for image-only questions (docs/architecture.md rule 11).

An image-only question has no words to retrieve with, and a placeholder word would make
its citations arbitrary. The text of the image is used instead:

- a PDF: its text layer (the same extractor as ingestion, in a child process with
  memory and time limits: :mod:`citewell.ingest.isolate`);
- an image file (PNG, JPEG, TIFF, …): OCR with the ``tesseract`` command (Debian's
  ``tesseract-ocr``) when it is installed — optional, detected at run time;
- otherwise there is no text, and the caller answers that there is no evidence.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import IngestError, UsageError

#: Seconds the OCR command may take before it is abandoned.
OCR_TIMEOUT_S = 60.0
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".pnm"})


@dataclass(frozen=True)
class ImageText:
    """``text`` read from an image and ``method``: ``text_layer``, ``ocr`` or ``none``."""

    text: str
    method: str


def image_text(path: str | Path) -> ImageText:
    """Read the text of ``path`` (a PDF or an image file).

    Raises :class:`UsageError` when the file does not exist or is neither a PDF nor an
    image; a PDF that cannot be read gives ``method="none"``.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"image {path} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        from .isolate import extract_isolated

        try:  # an image sent with a question is untrusted: memory and time caps (see isolate)
            text = extract_isolated(path.read_bytes(), name=path.name, fmt="pdf").text
        except IngestError:
            return ImageText("", "none")
        return ImageText(" ".join(text.split()), "text_layer" if text.strip() else "none")
    if suffix not in IMAGE_SUFFIXES:
        raise UsageError(f"{path.name}: not an image or PDF (expected one of .pdf, {', '.join(sorted(IMAGE_SUFFIXES))})")
    tesseract = shutil.which("tesseract")
    if tesseract is None:
        return ImageText("", "none")
    try:
        done = subprocess.run([tesseract, str(path), "stdout"], capture_output=True, timeout=OCR_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ImageText("", "none")
    text = " ".join(done.stdout.decode("utf-8", "replace").split()) if done.returncode == 0 else ""
    return ImageText(text, "ocr" if text else "none")
