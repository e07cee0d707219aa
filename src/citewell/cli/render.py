"""Plain-text rendering of an answer and its sources for the terminal.

Each numbered source is printed as ``[N] title, where`` followed by an excerpt: up to
:data:`EXCERPT_CHARS` characters of the passage around the sentence it supports (the
whole passage with ``full=True``). *where* is the page (PDF), ``m:ss–m:ss`` (``h:mm:ss``
past an hour) for transcripts, ``source/id`` for posts, a character range for text.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..generate import unescape_quote
from ..models import Message, Reference
from ..text.tables import column_header

EXCERPT_CHARS = 300
_MARKER = re.compile(r"\s*\[\d+\]")
_SPACE = re.compile(r"\s+")


#: Bidirectional overrides, embeddings, isolates and marks: they reorder what follows on
#: screen (``evil\u202egnp.exe`` shows as ``evilexe.png``).
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
#: Invisible characters that make one name look like another (zero width, BOM, line and
#: paragraph separators).
_INVISIBLE = "\u200b-\u200d\u2028\u2029\u2060\ufeff"
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_BIDI}]")
_CONTROL_LINE = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}{_INVISIBLE}]")


def safe(text: str, *, one_line: bool = False) -> str:
    """Make ingested text harmless on a terminal: control characters (ESC sequences,
    OSC titles, bells, carriage returns …) and bidirectional overrides are shown as
    ``\\x1b``/``\\u202e``-style escapes; with ``one_line`` (a name: a file, a title, a
    path) newlines, tabs and invisible characters too."""
    pattern = _CONTROL_LINE if one_line else _CONTROL
    return pattern.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                       text)


def format_time(seconds: float) -> str:
    """``75.5`` → ``1:15``; ``3617`` → ``1:00:17`` (whole seconds, rounded down)."""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _flat_with_map(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs collapsed to one space, and for each flat character
    the index of the original character it came from."""
    flat: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if ch.isspace():
            if flat and flat[-1] != " ":
                flat.append(" ")
                origin.append(i)
            continue
        flat.append(ch)
        origin.append(i)
    return "".join(flat), origin


def cue_range(ref: Reference, sentence: str) -> tuple[float, float] | None:
    """Start and end (seconds) of the cues of a transcript passage that hold ``sentence``.

    Uses ``metadata.cue_times`` (one ``[start, end]`` per line of the chunk text); None
    when the passage has no cue times or the sentence is not found in it.
    """
    meta = ref.metadata or {}
    times = meta.get("cue_times")
    text = ref.text or ""
    if not times or not sentence:
        return None
    flat, origin = _flat_with_map(text)
    probe = _SPACE.sub(" ", sentence).strip().rstrip(".!?…")
    pos = flat.find(probe) if probe else -1
    if pos < 0:
        return None
    first = text.count("\n", 0, origin[pos])
    last = text.count("\n", 0, origin[pos + len(probe) - 1])
    if last >= len(times):
        return None
    return times[first][0], max(t[1] for t in times[first:last + 1])


def where(ref: Reference, sentence: str | None = None) -> str:
    """Human location of a reference: ``p. 48``, ``59:59–1:00:17``, ``reddit/t3_x``, ``chars 0–120``.

    For a transcript, ``sentence`` (the cited sentence) narrows the time range to the
    cues that hold it.
    """
    meta = ref.metadata or {}
    moment = cue_range(ref, sentence) if sentence and "start_time" in meta else None
    if moment is not None:
        return f"{format_time(moment[0])}–{format_time(moment[1])}"
    if ref.type == "post" or meta.get("source_type") == "post":
        return f"{ref.source or meta.get('source')}/{ref.id or meta.get('id')}"
    if "page" in meta:
        label = meta.get("page_label")
        return f"p. {meta['page']}" + (f" (printed {label})" if label and str(label) != str(meta["page"]) else "")
    if "start_time" in meta:
        return f"{format_time(meta['start_time'])}–{format_time(meta.get('end_time', meta['start_time']))}"
    if "char_start" in meta:
        return f"chars {meta['char_start']}–{meta['char_end']}"
    return ""


def _cited_sentences(message: Message, ref: Reference) -> list[str]:
    out: list[str] = []
    for part in message.parts:
        ids = [s.chunk_id for s in ([part.source] if part.source else []) + list(part.sources)]
        if ref.chunk_id and ref.chunk_id in ids:
            sentence = unescape_quote(_MARKER.sub("", part.text)).strip()
            if sentence:
                out.append(sentence)
    return out


def excerpt(message: Message, ref: Reference, *, full: bool = False, limit: int = EXCERPT_CHARS) -> str:
    """The passage text to show under a source: whole (``full``) or a window of at most
    ``limit`` characters centred on the first cited sentence found in it (for a statement
    row restated as ``Label: value (period), …``, on its label)."""
    text = ref.text or ""
    if full:
        return text.strip()
    flat = _SPACE.sub(" ", text).strip()
    start, end = 0, min(len(flat), limit)
    for sentence in _cited_sentences(message, ref):
        probe = _SPACE.sub(" ", sentence).rstrip(".!?")
        pos = flat.find(probe)
        if pos < 0 and ": " in probe:  # a statement row restated "Label: value (period), …": find its label
            probe = probe.split(": ", 1)[0]
            pos = flat.find(probe)
        if pos >= 0:
            span = min(len(probe), limit)
            start = max(0, min(pos - (limit - span) // 2, len(flat) - limit))
            end = min(len(flat), start + limit)
            break
    prefix = ""
    if ref.text_type == "table":  # the years or units a row's numbers belong to
        header = _SPACE.sub(" ", column_header(text, ref.metadata) or "").strip()
        at = flat.find(header) if header else -1
        if 0 <= at < end and at + len(header) > start:  # the window cuts into the header: show it whole
            start = at
        elif header and header not in flat[start:end]:
            prefix = f"{header} "
    return prefix + ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")


def render_answer(message: Message, *, full: bool = False) -> str:
    """The answer text, a blank line, then one block per numbered source (the message's
    warnings are not part of it: the CLI writes them to stderr)."""
    lines = [safe(message.text.strip()), ""]
    numbered = [r for r in message.references if r.citation is not None]
    if numbered:
        lines.append("Sources:")
        for ref in numbered:
            title = ref.resource_title or (f"{ref.source} post" if ref.type == "post" else "")
            file_name = (ref.model_extra or {}).get("file_name")
            if file_name:  # the file name tells a .vtt from its .srt twin
                title = file_name if title == Path(file_name).stem else f"{title} ({file_name})"
            head = f"[{ref.citation}] {safe(title, one_line=True)}"
            cited = _cited_sentences(message, ref)
            # every cited sentence of a transcript passage has its own moment
            loc = ", ".join(dict.fromkeys(where(ref, sentence) for sentence in cited)) if cited else where(ref)
            lines.append(head + (f", {safe(loc, one_line=True)}" if loc else ""))
            body = excerpt(message, ref, full=full)
            if body:
                lines.extend("    " + safe(line) for line in body.splitlines())
    return "\n".join(lines).rstrip() + "\n"
