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

A child costs about 0.3 s to start (Python and the imports). :class:`IsolatedWorker` is
the same isolation for many calls in a row (the CLI extracting a folder): one long-lived
child under the same caps runs the calls one after another, and is replaced after a call
that killed it, ran out of memory or time, or left it holding more than half its cap.
"""

from __future__ import annotations

import importlib
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
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
    """The child: ``(function, args, memory_mb, nice)`` pickled on stdin; on stdout ``("ok",
    value)``, ``("citewell", class name, code, message)``, ``("memory",)`` or ``("error",
    "Type: message")``."""
    function, args, memory_mb, nice = pickle.load(sys.stdin.buffer)
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass
    _cap_memory(memory_mb)
    try:
        payload = pickle.dumps(_call(function, args))
    except MemoryError:
        payload = pickle.dumps(("memory",))
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()


def _cap_memory(memory_mb: int) -> None:
    """Cap this process's address space (``RLIMIT_AS``) at ``memory_mb`` MB (where possible)."""
    try:
        import resource

        cap = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # not POSIX, or a hard limit already lower
        pass


def _call(function: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Run ``module:name(*args)``; the answer tuple of the protocol (see :func:`_child_main`)."""
    try:
        module, _, name = function.partition(":")
        return ("ok", getattr(importlib.import_module(module), name)(*args))
    except CitewellError as exc:
        return ("citewell", type(exc).__name__, exc.code, exc.message)
    except MemoryError:
        return ("memory",)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        return ("error", f"{type(exc).__name__}: {exc}")


def _answer(result: tuple[Any, ...] | None, memory_mb: int) -> Any:
    """The value of a child's answer, or the error it stands for (see :func:`run_isolated`)."""
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


_FRAME = struct.Struct("<Q")  # the length of each pickled message between an IsolatedWorker and its child
_WORKER_CHILD = "from citewell.isolation import _worker_main; _worker_main()"


def _worker_main() -> None:
    """An :class:`IsolatedWorker`'s child: the memory cap (MB, a frame) first, then calls
    ``(function, args)`` one frame each; per call one frame ``(answer, resident bytes)``.
    Ends at the end of its input."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

    def read() -> Any:
        head = stdin.read(_FRAME.size)
        if len(head) < _FRAME.size:
            return None
        return pickle.loads(stdin.read(_FRAME.unpack(head)[0]))

    memory_mb = read()
    if memory_mb is None:
        return
    _cap_memory(memory_mb)
    while (job := read()) is not None:
        answer = _call(*job)
        try:
            payload = pickle.dumps((answer, _resident_bytes()))
        except MemoryError:
            payload = pickle.dumps((("memory",), 0))
        stdout.write(_FRAME.pack(len(payload)) + payload)
        stdout.flush()


def _resident_bytes() -> int:
    """This process's resident memory in bytes (0 where ``/proc`` is not there)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class IsolatedWorker:
    """One long-lived child process, address space capped at ``memory_mb`` MB, running
    calls one after another (thread-safe: callers take turns): the isolation of
    :func:`run_isolated` without a new process per call. :meth:`call` raises like
    :func:`run_isolated`; after a call that crashed the child, ran out of memory or time
    (the child is killed), or left it with more than half of its cap resident, the next
    call starts a new child. :meth:`close` ends it (so does the end of this process)."""

    def __init__(self, *, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        child = subprocess.Popen([sys.executable, "-c", _WORKER_CHILD], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0)
        self._send(child, self.memory_mb)
        return child

    @staticmethod
    def _send(child: subprocess.Popen[bytes], message: Any) -> None:
        payload = pickle.dumps(message)
        assert child.stdin is not None
        child.stdin.write(_FRAME.pack(len(payload)) + payload)
        child.stdin.flush()

    @staticmethod
    def _read(child: subprocess.Popen[bytes], size: int, deadline: float) -> bytes | None:
        """``size`` bytes of the child's output before ``deadline``; None at its end;
        ``TimeoutError`` when the deadline passes."""
        assert child.stdout is not None
        fd = child.stdout.fileno()
        out = bytearray()
        while len(out) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            piece = os.read(fd, min(size - len(out), 1 << 20))
            if not piece:
                return None
            out += piece
        return bytes(out)

    def call(self, function: str, *args: Any, timeout_s: float) -> Any:
        """``function(*args)`` (``"package.module:name"``, picklable arguments and value) in
        the child, within ``timeout_s`` seconds; errors as :func:`run_isolated`."""
        with self._lock:
            if self._child is None or self._child.poll() is not None:
                self._child = self._start()
            child = self._child
            deadline = time.monotonic() + timeout_s
            result: tuple[Any, ...] | None = None
            resident = 0
            try:
                self._send(child, (function, args))
                head = self._read(child, _FRAME.size, deadline)
                body = self._read(child, _FRAME.unpack(head)[0], deadline) if head else None
                if body is not None:
                    result, resident = pickle.loads(body)
            except TimeoutError:
                self._stop()
                raise IsolationError("timeout", f"longer than {timeout_s:g} s") from None
            except (OSError, pickle.UnpicklingError, EOFError, ValueError):  # the child died mid-call
                result = None
            if result is None or result[0] == "memory" or resident > self.memory_mb * 1024 * 1024 // 2:
                self._stop()
            return _answer(result, self.memory_mb)

    def _stop(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        try:
            if child.stdin is not None:
                child.stdin.close()
        except OSError:
            pass
        if child.poll() is None:
            child.kill()
        child.wait()

    def close(self) -> None:
        """End the child (the next call starts a new one)."""
        with self._lock:
            self._stop()


def run_isolated(function: str, *args: Any, memory_mb: int, timeout_s: float, nice: int = 0) -> Any:
    """Call ``function`` (``"package.module:name"``) with ``args`` (picklable) in a child
    process limited to ``memory_mb`` MB of address space and ``timeout_s`` seconds, and
    return its (picklable) value. ``nice``: how much lower the child's CPU priority is
    (background work leaves the CPU to the requests people wait for).

    Raises the :class:`~citewell.errors.CitewellError` the function raised (same class,
    code and message), or :class:`IsolationError` when it ran out of memory or time,
    crashed, or raised anything else.
    """
    job = pickle.dumps((function, args, memory_mb, nice))
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
    return _answer(result, memory_mb)


def limit(name: str, default: float) -> float:
    """A positive number from the environment variable ``name``, else ``default`` (also for
    a value that is no positive number)."""
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if 0 < value < 1 << 30 else default


__all__ = ["IsolatedWorker", "IsolationError", "limit", "run_isolated"]
