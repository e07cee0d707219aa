"""Where a store keeps its originals and derived files: a folder on this machine (the
default) or an S3-compatible bucket shared by several machines (docs/architecture.md
"Blobs"). :func:`open_blobs` picks the implementation from a location.
"""

from __future__ import annotations

import os
import re

from ..errors import StoreError
from .base import DERIVED_DIR, INCOMING, BlobNotFound, BlobStore, blob_key, check_key
from .local import LocalBlobs, write_atomic


def open_blobs(location: str | os.PathLike[str]) -> BlobStore:
    """The blob store at ``location``: ``s3://bucket[/prefix]`` is a bucket
    (:class:`~citewell.blobs.s3.S3Blobs`, needs ``citewell[s3]``), anything else a folder
    path (:class:`LocalBlobs`, created on the first write). Raises ``StoreError`` for
    another URL scheme or a bucket that cannot be used."""
    text = os.fspath(location)
    if isinstance(text, str) and text.lower().startswith("s3://"):
        from .s3 import S3Blobs

        return S3Blobs(text)
    if isinstance(text, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]+://", text):
        raise StoreError(f"{text!r}: blob locations are a folder path or s3://bucket/prefix")
    return LocalBlobs(text)


def blob_store(blobs: BlobStore | str | os.PathLike[str] | None, default: str | os.PathLike[str]) -> BlobStore:
    """What a store's ``blobs`` argument names: a :class:`BlobStore` as it is, a location
    (:func:`open_blobs`), or None for the folder ``default``."""
    if blobs is None:
        return LocalBlobs(default)
    if isinstance(blobs, (str, os.PathLike)):
        return open_blobs(blobs)
    return blobs


__all__ = ["DERIVED_DIR", "INCOMING", "BlobNotFound", "BlobStore", "LocalBlobs", "blob_key", "blob_store", "check_key",
           "open_blobs", "write_atomic"]
