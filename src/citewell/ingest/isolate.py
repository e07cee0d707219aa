"""Extraction of untrusted files in a child process with a memory and a time limit.

A file uploaded to the server is untrusted: a PDF whose compressed content stream inflates
to gigabytes (a "flate bomb") makes the PDF engine allocate far more than the file's
size, and one such upload must not take the server down. :func:`extract_isolated` runs
:func:`citewell.ingest.pipeline.extract` through :func:`citewell.isolation.run_isolated`
(a fresh process, address space capped, killed after a timeout). Whatever happens in the
child - an allocation that fails, a crash of the native PDF library, a timeout - the
caller gets an :class:`~citewell.errors.IngestError` with the format's failure code.

Limits (the environment overrides them, for a whole server):

- ``CITEWELL_EXTRACT_MEMORY_MB`` (default 2048): address space of the child, in MB;
- ``CITEWELL_EXTRACT_TIMEOUT_S`` (default 600): seconds before the child is killed.

The CLI ingests the user's own files in-process (they are trusted, and the start-up of a
child, about 0.3 s, would slow a sync of thousands of small files).
"""

from __future__ import annotations

from ..errors import IngestError
from ..isolation import IsolationError, limit, run_isolated
from .base import Extraction

DEFAULT_MEMORY_MB = 2048
DEFAULT_TIMEOUT_S = 600.0
_FAILURE_CODES = {"pdf": "PDF_CORRUPT", "vtt": "VTT_MALFORMED", "srt": "SRT_MALFORMED",
                  "posts": "JSONL_MALFORMED", "text": "TEXT_ENCODING", "md": "TEXT_ENCODING"}


def extract_isolated(data: bytes, *, name: str, fmt: str, memory_mb: int | None = None,
                     timeout_s: float | None = None) -> Extraction:
    """:func:`~citewell.ingest.pipeline.extract` in a child process limited to
    ``memory_mb`` MB of address space and ``timeout_s`` seconds (defaults from the
    environment, see the module docstring).

    Raises :class:`~citewell.errors.IngestError`: the extractor's own error, or the
    format's failure code (``PDF_CORRUPT`` …) when the child runs out of memory, crashes,
    times out or fails otherwise.
    """
    memory_mb = memory_mb or int(limit("CITEWELL_EXTRACT_MEMORY_MB", DEFAULT_MEMORY_MB))
    timeout_s = timeout_s or limit("CITEWELL_EXTRACT_TIMEOUT_S", DEFAULT_TIMEOUT_S)
    code = _FAILURE_CODES.get(fmt, "UNSUPPORTED_FILE")
    try:
        return run_isolated("citewell.ingest.pipeline:extract_file", data, name, fmt,
                            memory_mb=memory_mb, timeout_s=timeout_s)
    except IsolationError as exc:
        why = {"memory": f"extracting it needs more than {memory_mb} MB of memory",
               "timeout": f"extraction took longer than {timeout_s:g} s and was stopped",
               "crash": f"the extractor stopped without an answer (out of memory under the {memory_mb} MB "
                        "limit, or a crash of the file's parser)"}.get(exc.reason, f"could not be read ({exc.detail})")
        raise IngestError(f"{name}: {why}", code=code) from None
