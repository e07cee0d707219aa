"""Extraction of files in a child process with a memory and a time limit.

A PDF whose compressed content stream inflates to gigabytes (a "flate bomb") makes the PDF
engine allocate far more than the file's size, or abort the whole process: no file may
take down the server, or a CLI run and the rest of its folder (issue 14). Extraction
therefore never runs in the calling process:

- :func:`extract_isolated` (uploads, the server) runs
  :func:`citewell.ingest.pipeline.extract` through :func:`citewell.isolation.run_isolated`:
  a fresh process per file, address space capped, killed after a timeout;
- :func:`extract_in_worker` (``citewell ingest``/``sync``, ``ask --corpus``, the library's
  :meth:`~citewell.Engine.sync`) uses one long-lived child of this process under the same
  caps (:class:`citewell.isolation.IsolatedWorker`), so a folder of thousands of small files
  does not pay a process start (about 0.3 s) per file; a file that kills it gets a new one.

Whatever happens in the child - an allocation that fails, a crash of the native PDF
library, a timeout - the caller gets an :class:`~citewell.errors.IngestError` with the
format's failure code (``PDF_CORRUPT`` …), and the next file goes on.

Limits (the environment overrides them, for a whole server or CLI run):

- ``CITEWELL_EXTRACT_MEMORY_MB`` (default 2048): address space of the child, in MB;
- ``CITEWELL_EXTRACT_TIMEOUT_S`` (default 600): seconds one file may take.
"""

from __future__ import annotations

from pathlib import Path

import threading

from ..errors import IngestError
from ..isolation import IsolatedWorker, IsolationError, limit, run_isolated
from ..extraction import Extraction

DEFAULT_MEMORY_MB = 2048
DEFAULT_TIMEOUT_S = 600.0
_FAILURE_CODES = {"pdf": "PDF_CORRUPT", "vtt": "VTT_MALFORMED", "srt": "SRT_MALFORMED",
                  "posts": "JSONL_MALFORMED", "text": "TEXT_ENCODING", "md": "TEXT_ENCODING"}


def extract_isolated(data: bytes | Path, *, name: str, fmt: str, memory_mb: int | None = None,
                     timeout_s: float | None = None, posts_only: bool = False, nice: int = 0) -> Extraction:
    """:func:`~citewell.ingest.pipeline.extract` in a child process limited to
    ``memory_mb`` MB of address space and ``timeout_s`` seconds (defaults from the
    environment, see the module docstring). ``data``: the bytes, or a file the child reads
    (:func:`~citewell.ingest.pipeline.extract_path`, with ``posts_only``), so a large
    upload is never held in this process's memory. ``nice``: the child's lower CPU
    priority (background extraction of uploads).

    Raises :class:`~citewell.errors.IngestError`: the extractor's own error, or the
    format's failure code (``PDF_CORRUPT`` …) when the child runs out of memory, crashes,
    times out or fails otherwise.
    """
    memory_mb = memory_mb or int(limit("CITEWELL_EXTRACT_MEMORY_MB", DEFAULT_MEMORY_MB))
    timeout_s = timeout_s or limit("CITEWELL_EXTRACT_TIMEOUT_S", DEFAULT_TIMEOUT_S)
    try:
        if isinstance(data, Path):
            return run_isolated("citewell.ingest.pipeline:extract_path", str(data), name, fmt, posts_only,
                                memory_mb=memory_mb, timeout_s=timeout_s, nice=nice)
        return run_isolated("citewell.ingest.pipeline:extract_file", data, name, fmt,
                            memory_mb=memory_mb, timeout_s=timeout_s, nice=nice)
    except IsolationError as exc:
        raise _coded(exc, name=name, fmt=fmt, memory_mb=memory_mb, timeout_s=timeout_s) from None


_worker: IsolatedWorker | None = None
_worker_lock = threading.Lock()


def extract_in_worker(data: bytes, *, name: str, fmt: str) -> Extraction:
    """:func:`~citewell.ingest.pipeline.extract` in this process's long-lived extraction
    child (made on first use; a new one when the limits change or a file killed it),
    limited like :func:`extract_isolated` (``CITEWELL_EXTRACT_MEMORY_MB`` per child,
    ``CITEWELL_EXTRACT_TIMEOUT_S`` per file). Raises :class:`~citewell.errors.IngestError`:
    the extractor's own, or the format's failure code when the child runs out of memory,
    crashes or times out."""
    global _worker
    memory_mb = int(limit("CITEWELL_EXTRACT_MEMORY_MB", DEFAULT_MEMORY_MB))
    timeout_s = limit("CITEWELL_EXTRACT_TIMEOUT_S", DEFAULT_TIMEOUT_S)
    with _worker_lock:
        if _worker is None or _worker.memory_mb != memory_mb:
            if _worker is not None:
                _worker.close()
            _worker = IsolatedWorker(memory_mb=memory_mb)
        worker = _worker
    try:
        return worker.call("citewell.ingest.pipeline:extract_file", data, name, fmt, timeout_s=timeout_s)
    except IsolationError as exc:
        raise _coded(exc, name=name, fmt=fmt, memory_mb=memory_mb, timeout_s=timeout_s) from None


def _coded(exc: IsolationError, *, name: str, fmt: str, memory_mb: int, timeout_s: float) -> IngestError:
    """The :class:`IngestError` (the format's failure code) for an extraction that did not return."""
    why = {"memory": f"extracting it needs more than {memory_mb} MB of memory",
           "timeout": f"extraction took longer than {timeout_s:g} s and was stopped",
           "crash": f"the extractor stopped without an answer (out of memory under the {memory_mb} MB "
                    "limit, or a crash of the file's parser)"}.get(exc.reason, f"could not be read ({exc.detail})")
    return IngestError(f"{name}: {why}", code=_FAILURE_CODES.get(fmt, "UNSUPPORTED_FILE"))
