"""Posts JSONL: one resource (the dataset) with one Mention per post and its chunks.

A ``.jsonl`` file is a posts file when its first non-blank line is a JSON object with
a string ``source``, an ``id`` (string or integer, stored as a string) and a string
``text`` (docs/architecture.md "Posts"). Other JSONL files are not posts files and are skipped by
the caller (:func:`is_posts_file`). Bad later lines are skipped with a
``LINE_SKIPPED`` warning naming the line; a file with no valid post is
``JSONL_MALFORMED``.

A post of at most :data:`~citewell.ingest.pieces.MAX_WORDS` words is one chunk; a longer
one is cut at sentence ends into pieces of at most that many words
(:func:`~citewell.ingest.pieces.bounded_spans`), so no question ever reads more than one
piece's worth of a post per passage. Every piece carries the post's metadata (it cites
the post by ``(source, id)``) with additive ``part``/``parts``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import IngestError
from ..extraction import ChunkDraft, Extraction, MentionDraft, TextBuilder
from .pieces import MAX_WORDS, bounded_spans
from .text import decode_text, jsonl_lines

NOT_A_POSTS_FILE = "not_a_posts_file"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _loads(line: str) -> Any:
    """``json.loads`` that never raises anything but ``ValueError`` and returns valid text:
    escaped lone surrogates (``"\\ud800"``) become U+FFFD, too-deep nesting is an error."""
    try:
        return _clean(json.loads(line))
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


def _clean(obj: Any) -> Any:
    if isinstance(obj, str):
        return _LONE_SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, dict):
        return {_clean(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


#: Post fields that are text in the Mention shape (a number, object or list the source
#: gave is written as text: ``42``, ``{"name": "x"}`` as JSON).
TEXT_FIELDS = ("created_at", "author", "url", "permalink", "title", "kind")


def as_text(value: Any) -> str:
    """``value`` as text: strings as they are, objects and lists as compact JSON, other
    scalars with ``str`` (``True`` → ``"True"``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _post_key(obj: Any) -> tuple[str, str] | None:
    """Return ``(source, id)`` if ``obj`` has the shape of a post, else ``None``."""
    if not isinstance(obj, dict):
        return None
    source, pid, text = obj.get("source"), obj.get("id"), obj.get("text")
    if not isinstance(source, str) or not source.strip() or not isinstance(text, str):
        return None
    if isinstance(pid, bool) or not isinstance(pid, (str, int)) or str(pid) == "":
        return None
    return source.strip(), str(pid)


def is_posts_file(data: bytes, *, name: str) -> bool:
    """True when the first non-blank line of ``data`` is a post object.

    Raises ``TEXT_ENCODING``/``EMPTY_FILE`` for undecodable or empty data, and
    ``JSONL_MALFORMED`` when the first non-blank line is not JSON at all.
    """
    text = decode_text(data, name=name)
    for number, line in enumerate(jsonl_lines(text), start=1):
        if line.strip():
            try:
                obj = _loads(line)
            except ValueError as exc:
                raise IngestError(f"{name}: line {number} is not JSON ({getattr(exc, 'msg', exc)})",
                                  code="JSONL_MALFORMED", line=number) from exc
            return _post_key(obj) is not None
    return False


def extract_posts(data: bytes, *, name: str) -> Extraction:
    """Extract a posts JSONL file.

    Returns an :class:`Extraction` of kind ``post``: per post one chunk (text_type
    ``post``, the post's ``text`` verbatim), or for a post of more than
    :data:`~citewell.ingest.pieces.MAX_WORDS` words its pieces in order (each a slice of
    the text, with additive ``part``/``parts``), all with ``metadata = {"source_type":
    "post", "source", "id", "created_at", "author", "url", "title"?}``; and one
    :class:`MentionDraft` per post carrying every field the file gave and the range of its
    chunks. A (source, id)
    repeated in the file keeps its last line (earlier ones get ``LINE_SKIPPED``).
    Raises ``JSONL_MALFORMED`` if no line is a valid post, or if the first line is not
    a post (call :func:`is_posts_file` first to skip such files).
    """
    text = decode_text(data, name=name)
    warnings: list[dict[str, Any]] = []
    posts: dict[tuple[str, str], tuple[int, dict[str, Any], str]] = {}
    first_seen = False
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        try:
            obj = _loads(line)
        except ValueError as exc:
            reason = getattr(exc, "msg", str(exc))
            if not first_seen:
                raise IngestError(f"{name}: line {number} is not JSON ({reason})",
                                  code="JSONL_MALFORMED", line=number) from exc
            warnings.append({"code": "LINE_SKIPPED", "line": number,
                             "message": f"line {number} is not JSON ({reason}); skipped"})
            continue
        key = _post_key(obj)
        if key is None:
            if not first_seen:
                raise IngestError(f"{name}: line {number} is not a post (needs string source, "
                                  "id and string text)", code="JSONL_MALFORMED", line=number)
            warnings.append({"code": "LINE_SKIPPED", "line": number,
                             "message": f"line {number} is not a post (needs source, id, text); skipped"})
            continue
        first_seen = True
        unique = (key[0].lower(), key[1])  # (source, id) is unique with the source lower-cased
        if unique in posts:
            earlier = posts.pop(unique)[0]
            warnings.append({"code": "LINE_SKIPPED", "line": earlier,
                             "message": f"line {earlier}: post {key[0]}/{key[1]} appears again on "
                                        f"line {number}; the later line is kept"})
        posts[unique] = (number, obj, key[0])
    if not posts:
        raise IngestError(f"{name}: no valid post in the file", code="JSONL_MALFORMED")

    builder = TextBuilder()
    chunks: list[ChunkDraft] = []
    mentions: list[MentionDraft] = []
    for (_, pid), (_, obj, source) in sorted(posts.items(), key=lambda kv: kv[1][0]):
        if chunks:
            builder.sep("\n\n")
        body = obj["text"]
        start, end = builder.add(body)
        fields = dict(obj)
        fields["source"], fields["id"] = source, pid
        meta: dict[str, Any] = {"source_type": "post", "source": source, "id": pid}
        for key in TEXT_FIELDS:
            if obj.get(key) is not None:
                meta[key] = fields[key] = as_text(obj[key])
        first = len(chunks)
        spans = bounded_spans(body, max_words=MAX_WORDS) if len(body) > MAX_WORDS else []
        if len(spans) <= 1:  # the post whole (also a blank one: a post may have no words)
            chunks.append(ChunkDraft(text=body, char_start=start, char_end=end, text_type="post", metadata=meta))
        else:
            for part, (s, e) in enumerate(spans):
                chunks.append(ChunkDraft(text=body[s:e], char_start=start + s, char_end=start + e, text_type="post",
                                         metadata={**meta, "part": part, "parts": len(spans)}))
        mentions.append(MentionDraft(source=source, id=pid, fields=fields, chunk_position=first,
                                     chunk_count=len(chunks) - first))
    return Extraction(kind="post", media_type="application/jsonl", text=builder.text(), chunks=chunks,
                      warnings=warnings, mentions=mentions, metadata={"post_count": len(mentions)})
