"""The local blob store: a folder on this machine (the default; the layout citewell has
always used, so an existing store needs no migration).

``<folder>/<sha[:2]>/<sha256><suffix>`` holds the originals, ``<folder>/.incoming/`` the
uploads waiting for extraction, ``<folder>/.pages/`` the page images, and
``<folder>.lock`` beside it is the lock file.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: one process per store
    fcntl = None  # type: ignore[assignment]

from .base import BlobNotFound, check_key, derived_path, drop_derived_files, spool_file

#: Bytes copied at a time.
PIECE = 1 << 20


def write_atomic(target: Path, data: bytes | Path | BinaryIO) -> None:
    """Write ``data`` (bytes, a copy of that file, or what a readable binary stream gives
    until its end; files and streams read in pieces of :data:`PIECE` bytes, the stream left
    open) to ``target`` through a temporary file in its folder and a rename: a reader sees
    no file or the whole file, never half of one. ``OSError`` when the folder cannot be
    written; an error of the stream propagates (the temporary file is removed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, Path):
                with open(data, "rb") as source:
                    shutil.copyfileobj(source, fh, PIECE)
            elif isinstance(data, (bytes, bytearray, memoryview)):
                fh.write(data)
            else:
                shutil.copyfileobj(data, fh, PIECE)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class LocalBlobs:
    """A :class:`~citewell.blobs.base.BlobStore` in the folder ``root`` (created on the
    first write).

    The lock is one exclusive ``flock`` on ``<root>.lock`` for every key: it holds across
    the threads and processes of this machine (each :meth:`lock` opens the file anew, and
    ``flock`` locks belong to the open file), and it is the very lock file of older
    citewell versions, so an older process on the same store is excluded too.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().resolve()
        self.location = str(self.root)
        self.cache_dir = self.root
        self.lock_file = self.root.with_name(self.root.name + ".lock")

    def path(self, key: str) -> Path:
        """The file of ``key`` (which may not exist); ``StoreError`` for an invalid key."""
        return self.root / check_key(key)

    def put(self, key: str, data: bytes | Path, *, move: bool = False) -> None:
        """See :meth:`BlobStore.put`; a moved file in the same file system is renamed."""
        target = self.path(key)
        if move and isinstance(data, Path):
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.replace(data, target)
                    return
                except OSError as exc:
                    if exc.errno != errno.EXDEV:
                        raise
                write_atomic(target, data)
            finally:
                data.unlink(missing_ok=True)
            return
        write_atomic(target, data)

    def put_new(self, key: str, data: bytes | Path) -> bool:
        """See :meth:`BlobStore.put_new`."""
        if self.path(key).is_file():
            return False
        write_atomic(self.path(key), data)
        return True

    def exists(self, key: str) -> bool:
        """See :meth:`BlobStore.exists`."""
        return self.path(key).is_file()

    def open(self, key: str) -> BinaryIO:
        """See :meth:`BlobStore.open`."""
        try:
            return open(self.path(key), "rb")
        except (FileNotFoundError, IsADirectoryError):
            raise BlobNotFound(f"no stored object {key}") from None

    def local_path(self, key: str) -> Path:
        """See :meth:`BlobStore.local_path`: the object's own file."""
        path = self.path(key)
        if not path.is_file():
            raise BlobNotFound(f"no stored object {key}")
        return path

    def delete(self, key: str) -> None:
        """See :meth:`BlobStore.delete`."""
        self.path(key).unlink(missing_ok=True)

    @contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """See :meth:`BlobStore.lock` and the class docstring (one lock for all keys)."""
        check_key(key)
        self.lock_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_file, "a+b") as fh:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def spool(self) -> Path:
        """See :meth:`BlobStore.spool`: a file in ``<root>/.incoming`` (the same file
        system, so :meth:`put` with ``move`` is a rename)."""
        return spool_file(self.root)

    def derived(self, sha256: str, name: str) -> Path:
        """See :meth:`BlobStore.derived`."""
        return derived_path(self.cache_dir, sha256, name)

    def drop_derived(self, sha256: str) -> None:
        """See :meth:`BlobStore.drop_derived`."""
        drop_derived_files(self.cache_dir, sha256)

    def local_files(self) -> tuple[Path, ...]:
        """See :meth:`BlobStore.local_files`: the folder and its lock file."""
        return self.root, self.lock_file

    def __repr__(self) -> str:
        return f"LocalBlobs({self.location!r})"


__all__ = ["PIECE", "LocalBlobs", "write_atomic"]
