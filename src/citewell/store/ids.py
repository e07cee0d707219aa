"""Stable ids (docs/architecture.md "Canonical data").

- A chunk id is the UUIDv5 of (workspace id, sha256 of the content, extractor version,
  chunk_index): re-ingesting identical content keeps every id.
- A post's chunk is one of its dataset's (docs/architecture.md "Posts": each dataset keeps its own
  copy of a post): its id is the UUIDv5 of (workspace id, dataset id, lower-cased source,
  post id, part), so a post seen again in the same dataset (re-extracted by a newer
  extractor) keeps its chunk ids, and the same post in another dataset has other ids.
  (Stores of schema v8 and before keyed a post's one chunk by workspace, source and id;
  those rows keep their ids.)
- A resource id is the UUIDv5 of (workspace id, sha256): two processes ingesting the
  same file compute the same id.
"""

from __future__ import annotations

import hashlib

import uuid

NAMESPACE = uuid.UUID("5f3c7a52-9a0e-4b5e-8a63-8d2b0c6f1e47")


def chunk_id_for(workspace_id: str, sha256: str, extractor_version: str, chunk_index: int) -> str:
    """UUIDv5 string of a document chunk."""
    return str(uuid.uuid5(NAMESPACE, f"chunk\x1f{workspace_id}\x1f{sha256}\x1f{extractor_version}\x1f{chunk_index}"))


def post_chunk_id(workspace_id: str, dataset_id: str, source: str, post_id: str, part: int = 0) -> str:
    """UUIDv5 string of piece ``part`` (0-based; a short post has only piece 0) of post
    (``source`` compared lower-cased, ``post_id``) in posts file ``dataset_id``."""
    return str(uuid.uuid5(NAMESPACE, f"post2\x1f{workspace_id}\x1f{dataset_id}\x1f{source.lower()}\x1f{post_id}"
                                     f"\x1f{part}"))


def resource_id_for(workspace_id: str, sha256: str) -> str:
    """UUIDv5 string of the resource holding this content in this workspace."""
    return str(uuid.uuid5(NAMESPACE, f"resource\x1f{workspace_id}\x1f{sha256}"))


def text_hash(text: str) -> str:
    """The key of a chunk text's vector in its workspace (schema v8): hex sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
