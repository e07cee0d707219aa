"""The analytics profile (seeds 003/004): a message's numbered references as RMSReferences.

Shape of :func:`render_reference` (JSON-ready; seed fields first, in the seeds' order)::

    {"id": str,                  # str(citation): "1"                          003/004 (string)
     "citation_idx": str,        # str(citation): "1"                          003/004 (string)
     "search_type": "rms",       # always "rms" (every source is the workspace's own)  003/004
     "chunk_id": str | None,     # the cited chunk (None: a post unknown to the workspace)  003/004
     "text": str | None,         # the chunk's exact text                      003/004
     "text_type": str,           # seed 004's enum: paragraph | table | image | news
                                 # (seed_text_type: a transcript → paragraph, a post → news)  003/004
     "document_id": str,         # Reference.resource_id (absent when unknown)  003/004
     "document_name": str | None,  # the resource's title (the reference's title if deleted)  003/004
     "s3_file_key": str,         # Resource.blob_key (absent when not stored)  003/004
     "external_url": str | None, # metadata external_url; a post's own URL (permalink, else url);
                                 # else None here: the HTTP API fills in a signed link  003/004
     "metadata": ReferenceMetadata,                                            # 004 (keys as 003)
     "custom_metadata": dict | None,   # Resource.custom_metadata ({} → None)   003/004
     # additive (docs/architecture.md "Canonical data": names are the interface, add freely):
     "citation": int,            # the [N] of this reference in its message's text
     "chunk_text_type": str | None,  # citewell's own text_type of the chunk: paragraph, table,
                                 # image, news, transcript or post (None: unknown)
     "chat_message_id": str,     # only when given (the v2 conversation route)
     "start_index": int, "end_index": int,   # first [N] marker in the message text, half-open
     "occurrences": [{"start_index": int, "end_index": int, "support"?: dict}, ...],
     "offset_unit": "codepoint" | "utf16" | "utf8",   # the unit of the three above
     "viewer_url": str}          # only when the caller links references to a viewer
                                 # (render_references(viewer_url=…); the HTTP API signs it)

``ReferenceMetadata`` carries every key of seed 004, in seed 003's order, always present
except the four enum keys without a value (see below)::

    calendar_date: str | None    # ISO date-time, "2026-03-02T00:00:00Z" (a bare date gets T00:00:00Z)
    fiscal_year: int | None
    fiscal_quarter: str | None   # "1".."4" (see below)
    source: str | None           # post: the post's source (reddit …); else metadata source (filing …)
    tickers, company_names, stock_ids: list[str]            # [] when unknown
    document_category, document_subcategory: str   # absent when unknown
    rms_document_type, rms_type: str                 # absent when unknown
    rms_sub_type: str | None
    sector, subsector: list[str]                            # [] when unknown
    publisher: str | None
    countries, regions: list[str]                           # [] when unknown
    participants: list[{name, role?, organization?, participant_type? …}]   # [] when unknown
    tags: list[str]                                         # [] when unknown
    parent_id, parent_document_id: str | None
    creation_timestamp, last_contribution_timestamp: str | None
        # metadata value, else the resource's created_at / updated_at as
        # "2026-03-02T15:49:29+00:00" (UTC, seconds, as in seed 003); None if deleted
    document_tags: list[str]                                # [] when unknown
    creator_name, last_contributor_name: str | None
    offset: list[{top, left, page, width, height}] | None   # PDF chunk boxes: fractions of the
        # displayed page, top-left origin, page 1-based; None for a chunk that is not a PDF's
    blocks: list[int] | None     # transcript chunk: 0-based cue positions; None otherwise

followed by the chunk's remaining provenance (additive, as the chunk stores it):
``source_type``, PDF ``page`` (1-based) and ``page_label``, transcript ``start_time``/
``end_time`` (seconds, ms precision), ``speakers``, ``cue_times``, post ``id``,
``created_at``, ``author``, ``url`` …, text ``char_start``/``char_end`` (code points of the
resource's extracted text). A chunk key never replaces a seed key except ``offset``,
``blocks`` and a post's ``source``, so the seed keys keep the seed's types.

The typed values come from ``Resource.metadata`` and are coerced to the seed's type
(never raising): a list field given a scalar becomes a one-item list, a non-string scalar
its ``str``; a value that cannot be read as the seed's type (a fiscal year that is no
year, a calendar date that is no date) becomes None.

Seed 004 closes some of these keys with an enum (``document_category``,
``document_subcategory``, ``sector``, ``subsector``, ``rms_type``, ``rms_document_type``:
:data:`ENUMS`); citewell stores free strings (docs/architecture.md "Filters": the seeds' enums are
examples, not validation). On this wire each value becomes the enum member it names —
compared case-insensitively and ignoring spaces, ``_`` and ``-`` (``10k`` → ``10-K``,
``earnings call`` → ``earnings_call``), or through :data:`SYNONYMS` (the GICS sector names,
``Information Technology`` → ``Technology``) — and a value that names none is left out
(None, or dropped from a list), so a client validating against seed 004 accepts every
answer. Whenever a value was renamed or left out (and for an unreadable date or year),
the value as stored is kept in the additive ``metadata.as_given`` (``{key: stored value}``;
absent when nothing changed).

Seed 004 declares ``document_category``, ``document_subcategory``, ``rms_type`` and
``rms_document_type`` ``nullable`` with an enum that has no null, which under OpenAPI 3.0
(3.0.3: "other constraints retain their defined behavior") admits no null: a client
validating against it (openapi-core) refuses ``"rms_type": null``. Seed 003's example
prints null there; where the two disagree the declared schema wins (as for
``fiscal_quarter``), so these keys are left out when they have no value (a typed client
reads an absent optional key as unknown, as it would read null).

``text_type`` (seed 004 enum ``paragraph | table | image | news``): a chunk's own type
when it is one of those; a transcript passage is ``paragraph`` (spoken prose), a post is
``news`` (a dated item of a feed, the seed's kind closest to a social post); citewell's
own type stays in the additive ``chunk_text_type``.

``fiscal_quarter`` is a **string** ``"1"``..``"4"``. The two seeds disagree: seed 003's
example prints ``4``; seed 004 declares ``fiscal_quarter: type string``. The schema is the
contract typed clients are generated and validated from (an int fails a string schema;
a string of digits satisfies both a string schema and a loose reader of the example), and
it is the same rule docs/architecture.md "Filters" applies to ``citation_idx`` and ``id``: a number
keeps its seed's (declared) type. The digit form (not ``"Q4"``) is ``str()`` of the stored
integer, i.e. seed 003's value, and the filters accept it back unchanged
(``fiscal_quarter=4``).

Offsets: a stored message keeps its references in some ``offset_unit``;
:func:`render_references` converts the whole message with
:func:`~citewell.cite.offsets.convert_offsets` (exact, validated against the message
text) before rendering, so every offset of the output is in the requested unit and
``text[start_index:end_index] == "[N]"`` in that unit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timezone
from types import MappingProxyType
from typing import Any

from citewell.cite.offsets import OffsetMap, check_unit, convert_offsets
from citewell.models import ENTITY_TYPES, Mention, Message, Reference, Resource
from citewell.wire.enums import ENUMS

#: Seed 004 ReferenceMetadata keys in seed 003's order (``blocks`` only appears in 004).
METADATA_KEYS: tuple[str, ...] = (
    "calendar_date", "fiscal_year", "fiscal_quarter", "source", "tickers", "company_names", "stock_ids",
    "document_category", "document_subcategory", "rms_document_type", "rms_type", "rms_sub_type",
    "sector", "subsector", "publisher", "countries", "regions", "participants", "tags", "parent_id",
    "parent_document_id", "creation_timestamp", "last_contribution_timestamp", "document_tags",
    "creator_name", "last_contributor_name", "offset", "blocks",
)
#: Seed keys whose type is ``array of string`` ([] when unknown).
LIST_KEYS: frozenset[str] = frozenset({
    "tickers", "company_names", "stock_ids", "sector", "subsector", "countries", "regions", "tags",
    "document_tags",
})
#: Seed keys left out when they have no value: seed 004 declares them enums without null.
ABSENT_WHEN_NULL: tuple[str, ...] = ("document_category", "document_subcategory", "rms_document_type", "rms_type")
#: Seed keys that are chunk provenance (null when the chunk's kind has none).
PROVENANCE_KEYS: frozenset[str] = frozenset({"offset", "blocks"})

#: Seed 004's ``RMSReference.text_type`` enum, and how citewell's other types map into it.
SEED_TEXT_TYPES: tuple[str, ...] = ("paragraph", "table", "image", "news")
TEXT_TYPE_MAP: Mapping[str, str] = MappingProxyType({"transcript": "paragraph", "post": "news"})

#: Other names of enum members: the GICS sectors (FinanceBench's ``gics_sector``) that seed
#: 004 names differently; keys compare as :func:`_enum_key` does.
SYNONYMS: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "sector": MappingProxyType({
        "informationtechnology": "Technology", "materials": "Basic Materials",
        "consumerdiscretionary": "Consumer Cyclicals", "communicationservices": "Telecom Services",
        "financials": "Financial Services", "realestate": "Financial Services",
    }),
})

_EMPTY: Mapping[tuple[str, str], Mention] = MappingProxyType({})
_YEAR = re.compile(r"(?i)(?:FY)?\s*(\d{4})")
_QUARTER = re.compile(r"(?i)Q?\s*([1-4])")


# -- seed types ---------------------------------------------------------------------------

def _str(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def _str_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    return [v if isinstance(v, str) else str(v) for v in items if v is not None]


def _fiscal_year(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    m = _YEAR.fullmatch(str(value).strip())
    return int(m.group(1)) if m else None


def _fiscal_quarter(value: Any) -> str | None:
    """``4``, ``"4"``, ``"Q4"`` → ``"4"``; anything else → None (see the module docstring)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    m = _QUARTER.fullmatch(str(value).strip())
    return m.group(1) if m else None


