"""The viewer's HTML: one citation shown where it lives (complete without JavaScript; with it,
the web app's viewer module, ``/app/js/viewer-main.js``, replaces it with the app's view of
the same citation, line-level highlight included).

:func:`render_page` fills :data:`PAGE` (a :class:`string.Template`) with the body of one
kind of source:

- **pdf** — each cited page as an image (the page image route, the reference's boxes
  drawn in) with the passage text beside it;
- **transcript** — the cited cues (times ``start``–``end``, seconds) between a few cues
  before and after, and, when the resource's metadata or custom metadata names its media
  (``media_url``, an ``http(s)`` URL given at upload: citewell stores transcripts, not
  recordings), an ``<audio>`` (or ``<video>`` for a video file or a ``media_type``
  ``video/…``) element whose source carries the media fragment
  ``#t=<start>,<end>`` so the player starts at the cited time;
- **post** — the post: title, author, source and community, time, text, every numeric
  engagement field (score, likes, num_comments …) and its link;
- **text** (and a deleted resource) — the passage between its neighbours.

Every value that comes from users or files (titles, file names, post text, metadata) is
escaped with :func:`html.escape` (quotes too) before it reaches the template, and the
only links written are ``http(s)`` URLs (a ``javascript:`` URL in a post is shown as
text, never linked). The answer carries a Content-Security-Policy that allows only this
server's own scripts (no inline script) (:data:`SECURITY_HEADERS`).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from string import Template
from typing import Any
from urllib.parse import urlsplit

from ..models import Chunk, Mention, Reference, Resource

#: Headers of every viewer answer: scripts, styles, images and connections of this server only
#: (no inline script: the page works without any, and the web app's viewer module, when it
#: runs, shows the same citation through ``/rms/viewer/data``), media from http(s); no
#: Referer (signed links must not leak to linked sites).
SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' blob:; "
                               "media-src http: https:; style-src 'self' 'unsafe-inline'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'self'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, no-store",
}

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: Transcript cues shown before and after the cited ones.
CONTEXT_CUES = 3
VIDEO_SUFFIXES = (".mp4", ".m4v", ".mov", ".webm", ".ogv", ".mkv")
#: Post fields that are not engagement even when numeric.
_NOT_ENGAGEMENT = frozenset({"id", "source", "text", "url", "author", "created_at", "dataset_id", "chunk_id",
                             "title", "permalink", "kind", "community"})

PAGE = Template("""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>[$number] $title · citewell viewer</title>
<script type="module" src="/app/js/viewer-main.js"></script>
<style>
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d1d1f; background: #f4f4f5; }
header { background: #fff; border-bottom: 1px solid #ddd; padding: 12px 24px; }
header h1 { font-size: 18px; margin: 0; }
header .num { color: #b45309; margin-right: .4em; }
header dl { display: flex; flex-wrap: wrap; gap: 4px 20px; margin: 6px 0 0; font-size: 13px; color: #555; }
header dt { font-weight: 600; } header dd { margin: 0 0 0 4px; }
header dl div { display: flex; }
main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(260px, 2fr); gap: 24px; padding: 24px; }
main.single { grid-template-columns: minmax(0, 1fr); max-width: 900px; margin: 0 auto; }
figure { margin: 0 0 24px; } figure img { width: 100%; height: auto; background: #fff; box-shadow: 0 1px 4px #0003; }
figcaption { font-size: 13px; color: #555; margin-top: 4px; }
aside, article, section.transcript, section.text { background: #fff; padding: 16px 20px; border-radius: 6px; box-shadow: 0 1px 3px #0002; }
aside { align-self: start; position: sticky; top: 16px; }
blockquote { margin: 0; padding: 8px 12px; border-left: 4px solid #f59e0b; background: #fffbeb; white-space: pre-wrap; }
ol.cues { list-style: none; padding: 0; } ol.cues li { padding: 4px 8px; display: flex; gap: 12px; }
ol.cues li.context { color: #777; } ol.cues li.cited { background: #fffbeb; border-left: 4px solid #f59e0b; }
ol.cues time { font-variant-numeric: tabular-nums; color: #555; white-space: nowrap; }
.post .text, .context-text { white-space: pre-wrap; } .context-text { color: #777; }
.engagement { display: flex; gap: 16px; flex-wrap: wrap; font-size: 13px; color: #555; }
.note { color: #777; font-size: 13px; }
audio, video { width: 100%; margin: 8px 0; }
</style>
</head>
<body>
<header>
<h1><span class="num">[$number]</span>$title</h1>
<dl>$facts</dl>
</header>
<main class="$layout">
$body
</main>
</body>
</html>
""")


def e(value: Any) -> str:
    """``value`` as text, HTML-escaped (``& < > " '``); None is the empty string. A lone
    surrogate (a file name that was not UTF-8) becomes U+FFFD, so the page always encodes."""
    if value is None:
        return ""
    return html.escape(_LONE_SURROGATE.sub("\ufffd", str(value)), quote=True)


def safe_url(value: Any) -> str | None:
    """``value`` when it is an absolute ``http(s)`` URL with a host, else None (never a
    ``javascript:`` or ``data:`` URL)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    return text if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def clock(seconds: float) -> str:
    """``seconds`` as ``H:MM:SS.mmm`` (``2791.5`` → ``0:46:31.500``)."""
    ms = round(float(seconds) * 1000)
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h}:{m:02d}:{s:02d}.{ms:03d}"


def _seconds(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


@dataclass
class Cited:
    """What the viewer shows: the message's ``reference`` numbered ``number``, its
    ``resource`` (None when deleted since), the post behind a post reference
    (``mention``), the resource's current chunks (for context), the URLs of the cited pages'
    images (``page_images``: 1-based page → URL) and a link to the original bytes
    (``download_url``, or None)."""

    number: str
    reference: Reference
    resource: Resource | None = None
    mention: Mention | None = None
    chunks: Sequence[Chunk] = ()
    page_images: Mapping[int, str] = field(default_factory=dict)
    download_url: str | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """The reference's chunk metadata (provenance)."""
        return dict(self.reference.metadata or {})

    @property
    def kind(self) -> str:
        """``pdf``, ``transcript``, ``post`` or ``text``."""
        kind = self.metadata.get("source_type") or (self.resource.kind if self.resource else None)
        if self.reference.type == "post":
            return "post"
        return str(kind) if kind in ("pdf", "transcript", "post", "text") else "text"

    @property
    def title(self) -> str:
        """The document's title (the reference's copy when the resource is gone)."""
        if self.resource is not None:
            return self.resource.title
        return self.reference.resource_title or "(deleted document)"


def cited_pages(reference: Reference) -> list[int]:
    """The 1-based pages of a PDF reference: those of its ``offset`` boxes, else its
    ``page``; ``[]`` for other references."""
    meta = reference.metadata or {}
    pages: list[int] = []
    for box in meta.get("offset") or []:
        if isinstance(box, Mapping):
            try:
                pages.append(int(box.get("page")))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
    if not pages and meta.get("page") is not None:
        try:
            pages.append(int(meta["page"]))
        except (TypeError, ValueError):
            pass
    return sorted({p for p in pages if p >= 1})


def page_boxes(reference: Reference, page: int) -> list[dict[str, Any]]:
    """The reference's boxes on ``page`` (fractions of the displayed page, top-left origin)."""
    out = []
    for box in (reference.metadata or {}).get("offset") or []:
        if isinstance(box, Mapping):
            try:
                if int(box.get("page")) == page:  # type: ignore[arg-type]
                    out.append(dict(box))
            except (TypeError, ValueError):
                continue
    return out


def _facts(cited: Cited) -> str:
    """The header's facts as ``<div><dt>…</dt><dd>…</dd></div>`` items, escaped."""
    meta, res = cited.metadata, cited.resource
    facts: list[tuple[str, str]] = []  # (label, HTML)

    def add(label: str, value: Any) -> None:
        facts.append((label, e(", ".join(map(str, value)) if isinstance(value, list) else value)))

    if res is not None and res.file_name != res.title:
        add("File", res.file_name)
    if cited.kind == "pdf":
        pages = cited_pages(cited.reference)
        if pages:
            add("Page" if len(pages) == 1 else "Pages", pages)
        if meta.get("page_label"):
            add("Printed page", meta["page_label"])
    if cited.kind == "transcript":
        start, end = _seconds(meta.get("start_time")), _seconds(meta.get("end_time"))
        if start is not None and end is not None:
            add("Time", f"{clock(start)} – {clock(end)}")
    typed = res.metadata if res is not None else {}
    for key, label in (("publisher", "Publisher"), ("calendar_date", "Date"), ("fiscal_year", "Fiscal year"),
                       ("tickers", "Tickers")):
        if typed.get(key) not in (None, "", []):
            add(label, typed[key])
    if cited.download_url:
        facts.append(("Original", f'<a href="{e(cited.download_url)}" rel="noopener noreferrer">download</a>'))
    return "".join(f"<div><dt>{e(label)}</dt><dd>{value}</dd></div>" for label, value in facts)


def _passage(cited: Cited) -> str:
    return f"<blockquote>{e(cited.reference.text or '')}</blockquote>"


def _pdf_body(cited: Cited) -> tuple[str, str]:
    figures = []
    for page, url in sorted(cited.page_images.items()):
        label = f"Page {page}"
        figures.append(f'<figure><img src="{e(url)}" alt="{e(label)} of {e(cited.title)}, the cited passage '
                       f'highlighted"><figcaption>{e(label)}</figcaption></figure>')
    if not figures:
        figures.append('<p class="note">The original document is no longer stored: only the cited text is '
                       'shown.</p>')
    aside = f'<aside><h2>Cited passage</h2>{_passage(cited)}</aside>'
    return f'<section class="pages">{"".join(figures)}</section>{aside}', ""


def _cues(chunk_text: str, times: Any) -> list[tuple[float | None, float | None, str]]:
    """A transcript chunk's cues: its lines paired with its ``cue_times``."""
    lines = chunk_text.split("\n")
    pairs = times if isinstance(times, list) else []
    out = []
    for i, line in enumerate(lines):
        start = end = None
        if i < len(pairs) and isinstance(pairs[i], (list, tuple)) and len(pairs[i]) == 2:
            start, end = _seconds(pairs[i][0]), _seconds(pairs[i][1])
        out.append((start, end, line))
    return out


def _neighbours(cited: Cited) -> tuple[Chunk | None, Chunk | None]:
    """The chunks just before and after the cited passage in the resource as stored now
    (by chunk id, else by transcript time or text position); ``(None, None)`` when unknown."""
    chunks = list(cited.chunks)
    if not chunks:
        return None, None
    ref = cited.reference
    index = next((i for i, c in enumerate(chunks) if c.id == ref.chunk_id), None)
    if index is not None:
        return (chunks[index - 1] if index > 0 else None), (chunks[index + 1] if index + 1 < len(chunks) else None)
    meta = cited.metadata
    start, end = _seconds(meta.get("start_time")), _seconds(meta.get("end_time"))
    if start is not None and end is not None:
        before = [c for c in chunks if (_seconds(c.metadata.get("end_time")) or 0) <= start]
        after = [c for c in chunks if (_seconds(c.metadata.get("start_time")) or -1) >= end]
        return (before[-1] if before else None), (after[0] if after else None)
    return None, None


def _cue_item(cls: str, start: float | None, end: float | None, text: str) -> str:
    when = f'<time>{e(clock(start))}</time>' if start is not None else "<time></time>"
    body = f"<mark>{e(text)}</mark>" if cls == "cited" else e(text)
    title = f' title="{e(clock(start))} – {e(clock(end))}"' if start is not None and end is not None else ""
    return f'<li class="{cls}"{title}>{when}<span>{body}</span></li>'


def _media_field(cited: Cited, name: str) -> Any:
    """``name`` of the resource's metadata, else of its custom metadata (where unknown
    upload metadata keys such as ``media_url`` land)."""
    if cited.resource is None:
        return None
    value = cited.resource.metadata.get(name)
    return value if value not in (None, "") else (cited.resource.custom_metadata or {}).get(name)


def recording(cited: Cited) -> tuple[str, bool] | None:
    """The recording of a cited transcript: ``(its URL without a fragment, whether it is a
    video)``, a video when its ``media_type`` is ``video/…`` or its URL's path ends in one
    of :data:`VIDEO_SUFFIXES`; None without a safe ``media_url`` (:func:`safe_url`)."""
    url = safe_url(_media_field(cited, "media_url"))
    if url is None:
        return None
    base = url.split("#", 1)[0]
    media_type = str(_media_field(cited, "media_type") or "").lower()
    return base, media_type.startswith("video/") or urlsplit(base).path.lower().endswith(VIDEO_SUFFIXES)


def _media(cited: Cited, start: float | None, end: float | None) -> str:
    found = recording(cited)
    if found is None:
        return ""
    base, video = found
    fragment = ""
    if start is not None:
        fragment = f"#t={start:g}" + (f",{end:g}" if end is not None and end > start else "")
    tag = "video" if video else "audio"
    return (f'<{tag} controls preload="metadata" src="{e(base + fragment)}">'
            f'<a href="{e(base)}" rel="noopener noreferrer">the recording</a></{tag}>')


def _transcript_body(cited: Cited) -> tuple[str, str]:
    meta = cited.metadata
    start, end = _seconds(meta.get("start_time")), _seconds(meta.get("end_time"))
    before, after = _neighbours(cited)
    items: list[str] = []
    if before is not None:
        for cue in _cues(before.text, before.metadata.get("cue_times"))[-CONTEXT_CUES:]:
            items.append(_cue_item("context", *cue))
    for cue in _cues(cited.reference.text or "", meta.get("cue_times")):
        items.append(_cue_item("cited", *cue))
    if after is not None:
        for cue in _cues(after.text, after.metadata.get("cue_times"))[:CONTEXT_CUES]:
            items.append(_cue_item("context", *cue))
    when = ""
    if start is not None and end is not None:
        when = (f'<p>Cited from <time>{e(clock(start))}</time> to <time>{e(clock(end))}</time> '
                f'(<span class="start">{start:.3f}</span> s – <span class="end">{end:.3f}</span> s)</p>')
    speakers = meta.get("speakers")
    who = f'<p class="note">Speakers: {e(", ".join(map(str, speakers)))}</p>' if speakers else ""
    body = (f'<section class="transcript">{when}{who}{_media(cited, start, end)}'
            f'<ol class="cues">{"".join(items)}</ol></section>')
    return body, "single"


def _engagement(mention: Mention | None, meta: Mapping[str, Any]) -> list[tuple[str, Any]]:
    fields: dict[str, Any] = {}
    if mention is not None:
        fields.update(mention.model_extra or {})
    for key, value in meta.items():
        fields.setdefault(key, value)
    return [(k, v) for k, v in fields.items()
            if k not in _NOT_ENGAGEMENT and isinstance(v, (int, float)) and not isinstance(v, bool)]


def post_field(cited: Cited, name: str) -> Any:
    """One field of a cited post, as the viewers show it: the stored mention's own field,
    else the field the posts file gave (the mention's extra fields), else the chunk's
    metadata; None when none of them holds a non-empty value."""
    mention = cited.mention
    value = getattr(mention, name, None) if mention is not None else None
    if value in (None, "") and mention is not None:
        value = (mention.model_extra or {}).get(name)
    return value if value not in (None, "") else cited.metadata.get(name)


def post_links(cited: Cited) -> list[str]:
    """The links of a cited post that are safe to show (:func:`safe_url`): its ``url``,
    then its ``permalink`` when it differs (:func:`post_field`)."""
    links: list[str] = []
    for candidate in (post_field(cited, "url"), post_field(cited, "permalink")):
        url = safe_url(candidate)
        if url and url not in links:
            links.append(url)
    return links


def _post_body(cited: Cited) -> tuple[str, str]:
    meta, mention, ref = cited.metadata, cited.mention, cited.reference
    pick = partial(post_field, cited)

    text = mention.text if mention is not None else (ref.text or "")
    source = ref.source or pick("source")
    title = pick("title")
    byline = [f'<span class="author">{e(pick("author") or "unknown author")}</span>',
              f'<span class="source">{e(source)}</span>']
    if pick("community"):
        byline.append(f'<span class="community">{e(pick("community"))}</span>')
    if pick("created_at"):
        byline.append(f'<time datetime="{e(pick("created_at"))}">{e(pick("created_at"))}</time>')
    stats = "".join(f"<div><dt>{e(k)}</dt><dd>{e(v)}</dd></div>" for k, v in _engagement(mention, meta))
    links = post_links(cited)
    link_html = "".join(f'<p><a href="{e(u)}" rel="noopener noreferrer nofollow">{e(u)}</a></p>' for u in links)
    heading = f"<h2>{e(title)}</h2>" if title and str(title).strip() != text.strip() else ""
    body = (f'<article class="post">{heading}<p class="byline">{" · ".join(byline)}</p>'
            f'<div class="text">{e(text)}</div><dl class="engagement">{stats}</dl>{link_html}'
            f'<p class="note">Post {e(ref.id or pick("id"))}</p></article>')
    return body, "single"


def _text_body(cited: Cited) -> tuple[str, str]:
    before, after = _neighbours(cited)
    parts = []
    if before is not None:
        parts.append(f'<p class="context-text">{e(before.text)}</p>')
    parts.append(_passage(cited))
    if after is not None:
        parts.append(f'<p class="context-text">{e(after.text)}</p>')
    if cited.resource is None:
        parts.append('<p class="note">The document is no longer stored: only the cited text is shown.</p>')
    return f'<section class="text">{"".join(parts)}</section>', "single"


def render_page(cited: Cited) -> str:
    """The viewer's HTML document for one citation (see the module docstring)."""
    kind = cited.kind
    if kind == "pdf":
        body, layout = _pdf_body(cited)
    elif kind == "transcript":
        body, layout = _transcript_body(cited)
    elif kind == "post":
        body, layout = _post_body(cited)
    else:
        body, layout = _text_body(cited)
    return PAGE.substitute(number=e(cited.number), title=e(cited.title), facts=_facts(cited), layout=layout,
                           body=body)


__all__ = ["PAGE", "SECURITY_HEADERS", "Cited", "cited_pages", "clock", "e", "page_boxes", "post_field",
           "post_links", "recording", "render_page", "safe_url"]
