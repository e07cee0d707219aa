"""A Server-Sent Events parser (the WHATWG "event stream" interpretation), sans I/O.

:class:`SSEDecoder` takes the bytes of a ``text/event-stream`` answer in chunks of any
size and returns the events they complete:

- UTF-8, a leading BOM dropped; a multi-byte character split between chunks is fine;
- lines end with CRLF, LF or CR (also a CR at the end of one chunk and its LF at the start
  of the next);
- ``:`` starts a comment line (ignored: servers send them as keep-alives);
- ``field: value`` (one space after the colon dropped), a line without a colon is a field
  with an empty value; the fields are ``event``, ``data`` (repeated lines join with
  ``\\n``), ``id`` (ignored when it contains NUL) and ``retry`` (digits only: the
  reconnection delay in milliseconds); other fields are ignored;
- a blank line dispatches the event; an event without ``data`` is not dispatched;
- at the end of the stream an event without its blank line is discarded
  (:meth:`SSEDecoder.close`).

Two ids are kept apart: :attr:`ServerSentEvent.id` is the ``id`` the event itself carried
(None when it had none), while :attr:`SSEDecoder.last_event_id` is the spec's "last event
ID string" (set when an event is dispatched, and it persists across events): the value to
send as ``Last-Event-ID`` when reconnecting. An id line of an event cut off before its
blank line never becomes it.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSentEvent:
    """A dispatched event: ``event`` (default ``"message"``), ``data`` (lines joined by
    ``\\n``), ``id`` (its own ``id`` field, or None) and ``retry`` (ms, when it set one)."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Incremental parser: :meth:`feed` bytes, get the completed events; :meth:`close` at
    the end of the stream. One decoder per connection (``last_event_id`` may seed it)."""

    def __init__(self, last_event_id: str | None = None) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._started = False
        self._buffer = ""  # text of the line being read
        self._after_cr = False  # the last character fed was a CR (an LF right after it is swallowed)
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None  # the id field of the event being read
        self._id_buffer: str | None = last_event_id  # the spec's "last event ID buffer"
        self._retry: int | None = None
        #: The id of the last *dispatched* event (or the seed): send it as ``Last-Event-ID``.
        #: An event cut off before its blank line does not count (it was never delivered).
        self.last_event_id: str | None = last_event_id
        #: The last ``retry`` the server asked for, in milliseconds (None: never asked).
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Parse ``chunk``; return the events it completed (possibly none)."""
        text = self._utf8.decode(chunk)
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        return self._lines(text)

    def close(self) -> list[ServerSentEvent]:
        """End of stream: flush the decoder; an unterminated event is discarded (per the
        spec), so this returns the events of a last line ended by a lone CR at most."""
        events = self._lines(self._utf8.decode(b"", final=True))
        self._buffer = ""
        self._event, self._data, self._id, self._retry = "", [], None, None
        self._id_buffer = self.last_event_id
        return events

    def _lines(self, text: str) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        if not text:
            return events
        if self._after_cr and text[0] == "\n":
            text = text[1:]
        self._after_cr = False
        start = 0
        n = len(text)
        while start < n:
            cr, lf = text.find("\r", start), text.find("\n", start)
            if cr < 0 and lf < 0:
                self._buffer += text[start:]
                break
            end = lf if cr < 0 or (0 <= lf < cr) else cr
            line = self._buffer + text[start:end]
            self._buffer = ""
            if text[end] == "\r":
                if end + 1 < n:
                    start = end + 2 if text[end + 1] == "\n" else end + 1
                else:
                    self._after_cr = True
                    start = n
            else:
                start = end + 1
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\x00" not in value:  # an id with NUL is ignored
            self._id = self._id_buffer = value
        elif name == "retry" and value.isascii() and value.isdigit():  # anything else is ignored
            self._retry = self.retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        data, event, event_id, retry = self._data, self._event, self._id, self._retry
        self._event, self._data, self._id, self._retry = "", [], None, None
        self.last_event_id = self._id_buffer
        if not data:
            return None
        return ServerSentEvent(event=event or "message", data="\n".join(data), id=event_id, retry=retry)


__all__ = ["SSEDecoder", "ServerSentEvent"]
