"""The public surface of ``citewell`` is pinned: changing it is a deliberate act."""

from __future__ import annotations

import citewell

PUBLIC = ["Box", "Chunk", "Citation", "CitewellError", "Engine", "FileOutcome", "FilterError", "IngestError",
          "IngestReport", "Mention", "Message", "NotFoundError", "Notice", "Part", "Passage", "Reference",
          "Resource", "SourceRef", "StoreError", "StoreUnavailable", "UsageError"]


def test_exported_names_are_pinned() -> None:
    assert citewell.__all__ == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(citewell, name).__doc__, name


def test_engine_facade_methods() -> None:
    for method in ("ingest", "sync", "ask", "retrieve", "resources", "cite", "close"):
        assert callable(getattr(citewell.Engine, method)) and getattr(citewell.Engine, method).__doc__
