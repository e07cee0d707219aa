"""A blocking HTTP stream read in a worker thread, so its reader can stop at a deadline.

An HTTP client's read timeout bounds each *silence*: any byte resets it, so an endpoint
that sends an SSE keep-alive comment (``: ping``) every second, or one word a second,
keeps a plain ``for chunk in stream`` loop waiting forever, and a deadline checked when a
chunk arrives never fires while none does. :class:`StreamReader` moves the blocking reads
to a daemon thread and hands the items over a bounded queue; the consumer waits on the
queue with the time it has left (:meth:`StreamReader.items`), so a wall-clock deadline
fires whether or not anything arrives.

:meth:`StreamReader.close` ends the HTTP exchange from the consumer's side at once: it
shuts the response's socket down (found through httpx's ``network_stream`` response
extension), which wakes the worker's blocked read, and the worker then closes the stream;
a stream without a reachable socket is closed directly. The endpoint sees the
connection go away, so the model stops writing.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

#: Items the worker may read ahead of the consumer.
READ_AHEAD = 64
#: Seconds between the worker's checks for a stop while the queue is full.
_POLL = 0.1
_ITEM, _END, _ERROR = "item", "end", "error"


class DeadlinePassed(Exception):
    """The deadline passed before the stream's next item (or its end) arrived."""


class StreamReader:
    """Reads the stream ``open()`` returns in a daemon thread (see the module docstring).

    ``open``: called in the worker thread; returns an iterable (the openai SDK's
    ``Stream``: its ``response`` is the httpx response; anything with ``close()`` is
    closed when done). An exception raised by ``open`` or by the iteration is raised to
    the consumer by :meth:`items`, unchanged. Start with :meth:`start`; always
    :meth:`close` (also after the end: it is idempotent).
    """

    def __init__(self, open_stream: Callable[[], Any], *, name: str = "citewell-llm-read") -> None:
        self._open = open_stream
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=READ_AHEAD)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "StreamReader":
        """Start reading (opens the stream in the worker thread); returns self."""
        self._thread.start()
        return self

    def items(self, deadline: float | None, *, tick: float | None = None,
              on_tick: Callable[[], None] | None = None) -> Iterator[Any]:
        """The stream's items as they arrive, until its end. ``deadline``: a
        ``time.monotonic()`` value; raises :class:`DeadlinePassed` when it passes before
        the next item or the end arrives (None: wait as long as the stream lasts). Raises
        what opening or reading the stream raised. ``on_tick`` is called every ``tick``
        seconds while nothing arrives (a progress line); it must not raise."""
        while True:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise DeadlinePassed()
            if tick is not None and on_tick is not None:
                wait = tick if wait is None else min(wait, tick)
            try:
                kind, value = self._queue.get(timeout=wait)
            except queue.Empty:
                if on_tick is not None and tick is not None and (deadline is None or time.monotonic() < deadline):
                    on_tick()
                    continue
                raise DeadlinePassed() from None
            if kind == _END:
                return
            if kind == _ERROR:
                raise value
            yield value

    def close(self) -> None:
        """Stop reading and end the HTTP exchange now (see the module docstring); the
        worker thread ends on its own right after."""
        self._stop.set()
        with self._lock:
            stream = self._stream
        if stream is not None and not _shut_down(stream):
            _close_quietly(stream)

    # ---------------------------------------------------------------- worker

    def _run(self) -> None:
        stream = None
        try:
            stream = self._open()
            with self._lock:
                self._stream = stream
            if self._stop.is_set():
                return
            for item in stream:
                if not self._put((_ITEM, item)):
                    return
            self._put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which classifies it
            self._put((_ERROR, exc))
        finally:
            if stream is not None:
                _close_quietly(stream)

    def _put(self, entry: tuple[str, Any]) -> bool:
        """Queue ``entry`` unless the consumer stopped; False when it did."""
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False


def _shut_down(stream: Any) -> bool:
    """Shut down the socket under ``stream``'s HTTP response (both directions); False
    when none can be found."""
    response = getattr(stream, "response", None)
    extensions = getattr(response, "extensions", None) or {}
    network = extensions.get("network_stream") if isinstance(extensions, dict) else None
    sock = None
    try:
        sock = network.get_extra_info("socket") if network is not None else None
    except Exception:  # noqa: BLE001 - a transport without the extension
        sock = None
    if not isinstance(sock, socket.socket):
        return False
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already
    return True


def _close_quietly(stream: Any) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # noqa: BLE001 - closing a broken stream
            pass


__all__ = ["READ_AHEAD", "DeadlinePassed", "StreamReader"]
