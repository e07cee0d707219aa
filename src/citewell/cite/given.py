"""Sources a caller gives the cite stage: its own retrieval's passages, in the order its
model saw them (``citewell cite --sources FILE``, :meth:`citewell.Engine.cite`).

Each item of the list is one source, as a JSON object (:class:`GivenSource`):

- **inline** — ``{"chunk_id": …, "text": …, "title"?: …, "metadata"?: {…}}`` for a passage,
  ``{"source": …, "id": …, "text": …, "title"?, "metadata"?, "chunk_id"?}`` for a post:
  the caller vouches for the text and provenance; the source is numbered, its offsets
  computed and its support checked against the text given (the store is not asked);
- **by id** — ``{"chunk_id": …}`` or ``{"source": …, "id": …}`` without ``text``: resolved
  from the workspace as the cite stage always did. A chunk the workspace does not hold
  cannot be numbered (nothing says what it is): warning ``source_not_found``. A post it
  does not hold is still a source the caller vouches for — seed 000 numbers posts by
  ``(source, id)`` alone — so it is numbered, its reference has no text and its support
  is ``unchecked``, with the warning ``source_text_unknown``.

A source is named by its chunk id and, for a post, by its ``(source, id)`` too. Naming
one source twice is no way to cite two texts: an item that names a source an earlier
item named, with the same text (or both by id), is kept as that earlier source (its
number cites the same passage) with the warning ``duplicate_source`` naming both
positions; with another text it is an error (``DUPLICATE_SOURCE``), since no citation
could say which of the two texts it means.

Positions never shift: with ``numbered``, ``[n]`` names the ``n``-th item given, whether
or not the items before it could be resolved (an unresolved one leaves its number as
prose with an ``unknown_target`` warning, :func:`~citewell.cite.numbered.expand_numbered`).

An inline passage belongs to a resource: ``metadata.resource_id`` when given, else one
named by its ``title`` (so passages of one titled document make one citation, rule 7),
else its own; its ``chunk_index`` is ``metadata.chunk_index`` when given, else its
position among the given passages of that resource. An inline post is its own resource
(docs/architecture.md: each post is its own source). Ids of resources made up here are UUIDv5 of
what names them, so the same input gives the same message.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from citewell.errors import UsageError
from citewell.models import Chunk, Message, Notice, Passage, ResourceKind, TextType

from .numbered import SourceAt, expand_numbered
from .offsets import check_unit, convert_offsets
from .processor import cite
from .resolver import SourceResolver, post_key
from .support import apply_support

#: Namespace of the UUIDv5 ids of resources named here (see the module docstring).
NAMESPACE = uuid.UUID("0b8f3d0e-5c1a-4f7e-9d42-6a1e2c3b4d5f")
_KINDS: tuple[str, ...] = get_args(ResourceKind)
_TEXT_TYPES: tuple[str, ...] = get_args(TextType)


class GivenSource(BaseModel):
    """One item of a sources list (see the module docstring): a passage (``chunk_id``) or
    a post (``source`` and ``id``), with its ``text`` (inline) or without (by id).
    ``id`` may be a number (read as its decimal string). Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str | None = None
    source: str | None = None
    id: str | None = None
    text: str | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None
    #: a post by id: the posts file (dataset) whose copy to use (each keeps its own copy of a
    #: post, docs/architecture.md "Posts"); without it, the copy the workspace's resolver chooses
    dataset_id: str | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @model_validator(mode="after")
    def _names_a_source(self) -> "GivenSource":
        if (self.source is None) != (self.id is None):
            raise ValueError("a post needs both source and id")
        if self.source is not None and not (self.source.strip() and self.id and self.id.strip()):
            raise ValueError("source and id must not be empty")
        if self.source is None and not (self.chunk_id and self.chunk_id.strip()):
            raise ValueError("give chunk_id (a passage) or source and id (a post)")
        return self

    @property
    def post(self) -> tuple[str, str] | None:
        """``(source lower-cased, id)`` of a post, else None."""
        return (self.source.lower(), self.id) if self.source is not None and self.id is not None else None


