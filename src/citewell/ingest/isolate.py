"""Extraction of untrusted files in a child process with a memory and a time limit.

A file uploaded to the server is untrusted: a PDF whose compressed content stream inflates
to gigabytes (a "flate bomb") makes the PDF engine allocate far more than the file's
size, and one such upload must not take the server down. :func:`extract_isolated` runs
:func:`citewell.ingest.pipeline.extract` in a fresh Python process (nothing of the
server's threads or connections is inherited; the job and the result travel as pickles
over its stdin and stdout) whose address space is capped with ``RLIMIT_AS``, and kills
it after a timeout. Whatever happens in the child - an
allocation that fails, a crash of the native PDF library, a timeout - the caller gets
an :class:`~citewell.errors.IngestError` with the format's failure code.

Limits (the environment overrides them, for a whole server):

- ``CITEWELL_EXTRACT_MEMORY_MB`` (default 2048): address space of the child, in MB;
- ``CITEWELL_EXTRACT_TIMEOUT_S`` (default 600): seconds before the child is killed.

The CLI ingests the user's own files in-process (they are trusted, and the start-up of a
child, about 0.3 s, would slow a sync of thousands of small files).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from typing import Any

from ..errors import IngestError
from .base import Extraction

DEFAULT_MEMORY_MB = 2048
DEFAULT_TIMEOUT_S = 600.0
_FAILURE_CODES = {"pdf": "PDF_CORRUPT", "vtt": "VTT_MALFORMED", "srt": "SRT_MALFORMED",
                  "posts": "JSONL_MALFORMED", "text": "TEXT_ENCODING", "md": "TEXT_ENCODING"}


def limits() -> tuple[int, float]:
    """``(memory in MB, timeout in seconds)`` from the environment, else the defaults;
    ``ValueError`` for a value that is not a positive number."""
    memory = float(os.environ.get("CITEWELL_EXTRACT_MEMORY_MB") or DEFAULT_MEMORY_MB)
    timeout = float(os.environ.get("CITEWELL_EXTRACT_TIMEOUT_S") or DEFAULT_TIMEOUT_S)
    if not (0 < memory < 1 << 30 and 0 < timeout < 1 << 30):
        raise ValueError("CITEWELL_EXTRACT_MEMORY_MB and CITEWELL_EXTRACT_TIMEOUT_S must be positive numbers")
    return int(memory), timeout


#: What the child runs: read the job from stdin, cap memory, extract, pickle the result to stdout.
_CHILD = "from citewell.ingest.isolate import _child_main; _child_main()"


def _child_main() -> None:
    """The child process: ``(data, name, fmt, memory_mb)`` pickled on stdin; ``("ok",
    Extraction)`` or ``("error", code, message)`` pickled on stdout."""
    import pickle
    import sys

    data, name, fmt, memory_mb = pickle.load(sys.stdin.buffer)
    try:
        import resource

        cap = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # not POSIX, or a hard limit already lower
        pass
    result: tuple[Any, ...]
    try:
        from .pipeline import extract

        result = ("ok", extract(data, name=name, fmt=fmt))
        payload = pickle.dumps(result)
    except IngestError as exc:
        payload = pickle.dumps(("error", exc.code, exc.message))
    except MemoryError:
        payload = pickle.dumps(("error", _FAILURE_CODES.get(fmt, "UNSUPPORTED_FILE"),
                                f"{name}: extracting it needs more than {memory_mb} MB of memory"))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as this file's failure
        payload = pickle.dumps(("error", _FAILURE_CODES.get(fmt, "UNSUPPORTED_FILE"),
                                f"{name}: could not be read ({type(exc).__name__}: {exc})"))
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()


def extract_isolated(data: bytes, *, name: str, fmt: str, memory_mb: int | None = None,
                     timeout_s: float | None = None) -> Extraction:
    """:func:`~citewell.ingest.pipeline.extract` in a child Python process limited to
    ``memory_mb`` MB of address space and ``timeout_s`` seconds (defaults: :func:`limits`).

    Raises :class:`~citewell.errors.IngestError`: the extractor's own error, or the
    format's failure code (``PDF_CORRUPT`` …) when the child runs out of memory, crashes
    or times out.
    """
    default_memory, default_timeout = limits()
    memory_mb = memory_mb or default_memory
    timeout_s = timeout_s or default_timeout
    code = _FAILURE_CODES.get(fmt, "UNSUPPORTED_FILE")
    job = pickle.dumps((data, name, fmt, memory_mb))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=env) as child:
        try:
            out, _ = child.communicate(job, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise IngestError(f"{name}: extraction took longer than {timeout_s:g} s and was stopped",
                              code=code) from None
    try:
        result = pickle.loads(out) if out else None
    except Exception:  # noqa: BLE001 - a truncated answer: the child died while writing
        result = None
    if result is None:
        raise IngestError(f"{name}: the extractor stopped without an answer (out of memory under the "
                          f"{memory_mb} MB limit, or a crash of the file's parser)", code=code)
    if result[0] == "ok":
        return result[1]
    raise IngestError(result[2], code=result[1])
