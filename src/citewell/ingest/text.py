"""Plain text and Markdown: paragraphs with character spans into the original file.

The extracted text *is* the decoded file, so a chunk's ``char_start``/``char_end``
(code points) point into the original document. Paragraphs are blank-line separated;
consecutive short paragraphs are merged up to about :data:`MAX_WORDS` words, a long
paragraph is split at sentence ends (:func:`~citewell.ingest.pieces.bounded_spans`), and a
Markdown heading is kept with what follows.
"""

from __future__ import annotations

import re

from ..errors import IngestError
from ..text.sentences import word_count
from ..extraction import ChunkDraft, Extraction
from .pieces import MAX_WORDS, bounded_spans

MIN_WORDS = 50
_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\n[ \t]*\n|\s*\Z)", re.S)
_HEADING = re.compile(r"^(#{1,6}\s|\S[^\n]{0,80}\n[=-]{3,}\s*$)")


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text: split at ``\n`` only (a ``\r`` before it is dropped),
    never at the other characters :meth:`str.splitlines` breaks at — U+2028, U+2029, U+0085,
    form feeds — which are valid unescaped inside a JSON string (``json.dumps(...,
    ensure_ascii=False)`` writes them). Rule: the JSON Lines format (jsonlines.org: the line
    separator is ``\n``)."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def decode_text(data: bytes, *, name: str) -> str:
    """Decode UTF-8 (BOM allowed) or BOM-marked UTF-16; else ``TEXT_ENCODING``.

    Returns the text with the BOM removed. Raises :class:`IngestError` with code
    ``EMPTY_FILE`` when nothing but whitespace remains.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise IngestError(f"{name}: not valid UTF-16 ({exc.reason} at byte {exc.start})",
                              code="TEXT_ENCODING") from exc
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise IngestError(f"{name}: not valid UTF-8 ({exc.reason} at byte {exc.start})",
                              code="TEXT_ENCODING") from exc
    if not text.strip():
        raise IngestError(f"{name}: the file has no text", code="EMPTY_FILE")
    return text


def _words(text: str) -> int:
    return word_count(text)


def extract_text(data: bytes, *, name: str, markdown: bool = False) -> Extraction:
    """Extract a ``.txt`` or ``.md`` file into paragraph chunks.

    Returns an :class:`Extraction` of kind ``text`` whose ``text`` is the decoded file;
    each chunk has ``metadata = {"source_type": "text", "char_start", "char_end"}``
    (code points into the file). Raises ``TEXT_ENCODING`` or ``EMPTY_FILE``.
    """
    text = decode_text(data, name=name)
    paragraphs = [(m.start(), m.end()) for m in _PARAGRAPH.finditer(text)]
    spans: list[tuple[int, int]] = []
    for s, e in paragraphs:
        if _words(text[s:e]) > MAX_WORDS:
            spans.extend(bounded_spans(text, s, e, max_words=MAX_WORDS) or [(s, e)])
        else:
            spans.append((s, e))
    groups: list[list[int]] = []  # [start, end, words, heading_only]
    for s, e in spans:
        n = _words(text[s:e])
        heading = bool(_HEADING.match(text[s:e])) and "\n" not in text[s:e].strip("\n=- ")
        if groups:
            g = groups[-1]
            if g[3] or g[2] + n <= MIN_WORDS or (g[2] < MIN_WORDS and g[2] + n <= MAX_WORDS and not heading):
                groups[-1] = [g[0], e, g[2] + n, heading and g[3]]
                continue
        groups.append([s, e, n, heading])
    chunks = [
        ChunkDraft(text=text[s:e], char_start=s, char_end=e, text_type="paragraph",
                   metadata={"source_type": "text", "char_start": s, "char_end": e})
        for s, e, _, _ in groups
    ]
    media_type = "text/markdown" if markdown else "text/plain"
    return Extraction(kind="text", media_type=media_type, text=text, chunks=chunks)
