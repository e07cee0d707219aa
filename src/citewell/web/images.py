"""The image of a question (``image_url``): a ``data:`` URL or this API's own content URL.

Remote URLs are never fetched (a server that fetches what a client names is an SSRF
hole); the two accepted forms are:

- ``data:<media type>;base64,<data>`` — at most :data:`MAX_DATA_URL_BYTES` decoded, an
  image or PDF media type; written to a temporary file that is deleted after the answer;
- ``/v1/resources/{id}/content``, or that path on this server's own host
  (``http(s)://<Host>/v1/resources/{id}/content``) — a resource of the request's
  workspace, used in place (its stored original bytes).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..engine import Engine
from ..ingest.image_text import IMAGE_SUFFIXES
from .errors import ApiError

#: Largest image a data: URL may carry, decoded (10 MB).
MAX_DATA_URL_BYTES = 10 * 1024 * 1024
SUFFIX_BY_MEDIA_TYPE: dict[str, str] = {
    "image/png": ".png", "image/jpeg": ".jpg", "image/jpg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
    "image/tiff": ".tiff", "image/bmp": ".bmp", "image/x-portable-anymap": ".pnm", "application/pdf": ".pdf",
}
_CONTENT_PATH = re.compile(r"/v1/resources/([^/]+)/content/?")
_DATA_URL = re.compile(r"data:([^,;]*)((?:;[^,;]*)*),(.*)", re.DOTALL)


def _bad(message: str) -> ApiError:
    return ApiError(f"image_url: {message}", code="INVALID_REQUEST_BODY")


def _decode_data_url(url: str) -> tuple[bytes, str]:
    """``(bytes, suffix)`` of a base64 ``data:`` URL (errors as :func:`question_image`)."""
    m = _DATA_URL.fullmatch(url)
    if m is None:
        raise _bad("not a valid data: URL")
    media_type = m.group(1).strip().lower()
    params = [p.strip().lower() for p in m.group(2).split(";") if p.strip()]
    if "base64" not in params:
        raise _bad("a data: URL must be base64 encoded (data:<type>;base64,…)")
    suffix = SUFFIX_BY_MEDIA_TYPE.get(media_type)
    if suffix is None:
        raise _bad(f"media type {media_type or '(none)'!r} is not an image or PDF "
                   f"(expected one of {', '.join(sorted(SUFFIX_BY_MEDIA_TYPE))})")
    payload = "".join(m.group(3).split())
    if len(payload) > (MAX_DATA_URL_BYTES // 3 + 1) * 4:
        raise _bad(f"the image is larger than {MAX_DATA_URL_BYTES // (1024 * 1024)} MB")
    try:
        data = base64.b64decode(unquote(payload), validate=True)
    except (binascii.Error, ValueError):
        raise _bad("the data: URL is not valid base64") from None
    if not data:
        raise _bad("the image is empty")
    if len(data) > MAX_DATA_URL_BYTES:
        raise _bad(f"the image is larger than {MAX_DATA_URL_BYTES // (1024 * 1024)} MB")
    return data, suffix


def own_content_id(url: str, host: str) -> str | None:
    """The resource id of a content URL of this API (a path, or an http(s) URL on ``host``,
    the request's ``Host``), or None for any other URL."""
    parts = urlsplit(url)
    if (parts.scheme or parts.netloc) and (parts.scheme.lower() not in ("http", "https")
                                           or parts.netloc.lower() != host.lower()):
        return None
    if parts.query or parts.fragment:
        return None
    m = _CONTENT_PATH.fullmatch(parts.path)
    return unquote(m.group(1)) if m else None


@contextmanager
def question_image(url: str, *, engine: Engine, host: str) -> Iterator[Path]:
    """The file to answer an ``image_url`` question with, for the ``with`` block.

    A ``data:`` URL is written to a temporary file (deleted on exit); a content URL of this
    API (``host``: the request's ``Host``) yields the resource's stored bytes. Raises
    :class:`~citewell.web.errors.ApiError` ``INVALID_REQUEST_BODY`` for any other URL, a
    bad data: URL or more than 10 MB, and ``NotFoundError`` for a resource that is not in
    the engine's workspace (or has no stored bytes).
    """
    if url[:5].lower() == "data:":
        data, suffix = _decode_data_url(url)
        fd, name = tempfile.mkstemp(prefix="citewell-image-", suffix=suffix)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            yield Path(name)
        finally:
            Path(name).unlink(missing_ok=True)
        return
    resource_id = own_content_id(url, host)
    if resource_id is None:
        raise _bad("only a data: URL or this API's /v1/resources/{id}/content URL is accepted "
                   "(remote URLs are not fetched)")
    path, _, file_name = engine.resource_content(resource_id)
    if path.suffix.lower() not in IMAGE_SUFFIXES and path.suffix.lower() != ".pdf":
        raise _bad(f"resource {resource_id} ({file_name}) is not an image or PDF")
    yield path


__all__ = ["MAX_DATA_URL_BYTES", "own_content_id", "question_image"]