@dataclass
class GivenSources:
    """A sources list read by :func:`read_sources`.

    ``targets``: one per item, in order: a :class:`Passage` (inline, or held by the
    workspace), a post's ``(source, id)`` (not held: text unknown) or None (a chunk id
    the workspace does not hold); a repeated source is the earlier item's target again;
    ``warnings``: ``source_not_found``, ``source_text_unknown`` and ``duplicate_source``
    notices, each with the item's 1-based ``position``.
    """

    targets: list[SourceAt] = field(default_factory=list)
    warnings: list[Notice] = field(default_factory=list)

    @property
    def passages(self) -> list[Passage]:
        """The sources whose passage is known, in order."""
        return [t for t in self.targets if isinstance(t, Passage)]

    @property
    def posts(self) -> list[tuple[str, str]]:
        """The posts given by ``(source, id)`` whose text is unknown."""
        return [t for t in self.targets if isinstance(t, tuple)]


def _resource_id(key: str) -> str:
    return str(uuid.uuid5(NAMESPACE, key))


def _inline(item: GivenSource, counts: dict[str, int]) -> Passage:
    """The passage an inline item describes (see the module docstring)."""
    assert item.text is not None
    meta = dict(item.metadata or {})
    post = item.post
    if post is not None:
        source, pid = post
        resource_id = meta.get("resource_id") if isinstance(meta.get("resource_id"), str) else \
            _resource_id(f"post\x1f{source}\x1f{pid}")
        chunk_id = item.chunk_id or _resource_id(f"post-chunk\x1f{source}\x1f{pid}")
        meta.update(source_type="post", source=item.source, id=pid)
        kind, text_type, title = "post", "post", item.title or f"{item.source}/{pid}"
    else:
        assert item.chunk_id is not None
        chunk_id = item.chunk_id
        given_rid = meta.get("resource_id")
        resource_id = given_rid if isinstance(given_rid, str) and given_rid else _resource_id(
            f"title\x1f{item.title}" if item.title else f"chunk\x1f{chunk_id}")
        kind = meta.get("source_type") if meta.get("source_type") in _KINDS else "text"
        meta["source_type"] = kind
        text_type = meta.get("text_type") if meta.get("text_type") in _TEXT_TYPES else "paragraph"
        title = item.title or chunk_id
    given_index = meta.get("chunk_index")
    position = counts.get(resource_id, 0)
    counts[resource_id] = position + 1
    index = given_index if isinstance(given_index, int) and not isinstance(given_index, bool) else position
    chunk = Chunk(id=chunk_id, resource_id=resource_id, chunk_index=index, text=item.text, text_type=text_type,
                  char_start=0, char_end=len(item.text), metadata=meta)
    return Passage(chunk=chunk, resource_title=title, resource_kind=kind)


def _names(target: SourceAt, item: GivenSource | None) -> list[tuple[str, ...]]:
    """What names a source: ``("chunk", id)`` and, for a post, ``("post", source, id)``."""
    if isinstance(target, Passage):
        post = post_key(target)
        return [("chunk", target.chunk.id), *((("post", *post),) if post is not None else ())]
    if isinstance(target, tuple):
        return [("post", *target)]
    return [("chunk", item.chunk_id)] if item is not None and item.chunk_id else []


def _named(name: tuple[str, ...]) -> str:
    return f"chunk {name[1]}" if name[0] == "chunk" else f"post {name[1]}/{name[2]}"


def _once(out: GivenSources, seen: dict[tuple[str, ...], tuple[int, SourceAt]], position: int, target: SourceAt,
          item: GivenSource | None) -> bool:
    """Add ``target`` (item ``position``) to ``out`` and return True, unless an earlier
    item named the same source: then add the earlier target again, with a
    ``duplicate_source`` warning, and return False when the texts agree; raise
    :class:`UsageError` ``DUPLICATE_SOURCE`` when they differ."""
    names = _names(target, item)
    for name in names:
        if name not in seen:
            continue
        first_position, first = seen[name]
        ours = target.chunk.text if isinstance(target, Passage) else None
        theirs = first.chunk.text if isinstance(first, Passage) else None
        if ours != theirs:
            raise UsageError(f"source {position} names {_named(name)}, as source {first_position} does, with a "
                             "different text: give each source its own id (a citation could not say which text "
                             "it means)", code="DUPLICATE_SOURCE")
        out.warnings.append(Notice(
            code="duplicate_source", position=position, duplicate_of=first_position,
            **({"chunk_id": name[1]} if name[0] == "chunk" else {"source": name[1], "id": name[2]}),
            message=f"source {position} repeats source {first_position} ({_named(name)}, the same text): it is "
                    f"dropped, and a citation of it cites source {first_position}"))
        out.targets.append(first)
        return False
    for name in names:
        seen[name] = (position, target)
    out.targets.append(target)
    return True


