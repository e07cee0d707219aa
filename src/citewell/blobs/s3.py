"""The S3-compatible blob store: objects in a bucket, for API replicas and workers on
several machines (``pip install citewell[s3]``; AWS S3, MinIO and others).

``s3://bucket/prefix`` keeps the object of key ``K`` at ``prefix/K``. The endpoint,
region and credentials come from boto3's usual sources: the environment
(``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, ``AWS_PROFILE``) and
``~/.aws/config`` / ``credentials``. With an endpoint from the environment, bucket names go
in the path (``http://minio:9000/bucket/…``: a MinIO host has no per-bucket DNS names).

An S3 ``PUT`` is atomic: a reader sees the old object, or the whole new one. What a
library must read as a file (pdfium, the extractors) is downloaded once into the local
:attr:`S3Blobs.cache_dir` and reused: an original is content-addressed and never
rewritten, so the copy stays valid. Page images are made and kept per machine
(:meth:`S3Blobs.derived`).

The lock of a key is an object ``prefix/.locks/<sha256 of the key>`` created with
``If-None-Match: *`` (a conditional write: exactly one of several writers creates it) and
removed on release; one left by a process that died is broken once it is older than
:data:`LOCK_TTL_S` by the bucket's own clock.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, BinaryIO

import platformdirs

from ..errors import StoreError
from .base import BlobNotFound, check_key, derived_path, drop_derived_files, spool_file
from .local import write_atomic

#: Seconds after which a lock object is taken to be left by a dead process and broken
#: (holding a lock spans one blob write and one database commit: well under a second).
LOCK_TTL_S = 120.0
#: Seconds :meth:`S3Blobs.lock` waits for a lock before ``StoreError``.
LOCK_WAIT_S = 150.0
#: Folder of the lock objects under the prefix.
LOCKS = ".locks"


def parse_location(location: str) -> tuple[str, str]:
    """``(bucket, prefix)`` of ``s3://bucket[/prefix]`` (the prefix without slashes at
    either end, ``""`` for none); ``StoreError`` for a malformed location."""
    match = re.fullmatch(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(.*))?", location.strip(), flags=re.IGNORECASE)
    if match is None:
        raise StoreError(f"{location!r} is not a bucket location: expected s3://bucket or s3://bucket/prefix "
                         "(bucket names are 3-63 lowercase letters, digits, dots and hyphens)")
    prefix = (match.group(2) or "").strip("/")
    if prefix:
        check_key(prefix)
    return match.group(1).lower(), prefix


def default_cache_dir(bucket: str, prefix: str) -> Path:
    """``CITEWELL_BLOB_CACHE``, else ``<user cache dir>/citewell/blobs/<bucket>[_<prefix>]``:
    this machine's copies of objects and its page images."""
    if os.environ.get("CITEWELL_BLOB_CACHE"):
        return Path(os.environ["CITEWELL_BLOB_CACHE"]).expanduser().resolve()
    name = re.sub(r"[^A-Za-z0-9._-]", "_", f"{bucket}_{prefix}" if prefix else bucket)
    return Path(platformdirs.user_cache_dir("citewell")) / "blobs" / name


