"""``Engine._retrieve_for`` reads the page context in the retrieval's snapshot, an
``EMBED_UNAVAILABLE`` failure anywhere in the retrieval falls back to lexical retrieval
with a ``DENSE_UNAVAILABLE`` notice, and other errors propagate with the snapshot closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from citewell import Engine
from citewell import engine as engine_mod
from citewell.errors import CitewellError

TEXTS = {"bread.txt": "Sourdough rises slowly because wild yeast ferments the dough.",
         "sea.txt": "Ocean storms batter the coast in winter."}


def _engine(tmp_path: Path, store_location: Any) -> Engine:
    """A lexical engine over two small text files."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in TEXTS.items():
        (docs / name).write_text(text + "\n", encoding="utf-8")
    engine = Engine(store_location, mode="lexical")
    engine.ingest([docs])
    return engine


@pytest.mark.parametrize("fail_in", ["prepare", "read_question", "retrieve"])
def test_embed_unavailable_falls_back_with_notice_and_page_context(tmp_path: Path, store_location: Any,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   fail_in: str) -> None:
    """The step ``fail_in`` fails once with EMBED_UNAVAILABLE: lexical passages, one notice
    naming the failure, and the page context read inside a snapshot."""
    engine = _engine(tmp_path, store_location)
    try:
        retrieval = engine._retrieval
        calls: list[tuple[str, bool]] = []
        real_retrieve = retrieval.retrieve

        real_step = getattr(retrieval, fail_in)
        failed: list[bool] = []

        def failing(*args: Any, **kwargs: Any) -> Any:  # the first call fails (the dense attempt)
            if not failed:
                failed.append(True)
                raise CitewellError("endpoint down", code="EMBED_UNAVAILABLE")
            return real_step(*args, **kwargs)

        def retrieve(query: str, **kwargs: Any) -> Any:
            calls.append(("retrieve", bool(kwargs.get("lexical"))))
            if fail_in == "retrieve" and not kwargs.get("lexical"):
                raise CitewellError("endpoint down", code="EMBED_UNAVAILABLE")
            return real_retrieve(query, **kwargs)

        monkeypatch.setattr(retrieval, "retrieve", retrieve)
        if fail_in != "retrieve":
            monkeypatch.setattr(retrieval, fail_in, failing)
        seen: list[bool] = []

        def context(store: Any, workspace_id: str, passages: Any) -> list:
            seen.append(store._conn().in_transaction)  # read in a snapshot
            return [passages[0].model_copy(update={"rank": 99})]

        monkeypatch.setattr(engine_mod, "page_context", context)
        turn = engine._prepare("Why does sourdough rise slowly?", k=2, filters=None, corpus=None,
                               offsets="codepoint", chat_id=None, policy="flag")
        passages = engine._retrieve_for(turn, sync=False, manifests=(), progress=None)
        assert [n.code for n in turn.notes] == ["DENSE_UNAVAILABLE"]
        assert "endpoint down" in turn.notes[0].message
        assert calls[-1] == ("retrieve", True)
        assert seen == [True] and passages[-1].rank == 99 and len(passages) >= 2
        assert passages[0].file_name == "bread.txt"
    finally:
        engine.close()


@pytest.mark.parametrize("error", [CitewellError("boom", code="STORE_UNAVAILABLE"), RuntimeError("boom")])
def test_other_errors_propagate(tmp_path: Path, store_location: Any, monkeypatch: pytest.MonkeyPatch,
                                error: Exception) -> None:
    """Another store error or a bug in retrieval or the page context propagates, and the
    snapshot is closed."""
    engine = _engine(tmp_path, store_location)
    try:
        def failing(*args: Any, **kwargs: Any) -> Any:
            raise error

        monkeypatch.setattr(engine._retrieval, "retrieve", failing)
        turn = engine._prepare("Why does sourdough rise slowly?", k=2, filters=None, corpus=None,
                               offsets="codepoint", chat_id=None, policy="flag")
        with pytest.raises(type(error)):
            engine._retrieve_for(turn, sync=False, manifests=(), progress=None)
        assert not engine.store._conn().in_transaction  # the snapshot was closed
        # and page context errors other than EMBED_UNAVAILABLE propagate too
        monkeypatch.undo()
        monkeypatch.setattr(engine_mod, "page_context", lambda *a: (_ for _ in ()).throw(error))
        with pytest.raises(type(error)):
            engine._retrieve_for(turn, sync=False, manifests=(), progress=None)
    finally:
        engine.close()


def test_success_path_reads_page_context_in_the_snapshot(tmp_path: Path, store_location: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a failure the page context is read in the retrieval's snapshot, closed after."""
    engine = _engine(tmp_path, store_location)
    try:
        seen: list[bool] = []
        real = engine_mod.page_context

        def context(store: Any, workspace_id: str, passages: Any) -> list:
            seen.append(store._conn().in_transaction)
            return real(store, workspace_id, passages)

        monkeypatch.setattr(engine_mod, "page_context", context)
        turn = engine._prepare("Why does sourdough rise slowly?", k=2, filters=None, corpus=None,
                               offsets="codepoint", chat_id=None, policy="flag")
        passages = engine._retrieve_for(turn, sync=False, manifests=(), progress=None)
        assert seen == [True] and not turn.notes and passages and passages[0].file_name == "bread.txt"
        assert not engine.store._conn().in_transaction
    finally:
        engine.close()