def _calendar_date(value: Any) -> str | None:
    """An ISO date-time in UTC with ``Z`` (``2026-03-02T00:00:00Z``); None when unreadable
    (seed 004 declares ``format: date-time``)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    else:
        text = str(value).strip()
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")



def _timestamp(value: datetime) -> str:
    """Seed 003's timestamp form: ``2026-03-02T15:49:29+00:00``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat(timespec="seconds")


def _participants(value: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in value if isinstance(value, (list, tuple)) else ([] if value is None else [value]):
        if isinstance(item, Mapping):
            out.append(dict(item))
        elif item is not None and item != "":
            out.append({"name": str(item)})
    return out


def _boxes(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    items = value if isinstance(value, (list, tuple)) else [value]
    return [dict(b) if isinstance(b, Mapping) else b for b in items]


def _blocks(value: Any) -> list[int] | None:
    if value is None:
        return None
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[int] = []
    for b in items:
        try:
            out.append(int(b))
        except (TypeError, ValueError):
            continue
    return out


def _enum_key(value: str) -> str:
    """The form enum values compare in: case-folded, without spaces, ``_``, ``-`` or ``.``."""
    return re.sub(r"[\s_\-.]+", "", value).casefold()


_ENUM_INDEX: Mapping[str, Mapping[str, str]] = MappingProxyType({
    key: MappingProxyType({**{_enum_key(v): v for v in members}, **SYNONYMS.get(key, {})})
    for key, members in ENUMS.items()})


def enum_value(key: str, value: str) -> str | None:
    """The member of seed 004's enum of ``key`` that ``value`` names (see the module
    docstring), or None; ``value`` itself for a key without an enum."""
    index = _ENUM_INDEX.get(key)
    if index is None:
        return value
    return index.get(_enum_key(value))


def _seed_value(key: str, value: Any) -> Any:
    """``value`` of seed key ``key`` coerced to the seed's type (None/[] when unknown) and
    into the seed's enum when the key has one."""
    if key in ENUMS:
        if key in LIST_KEYS:
            return [m for m in (enum_value(key, v) for v in _str_list(value)) if m is not None]
        text = _str(value)
        return enum_value(key, text) if text is not None else None
    if key in LIST_KEYS:
        return _str_list(value)
    if key == "fiscal_year":
        return _fiscal_year(value)
    if key == "fiscal_quarter":
        return _fiscal_quarter(value)
    if key == "calendar_date":
        return _calendar_date(value)
    if key == "participants":
        return _participants(value)
    if key == "offset":
        return _boxes(value)
    if key == "blocks":
        return _blocks(value)
    return _str(value)


# -- rendering ----------------------------------------------------------------------------

def render_metadata(ref: Reference, resource: Resource | None,
                    mention: Mention | None = None) -> dict[str, Any]:
    """The ``metadata`` object (ReferenceMetadata, see the module docstring).

    Every key of :data:`METADATA_KEYS` is present with the seed's JSON type (the scalar
    enum keys, :data:`ABSENT_WHEN_NULL`, only when they have a value); the typed
    values come from ``resource.metadata`` (nothing when the resource is deleted), the
    provenance (``offset``, ``blocks``, and the additive keys after them) from the
    reference's chunk metadata; a post's ``source`` is the post's.
    """
    typed: Mapping[str, Any] = resource.metadata if resource is not None else {}
    chunk: Mapping[str, Any] = ref.metadata or {}
    out: dict[str, Any] = {}
    as_given: dict[str, Any] = {}
    for key in METADATA_KEYS:
        raw = chunk.get(key) if key in PROVENANCE_KEYS else typed.get(key)
        out[key] = _seed_value(key, raw)
        if key in _GIVEN_KEYS and raw not in (None, "", []) and _changed(key, raw, out[key]):
            as_given[key] = raw
    if ref.type == "post":
        out["source"] = _str(ref.source or (mention.source if mention else None) or chunk.get("source"))
    if resource is not None:
        if out["creation_timestamp"] is None:
            out["creation_timestamp"] = _timestamp(resource.created_at)
        if out["last_contribution_timestamp"] is None:
            out["last_contribution_timestamp"] = _timestamp(resource.updated_at)
    for key, value in chunk.items():
        if key not in out:
            out[key] = value
    if ref.type == "post" and "id" not in out and ref.id is not None:
        out["id"] = ref.id
    for key in ABSENT_WHEN_NULL:
        if out[key] is None:
            del out[key]
    if as_given:
        out["as_given"] = as_given
    return out


#: Keys whose stored value may not reach the wire as is (enums, and values that may be unreadable).
_GIVEN_KEYS: frozenset[str] = frozenset({*ENUMS, "calendar_date", "fiscal_year", "fiscal_quarter"})


def _changed(key: str, raw: Any, rendered: Any) -> bool:
    """Whether rendering lost or renamed part of the stored value ``raw`` of ``key`` (a
    mere change of type, ``4`` → ``"4"``, a date → its date-time, is not a change)."""
    if rendered is None:
        return True
    if key in ENUMS:
        given = _str_list(raw) if key in LIST_KEYS else [_str(raw)]
        shown = rendered if key in LIST_KEYS else [rendered]
        return given != shown
    return False


def _web_url(value: Any) -> str | None:
    return value if isinstance(value, str) and value.startswith(("http://", "https://")) else None


def external_url(ref: Reference, resource: Resource | None, mention: Mention | None) -> str | None:
    """The URL a reader opens for ``ref`` that needs no signing, or None: for a post its own
    page (``permalink``, else ``url``: a link post's ``url`` is the page it links to), from
    the mention or the chunk's metadata; for a document its metadata ``external_url`` (the
    filing on EDGAR …). The HTTP API signs a download or viewer link when this is None."""
    if ref.type == "post":
        chunk = ref.metadata or {}
        extra = (mention.model_extra or {}) if mention is not None else {}
        for candidate in (extra.get("permalink"), chunk.get("permalink"), (mention.url if mention else None),
                          chunk.get("url")):
            if _web_url(candidate):
                return candidate
        return None
    return _web_url(resource.metadata.get("external_url")) if resource is not None else None


def seed_text_type(text_type: str | None, ref_type: str | None = None) -> str:
    """``text_type`` in seed 004's enum (:data:`SEED_TEXT_TYPES`): itself when a member,
    a transcript passage ``paragraph``, a post ``news`` (see the module docstring); an
    unknown type is ``news`` for a post reference (``ref_type`` ``"post"``), else
    ``paragraph``."""
    if text_type in SEED_TEXT_TYPES:
        return text_type
    if text_type in TEXT_TYPE_MAP:
        return TEXT_TYPE_MAP[text_type]
    return "news" if ref_type == "post" else "paragraph"


def _offsets(ref: Reference, offsets: str, text: str | None) -> dict[str, Any]:
    """``start_index``/``end_index``/``occurrences``/``offset_unit`` of ``ref`` in ``offsets``."""
    src = check_unit(ref.offset_unit or "codepoint")
    occurrences = [o.model_dump(mode="json", exclude_none=True) for o in ref.occurrences or []]
    start, end = ref.start_index, ref.end_index
    if src != offsets:
        if text is None:
            raise ValueError(f"reference offsets are in {src}: converting them to {offsets} "
                             "needs the message text")
        omap = OffsetMap(text)

        def conv(i: int | None) -> int | None:
            return None if i is None else omap.convert(i, src, offsets)

        start, end = conv(start), conv(end)
        for occ in occurrences:
            occ["start_index"] = conv(occ["start_index"])
            occ["end_index"] = conv(occ["end_index"])
    return {"start_index": start, "end_index": end, "occurrences": occurrences, "offset_unit": offsets}


def render_reference(ref: Reference, resource: Resource | None, mention: Mention | None = None, *,
                     chat_message_id: str | None = None, offsets: str = "codepoint",
                     text: str | None = None) -> dict[str, Any]:
    """One RMSReference (seeds 003/004) for a numbered reference (see the module docstring).

    ``resource``: the cited resource as stored now, or None when it was deleted — the
    reference then renders from its own fields (``document_id`` = ``ref.resource_id``,
    ``document_name`` = ``ref.resource_title``, seed-typed nulls/[] elsewhere); it never
    raises for that. ``mention``: the post behind a post reference (its URL becomes
    ``external_url``). ``chat_message_id``: added when given. ``offsets`` (``codepoint``,
    ``utf16``, ``utf8``): the unit of the rendered ``start_index``/``end_index``/
    ``occurrences``; when it differs from ``ref.offset_unit`` (None = codepoint) the
    message ``text`` is needed to convert.

    Raises ``ValueError`` for an unknown unit, an entity (unnumbered) reference, a needed
    conversion without ``text``, or an offset not on a character boundary of ``text``.
    """
    check_unit(offsets)
    if ref.type in ENTITY_TYPES or ref.citation is None:
        raise ValueError(f"a {ref.type!r} reference has no number: it is not an RMSReference")
    number = str(ref.citation)
    custom = dict(resource.custom_metadata) if resource is not None and resource.custom_metadata else None
    document_id = ref.resource_id if ref.resource_id is not None else (resource.id if resource else None)
    chunk_text = ref.text if ref.text is not None else (mention.text if mention is not None else None)
    own_type = ref.text_type or ("post" if ref.type == "post" else None)
    out: dict[str, Any] = {
        "id": number,
        "citation_idx": number,
        "search_type": "rms",
        "chunk_id": ref.chunk_id,
        "text": chunk_text,
        "text_type": seed_text_type(own_type, ref.type),
        "document_id": document_id,
        "document_name": resource.title if resource is not None else ref.resource_title,
        "s3_file_key": resource.blob_key if resource is not None else None,
        "external_url": external_url(ref, resource, mention),
        "metadata": render_metadata(ref, resource, mention),
        "custom_metadata": custom,
    }
    for key in ("document_id", "s3_file_key"):  # seed 004: a string when present (not nullable)
        if out[key] is None:
            del out[key]
    out["citation"] = ref.citation
    out["chunk_text_type"] = own_type
    if chat_message_id is not None:
        out["chat_message_id"] = chat_message_id
    out.update(_offsets(ref, offsets, text))
    return out


def _mention_for(ref: Reference, mentions: Mapping[tuple[str, str], Mention]) -> Mention | None:
    if ref.type != "post" or ref.source is None or ref.id is None or not mentions:
        return None
    return mentions.get((ref.source, ref.id)) or mentions.get((ref.source.lower(), ref.id))


def numbered_references(message: Message) -> list[Reference]:
    """The numbered (chunk and post) references of an assistant message in citation order;
    ``[]`` for any other message."""
    if message.role != "assistant":
        return []
    numbered = [r for r in message.references if r.type not in ENTITY_TYPES and r.citation is not None]
    return sorted(numbered, key=lambda r: r.citation or 0)


def conversation_citations(messages: Sequence[Message]) -> list[tuple[Message, Reference]]:
    """Every numbered reference of a conversation, message by message in history order and
    by citation within a message: the reference at position ``k`` (0-based) has the
    conversation's ``citation_idx`` ``str(k + 1)``.

    Why: each answer numbers its own citations ``[1]``, ``[2]`` … (rule 2), so a number
    alone names one reference per answer; the conversation route and the viewer's
    ``?conversation_id=&citation_idx=`` address each reference of the whole conversation
    by this one running index instead (issue 15). The numbering of earlier answers never
    changes when a later turn is added; it can move only when a turn that was still
    pending settles after a later one of the same conversation (the signed ``viewer_url``,
    by message, never does)."""
    return [(message, ref) for message in messages for ref in numbered_references(message)]


def render_references(message: Message, resources: Mapping[str, Resource],
                      mentions: Mapping[tuple[str, str], Mention] = _EMPTY, *,
                      chat_message_id: str | None = None, offsets: str = "codepoint",
                      links: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """The RMSReferences of ``message``: its numbered references in citation order
    (entity references are skipped; a user message gives ``[]``).

    ``resources``: resource id → :class:`~citewell.models.Resource` (a missing id renders
    as a deleted resource); ``mentions``: (source, id) → :class:`~citewell.models.Mention`
    for post references (source as stored or lower-cased). ``offsets``: the unit of every
    rendered offset; the whole message is converted first (exact). ``chat_message_id`` is
    added to every reference when given. ``links``: called with each rendered reference,
    to add links in place (the HTTP API adds a signed ``viewer_url`` and, where
    ``external_url`` is None, a signed download or viewer link).

    Raises ``ValueError`` for an unknown unit or a corrupt offset in the message.
    """
    check_unit(offsets)
    numbered = numbered_references(message)
    if not numbered:
        return []
    if any((r.offset_unit or message.offset_unit) != offsets for r in numbered):
        message = convert_offsets(message, offsets)
        numbered = numbered_references(message)
    out = []
    for ref in numbered:
        if ref.offset_unit is None:  # stated by the message: converted above, or already ``offsets``
            ref = ref.model_copy(update={"offset_unit": offsets})
        resource = resources.get(ref.resource_id) if ref.resource_id is not None else None
        rendered = render_reference(ref, resource, _mention_for(ref, mentions),
                                    chat_message_id=chat_message_id, offsets=offsets, text=message.text)
        if links is not None:
            links(rendered)
        out.append(rendered)
    return out


__all__ = [
    "ABSENT_WHEN_NULL",
    "ENUMS",
    "LIST_KEYS",
    "METADATA_KEYS",
    "SEED_TEXT_TYPES",
    "SYNONYMS",
    "TEXT_TYPE_MAP",
    "conversation_citations",
    "enum_value",
    "external_url",
    "numbered_references",
    "render_metadata",
    "render_reference",
    "render_references",
    "seed_text_type",
]