def default_client() -> Any:
    """A boto3 S3 client from the usual configuration (see the module docstring);
    ``StoreError`` when boto3 is not installed."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise StoreError("an s3:// blob location needs boto3: pip install 'citewell[s3]'") from None
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 5, "mode": "standard"}) if endpoint \
        else Config(retries={"max_attempts": 5, "mode": "standard"})
    return boto3.client("s3", config=config)


def _status(exc: Exception) -> int | None:
    response = getattr(exc, "response", None) or {}
    return response.get("ResponseMetadata", {}).get("HTTPStatusCode")


class S3Blobs:
    """A :class:`~citewell.blobs.base.BlobStore` in an S3-compatible bucket.

    ``location``: ``s3://bucket[/prefix]``; ``client``: a boto3 S3 client (default
    :func:`default_client`); ``cache_dir``: this machine's folder of copies and page
    images (default :func:`default_cache_dir`). The bucket must exist: ``StoreError``
    when it cannot be reached, does not exist or the credentials are refused.
    """

    def __init__(self, location: str, *, client: Any = None, cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.bucket, self.prefix = parse_location(location)
        self.location = f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"
        self.client = client if client is not None else default_client()
        self.cache_dir = (Path(cache_dir).expanduser().resolve() if cache_dir is not None
                          else default_cache_dir(self.bucket, self.prefix))
        from botocore.exceptions import BotoCoreError, ClientError

        self._errors: tuple[type[Exception], ...] = (BotoCoreError, ClientError)
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except self._errors as exc:
            status = _status(exc)
            why = {404: "does not exist", 403: "refused these credentials"}.get(status or 0, f"cannot be reached ({exc})")
            raise StoreError(f"blob bucket {self.location}: the bucket {why}") from None

    def _name(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _copy(self, key: str) -> Path:
        return self.cache_dir / "objects" / check_key(key)

    def put(self, key: str, data: bytes | Path, *, move: bool = False) -> None:
        """See :meth:`BlobStore.put` (a file is uploaded in parts when large)."""
        name = self._name(key)
        try:
            if isinstance(data, Path):
                self.client.upload_file(str(data), self.bucket, name)
            else:
                self.client.put_object(Bucket=self.bucket, Key=name, Body=data)
        except self._errors as exc:
            raise StoreError(f"cannot store {key} in {self.location}: {exc}") from None
        finally:
            if move and isinstance(data, Path):
                data.unlink(missing_ok=True)
        self._copy(key).unlink(missing_ok=True)  # a replaced object's old copy must not be read

    def put_new(self, key: str, data: bytes | Path) -> bool:
        """See :meth:`BlobStore.put_new`."""
        if self.exists(key):
            return False
        self.put(key, data)
        return True

    def exists(self, key: str) -> bool:
        """See :meth:`BlobStore.exists`."""
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._name(key))
            return True
        except self._errors as exc:
            if _status(exc) == 404:
                return False
            raise StoreError(f"cannot read {key} in {self.location}: {exc}") from None

    def open(self, key: str) -> BinaryIO:
        """See :meth:`BlobStore.open` (the response body, streamed)."""
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._name(key))["Body"]
        except self._errors as exc:
            if _status(exc) == 404:
                raise BlobNotFound(f"no stored object {key}") from None
            raise StoreError(f"cannot read {key} in {self.location}: {exc}") from None

    def local_path(self, key: str) -> Path:
        """See :meth:`BlobStore.local_path`: ``<cache_dir>/objects/<key>``, downloaded when
        missing (through a temporary file and a rename)."""
        copy = self._copy(key)
        if copy.is_file():
            return copy
        body = self.open(key)
        try:
            write_atomic(copy, body)
        finally:
            body.close()
        return copy

    def delete(self, key: str) -> None:
        """See :meth:`BlobStore.delete`."""
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._name(key))
        except self._errors as exc:
            if _status(exc) != 404:
                raise StoreError(f"cannot remove {key} from {self.location}: {exc}") from None
        self._copy(key).unlink(missing_ok=True)

    @contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """See :meth:`BlobStore.lock` and the module docstring."""
        name = self._name(f"{LOCKS}/{hashlib.sha256(check_key(key).encode()).hexdigest()}")
        token = uuid.uuid4().hex.encode()
        deadline = time.monotonic() + LOCK_WAIT_S
        pause = 0.02
        while True:
            try:
                self.client.put_object(Bucket=self.bucket, Key=name, Body=token, IfNoneMatch="*")
                break
            except self._errors as exc:
                if _status(exc) not in (409, 412):  # 412: held; 409: a concurrent conditional write
                    raise StoreError(f"cannot lock {key} in {self.location}: {exc}") from None
            self._break_stale(name)
            if time.monotonic() > deadline:
                raise StoreError(f"the lock of {key} in {self.location} stayed held for {LOCK_WAIT_S:g} s")
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
        try:
            yield
        finally:
            try:
                self.client.delete_object(Bucket=self.bucket, Key=name)
            except self._errors:  # pragma: no cover - it expires after LOCK_TTL_S
                pass

    def _break_stale(self, name: str) -> None:
        """Remove the lock object ``name`` when it is older than :data:`LOCK_TTL_S` by the
        bucket's clock (the ``Date`` of the same response: no clock of ours is compared)."""
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=name)
        except self._errors:
            return  # released meanwhile
        date = head.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
        if not date:
            return
        if (parsedate_to_datetime(date) - head["LastModified"]).total_seconds() > LOCK_TTL_S:
            try:
                self.client.delete_object(Bucket=self.bucket, Key=name)
            except self._errors:  # pragma: no cover - another waiter broke it first
                pass

    def spool(self) -> Path:
        """See :meth:`BlobStore.spool`: a file in ``<cache_dir>/.incoming``."""
        return spool_file(self.cache_dir)

    def derived(self, sha256: str, name: str) -> Path:
        """See :meth:`BlobStore.derived` (on this machine)."""
        return derived_path(self.cache_dir, sha256, name)

    def drop_derived(self, sha256: str) -> None:
        """See :meth:`BlobStore.drop_derived` (this machine's; another machine's are
        removed by nobody, and are only ever served for a resource that exists)."""
        drop_derived_files(self.cache_dir, sha256)

    def local_files(self) -> tuple[Path, ...]:
        """See :meth:`BlobStore.local_files`: the local cache folder."""
        return (self.cache_dir,)

    def __repr__(self) -> str:
        return f"S3Blobs({self.location!r})"


__all__ = ["LOCK_TTL_S", "LOCK_WAIT_S", "S3Blobs", "default_cache_dir", "default_client", "parse_location"]