def read_sources(items: Sequence[Passage | Mapping[str, Any]], resolver: SourceResolver | None) -> GivenSources:
    """Read a sources list (see the module docstring): each item a :class:`Passage` (kept
    as is) or a JSON object validated as :class:`GivenSource`. ``resolver``: the workspace
    that by-id items are looked up in (None: none is held).

    Raises :class:`~citewell.errors.UsageError` (``INVALID_REQUEST``) naming the first
    item (1-based) that is no source: not an object, neither ``chunk_id`` nor
    ``source``+``id``, an unknown key, a ``text`` that is not a string …; ``UsageError``
    with code ``DUPLICATE_SOURCE`` naming both items when one names a source (chunk id,
    or post ``(source, id)``) an earlier one named with another text."""
    out = GivenSources()
    counts: dict[str, int] = {}
    seen: dict[tuple[str, ...], tuple[int, SourceAt]] = {}
    for position, raw in enumerate(items, start=1):
        if isinstance(raw, Passage):
            _once(out, seen, position, raw, None)
            continue
        if not isinstance(raw, Mapping):
            raise UsageError(f"source {position} is not an object: give {{chunk_id, text?}} or {{source, id, text?}}")
        try:
            item = GivenSource.model_validate(dict(raw))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc") or ())
            raise UsageError(f"source {position}: {where + ': ' if where else ''}{first.get('msg')}") from None
        if item.text is not None:
            counted = dict(counts)  # a dropped repeat takes no place among its resource's passages
            if _once(out, seen, position, _inline(item, counted), item):
                counts = counted
            continue
        post = item.post
        if post is not None:
            found = None
            if resolver is not None:
                found = resolver.post(*post, dataset_id=item.dataset_id) if item.dataset_id else resolver.post(*post)
            if found is None:
                out.warnings.append(Notice(
                    code="source_text_unknown", position=position, source=post[0], id=post[1],
                    message=f"source {position}, post {post[0]}/{post[1]}, is not in the workspace and has no text: "
                            "it is numbered as given, and its support is unchecked"))
            _once(out, seen, position, found if found is not None else post, item)
            continue
        assert item.chunk_id is not None
        found = resolver.chunk(item.chunk_id) if resolver is not None else None
        if found is None:
            out.warnings.append(Notice(
                code="source_not_found", position=position, chunk_id=item.chunk_id,
                message=f"source {position}, chunk {item.chunk_id}, is not in the workspace and has no text: it "
                        "cannot be numbered (give its text to cite it)"))
        _once(out, seen, position, found, item)
    return out


def cite_sources(raw_text: str, sources: Sequence[Passage | Mapping[str, Any]] | GivenSources | None, *,
                 resolver: SourceResolver | None, offsets: str = "codepoint", policy: str = "flag",
                 numbered: bool = False) -> Message:
    """The cite stage on a model's output with the sources its caller gives.

    ``sources``: a list as :func:`read_sources` reads it (passages, or source objects
    inline or by id), in the order the model saw them, or what it read; None: no list,
    every link the ``resolver`` finds counts (rule 4). ``numbered``: the model cites the sources by
    position (``[1]``, ``[1, 2]``, ``[1-3]``, ``【1】``; ``[n]`` is the ``n``-th item). The
    message gets the sources' warnings, rule-8 support (``policy`` flag or drop) and its
    offsets in ``offsets``.

    Raises :class:`~citewell.errors.UsageError` for a bad item, ``numbered`` without
    sources, or an unknown unit or policy.
    """
    try:
        check_unit(offsets)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if numbered and sources is None:
        raise UsageError("numbered citations need the sources, in the order the generator saw them")
    given = sources if isinstance(sources, GivenSources) or sources is None else read_sources(sources, resolver)
    extra: list[dict[str, Any]] = []
    if numbered and given is not None:
        raw_text, extra = expand_numbered(raw_text, given.targets)
    message = cite(raw_text, sources=given.passages if given is not None else None, resolver=resolver,
                   posts=given.posts if given is not None else ())
    if given is not None:
        message.warnings[:0] = given.warnings
    message.warnings.extend(Notice(**w) for w in extra)
    try:
        message = apply_support(message, policy=policy)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return convert_offsets(message, offsets) if offsets != "codepoint" else message


__all__ = ["NAMESPACE", "GivenSource", "GivenSources", "cite_sources", "read_sources"]
