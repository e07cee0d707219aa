"""Embeddings through an OpenAI-compatible ``/embeddings`` endpoint, and the configured embedder.

For a corpus too large to embed on the CPU (about 15–40 passages/s on two cores with
the shipped MiniLM), any server speaking the OpenAI embeddings API (vLLM, llama.cpp's
server started with embeddings on, Ollama, OpenAI …) can embed instead:
``CITEWELL_EMBED_BASE_URL`` and ``CITEWELL_EMBED_MODEL`` (:class:`~citewell.settings.EmbedSettings`).

Vectors record their model: :attr:`EndpointEmbedder.model_id` is ``endpoint:<model>``,
and the store keeps and reads vectors per model id, so switching models (or back to
MiniLM) re-embeds the passages instead of mixing two vector spaces.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import CitewellError
from . import minilm as _minilm
from ..settings import EmbedSettings

#: The error code of an embeddings endpoint that failed.
EMBED_UNAVAILABLE = "EMBED_UNAVAILABLE"


class EndpointEmbedder:
    """Embeds texts with an OpenAI-compatible embeddings endpoint (the official ``openai``
    SDK; retries 429/5xx with backoff).

    ``model_id`` = ``endpoint:<model>``; ``dim`` is learnt from the first answer (one
    request embedding a short probe text when it is read first). :meth:`embed` returns
    float32 unit rows ``(n, dim)``, sending ``batch_size`` texts per request. Raises
    :class:`~citewell.errors.CitewellError` ``EMBED_UNAVAILABLE`` when the endpoint
    fails or answers rows of the wrong count or size.
    """

    def __init__(self, settings: EmbedSettings, *, client: Any = None) -> None:
        if not settings.configured or not settings.model:
            raise CitewellError("no embeddings endpoint is configured", code=EMBED_UNAVAILABLE)
        from openai import OpenAI

        self.settings = settings
        self.model_id = f"endpoint:{settings.model}"
        self._dim: int | None = None
        self._client = client or OpenAI(base_url=settings.base_url, api_key=settings.api_key or "none",
                                        timeout=settings.timeout, max_retries=2)

    @property
    def dim(self) -> int:
        """The vector dimension (one probe request when no vector was made yet)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``: float32 ``(len(texts), dim)``, in order."""
        import openai

        rows: list[np.ndarray] = []
        size = max(1, self.settings.batch_size)
        for start in range(0, len(texts), size):
            batch = [t if t.strip() else " " for t in texts[start:start + size]]
            try:
                answer = self._client.embeddings.create(model=self.settings.model, input=batch)
            except openai.OpenAIError as exc:
                raise CitewellError(f"the embeddings endpoint {self.settings.base_url} failed: {type(exc).__name__}: "
                                    f"{exc}", code=EMBED_UNAVAILABLE) from None
            data = sorted(answer.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise CitewellError(f"the embeddings endpoint answered {len(data)} vectors for {len(batch)} texts",
                                    code=EMBED_UNAVAILABLE)
            matrix = np.asarray([d.embedding for d in data], dtype=np.float32)
            if matrix.ndim != 2 or (self._dim is not None and matrix.shape[1] != self._dim):
                raise CitewellError("the embeddings endpoint changed its vector size", code=EMBED_UNAVAILABLE)
            self._dim = int(matrix.shape[1])
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            rows.append(matrix / np.clip(norms, 1e-12, None))
        if not rows:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return np.vstack(rows).astype(np.float32)


def endpoint_configured() -> bool:
    """True when an embeddings endpoint is configured (environment or config file)."""
    return EmbedSettings.resolve().configured


def configured_model_id() -> str:
    """The model id of the configured embedder, without loading or calling it."""
    settings = EmbedSettings.resolve()
    return f"endpoint:{settings.model}" if settings.configured else _minilm.MODEL_ID


_ENDPOINTS: dict[EmbedSettings, EndpointEmbedder] = {}


def configured_embedder() -> Any:
    """The embedder to use: an :class:`EndpointEmbedder` when an endpoint is configured
    (one per process and setting), else the process's shared MiniLM, or None when that is
    not installed."""
    settings = EmbedSettings.resolve()
    if settings.configured:
        if settings not in _ENDPOINTS:
            _ENDPOINTS[settings] = EndpointEmbedder(settings)
        return _ENDPOINTS[settings]
    return _minilm.shared_embedder()


__all__ = ["EMBED_UNAVAILABLE", "EndpointEmbedder", "configured_embedder", "configured_model_id",
           "endpoint_configured"]
