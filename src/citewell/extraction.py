"""What every extractor returns: the extracted text and its chunks with provenance.

An extractor is a function ``extract_X(data: bytes, *, name: str) -> Extraction`` that
raises :class:`citewell.errors.IngestError` with its code on bad input. It never
touches the store: the ingest pipeline writes one resource per extraction in one
transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ChunkDraft:
    """A chunk before it has an id.

    ``text == Extraction.text[char_start:char_end]`` (code points). ``metadata`` holds
    provenance as docs/architecture.md describes it per kind (``source_type`` included).
    """

    text: str
    char_start: int
    char_end: int
    text_type: str
    metadata: dict[str, Any]


@dataclass
class MentionDraft:
    """One post of a posts file: ``fields`` is the post object as the file gave it
    (``source``/``id`` normalised to strings, ``text`` the whole post); its chunks are
    ``chunks[chunk_position:chunk_position + chunk_count]`` (a long post is cut into
    pieces, :mod:`citewell.ingest.pieces`, and every piece cites the post)."""

    source: str
    id: str
    fields: dict[str, Any]
    chunk_position: int
    chunk_count: int = 1


@dataclass
class Extraction:
    """The result of extracting one file.

    - ``kind``: pdf, transcript, text or post; ``media_type``: its IANA media type.
    - ``text``: the resource's whole extracted text; every chunk is a slice of it.
    - ``chunks``: in reading (or time, or file) order; ``chunk_index`` is the position.
    - ``warnings``: ``{code, message, …}`` dicts (NO_TEXT_LAYER, CUE_DROPPED, LINE_SKIPPED).
    - ``metadata``: typed metadata found in the file itself (e.g. ``page_count``).
    - ``mentions``: posts only.
    """

    kind: str
    media_type: str
    text: str
    chunks: list[ChunkDraft] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    mentions: list[MentionDraft] = field(default_factory=list)


class TextBuilder:
    """Accumulates a resource's extracted text and hands out exact code-point spans.

    ``add(piece)`` appends ``piece`` and returns its ``(start, end)``; ``sep(s)``
    appends a separator that belongs to no chunk.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0

    def add(self, piece: str) -> tuple[int, int]:
        """Append ``piece``; return its half-open span in code points."""
        start = self._length
        self._parts.append(piece)
        self._length += len(piece)
        return start, self._length

    def sep(self, separator: str) -> None:
        """Append text that separates chunks (e.g. ``"\\n\\n"``)."""
        self._parts.append(separator)
        self._length += len(separator)

    @property
    def length(self) -> int:
        """Current length of the text in code points."""
        return self._length

    def text(self) -> str:
        """The text built so far."""
        return "".join(self._parts)
