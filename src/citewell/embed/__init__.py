"""Sentence embeddings: the one :class:`Embedder` protocol every part of citewell uses.

Dense retrieval (:mod:`citewell.retrieve.dense`) ranks passages with it and the support
checks (:mod:`citewell.cite.verdict`) use it for the similarity of an answer sentence
with its cited passage. Implementations:

- :class:`citewell.embed.minilm.MiniLMEmbedder`: all-MiniLM-L6-v2 (int8 ONNX), shipped
  as installed packages, on the CPU (the default);
- :class:`citewell.embed.endpoint.EndpointEmbedder`: any OpenAI-compatible ``/embeddings``
  endpoint (``CITEWELL_EMBED_BASE_URL``, ``CITEWELL_EMBED_MODEL``), for corpora too large
  to embed on the CPU.

``model_id`` names the vector space: the store keeps every vector with the model id that
made it and reads only vectors of the embedder's own id, so a change of model re-embeds
the passages instead of mixing two spaces.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Texts to unit vectors.

    - ``model_id``: names the vector space (stored with every vector);
    - ``dim``: vector dimension;
    - ``embed(texts)``: one L2-normalised row per text, in order, as a float32 array of
      shape ``(len(texts), dim)`` (any ``Sequence[Sequence[float]]`` is accepted where
      only similarities are computed). May raise on a model or endpoint failure.
    """

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any:
        """Embed ``texts``: an array ``(len(texts), dim)`` of unit rows."""
        ...


__all__ = ["Embedder"]
