"""The blob-store interface: where a store keeps originals, staged uploads and the files
derived from them (docs/architecture.md "Blobs").

Keys are relative, ``/``-separated names: an original is content-addressed,
``<sha[:2]>/<sha256><suffix>`` (:func:`blob_key`); an upload waiting for extraction is
``.incoming/<resource id>.<upload time>``. A key is written whole or not at all (a reader
never sees half an object) and an original is never rewritten with other bytes, so a
copy of it cached on one machine stays valid for as long as the key exists.

Files derived from an original (the viewer's page images) are keyed by the original's
SHA-256 and kept on the local machine (:meth:`BlobStore.derived`): they can be made
again from the original at any time, so a machine that lacks one renders its own.
"""

from __future__ import annotations

import os
import re
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO, Protocol

from ..errors import NotFoundError, StoreError

#: Folder (under :attr:`BlobStore.cache_dir`) of files derived from originals, by SHA-256.
DERIVED_DIR = ".pages"
#: Folder of the keys of uploads waiting for extraction.
INCOMING = ".incoming"

_KEY = re.compile(r"^(?!/)(?!.*//)[^\x00\\]+$")


def blob_key(sha256: str, suffix: str = "") -> str:
    """The key of an original whose bytes hash to ``sha256`` (hex) with the file-name
    ``suffix`` (``".pdf"``): ``<sha[:2]>/<sha256><suffix>``."""
    return f"{sha256[:2]}/{sha256}{suffix}"


def check_key(key: str) -> str:
    """``key`` when it is a relative ``/``-separated name with no empty, ``.`` or ``..``
    part (so it never leaves the store's folder or prefix); ``StoreError`` otherwise."""
    if not isinstance(key, str) or not _KEY.match(key) or any(p in ("", ".", "..") for p in key.split("/")):
        raise StoreError(f"invalid blob key {key!r}")
    return key


class BlobNotFound(NotFoundError):
    """No object under that key (404 ``NOT_FOUND`` through the API)."""


class BlobStore(Protocol):
    """Originals and derived files of one store.

    ``location``: where the objects live, as the user names it (a folder path, or
    ``s3://bucket/prefix``). ``cache_dir``: a folder on this machine for derived files
    and for local copies of objects (the blob folder itself for a local store).
    Every method is safe to call from several threads and processes at once.
    """

    location: str
    cache_dir: Path

    def put(self, key: str, data: bytes | Path, *, move: bool = False) -> None:
        """Store ``data`` (bytes, or the bytes of a local file) under ``key``, replacing
        what was there, atomically. ``move``: ``data`` is a file (from :meth:`spool`) that
        is taken over: it is gone afterwards, whatever happened."""
        ...

    def put_new(self, key: str, data: bytes | Path) -> bool:
        """Store ``data`` under a content-addressed ``key`` unless the key exists; True when
        this call wrote it (the caller removes it again if its row is not committed)."""
        ...

    def exists(self, key: str) -> bool:
        """True when an object is stored under ``key``."""
        ...

    def open(self, key: str) -> BinaryIO:
        """The object's bytes as a readable binary stream (close it); :class:`BlobNotFound`
        when there is none."""
        ...

    def local_path(self, key: str) -> Path:
        """A file on this machine holding the object's bytes, for libraries that read a
        file (pdfium, the extractors, a file response): the object itself in a folder, a
        copy in :attr:`cache_dir` (downloaded once, then reused) for a bucket. Never write
        to it. :class:`BlobNotFound` when there is no object."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object (and this machine's copy of it); no error when absent."""
        ...

    def lock(self, key: str) -> AbstractContextManager[None]:
        """Hold the exclusive lock of ``key`` across every thread, process and machine on
        this blob store, so that writing an original and committing the row that refers to
        it, and checking that no row refers to it and removing it, do not interleave.
        ``StoreError`` when it cannot be had in time."""
        ...

    def spool(self) -> Path:
        """A new empty local file for bytes being received (an upload streamed to disk);
        hand it to :meth:`put` with ``move=True`` or remove it."""
        ...

    def derived(self, sha256: str, name: str) -> Path:
        """The local path of the file ``name`` derived from the original ``sha256`` (e.g.
        ``p3-s1.5.png``, a page image): ``<cache_dir>/.pages/<sha[:2]>/<sha256>-<name>``.
        It may not exist yet; write it atomically."""
        ...

    def drop_derived(self, sha256: str) -> None:
        """Remove this machine's files derived from the original ``sha256``."""
        ...

    def local_files(self) -> tuple[Path, ...]:
        """Local folders and files of this blob store, which a folder walk must skip when
        the store lives inside the folder being ingested."""
        ...


def derived_path(cache_dir: Path, sha256: str, name: str) -> Path:
    """``<cache_dir>/.pages/<sha[:2]>/<sha256>-<name>`` (see :meth:`BlobStore.derived`)."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256) or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise StoreError(f"invalid derived file {sha256!r} {name!r}")
    return cache_dir / DERIVED_DIR / sha256[:2] / f"{sha256}-{name}"


def drop_derived_files(cache_dir: Path, sha256: str) -> None:
    """Remove every ``<cache_dir>/.pages/<sha[:2]>/<sha256>-*`` (see :meth:`BlobStore.drop_derived`)."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        return
    folder = cache_dir / DERIVED_DIR / sha256[:2]
    if folder.is_dir():
        for derived in folder.glob(f"{sha256}-*"):
            derived.unlink(missing_ok=True)


def spool_file(folder: Path) -> Path:
    """A new empty file ``<folder>/.incoming/.spool-*`` (the folders made when missing), for
    :meth:`BlobStore.spool`. ``OSError`` when the folder cannot be written."""
    incoming = folder / INCOMING
    incoming.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=incoming, prefix=".spool-")
    os.close(fd)
    return Path(name)


__all__ = ["DERIVED_DIR", "INCOMING", "BlobNotFound", "BlobStore", "blob_key", "check_key", "derived_path",
           "drop_derived_files", "spool_file"]
