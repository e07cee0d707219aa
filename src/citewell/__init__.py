"""citewell: grounded answers whose every claim cites the exact passage, page region or moment.

The public surface is this module: :class:`Engine` (the facade), the canonical data
types and the error hierarchy. Everything else is an implementation module whose names
may change. ``tests/test_exports.py`` pins ``__all__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (CitewellError, FilterError, IngestError, NotFoundError, StoreError, StoreUnavailable,
                     UsageError)
from .models import Box, Chunk, Citation, Mention, Message, Notice, Part, Passage, Reference, Resource, SourceRef

if TYPE_CHECKING:
    from .engine import Engine
    from .ingest.pipeline import FileOutcome, IngestReport

#: Names imported on first use: the engine pulls in the whole pipeline (PDF, cite,
#: retrieval), which ``citewell.client`` and the CLI's ``--help`` never need.
_LAZY = {"Engine": ".engine", "FileOutcome": ".ingest.pipeline", "IngestReport": ".ingest.pipeline"}


def __getattr__(name: str) -> Any:
    """``citewell.Engine`` and the ingest report types, imported when first asked for."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'citewell' has no attribute {name!r}")

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
    "StoreUnavailable",
    "UsageError",
]
