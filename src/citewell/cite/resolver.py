"""How the cite stage learns whether a link target exists (docs/architecture.md rule 4).

The store implements :class:`SourceResolver` for one workspace; :class:`InMemoryResolver`
is a dictionary-backed one for tests, the CLI without a store, and examples.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from citewell.models import Passage


@runtime_checkable
class SourceResolver(Protocol):
    """Looks up link targets in one workspace. Implementations never raise for a missing
    target: they answer ``None``/``False``."""

    def chunk(self, chunk_id: str) -> Passage | None:
        """The passage of chunk ``chunk_id``, or ``None`` if not in this workspace."""
        ...

    def post(self, source: str, id: str, *, dataset_id: str | None = None) -> Passage | None:
        """The chunk of post (``source``, ``id``) as a passage, or ``None``.

        ``source`` is passed lower-cased; ``id`` is exact. Each posts file keeps its own
        copy of a post: ``dataset_id`` names the file whose copy (the passage's
        ``resource_id``); without it, the resolver's choice (a store: the copy of the most
        recently added ready file holding it).
        """
        ...

    def entity_exists(self, type: str, id: str) -> bool:
        """Whether entity ``type``/``id`` (type in ``ENTITY_TYPES``) exists here."""
        ...


def post_key(passage: Passage) -> tuple[str, str] | None:
    """``(source lower-cased, id)`` if ``passage`` is a post's chunk, else ``None``.

    A post chunk has ``metadata["source_type"] == "post"`` (or ``text_type == "post"``)
    and string-able ``metadata["source"]`` and ``metadata["id"]``.
    """
    chunk = passage.chunk
    meta = chunk.metadata or {}
    is_post = meta.get("source_type") == "post" or chunk.text_type == "post"
    if not is_post or meta.get("source") is None or meta.get("id") is None:
        return None
    return str(meta["source"]).lower(), str(meta["id"])


class InMemoryResolver:
    """A :class:`SourceResolver` over given passages and entities.

    ``passages``: any passages (post chunks are also found by ``post()``);
    ``entities``: ``(type, id)`` pairs that exist.
    """

    def __init__(self, passages: Iterable[Passage] = (), entities: Iterable[tuple[str, str]] = ()) -> None:
        self._chunks: dict[str, Passage] = {}
        self._posts: dict[tuple[str, str], Passage] = {}
        self._by_dataset: dict[tuple[str, str, str], Passage] = {}
        for p in passages:
            self._chunks[p.chunk.id] = p
            key = post_key(p)
            if key is not None:
                self._posts[key] = p
                self._by_dataset.setdefault((*key, p.chunk.resource_id), p)
        self._entities = {(t, str(i)) for t, i in entities}

    def chunk(self, chunk_id: str) -> Passage | None:
        """The passage with this chunk id, or None."""
        return self._chunks.get(chunk_id)

    def post(self, source: str, id: str, *, dataset_id: str | None = None) -> Passage | None:
        """The passage of post (source compared lower-cased, id exact), or None: the last
        given of that post, or with ``dataset_id`` the one whose ``resource_id`` it is."""
        if dataset_id is not None:
            return self._by_dataset.get((source.lower(), id, dataset_id))
        return self._posts.get((source.lower(), id))

    def entity_exists(self, type: str, id: str) -> bool:
        """True when ``(type, id)`` was given as an entity."""
        return (type, id) in self._entities
