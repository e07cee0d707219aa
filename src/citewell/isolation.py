"""Run one function on untrusted input in a child process with a memory and a time limit.

Extracting an uploaded file and rendering a PDF page both hand bytes from a stranger to a
native library (pdfium) that may allocate far more than the file's size (a "flate bomb"
inflates a 1 MB stream to gigabytes) or crash. :func:`run_isolated` calls
``module:function(*args)`` in a fresh Python process - nothing of the server's threads or
connections is inherited; the call and its result travel as pickles over the child's
stdin and stdout - whose address space is capped with ``RLIMIT_AS``, and kills it after a
timeout. Library errors (:class:`~citewell.errors.CitewellError`) come back as themselves;
running out of memory or time, a crash or any other exception raises
:class:`IsolationError`, whose ``reason`` the caller turns into its own coded error.

A child costs about 0.3 s to start (Python and the imports), so this is for work on
untrusted input that is slow anyway, not for the CLI's own files.
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
from typing import Any, Literal

from . import errors
from .errors import CitewellError

#: What the child runs: read the call from stdin, cap memory, call, pickle the result to stdout.
_CHILD = "from citewell.isolation import _child_main; _child_main()"


class IsolationError(Exception):
    """The isolated call did not return: ``reason`` is ``memory`` (over the limit),
    ``timeout`` (stopped), ``crash`` (the child died without an answer) or ``error`` (it
    raised something other than a citewell error); ``detail`` says more, for a message."""

    def __init__(self, reason: Literal["memory", "timeout", "crash", "error"], detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def _child_main() -> None:
    """The child: ``(function, args, memory_mb)`` pickled on stdin; on stdout ``("ok",
    value)``, ``("citewell", class name, code, message)``, ``("memory",)`` or ``("error",
    "Type: message")``."""
    function, args, memory_mb = pickle.load(sys.stdin.buffer)
    try:
        import resource

        cap = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # not POSIX, or a hard limit already lower
        pass
    try:
        module, _, name = function.partition(":")
        payload = pickle.dumps(("ok", getattr(importlib.import_module(module), name)(*args)))
    except CitewellError as exc:
        payload = pickle.dumps(("citewell", type(exc).__name__, exc.code, exc.message))
    except MemoryError:
        payload = pickle.dumps(("memory",))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()


def run_isolated(function: str, *args: Any, memory_mb: int, timeout_s: float) -> Any:
    """Call ``function`` (``"package.module:name"``) with ``args`` (picklable) in a child
    process limited to ``memory_mb`` MB of address space and ``timeout_s`` seconds, and
    return its (picklable) value.

    Raises the :class:`~citewell.errors.CitewellError` the function raised (same class,
    code and message), or :class:`IsolationError` when it ran out of memory or time,
    crashed, or raised anything else.
    """
    job = pickle.dumps((function, args, memory_mb))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=env) as child:
        try:
            out, _ = child.communicate(job, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise IsolationError("timeout", f"longer than {timeout_s:g} s") from None
    try:
        result = pickle.loads(out) if out else None
    except Exception:  # noqa: BLE001 - a truncated answer: the child died while writing
        result = None
    if not result:
        raise IsolationError("crash", f"no answer (out of memory under the {memory_mb} MB limit, or a crash)")
    if result[0] == "ok":
        return result[1]
    if result[0] == "citewell":
        cls = getattr(errors, result[1], CitewellError)
        raise (cls if isinstance(cls, type) and issubclass(cls, CitewellError) else CitewellError)(
            result[3], code=result[2])
    if result[0] == "memory":
        raise IsolationError("memory", f"more than {memory_mb} MB of memory")
    raise IsolationError("error", str(result[1]))


def limit(name: str, default: float) -> float:
    """A positive number from the environment variable ``name``, else ``default`` (also for
    a value that is no positive number)."""
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if 0 < value < 1 << 30 else default


__all__ = ["IsolationError", "limit", "run_isolated"]
