"""Transcript ingestion: WebVTT and SubRip files into time-stamped passages.

Public entry points (the extractor interface of :mod:`citewell.extraction`):

- :func:`extract_vtt` ``(data: bytes, *, name: str) -> Extraction`` (``text/vtt``)
- :func:`extract_srt` ``(data: bytes, *, name: str) -> Extraction``
  (``application/x-subrip``)

and the lower-level :func:`parse_cues` (cues with millisecond times, warnings, header
metadata) and :func:`group_cues` (cues into passages), which the extractors compose.

Pipeline
--------
1. Decode UTF-8 (a BOM is dropped). Undecodable bytes raise ``TEXT_ENCODING``; an empty
   or whitespace-only file raises ``EMPTY_FILE``.
2. Every *timing line* of the raw file (a line containing ``-->``; WebVTT ``NOTE``
   lines excepted) is read with a lenient timestamp reader (hour-less ``MM:SS.mmm``,
   one-digit hours, ``0:0:0.0``, hours past 24, ``,`` or ``.`` before the fraction,
   fractions of 1-9 digits) and rewritten in the canonical form of its format before
   the text is handed to the library (webvtt-py for WebVTT, ``srt`` for SubRip), so the
   library never rejects a timestamp a player would accept. A timing line that cannot
   be read, or whose end is before its start, is removed with its cue block.
3. The cues the library returns are aligned, in order, with the timing lines counted in
   step 2; every timing line without a cue is reported as a ``CUE_DROPPED`` warning
   ``{"code", "message", "line"}`` (``line`` = 1-based line of its timing line). No cue
   at all raises ``VTT_MALFORMED`` / ``SRT_MALFORMED``.
4. Cue text: tags stripped (``<c>``, ``<i>``, ``<b>``, inline timestamps, ``<v …>``,
   SubRip ``{\\an8}`` overrides), HTML entities unescaped, lines joined with a space,
   whitespace collapsed; a voice-tagged cue is written ``Speaker: text``. In rolling
   captions (YouTube auto-captions) a cue's leading line that repeats the previous cue's
   last line is dropped, and cues left empty are skipped.
5. Cues are grouped into passages (:func:`group_cues`); each passage becomes one chunk
   whose text is its cues, one per line. Chunks are joined with ``"\\n\\n"``. A single
   cue longer than a passage may be (``GroupingConfig.max_words``) is cut at sentence ends
   into pieces of at most that many words (:func:`~citewell.ingest.pieces.bounded_spans`);
   every piece keeps the cue's times, position and speakers, with additive ``part`` and
   ``parts`` (a 10 MB cue would otherwise be one passage that every question reading it
   splits into sentences).

Times everywhere are integers in milliseconds inside this module and seconds (float,
millisecond precision) in chunk and extraction metadata.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from citewell.digits import whole_number
from citewell.errors import IngestError
from citewell.text.sentences import word_count
from citewell.extraction import ChunkDraft, Extraction, TextBuilder
from citewell.ingest.pieces import bounded_spans

__all__ = [
    "Cue",
    "GroupingConfig",
    "TranscriptParse",
    "extract_srt",
    "extract_vtt",
    "group_cues",
    "parse_cues",
    "parse_timestamp_ms",
]

TranscriptFormat = Literal["vtt", "srt"]

VTT_MEDIA_TYPE = "text/vtt"
SRT_MEDIA_TYPE = "application/x-subrip"

# --------------------------------------------------------------------------------------
# Timestamps
# --------------------------------------------------------------------------------------

# [hours:]minutes:seconds[(.|,)fraction]; hours and minutes of any width.
_TIMESTAMP = r"(?:\d+:)?\d+:\d+(?:[.,]\d+)?"
_TIMESTAMP_PARTS = re.compile(r"(?:(\d+):)?(\d+):(\d+)(?:[.,](\d+))?")
# webvtt-py reads hours of up to 10 digits; nothing real comes near that
_MAX_HOURS = 10**10
_TIMING_LINE = re.compile(rf"^\s*({_TIMESTAMP})[ \t]*-->[ \t]*({_TIMESTAMP})(?=\s|$)(.*)$")


def parse_timestamp_ms(value: str) -> int | None:
    """Read one cue timestamp leniently; return milliseconds, or ``None`` if unreadable.

    Accepted: ``HH:MM:SS.mmm`` with any number of hour digits (``25:00:00.000`` is
    90000000 ms), one-digit fields (``1:04:13.283``, ``0:0:0.0``), hour-less
    ``MM:SS.mmm`` (minutes may then exceed 59, as some tools write ``75:30.000``),
    ``,`` instead of ``.`` (SubRip), and a fraction of 1-9 digits read as a decimal
    fraction of a second (``.5`` is 500 ms, ``.007`` is 7 ms, ``.3001`` is truncated
    to 300 ms). Seconds must be below 60, and minutes too when hours are given.
    """
    match = _TIMESTAMP_PARTS.fullmatch(value.strip())
    if not match:
        return None
    hours_s, minutes_s, seconds_s, fraction = match.groups()
    minutes, seconds = whole_number(minutes_s, max_digits=12), whole_number(seconds_s)
    if minutes is None or seconds is None:
        return None
    if seconds > 59 or (hours_s is not None and minutes > 59):
        return None
    if fraction is not None and len(fraction) > 9:
        return None
    millis = int((fraction or "0")[:3].ljust(3, "0"))
    hours = whole_number(hours_s, max_digits=10) if hours_s is not None else 0
    if hours is None or hours >= _MAX_HOURS:
        return None
    return ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis


def _format_timestamp(ms: int, fmt: TranscriptFormat) -> str:
    """Canonical timestamp of ``fmt``: ``HH:MM:SS.mmm`` (vtt) or ``HH:MM:SS,mmm`` (srt)."""
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    sep = "." if fmt == "vtt" else ","
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{sep}{millis:03d}"


def _seconds(ms: int) -> float:
    """Milliseconds as float seconds (millisecond precision)."""
    return round(ms / 1000.0, 3)


# --------------------------------------------------------------------------------------
# Parsed cues
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cue:
    """One cue as parsed from the file.

    - ``index``: 0-based position among all cues the parser returned, in file order
      (this is what chunk ``blocks`` list);
    - ``start_ms``/``end_ms``: times in integer milliseconds;
    - ``text``: the cleaned one-line text (``"Speaker: text"`` when voice-tagged),
      ``""`` when nothing is left (such cues are in no chunk);
    - ``speakers``: voice-tag annotations in order of appearance;
    - ``line``: 1-based line of the cue's timing line in the raw file (``None`` if the
      parser returned a cue that could not be matched to one);
    - ``identifier``: the cue id (WebVTT) or index (SubRip), if any.
    """

    index: int
    start_ms: int
    end_ms: int
    text: str
    speakers: tuple[str, ...] = ()
    line: int | None = None
    identifier: str | None = None

    @property
    def start(self) -> float:
        """Start time in seconds (float, millisecond precision)."""
        return _seconds(self.start_ms)

    @property
    def end(self) -> float:
        """End time in seconds (float, millisecond precision)."""
        return _seconds(self.end_ms)


@dataclass
class TranscriptParse:
    """The result of :func:`parse_cues`.

    ``cues``: every cue the parser returned (empty-text ones included), in file order;
    ``warnings``: ``CUE_DROPPED`` dicts ``{"code", "message", "line"}``;
    ``metadata``: header metadata (WebVTT ``Key: value`` header lines, keys lower-cased,
    ``Kind`` stored as ``caption_kind``).
    """

    format: TranscriptFormat
    cues: list[Cue] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def duration_ms(self) -> int:
        """Latest cue end in milliseconds (0 without cues)."""
        return max((c.end_ms for c in self.cues), default=0)


@dataclass(frozen=True)
class _TimingLine:
    line: int  # 1-based
    start_ms: int
    end_ms: int


# --------------------------------------------------------------------------------------
# Decoding and normalisation
# --------------------------------------------------------------------------------------


def _decode(data: bytes | str, *, name: str) -> str:
    """UTF-8 text of ``data`` without BOM, line endings normalised to ``\\n``."""
    if isinstance(data, str):
        text = data
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise IngestError(
                f"{name}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                code="TEXT_ENCODING",
            ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise IngestError(f"{name}: the file is empty", code="EMPTY_FILE")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _is_index_line(line: str) -> bool:
    return line.strip().isdigit()


def _is_timing_candidate(line: str, fmt: TranscriptFormat) -> bool:
    """A raw line counted as a timing line: it contains ``-->`` (not a WebVTT NOTE)."""
    if "-->" not in line:
        return False
    return not (fmt == "vtt" and line.startswith("NOTE"))


def _cue_block_span(lines: list[str], i: int, fmt: TranscriptFormat) -> tuple[int, int]:
    """Half-open line range of the cue block whose timing line is ``lines[i]``."""
    start = i
    if i >= 1 and lines[i - 1].strip() and "-->" not in lines[i - 1]:
        if fmt == "srt":
            if _is_index_line(lines[i - 1]):
                start = i - 1
        elif i - 1 >= 1 and not lines[i - 2].strip():
            start = i - 1  # a WebVTT cue identifier (alone on its line after a blank)
    end = i + 1
    while end < len(lines) and lines[end].strip() and "-->" not in lines[end]:
        if (
            fmt == "srt"
            and _is_index_line(lines[end])
            and end + 1 < len(lines)
            and "-->" in lines[end + 1]
        ):
            break
        end += 1
    return start, end


def _normalise(
    text: str, fmt: TranscriptFormat
) -> tuple[str, list[_TimingLine], list[dict[str, Any]], list[str]]:
    """Rewrite every readable timing line canonically; drop the blocks of unreadable ones.

    Returns ``(normalised text, readable timing lines, CUE_DROPPED warnings, raw lines)``.
    SubRip cues not preceded by a blank line get one (before their index line), so the
    ``srt`` package does not merge them into the previous cue.
    """
    lines = text.split("\n")
    out = list(lines)
    removed: set[int] = set()
    blank_before: set[int] = set()
    timings: list[_TimingLine] = []
    warnings: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        if not _is_timing_candidate(line, fmt):
            continue
        match = _TIMING_LINE.match(line)
        start_ms = parse_timestamp_ms(match.group(1)) if match else None
        end_ms = parse_timestamp_ms(match.group(2)) if match else None
        problem: str | None = None
        if start_ms is None or end_ms is None or match is None:
            problem = f"its timing line could not be read: {line.strip()[:80]!r}"
        elif end_ms < start_ms:
            problem = f"its end time is before its start time: {line.strip()[:80]!r}"
        if problem is not None:
            warnings.append(_dropped(i + 1, problem))
            block_start, block_end = _cue_block_span(lines, i, fmt)
            removed.update(range(block_start, block_end))
            continue
        assert match is not None and start_ms is not None and end_ms is not None
        rest = match.group(3)
        canonical = f"{_format_timestamp(start_ms, fmt)} --> {_format_timestamp(end_ms, fmt)}"
        out[i] = canonical + (rest if rest.strip() else "")
        timings.append(_TimingLine(i + 1, start_ms, end_ms))
        if fmt == "srt":
            k = i - 1 if i >= 1 and _is_index_line(lines[i - 1]) else i
            if k >= 1 and lines[k - 1].strip():
                blank_before.add(k)
    result: list[str] = []
    for i, line in enumerate(out):
        if i in removed:
            continue
        if i in blank_before:
            result.append("")
        result.append(line)
    return "\n".join(result), timings, warnings, lines


def _dropped(line: int, reason: str) -> dict[str, Any]:
    return {"code": "CUE_DROPPED", "message": f"cue at line {line} was dropped: {reason}", "line": line}


# --------------------------------------------------------------------------------------
# Cue text
# --------------------------------------------------------------------------------------

_VOICE_TAG = re.compile(r"<v(?:\.[^\s>]*)?(?:[ \t]+([^>]*))?>")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>|</>|<\d+(?::\d+)+(?:[.,]\d+)?>")
_INLINE_TIMESTAMP = re.compile(r"<\d+(?::\d+)+(?:[.,]\d+)?>")
# SubRip files often carry ASS/SSA override codes such as {\an8} or {\i1}
_ASS_OVERRIDE = re.compile(r"\{\\[^{}]*\}")
_WHITESPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"[.!?…。！？][\"'”’)\]]*$")


def _clean(raw: str) -> str:
    """Tags stripped, entities unescaped, whitespace collapsed."""
    return _WHITESPACE.sub(" ", html.unescape(_TAG.sub("", raw))).strip()


def _clean_lines(raw_lines: list[str]) -> list[str]:
    """Cleaned non-empty lines of a cue."""
    return [c for c in (_clean(line) for line in raw_lines) if c]


def _cue_text(raw_lines: list[str]) -> tuple[str, tuple[str, ...]]:
    """One-line text of a cue and its speakers (``Speaker: text`` per voice span)."""
    joined = "\n".join(raw_lines)
    segments: list[tuple[str | None, str]] = []
    speaker: str | None = None
    pos = 0
    for match in _VOICE_TAG.finditer(joined):
        segments.append((speaker, joined[pos : match.start()]))
        annotation = _clean(match.group(1) or "")
        speaker = annotation or None
        pos = match.end()
    segments.append((speaker, joined[pos:]))
    merged: list[tuple[str | None, str]] = []
    for spk, raw in segments:
        text = _clean(raw)
        if not text:
            continue
        if merged and merged[-1][0] == spk:
            merged[-1] = (spk, f"{merged[-1][1]} {text}")
        else:
            merged.append((spk, text))
    speakers: list[str] = []
    for spk, _ in merged:
        if spk and spk not in speakers:
            speakers.append(spk)
    text = " ".join(f"{spk}: {txt}" if spk else txt for spk, txt in merged)
    return text, tuple(speakers)


def _is_rolling(raw_cues: list[list[str]]) -> bool:
    """Whether cues look like rolling captions (each repeating the previous line)."""
    if any(_INLINE_TIMESTAMP.search(line) for lines in raw_cues for line in lines):
        return True
    multi = repeats = 0
    previous: list[str] = []
    for lines in raw_cues:
        cleaned = _clean_lines(lines)
        if len(cleaned) >= 2:
            multi += 1
            if previous and cleaned[0] == previous[-1]:
                repeats += 1
        previous = cleaned
    return multi >= 2 and repeats * 2 >= multi


def _build_cues(raw: list[tuple[int, int, list[str], str | None, int | None]]) -> list[Cue]:
    """Cues from ``(start_ms, end_ms, raw lines, identifier, line)`` in file order."""
    rolling = _is_rolling([r[2] for r in raw])
    cues: list[Cue] = []
    previous_last: str | None = None
    for index, (start_ms, end_ms, raw_lines, identifier, line) in enumerate(raw):
        lines = list(raw_lines)
        cleaned = _clean_lines(lines)
        if rolling and cleaned and previous_last is not None and cleaned[0] == previous_last:
            # drop raw lines up to and including the one that repeats the previous cue
            while lines:
                first = _clean(lines.pop(0))
                if first:
                    break
        text, speakers = _cue_text(lines)
        cues.append(Cue(index, start_ms, end_ms, text, speakers, line, identifier))
        previous_last = cleaned[-1] if cleaned else None
    return cues


# --------------------------------------------------------------------------------------
# Format-specific parsing (libraries)
# --------------------------------------------------------------------------------------

_HEADER_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)[ \t]*:[ \t]*(\S.*?)\s*$")
_WEBVTT_SIGNATURE = re.compile(r"^WEBVTT(?:[ \t]|$)")


def _vtt_header_metadata(lines: list[str]) -> dict[str, Any]:
    """``Key: value`` lines of the WebVTT header block (keys lower-cased)."""
    meta: dict[str, Any] = {}
    for line in lines[1:]:
        if not line.strip() or "-->" in line:
            break
        match = _HEADER_FIELD.match(line)
        if not match:
            continue
        key = match.group(1).lower().replace("-", "_")
        if key == "kind":
            key = "caption_kind"
        meta.setdefault(key, match.group(2))
    return meta


def _timestamp_ms_strict(value: str, *, name: str) -> int:
    """Milliseconds of a timestamp the library returned (always canonical in practice)."""
    ms = parse_timestamp_ms(value)
    if ms is None:  # pragma: no cover - the library only returns canonical times
        raise IngestError(f"{name}: unreadable cue time {value!r}", code="VTT_MALFORMED")
    return ms


def _library_vtt(text: str, *, name: str) -> list[tuple[int, int, list[str], str | None]]:
    import webvtt

    try:
        parsed = webvtt.WebVTT.from_buffer(io.StringIO(text))
    except Exception as exc:  # webvtt-py raises its own errors on malformed files
        raise IngestError(f"{name}: not a readable WebVTT file ({exc})", code="VTT_MALFORMED") from None
    return [
        (
            _timestamp_ms_strict(c.start, name=name),
            _timestamp_ms_strict(c.end, name=name),
            list(c.lines),
            c.identifier or None,
        )
        for c in parsed.captions
    ]


def _library_srt(text: str, *, name: str) -> list[tuple[int, int, list[str], str | None]]:
    import srt

    try:
        subtitles = list(srt.parse(text, ignore_errors=True))
    except Exception as exc:  # srt raises on timestamps it cannot convert
        raise IngestError(f"{name}: not a readable SubRip file ({exc})", code="SRT_MALFORMED") from None
    one_ms = timedelta(milliseconds=1)
    return [
        (
            s.start // one_ms,
            s.end // one_ms,
            [_ASS_OVERRIDE.sub("", line) for line in s.content.split("\n")],
            None if s.index is None else str(s.index),
        )
        for s in subtitles
    ]


def _align(
    library: list[tuple[int, int, list[str], str | None]], timings: list[_TimingLine]
) -> tuple[list[tuple[int, int, list[str], str | None, int | None]], list[dict[str, Any]]]:
    """Match the library's cues to the counted timing lines, in order.

    A timing line no cue matches is reported ``CUE_DROPPED``; a cue no timing line
    matches (should not happen) is kept with ``line`` None.
    """
    matched: list[tuple[int, int, list[str], str | None, int | None]] = []
    warnings: list[dict[str, Any]] = []
    j = 0
    reason = "the parser did not return it (malformed or merged cue block)"
    for start_ms, end_ms, lines, identifier in library:
        k = j
        while k < len(timings) and (timings[k].start_ms, timings[k].end_ms) != (start_ms, end_ms):
            k += 1
        if k == len(timings):
            matched.append((start_ms, end_ms, lines, identifier, None))
            continue
        warnings.extend(_dropped(t.line, reason) for t in timings[j:k])
        matched.append((start_ms, end_ms, lines, identifier, timings[k].line))
        j = k + 1
    warnings.extend(_dropped(t.line, reason) for t in timings[j:])
    return matched, warnings


def parse_cues(data: bytes | str, *, fmt: TranscriptFormat, name: str = "transcript") -> TranscriptParse:
    """Parse a WebVTT (``fmt="vtt"``) or SubRip (``fmt="srt"``) file into cues.

    Returns a :class:`TranscriptParse`: every cue the library returned (times in ms,
    cleaned text, speakers, raw line), ``CUE_DROPPED`` warnings for every timing line
    that produced no cue, and header metadata.

    Raises :class:`~citewell.errors.IngestError` with ``TEXT_ENCODING`` (not UTF-8),
    ``EMPTY_FILE`` (empty or whitespace-only), ``VTT_MALFORMED`` (no ``WEBVTT``
    signature or no valid cue) or ``SRT_MALFORMED`` (no valid cue).
    """
    text = _decode(data, name=name)
    malformed = "VTT_MALFORMED" if fmt == "vtt" else "SRT_MALFORMED"
    if fmt == "vtt" and not _WEBVTT_SIGNATURE.match(text.split("\n", 1)[0]):
        raise IngestError(f"{name}: a WebVTT file must start with the line 'WEBVTT'", code=malformed)
    normalised, timings, unreadable, raw_lines = _normalise(text, fmt)
    counted = len(timings) + len(unreadable)
    if counted == 0:
        raise IngestError(f"{name}: no valid cue: no cue timing line ('-->') found", code=malformed)
    matched: list[tuple[int, int, list[str], str | None, int | None]] = []
    dropped: list[dict[str, Any]] = []
    if timings:
        library = _library_vtt(normalised, name=name) if fmt == "vtt" else _library_srt(normalised, name=name)
        matched, dropped = _align(library, timings)
    if not matched:
        first = sorted(unreadable + dropped, key=lambda w: w["line"])[0]["message"]
        raise IngestError(
            f"{name}: no valid cue: none of its {counted} cue timing line(s) gave a valid cue ({first})",
            code=malformed,
        )
    warnings = sorted(unreadable + dropped, key=lambda w: w["line"])
    metadata = _vtt_header_metadata(raw_lines) if fmt == "vtt" else {}
    return TranscriptParse(format=fmt, cues=_build_cues(matched), warnings=warnings, metadata=metadata)


# --------------------------------------------------------------------------------------
# Grouping cues into passages
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupingConfig:
    """How cues are grouped into passages (words = whitespace-separated tokens).

    - a silence of at least ``silence_seconds`` between a cue's start and the latest
      end so far in the passage always starts a new passage;
    - a passage never grows past ``max_words`` or ``max_seconds`` (start of its first
      cue to its latest end) unless a single cue alone does; when a cue would push it
      past either limit, the passage is cut after its last sentence-ending cue that
      leaves at least ``min_words`` (else right there) and the rest carries over;
    - once a passage has at least ``target_words`` words, or ``min_words`` words and
      ``target_seconds`` of time, it ends at the next cue that ends a sentence.
    """

    min_words: int = 40
    target_words: int = 90
    max_words: int = 150
    target_seconds: float = 45.0
    max_seconds: float = 90.0
    silence_seconds: float = 1.0


def _words(cue: Cue) -> int:
    return word_count(cue.text)


def _ends_sentence(cue: Cue) -> bool:
    return bool(_SENTENCE_END.search(cue.text))


def group_cues(cues: list[Cue], config: GroupingConfig | None = None) -> list[list[Cue]]:
    """Group the cues that have text into passages (lists of cues in file order).

    See :class:`GroupingConfig` for the rule. Cues without text are left out.
    """
    cfg = config or GroupingConfig()
    silence_ms = round(cfg.silence_seconds * 1000)
    max_ms = round(cfg.max_seconds * 1000)
    target_ms = round(cfg.target_seconds * 1000)
    groups: list[list[Cue]] = []
    current: list[Cue] = []

    def fits(group: list[Cue], cue: Cue) -> bool:
        words = sum(_words(c) for c in group) + _words(cue)
        span = max(max(c.end_ms for c in group), cue.end_ms) - group[0].start_ms
        return words <= cfg.max_words and span <= max_ms

    for cue in cues:
        if not cue.text:
            continue
        if not current:
            current = [cue]
            continue
        latest_end = max(c.end_ms for c in current)
        if cue.start_ms - latest_end >= silence_ms or cue.start_ms < current[0].start_ms:
            # a pause, or time running backwards (cues out of order): a passage is one stretch of time
            groups.append(current)
            current = [cue]
            continue
        if not fits(current, cue):
            cut = None
            words = 0
            for k, c in enumerate(current):
                words += _words(c)
                if _ends_sentence(c) and words >= cfg.min_words:
                    cut = k
            if cut is not None and cut < len(current) - 1:
                groups.append(current[: cut + 1])
                current = current[cut + 1 :]
                if not fits(current, cue):
                    groups.append(current)
                    current = []
            else:
                groups.append(current)
                current = []
            current.append(cue)
            continue
        words = sum(_words(c) for c in current)
        span = latest_end - current[0].start_ms
        ready = words >= cfg.target_words or (words >= cfg.min_words and span >= target_ms)
        if ready and _ends_sentence(current[-1]):
            groups.append(current)
            current = [cue]
            continue
        current.append(cue)
    if current:
        groups.append(current)
    return groups


# --------------------------------------------------------------------------------------
# Extractors
# --------------------------------------------------------------------------------------


def _extraction(parsed: TranscriptParse, *, media_type: str, name: str,
                config: GroupingConfig | None = None) -> Extraction:
    cfg = config or GroupingConfig()
    groups = group_cues(parsed.cues, cfg)
    if not groups:
        raise IngestError(f"{name}: the transcript's cues have no text", code="EMPTY_FILE")
    builder = TextBuilder()
    chunks: list[ChunkDraft] = []
    for position, group in enumerate(groups):
        if position:
            builder.sep("\n\n")
        text = "\n".join(c.text for c in group)
        start, end = builder.add(text)
        speakers: list[str] = []
        for c in group:
            speakers.extend(s for s in c.speakers if s not in speakers)
        metadata = {
            "source_type": "transcript",
            "start_time": group[0].start,
            "end_time": _seconds(max(c.end_ms for c in group)),
            "blocks": [c.index for c in group],
            "speakers": speakers,
            "cue_times": [[c.start, _seconds(c.end_ms)] for c in group],
        }
        # only a lone cue can be longer than a passage (group_cues never grows one past it)
        spans = bounded_spans(text, max_words=cfg.max_words) if len(group) == 1 and _words(group[0]) > cfg.max_words \
            else []
        if len(spans) > 1:
            for part, (s, e) in enumerate(spans):
                chunks.append(ChunkDraft(text=text[s:e], char_start=start + s, char_end=start + e,
                                         text_type="transcript", metadata={**metadata, "part": part,
                                                                          "parts": len(spans)}))
            continue
        chunks.append(ChunkDraft(text=text, char_start=start, char_end=end, text_type="transcript",
                                 metadata=metadata))
    metadata: dict[str, Any] = {
        "cue_count": len(parsed.cues),
        "duration": _seconds(parsed.duration_ms),
        **parsed.metadata,
    }
    return Extraction(
        kind="transcript",
        media_type=media_type,
        text=builder.text(),
        chunks=chunks,
        warnings=list(parsed.warnings),
        metadata=metadata,
    )


def extract_vtt(data: bytes, *, name: str) -> Extraction:
    """Extract a WebVTT file (``kind`` transcript, ``media_type`` ``text/vtt``).

    ``data``: the file's bytes (UTF-8, BOM optional); ``name``: its file name, used in
    messages. Each chunk is a passage of consecutive cues (:func:`group_cues`) with
    ``metadata = {"source_type": "transcript", "start_time": s, "end_time": s,
    "blocks": [cue positions], "speakers": [...], "cue_times": [[start, end], …]}``
    (seconds, float, ms precision; ``cue_times[i]`` belongs to line ``i`` of the chunk
    text and to ``blocks[i]``, so a quoted sentence can be located to its cues).
    ``Extraction.metadata``: ``cue_count``, ``duration`` (seconds) and header fields
    such as ``language``. ``warnings``: ``CUE_DROPPED`` with ``line``.

    Raises :class:`~citewell.errors.IngestError`: ``TEXT_ENCODING``, ``EMPTY_FILE``,
    ``VTT_MALFORMED``.
    """
    return _extraction(parse_cues(data, fmt="vtt", name=name), media_type=VTT_MEDIA_TYPE, name=name)


def extract_srt(data: bytes, *, name: str) -> Extraction:
    """Extract a SubRip file (``kind`` transcript, ``media_type`` ``application/x-subrip``).

    Same shapes as :func:`extract_vtt`; raises ``TEXT_ENCODING``, ``EMPTY_FILE`` or
    ``SRT_MALFORMED``.
    """
    return _extraction(parse_cues(data, fmt="srt", name=name), media_type=SRT_MEDIA_TYPE, name=name)
