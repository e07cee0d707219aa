"""citewell: grounded answers whose every claim cites the exact passage, page region or moment.

The public surface is this module: :class:`Engine` (the facade), the canonical data
types and the error hierarchy. Everything else is an implementation module whose names
may change. ``tests/test_exports.py`` pins ``__all__``.
"""

from __future__ import annotations

from .engine import Engine
from .errors import CitewellError, FilterError, IngestError, NotFoundError, StoreError, UsageError
from .ingest.pipeline import FileOutcome, IngestReport
from .models import Box, Chunk, Citation, Mention, Message, Notice, Part, Passage, Reference, Resource, SourceRef

__version__ = "0.1.0"

__all__ = [
    "Box",
    "Chunk",
    "Citation",
    "CitewellError",
    "Engine",
    "FileOutcome",
    "FilterError",
    "IngestError",
    "IngestReport",
    "Mention",
    "Message",
    "NotFoundError",
    "Notice",
    "Part",
    "Passage",
    "Reference",
    "Resource",
    "SourceRef",
    "StoreError",
    "UsageError",
]
