"""The analytics profile (seeds 003/004): RMSReferences of a message, field by field."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from citewell import Chunk, Engine, Mention, Message, Passage, Resource
from citewell.cite import InMemoryResolver, cite
from citewell.cite.offsets import convert_offsets
from citewell.profiles import analytics

CREATED = datetime(2026, 3, 2, 15, 49, 29, 123000, tzinfo=timezone.utc)
UPDATED = datetime(2026, 3, 3, 8, 0, 0, tzinfo=timezone.utc)
BOX = {"top": 0.683, "left": 0.076, "page": 8, "width": 0.561, "height": 0.229}

#: The seed keys whose JSON type is "array of string" / nullable string / other.
LIST_KEYS = {"tickers", "company_names", "stock_ids", "sector", "subsector", "countries", "regions", "tags",
             "document_tags"}
STRING_KEYS = {"calendar_date", "fiscal_quarter", "source", "document_category", "document_subcategory",
               "rms_document_type", "rms_type", "rms_sub_type", "publisher", "parent_id",
               "parent_document_id", "creation_timestamp", "last_contribution_timestamp", "creator_name",
               "last_contributor_name"}
SEED_004_KEYS = LIST_KEYS | STRING_KEYS | {"fiscal_year", "participants", "offset", "blocks"}
#: seed 003's example order (blocks is seed 004's only)
SEED_003_ORDER = ["calendar_date", "fiscal_year", "fiscal_quarter", "source", "tickers", "company_names",
                  "stock_ids", "document_category", "document_subcategory", "rms_document_type", "rms_type",
                  "rms_sub_type", "sector", "subsector", "publisher", "countries", "regions", "participants",
                  "tags", "parent_id", "parent_document_id", "creation_timestamp",
                  "last_contribution_timestamp",
                  "document_tags", "creator_name", "last_contributor_name", "offset"]


def resource(rid: str, kind: str, title: str, *, metadata: dict[str, Any] | None = None,
             custom: dict[str, Any] | None = None, blob_key: str | None = None) -> Resource:
    return Resource(id=rid, workspace_id="ws", title=title, file_name=f"{title}.{kind}", kind=kind,
                    sha256="ab" * 32, size_bytes=10, blob_key=blob_key, status="ready",
                    metadata=metadata or {}, custom_metadata=custom, created_at=CREATED, updated_at=UPDATED)


UBS = resource("r-pdf", "pdf", "ued39062.pdf", blob_key="ab/abab.pdf", custom={"desk": "energy"}, metadata={
    "calendar_date": "2026-03-02", "fiscal_year": 2025, "fiscal_quarter": 4, "source": "filing",
    "tickers": ["PETR4", "PRIO3"], "company_names": ["Petrobras", "PRIO"], "document_category": "brokerage",
    "document_subcategory": "report", "sector": ["Energy"], "subsector": ["Oil"], "publisher": "UBS",
    "countries": ["Brazil"], "external_url": "https://example.com/ued39062.pdf", "page_count": 12,
    "participants": [{"name": "Jane Roe", "role": "Analyst", "organization": "UBS",
                      "participant_type": "author"}],
})
PDF_PASSAGE = Passage(
    chunk=Chunk(id="c-pdf", resource_id="r-pdf", chunk_index=7, text="Petrobras raised output 4% in Q4.",
                metadata={"source_type": "pdf", "page": 8, "offset": [BOX]}),
    resource_title="ued39062", resource_kind="pdf")

CALL = resource("r-vtt", "transcript", "Q4 call", metadata={
    "fiscal_year": "FY2024", "fiscal_quarter": "Q3", "sector": "Energy",
    "calendar_date": "2024-11-05T14:30:00+01:00"})
VTT_PASSAGE = Passage(
    chunk=Chunk(id="c-vtt", resource_id="r-vtt", chunk_index=2, text="CEO: Margins held.\nCFO: Costs fell.",
                text_type="transcript",
                metadata={"source_type": "transcript", "start_time": 61.5, "end_time": 70.25,
                          "blocks": [4, 5],
                          "speakers": ["CEO", "CFO"], "cue_times": [[61.5, 65.0], [65.0, 70.25]]}),
    resource_title="Q4 call", resource_kind="transcript")

POSTS = resource("r-posts", "post", "posts", metadata={"post_count": 2, "external_url": "https://example.com/dump"})
POST_PASSAGE = Passage(
    chunk=Chunk(id="c-post", resource_id="r-posts", chunk_index=1, text="Refinery strike looms",
                text_type="post", metadata={"source_type": "post", "source": "reddit", "id": "t3_abc",
                                            "created_at": "2026-03-01"}),
    resource_title="posts", resource_kind="post")
MENTION = Mention(source="reddit", id="t3_abc", text="Refinery strike looms",
                  url="https://reddit.com/r/oil/comments/abc", dataset_id="r-posts", chunk_id="c-post")

#: seed 004 declares these enums without null: absent when unknown (seed 003's example prints null)
ABSENT_WHEN_NULL = {"document_category", "document_subcategory", "rms_document_type", "rms_type"}
EMPTY_METADATA = {key: ([] if key in LIST_KEYS or key == "participants" else None) for key in SEED_003_ORDER
                  if key not in ABSENT_WHEN_NULL}
EMPTY_METADATA["blocks"] = None


def answer(raw: str, **kw: Any) -> Message:
    resolver = InMemoryResolver([PDF_PASSAGE, VTT_PASSAGE, POST_PASSAGE], entities=[("dataset", "ds1")])
    message = cite(raw, resolver=resolver, **kw)
    message.id = "msg-1"
    return message


RESOURCES = {r.id: r for r in (UBS, CALL, POSTS)}


def test_pdf_chunk_reference_exact() -> None:
    message = answer("Output rose [a](chunk:c-pdf).")
    refs = analytics.render_references(message, RESOURCES, chat_message_id="msg-1")
    assert refs == [{
        "id": "1", "citation_idx": "1", "search_type": "rms", "chunk_id": "c-pdf",
        "text": "Petrobras raised output 4% in Q4.", "text_type": "paragraph",
        "document_id": "r-pdf", "document_name": "ued39062.pdf", "s3_file_key": "ab/abab.pdf",
        "external_url": "https://example.com/ued39062.pdf",
        "metadata": {
            **EMPTY_METADATA,
            "calendar_date": "2026-03-02T00:00:00Z", "fiscal_year": 2025, "fiscal_quarter": "4",
            "source": "filing",
            "tickers": ["PETR4", "PRIO3"], "company_names": ["Petrobras", "PRIO"],
            "document_category": "brokerage", "document_subcategory": "report", "sector": ["Energy"],
            "subsector": ["Oil"], "publisher": "UBS", "countries": ["Brazil"],
            "participants": [{"name": "Jane Roe", "role": "Analyst", "organization": "UBS",
                              "participant_type": "author"}],
            "creation_timestamp": "2026-03-02T15:49:29+00:00",
            "last_contribution_timestamp": "2026-03-03T08:00:00+00:00",
            "offset": [BOX], "blocks": None,
            "source_type": "pdf", "page": 8,
        },
        "custom_metadata": {"desk": "energy"},
        "citation": 1, "chunk_text_type": "paragraph",
        "chat_message_id": "msg-1",
        "start_index": 12, "end_index": 15, "occurrences": [{"start_index": 12, "end_index": 15}],
        "offset_unit": "codepoint",
    }]
    # seed keys first, in seed 003's order, then 004's blocks, then the chunk's provenance
    present = [k for k in SEED_003_ORDER if k not in ABSENT_WHEN_NULL or k in ("document_category",
                                                                            "document_subcategory")]
    assert list(refs[0]["metadata"])[:len(present) + 1] == [*present, "blocks"]
    assert message.text[12:15] == "[1]"
    # the resource-level extras are not ReferenceMetadata keys
    assert "page_count" not in refs[0]["metadata"] and "external_url" not in refs[0]["metadata"]
    # without chat_message_id there is no such key
    assert "chat_message_id" not in analytics.render_references(message, RESOURCES)[0]


def test_transcript_reference_with_blocks_and_times() -> None:
    message = answer("Margins held [x](chunk:c-vtt) and held [x](chunk:c-vtt).")
    (ref,) = analytics.render_references(message, RESOURCES)
    # seed 004's enum: a transcript passage is a paragraph; citewell's own type beside it
    assert ref["text"] == "CEO: Margins held.\nCFO: Costs fell." and ref["text_type"] == "paragraph"
    assert ref["chunk_text_type"] == "transcript"
    # no stored file: s3_file_key is absent (seed 004 types it a string, not nullable)
    assert ref["document_id"] == "r-vtt" and ref["document_name"] == "Q4 call" and "s3_file_key" not in ref
    # no URL of its own: the profile leaves it to the HTTP API, which signs one
    assert ref["external_url"] is None and ref["custom_metadata"] is None
    meta = ref["metadata"]
    assert meta["blocks"] == [4, 5] and meta["offset"] is None
    assert meta["start_time"] == 61.5 and meta["end_time"] == 70.25
    assert meta["speakers"] == ["CEO", "CFO"] and meta["cue_times"] == [[61.5, 65.0], [65.0, 70.25]]
    # typed values coerced to the seed's types
    assert meta["fiscal_year"] == 2024 and meta["fiscal_quarter"] == "3"
    assert meta["sector"] == ["Energy"] and meta["calendar_date"] == "2024-11-05T13:30:00Z"
    assert ref["occurrences"] == [{"start_index": 13, "end_index": 16}, {"start_index": 26, "end_index": 29}]
    assert (ref["start_index"], ref["end_index"]) == (13, 16)


def test_post_reference_url_source_and_id() -> None:
    message = answer("Strike [s](post:Reddit:t3_abc).")
    mentions = {("reddit", "t3_abc"): MENTION}
    (ref,) = analytics.render_references(message, RESOURCES, mentions)
    assert ref["external_url"] == "https://reddit.com/r/oil/comments/abc"  # the post's, not the file's
    assert ref["chunk_id"] == "c-post" and ref["text"] == "Refinery strike looms"
    assert (ref["text_type"], ref["chunk_text_type"]) == ("news", "post")  # a post is a feed item
    assert ref["document_id"] == "r-posts" and ref["document_name"] == "posts"
    assert ref["id"] == "1" and ref["citation_idx"] == "1"  # the number, never the post id
    meta = ref["metadata"]
    assert meta["source"] == "reddit" and meta["id"] == "t3_abc" and meta["created_at"] == "2026-03-01"
    assert meta["offset"] is None and meta["blocks"] is None and "post_count" not in meta
    # no mention known: no URL from the dataset file either
    (bare,) = analytics.render_references(message, RESOURCES)
    assert bare["external_url"] is None
    # a URL stored on the post's chunk serves when the mention is not passed
    with_url = message.model_copy(deep=True)
    with_url.references[0].metadata = {**with_url.references[0].metadata, "url": "https://reddit.com/x"}
    assert analytics.render_references(with_url, RESOURCES)[0]["external_url"] == "https://reddit.com/x"
    # a link post's url is the page it links to: its permalink is the post's own page
    linked = MENTION.model_copy(update={"url": "https://twitter.com/x/status/1"})
    linked.permalink = "https://www.reddit.com/r/oil/comments/abc/"  # type: ignore[attr-defined] - as stored
    (ref,) = analytics.render_references(message, RESOURCES, {("reddit", "t3_abc"): linked})
    assert ref["external_url"] == "https://www.reddit.com/r/oil/comments/abc/"
    # something that is no web URL is never passed on
    odd = MENTION.model_copy(update={"url": "javascript:alert(1)"})
    assert analytics.render_references(message, RESOURCES, {("reddit", "t3_abc"): odd})[0]["external_url"] is None


def test_post_unknown_to_the_workspace() -> None:
    message = cite("Strike [s](post:tiktok:99).")
    (ref,) = analytics.render_references(message, {})
    assert ref["chunk_id"] is None and "document_id" not in ref and ref["text"] is None
    assert (ref["text_type"], ref["chunk_text_type"]) == ("news", "post")
    assert ref["metadata"]["source"] == "tiktok" and ref["metadata"]["id"] == "99"
    assert set(SEED_004_KEYS) - ABSENT_WHEN_NULL <= set(ref["metadata"])
    # with its mention the text and URL come from the post
    mention = Mention(source="tiktok", id="99", text="strike!", url="https://tiktok.com/@a/video/99")
    (ref,) = analytics.render_references(message, {}, {("tiktok", "99"): mention})
    assert ref["text"] == "strike!" and ref["external_url"] == "https://tiktok.com/@a/video/99"


def test_missing_resource_renders_from_the_reference() -> None:
    message = answer("Output rose [a](chunk:c-pdf).")
    (ref,) = analytics.render_references(message, {})  # the resource was deleted
    assert ref == {
        "id": "1", "citation_idx": "1", "search_type": "rms", "chunk_id": "c-pdf",
        "text": "Petrobras raised output 4% in Q4.", "text_type": "paragraph",
        "document_id": "r-pdf", "document_name": "ued39062", "external_url": None,
        "metadata": {**EMPTY_METADATA, "offset": [BOX], "blocks": None, "source_type": "pdf", "page": 8},
        "custom_metadata": None, "citation": 1, "chunk_text_type": "paragraph",
        "start_index": 12, "end_index": 15, "occurrences": [{"start_index": 12, "end_index": 15}],
        "offset_unit": "codepoint",
    }


def test_offsets_in_utf16_and_utf8_with_emoji_before_the_marker() -> None:
    message = answer("😍🚀 Output 中文 rose [a](chunk:c-pdf), 𝔘 [b](chunk:c-vtt) again [a](chunk:c-pdf).")
    assert message.text == "😍🚀 Output 中文 rose [1], 𝔘 [2] again [1]."
    cp = analytics.render_references(message, RESOURCES)
    assert [(r["citation_idx"], r["start_index"]) for r in cp] == [("1", 18), ("2", 25)]
    u16 = analytics.render_references(message, RESOURCES, offsets="utf16")
    assert [r["offset_unit"] for r in u16] == ["utf16", "utf16"]
    assert (u16[0]["start_index"], u16[0]["end_index"]) == (20, 23)  # two astral emoji: +2
    assert u16[0]["occurrences"] == [{"start_index": 20, "end_index": 23},
                                     {"start_index": 38, "end_index": 41}]
    assert (u16[1]["start_index"], u16[1]["end_index"]) == (28, 31)  # and 𝔘: +3
    encoded16 = message.text.encode("utf-16-le")
    for ref in u16:
        for occ in ref["occurrences"]:
            piece = encoded16[2 * occ["start_index"]:2 * occ["end_index"]].decode("utf-16-le")
            assert piece == f"[{ref['citation_idx']}]"
    u8 = analytics.render_references(message, RESOURCES, offsets="utf8")
    encoded8 = message.text.encode()
    for ref in u8:
        assert ref["offset_unit"] == "utf8"
        for occ in ref["occurrences"]:
            assert encoded8[occ["start_index"]:occ["end_index"]].decode() == f"[{ref['citation_idx']}]"
    # everything but the offsets is the same in every unit
    strip = ("start_index", "end_index", "occurrences", "offset_unit")
    assert [{k: v for k, v in r.items() if k not in strip} for r in u16] == \
        [{k: v for k, v in r.items() if k not in strip} for r in cp]


def test_a_message_stored_in_another_unit_converts_exactly() -> None:
    raw = "😍 Output rose [a](chunk:c-pdf)."
    stored = answer(raw, offset_unit="utf8")
    assert stored.references[0].offset_unit == "utf8"
    cp = analytics.render_references(stored, RESOURCES)
    assert cp[0]["offset_unit"] == "codepoint"
    assert stored.text[cp[0]["start_index"]:cp[0]["end_index"]] == "[1]"
    assert cp == analytics.render_references(answer(raw), RESOURCES)
    u16 = analytics.render_references(stored, RESOURCES, offsets="utf16")
    assert (u16[0]["start_index"], u16[0]["end_index"]) == (15, 18)
    # the stored message itself is not changed
    assert stored.references[0].offset_unit == "utf8"


def test_render_reference_alone_converts_with_the_text() -> None:
    message = answer("😍 rose [a](chunk:c-pdf).")
    ref = message.references[0]
    out = analytics.render_reference(ref, UBS, offsets="utf16", text=message.text, chat_message_id="m")
    assert (out["start_index"], out["end_index"], out["offset_unit"]) == (8, 11, "utf16")
    assert out["chat_message_id"] == "m"
    with pytest.raises(ValueError, match="needs the message text"):
        analytics.render_reference(ref, UBS, offsets="utf16")
    assert analytics.render_reference(ref, UBS)["start_index"] == 7  # same unit: no text needed
    converted = convert_offsets(message, "utf8").references[0]
    assert analytics.render_reference(converted, UBS, offsets="utf8")["start_index"] == 10


def test_entities_skipped_user_messages_empty_and_bad_units() -> None:
    message = answer("See [the set](dataset:ds1) and [a](chunk:c-pdf) and [s](post:reddit:t3_abc).")
    assert [r.type for r in message.references] == ["chunk", "post", "dataset"]
    refs = analytics.render_references(message, RESOURCES)
    assert [r["citation_idx"] for r in refs] == ["1", "2"]
    assert [r["document_id"] for r in refs] == ["r-pdf", "r-posts"]
    with pytest.raises(ValueError):
        analytics.render_reference(message.references[2], None)
    user = Message(id="u1", role="user", text="What about [1]?")
    assert analytics.render_references(user, RESOURCES) == []
    with pytest.raises(ValueError):
        analytics.render_references(message, RESOURCES, offsets="bytes")
    with pytest.raises(ValueError):
        analytics.render_reference(message.references[0], UBS, offsets="utf-16")


def test_references_render_in_citation_order() -> None:
    message = answer("A [a](chunk:c-pdf) B [b](chunk:c-vtt).")
    message.references.reverse()
    assert [r["citation_idx"] for r in analytics.render_references(message, RESOURCES)] == ["1", "2"]


@pytest.mark.parametrize("metadata", [
    {},
    UBS.metadata,
    {"fiscal_year": "2023", "fiscal_quarter": "q2", "tickers": "AAPL", "publisher": 7, "tags": ["a", 1],
     "calendar_date": "not a date", "participants": ["Tim Cook"], "document_tags": None, "stock_ids": []},
    {"fiscal_year": "next year", "fiscal_quarter": 9, "sector": None, "countries": "US",
     "rms_type": "generalnotes",
     "parent_id": "p1", "creator_name": "Ann", "calendar_date": "2023-08-15T00:00:00Z"},
])
def test_typed_metadata_keys_all_present_with_the_seed_json_types(metadata: dict[str, Any]) -> None:
    message = answer("X [a](chunk:c-pdf) Y [b](chunk:c-vtt) Z [s](post:reddit:t3_abc).")
    resources = {rid: r.model_copy(update={"metadata": metadata}) for rid, r in RESOURCES.items()}
    rendered = analytics.render_references(message, resources, {("reddit", "t3_abc"): MENTION},
                                           chat_message_id="msg-1")
    for ref in json.loads(json.dumps(rendered)):
        assert isinstance(ref["id"], str) and isinstance(ref["citation_idx"], str)
        assert all(isinstance(ref[k], int) for k in ("start_index", "end_index"))
        meta = ref["metadata"]
        assert SEED_004_KEYS - ABSENT_WHEN_NULL <= set(meta)
        assert all(meta[key] is not None for key in ABSENT_WHEN_NULL if key in meta)  # absent, never null
        for key in LIST_KEYS:
            assert isinstance(meta[key], list) and all(isinstance(v, str) for v in meta[key]), key
        for key in STRING_KEYS:
            assert meta.get(key) is None or isinstance(meta[key], str), key
        assert meta["fiscal_year"] is None or type(meta["fiscal_year"]) is int
        assert meta["fiscal_quarter"] in (None, "1", "2", "3", "4")
        assert isinstance(meta["participants"], list)
        assert all(isinstance(p, dict) for p in meta["participants"])
        assert meta["offset"] is None or all(set(b) == set(BOX) for b in meta["offset"])
        assert meta["blocks"] is None or all(type(b) is int for b in meta["blocks"])
        assert ref["custom_metadata"] is None or isinstance(ref["custom_metadata"], dict)
    if metadata.get("fiscal_year") == "2023":
        meta = analytics.render_references(message, resources)[0]["metadata"]
        assert (meta["fiscal_year"], meta["fiscal_quarter"]) == (2023, "2")
        assert (meta["tickers"], meta["publisher"]) == (["AAPL"], "7")
        # an unreadable date is no date-time (seed 004: format date-time): null, the stored text in as_given
        assert meta["tags"] == ["a", "1"] and meta["calendar_date"] is None
        assert meta["as_given"] == {"calendar_date": "not a date"}
        assert meta["participants"] == [{"name": "Tim Cook"}] and meta["document_tags"] == []


def test_engine_answer_renders_its_references(tmp_path: Path, store_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "visits.txt").write_text("Clinic visits last thirty minutes on average.\n",
                                                  encoding="utf-8")
    with Engine(store_path) as engine:
        engine.ingest([tmp_path / "docs"])
        chat = engine.chat()
        live = engine.ask("How long are clinic visits?", chat_id=chat.id)
        assert live.references
        stored = engine.history(chat.id)[-1]
        resources = {r.id: r for r in engine.resources()}
        refs = analytics.render_references(stored, resources, chat_message_id=stored.id, offsets="utf16")
        assert refs == analytics.render_references(live, resources, chat_message_id=stored.id,
                                                   offsets="utf16")
        ref = refs[0]
        assert ref["citation_idx"] == "1" and ref["document_name"] == "visits"
        assert ref["text"] == "Clinic visits last thirty minutes on average."
        assert ref["metadata"]["source_type"] == "text" and ref["metadata"]["offset"] is None
        assert ref["metadata"]["creation_timestamp"].endswith("+00:00")
        encoded = stored.text.encode("utf-16-le")
        assert encoded[2 * ref["start_index"]:2 * ref["end_index"]].decode("utf-16-le") == "[1]"


@pytest.mark.parametrize(("stored", "shown", "as_given"), [
    # FinanceBench's GICS sector names and document types become seed 004's members
    ({"sector": "Information Technology", "document_category": "filing", "document_subcategory": "10k"},
     {"sector": ["Technology"], "document_category": "filing", "document_subcategory": "10-K"},
     {"sector": "Information Technology", "document_subcategory": "10k"}),
    ({"sector": ["Materials", "health care"], "document_category": "Earnings Call"},
     {"sector": ["Basic Materials", "Healthcare"], "document_category": "earnings_call"},
     {"sector": ["Materials", "health care"], "document_category": "Earnings Call"}),
    # members pass unchanged (case and all): nothing in as_given
    ({"sector": ["Energy"], "subsector": ["Oil & gas"], "rms_type": "generalnotes"},
     {"sector": ["Energy"], "subsector": [], "rms_type": "generalnotes"},
     {"subsector": ["Oil & gas"]}),
    # a value no member names is left out; a list keeps its members
    ({"document_category": "report", "sector": ["Energy", "Widgets"], "rms_document_type": "memo"},
     {"document_category": None, "sector": ["Energy"], "rms_document_type": None},
     {"document_category": "report", "sector": ["Energy", "Widgets"], "rms_document_type": "memo"}),
])
def test_enum_keys_carry_only_seed_004_members(stored: dict[str, Any], shown: dict[str, Any],
                                               as_given: dict[str, Any]) -> None:
    message = answer("X [a](chunk:c-pdf).")
    resources = {"r-pdf": UBS.model_copy(update={"metadata": stored})}
    meta = analytics.render_references(message, resources)[0]["metadata"]
    assert {key: meta.get(key) for key in shown} == shown
    assert meta["as_given"] == as_given
    for key, members in analytics.ENUMS.items():
        values = meta.get(key) if isinstance(meta.get(key), list) else [meta.get(key)]
        assert all(v is None or v in members for v in values), key
        if key in ABSENT_WHEN_NULL:
            assert meta.get(key, "absent") is not None  # left out, never null


def test_as_given_is_absent_when_every_value_passes() -> None:
    message = answer("X [a](chunk:c-pdf).")
    meta = analytics.render_references(message, RESOURCES)[0]["metadata"]
    assert "as_given" not in meta  # fiscal_quarter 4 → "4" and a date → its date-time are no change


@pytest.mark.parametrize(("own", "ref_type", "seed"), [
    ("paragraph", "chunk", "paragraph"), ("table", "chunk", "table"), ("image", "chunk", "image"),
    ("news", "chunk", "news"), ("transcript", "chunk", "paragraph"), ("post", "post", "news"),
    (None, "post", "news"), (None, "chunk", "paragraph"),
])
def test_seed_text_type(own: str | None, ref_type: str, seed: str) -> None:
    assert analytics.seed_text_type(own, ref_type) == seed
    assert seed in analytics.SEED_TEXT_TYPES


def test_conversation_citations_number_every_reference_once() -> None:
    first = answer("A [a](chunk:c-pdf) B [b](chunk:c-vtt).")
    second = answer("C [s](post:reddit:t3_abc) D [a](chunk:c-pdf).")
    second.id = "msg-2"
    user = Message(id="u1", role="user", text="and?")
    cited = analytics.conversation_citations([user, first, user, second])
    assert [(m.id, r.citation, r.chunk_id) for m, r in cited] == [
        ("msg-1", 1, "c-pdf"), ("msg-1", 2, "c-vtt"), ("msg-2", 1, "c-post"), ("msg-2", 2, "c-pdf")]
