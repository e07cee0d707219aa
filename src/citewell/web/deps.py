"""Per-request dependencies: the principal and an :class:`~citewell.Engine` on its workspace
(with the app's generator)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, Request

from ..embed import Embedder
from ..engine import Engine
from .auth import Principal, principal


@dataclass(frozen=True)
class Context:
    """What a route works with: ``who`` (the :class:`Principal`) and ``engine`` (scoped to
    ``who.workspace_id``; the store is the app's, shared). ``user_id`` is the user the
    request acts for (None: workspace level)."""

    who: Principal
    engine: Engine

    @property
    def user_id(self) -> str | None:
        """The acting user's id, or None."""
        return self.who.user_id


class _SparedCores:
    """The local MiniLM for a server's questions, on all cores but one (built on its first
    embedding, once per app): one workspace's question embedding its passages never takes
    every core from another workspace's answer (issue 14)."""

    def __init__(self) -> None:
        from ..embed import minilm as minilm

        self.model_id, self.dim = minilm.MODEL_ID, minilm.DIM
        self._model: Any = None
        self._lock = threading.Lock()

    def embed(self, texts: Any) -> Any:
        """As :meth:`MiniLMEmbedder.embed`."""
        if self._model is None:
            from ..embed.minilm import MiniLMEmbedder

            with self._lock:
                if self._model is None:
                    self._model = MiniLMEmbedder(threads=max(1, (os.cpu_count() or 1) - 1))
        return self._model.embed(texts)


def question_embedder(state: Any) -> Embedder | None:
    """The embedder of a server's questions (:class:`_SparedCores`, one per app), or None
    (the engine's default) when an embeddings endpoint is configured or the local model is
    not installed."""
    if getattr(state, "question_embedder", None) is None:
        from ..embed.endpoint import endpoint_configured
        from ..embed import minilm as minilm

        state.question_embedder = False if endpoint_configured() or not minilm.available() else _SparedCores()
    return state.question_embedder or None


def context(request: Request, who: Principal = Depends(principal)) -> Context:
    """FastAPI dependency: the :class:`Context` of an authenticated request (errors as
    :func:`~citewell.web.auth.resolve_principal`). The engine uses the app's generator
    (``create_app(generator=…)``), the writers it has built (shared), and its LLM endpoint and stops embedding
    for a question once the app is stopping (``app.state.stopping``)."""
    state = request.app.state
    engine = Engine.for_workspace_id(state.store, who.workspace_id, generator=getattr(state, "generator", None),
                                     generators=getattr(state, "generators", None), llm=getattr(state, "llm", None),
                                     embedder=question_embedder(state))
    stopping = getattr(request.app.state, "stopping", None)
    if stopping is not None:  # a server shutting down cuts a question's embedding short
        engine.embed_stop = stopping.is_set
    return Context(who, engine)


__all__ = ["Context", "context"]
