"""Reading an upload: the multipart body streamed to disk under a size cap.

This parser reads the request stream part by part and writes the ``file`` part, piece by
piece as it arrives, to a spool file the caller names (the store's incoming folder), so an
upload of any size costs a few pieces of memory, never the whole file (issue 14). It
stops with 413 ``FILE_TOO_LARGE`` as soon as the file passes the cap, and removes the
spool file on any error; the other parts (``metadata``) are small and kept in memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from ..digits import whole_number
from .errors import ApiError

#: Default upload cap in megabytes (``CITEWELL_MAX_UPLOAD_MB``).
DEFAULT_MAX_UPLOAD_MB = 100.0
#: Cap of every part other than ``file`` (the ``metadata`` JSON, stray fields), bytes.
MAX_FIELD_BYTES = 1 << 20
MAX_PARTS = 16


def max_upload_bytes(value: str | float | None = None) -> int:
    """The upload cap in bytes: ``value`` (megabytes), else ``CITEWELL_MAX_UPLOAD_MB``, else
    100. Raises ``ValueError`` for a value that is not a positive number."""
    raw = value if value is not None else os.environ.get("CITEWELL_MAX_UPLOAD_MB") or DEFAULT_MAX_UPLOAD_MB
    try:
        mb = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"CITEWELL_MAX_UPLOAD_MB must be a number of megabytes, not {raw!r}") from None
    if not 0 < mb < 1 << 40:  # also refuses nan and inf
        raise ValueError(f"CITEWELL_MAX_UPLOAD_MB must be a positive number of megabytes, not {raw!r}")
    return max(1, round(mb * 1024 * 1024))


@dataclass
class _Part:
    name: str | None = None
    filename: str | None = None
    data: bytearray = field(default_factory=bytearray)
    headers: dict[bytes, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class Upload:
    """A parsed upload: ``file_name`` of the ``file`` part and ``path``, the spool file
    holding its bytes (both None when there is no file part; the caller owns the file),
    ``size`` its bytes, ``metadata`` the text of the ``metadata`` part (None when absent)."""

    file_name: str | None
    path: Path | None
    size: int
    metadata: str | None


class _Collector:
    """python-multipart callbacks that write the ``file`` part to a spool file and keep
    the other parts (``metadata``) in memory."""

    def __init__(self, cap: int, spool: Callable[[], Path]) -> None:
        self.cap = cap
        self.spool = spool
        self.parts: list[_Part] = []
        self._part = _Part()
        self._hname = bytearray()
        self._hvalue = bytearray()
        #: the spool file of the first ``file`` part, and its open handle while it is written
        self.file_path: Path | None = None
        self.file_size = 0
        self._file: BinaryIO | None = None

    def on_part_begin(self) -> None:
        """A new part (at most MAX_PARTS)."""
        if len(self.parts) >= MAX_PARTS:
            raise ApiError(f"too many parts (at most {MAX_PARTS})", code="INVALID_REQUEST_BODY")
        self._part = _Part()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        """A piece of a header name."""
        self._hname += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        """A piece of a header value."""
        self._hvalue += data[start:end]

    def on_header_end(self) -> None:
        """One header complete."""
        self._part.headers[bytes(self._hname).lower()] = bytes(self._hvalue)
        self._hname.clear()
        self._hvalue.clear()

    def on_headers_finished(self) -> None:
        """The part's name and file name from Content-Disposition."""
        _, options = parse_options_header(self._part.headers.get(b"content-disposition", b"").decode("latin-1"))
        if b"name" not in options:
            raise ApiError("a multipart part has no name", code="INVALID_REQUEST_BODY")
        self._part.name = options[b"name"].decode("utf-8", "replace")
        if b"filename" in options:
            self._part.filename = options[b"filename"].decode("utf-8", "replace")

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        """Body bytes of the part, under its cap (413 for the file); the file's go to disk."""
        part = self._part
        if part.name == "file":
            if self.file_path is not None and self._file is None:
                raise ApiError("part 'file' appears more than once", code="INVALID_REQUEST_BODY")
            if self.file_size + (end - start) > self.cap:
                raise ApiError(f"the file is larger than the upload limit of {_mb(self.cap)}",
                               code="FILE_TOO_LARGE")
            if self._file is None:
                self._open_file()
            assert self._file is not None
            self._file.write(data[start:end])
            self.file_size += end - start
            return
        if len(part.data) + (end - start) > MAX_FIELD_BYTES:
            raise ApiError(f"part {part.name!r} is larger than {_mb(MAX_FIELD_BYTES)}", code="INVALID_REQUEST_BODY")
        part.data += data[start:end]

    def _open_file(self) -> None:
        self.file_path = self.spool()
        self._file = open(self.file_path, "wb")  # noqa: SIM115 - closed at the part's end or by close()

    def on_part_end(self) -> None:
        """The part is complete (a file part with no bytes gets its empty spool file too)."""
        if self._part.name == "file":
            if self.file_path is not None and self._file is None:
                raise ApiError("part 'file' appears more than once", code="INVALID_REQUEST_BODY")
            if self._file is None:
                self._open_file()
            self.close()
        self.parts.append(self._part)

    def close(self) -> None:
        """Close the spool file if it is open."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def discard(self) -> None:
        """Close and remove the spool file (an upload that failed)."""
        self.close()
        if self.file_path is not None:
            self.file_path.unlink(missing_ok=True)
            self.file_path = None


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.4g} MB"


async def read_upload(request: Request, cap: int, spool: Callable[[], Path]) -> Upload:
    """Parse the ``multipart/form-data`` body of ``request``: the ``file`` part (at most
    ``cap`` bytes) is written to a new file ``spool()`` names, as it arrives; the
    ``metadata`` part is text. Raises :class:`~citewell.web.errors.ApiError`:
    ``INVALID_REQUEST_BODY`` (not multipart, malformed body, repeated parts),
    ``FILE_TOO_LARGE`` (413: declared Content-Length or the streamed part over the cap);
    no spool file is left behind then."""
    ctype, params = parse_options_header(request.headers.get("content-type", ""))
    if ctype != b"multipart/form-data" or not params.get(b"boundary"):
        raise ApiError("expected a multipart/form-data body with the file in part 'file'",
                       code="INVALID_REQUEST_BODY")
    if len(params[b"boundary"]) > 70:  # RFC 2046: 1 to 70 characters
        raise ApiError("the multipart boundary is longer than 70 characters", code="INVALID_REQUEST_BODY")
    declared = request.headers.get("content-length", "")
    size = whole_number(declared)
    if declared.isascii() and declared.isdigit() and (size is None or size > cap + MAX_PARTS * MAX_FIELD_BYTES):
        raise ApiError(f"the upload is larger than the upload limit of {_mb(cap)}", code="FILE_TOO_LARGE")
    collector = _Collector(cap, spool)
    parser = MultipartParser(params[b"boundary"], {  # type: ignore[arg-type]
        "on_part_begin": collector.on_part_begin, "on_part_data": collector.on_part_data,
        "on_part_end": collector.on_part_end, "on_header_field": collector.on_header_field,
        "on_header_value": collector.on_header_value, "on_header_end": collector.on_header_end,
        "on_headers_finished": collector.on_headers_finished,
    })
    try:
        try:
            async for chunk in request.stream():
                parser.write(chunk)
            parser.finalize()
        except FormParserError as exc:
            raise ApiError(f"the multipart body is malformed ({exc})", code="INVALID_REQUEST_BODY") from None
        upload = _assemble(collector)
    except BaseException:
        collector.discard()
        raise
    collector.close()
    return upload


def _assemble(collector: _Collector) -> Upload:
    """The :class:`Upload` of a body read to its end (errors as :func:`read_upload`)."""
    if collector.file_path is not None and collector._file is not None:  # the body ended inside the file part
        raise ApiError("the multipart body ends inside part 'file'", code="INVALID_REQUEST_BODY")
    by_name: dict[str, _Part] = {}
    for part in collector.parts:
        if part.name in ("file", "metadata") and part.name in by_name:
            raise ApiError(f"part {part.name!r} appears more than once", code="INVALID_REQUEST_BODY")
        if part.name is not None:
            by_name.setdefault(part.name, part)
    file_part = by_name.get("file")
    meta_part = by_name.get("metadata")
    metadata: str | None = None
    if meta_part is not None:
        try:
            metadata = bytes(meta_part.data).decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError("the metadata part is not UTF-8 text", code="INVALID_REQUEST_BODY") from None
    if file_part is None:
        return Upload(None, None, 0, metadata)
    return Upload(file_part.filename, collector.file_path, collector.file_size, metadata)


__all__ = ["DEFAULT_MAX_UPLOAD_MB", "Upload", "max_upload_bytes", "read_upload"]
