"""Per-request dependencies: the principal and an :class:`~citewell.Engine` on its workspace
(with the app's generator)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Depends, Request

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


def context(request: Request, who: Principal = Depends(principal)) -> Context:
    """FastAPI dependency: the :class:`Context` of an authenticated request (errors as
    :func:`~citewell.web.auth.resolve_principal`). The engine uses the app's generator
    (``create_app(generator=…)``), the writers it has built (shared), and its LLM endpoint and stops embedding
    for a question once the app is stopping (``app.state.stopping``)."""
    state = request.app.state
    engine = Engine.for_workspace_id(state.store, who.workspace_id, generator=getattr(state, "generator", None),
                                     generators=getattr(state, "generators", None), llm=getattr(state, "llm", None))
    stopping = getattr(request.app.state, "stopping", None)
    if stopping is not None:  # a server shutting down cuts a question's embedding short
        engine.embed_stop = stopping.is_set
    return Context(who, engine)


__all__ = ["Context", "context"]
