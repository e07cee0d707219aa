"""`citewell cite` for any pipeline (issue 15): sources given with their text and provenance
inline are numbered, located and checked against that text; by-id sources resolve from the
store; a post the store does not hold is still numbered (support unchecked); positions never
shift; numbers outside the sources stay prose in lists and ranges as they do alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from citewell import Engine
from citewell.cite import cite_sources, read_sources
from citewell.errors import UsageError

ACME = {"chunk_id": "acme-p3", "text": "Acme revenue was $12.4 million in 2022, up from $10.1 million.",
        "title": "Acme 10-K", "metadata": {"page": 3, "source_type": "pdf"}}
ACME_MARGIN = {"chunk_id": "acme-p4", "text": "Gross margin was 41 percent in 2022.", "title": "Acme 10-K",
               "metadata": {"page": 4, "source_type": "pdf"}}
POST = {"source": "Reddit", "id": 7, "text": "Acme puts are printing after the earnings call.",
        "metadata": {"author": "u/x", "permalink": "https://www.reddit.com/r/x/comments/7/"}}
NOTES = "Clinic visits last thirty minutes on average.\n"


@pytest.fixture()
def engine(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "visits.txt").write_text(NOTES, encoding="utf-8")
    (tmp_path / "docs" / "posts.jsonl").write_text(json.dumps(
        {"source": "reddit", "id": "t3_kids", "text": "Kids cost money every month."}) + "\n", encoding="utf-8")
    with Engine(tmp_path / "s.sqlite") as e:
        e.ingest([tmp_path / "docs"])
        yield e


def stored_chunk(engine: Engine) -> str:
    visits = next(r for r in engine.resources() if r.title == "visits")
    return engine.store.resource_chunks(engine.workspace_id, visits.id)[0].id


def ref_by(message: Any, citation: int) -> Any:
    return next(r for r in message.references if r.citation == citation)


def test_inline_sources_are_numbered_located_and_checked_against_their_text() -> None:
    raw = ("Acme revenue was $12.4 million in 2022 [a](chunk:acme-p3). Margin was 41 percent "
           "[b](chunk:acme-p4). Puts are printing [p](post:reddit:7). Revenue was $99 million [a](chunk:acme-p3).")
    message = cite_sources(raw, [ACME, ACME_MARGIN, POST], resolver=None)
    assert message.text == ("Acme revenue was $12.4 million in 2022 [1]. Margin was 41 percent [2]. Puts are "
                            "printing [3]. Revenue was $99 million [1].")
    first, margin, post = ref_by(message, 1), ref_by(message, 2), ref_by(message, 3)
    assert (first.chunk_id, first.text, first.resource_title, first.metadata["page"]) == (
        "acme-p3", ACME["text"], "Acme 10-K", 3)
    assert message.text[first.start_index:first.end_index] == "[1]"
    assert [message.text[o.start_index:o.end_index] for o in first.occurrences] == ["[1]", "[1]"]
    # support against the given text: the figure it states is supported, the one it does not is not
    assert [o.support["verdict"] for o in first.occurrences] == ["supported", "unsupported"]
    assert margin.occurrences[0].support["verdict"] == "supported"
    # the post is cited by (source, id), its own resource, with the text given
    assert (post.type, post.source, post.id, post.text) == ("post", "reddit", "7", POST["text"])
    assert post.metadata["permalink"] == POST["metadata"]["permalink"] and post.resource_title == "Reddit/7"
    # two passages of one titled document are one cited resource (rule 7), the post its own
    assert [(c.resource_title, c.chunk_indices) for c in message.citations] == [("Acme 10-K", [0, 1]),
                                                                               ("Reddit/7", [0])]
    assert first.resource_id == margin.resource_id != post.resource_id
    assert message.warnings == []
    # the same input gives the same message (ids of made-up resources are stable)
    again = cite_sources(raw, [ACME, ACME_MARGIN, POST], resolver=None)
    assert again.model_dump(exclude={"created_at"}) == message.model_dump(exclude={"created_at"})


def test_by_id_sources_resolve_from_the_store_and_a_post_it_lacks_is_still_numbered(engine: Engine) -> None:
    chunk_id = stored_chunk(engine)
    raw = (f"Visits last thirty minutes [v](chunk:{chunk_id}). Kids cost money [k](post:reddit:t3_kids). "
           "Acme rallied [t](post:tiktok:99). Ghost [g](chunk:ghost).")
    message = engine.cite(raw, sources=[{"chunk_id": chunk_id}, {"source": "reddit", "id": "t3_kids"},
                                        {"source": "TikTok", "id": 99}, {"chunk_id": "ghost"}])
    assert message.text == "Visits last thirty minutes [1]. Kids cost money [2]. Acme rallied [3]. Ghost g."
    visits, kids, tiktok = (ref_by(message, n) for n in (1, 2, 3))
    assert visits.text == NOTES.strip() and visits.occurrences[0].support["verdict"] == "supported"
    assert kids.text == "Kids cost money every month." and kids.chunk_id
    # vouched for by the caller: numbered by (source, id), text unknown, support unchecked
    assert (tiktok.source, tiktok.id, tiktok.text, tiktok.chunk_id) == ("tiktok", "99", None, None)
    assert tiktok.occurrences[0].support == {"verdict": "unchecked", "score": 0.0, "reasons": ["no_passage"]}
    assert [(w.code, (w.model_extra or {}).get("position")) for w in message.warnings] == [
        ("source_text_unknown", 3), ("source_not_found", 4), ("unknown_target", None)]
    assert message.warnings[-1].chunk_id == "ghost"  # type: ignore[attr-defined]


def test_numbered_positions_never_shift_past_an_unresolved_source(engine: Engine) -> None:
    """[n] is the n-th source given: before, an unresolved source was dropped from the list
    and [3] cited what was given 4th."""
    chunk_id = stored_chunk(engine)
    sources = [{"chunk_id": chunk_id}, {"chunk_id": "ghost"}, ACME, {"source": "tiktok", "id": "99"}]
    message = engine.cite("Visits [1]. Ghost [2]. Revenue was $12.4 million [3]. Rally [4].", sources=sources,
                          numbered=True)
    assert message.text == "Visits [1]. Ghost \\[2\\]. Revenue was $12.4 million [2]. Rally [3]."
    assert [(r.citation, r.chunk_id or f"{r.source}:{r.id}") for r in message.references] == [
        (1, chunk_id), (2, "acme-p3"), (3, "tiktok:99")]
    unknown = [w for w in message.warnings if w.code == "unknown_target"]
    assert [(w.citation, w.message) for w in unknown] == [  # type: ignore[attr-defined]
        (2, "[2] cites passage 2, but source 2 could not be resolved")]


@pytest.mark.parametrize(("raw", "text", "left_out"), [
    ("Revenue was $12.4 million [1, 2].", "Revenue was $12.4 million [1]\\[2\\].", [2]),
    ("Revenue was $12.4 million [1-3].", "Revenue was $12.4 million [1]\\[2\\]\\[3\\].", [2, 3]),
    ("Revenue was $12.4 million \u30101, 2\u3011.", "Revenue was $12.4 million [1]\u30102\u3011.", [2]),
    ("Revenue was $12.4 million [2].", "Revenue was $12.4 million \\[2\\].", [2]),  # alone: as before
    ("Revenue was $12.4 million [2, 3].", "Revenue was $12.4 million [2, 3].", [2, 3]),  # none cites: as written
])
def test_numbers_outside_the_sources_stay_as_prose_in_lists_and_ranges(raw: str, text: str,
                                                                      left_out: list[int]) -> None:
    message = cite_sources(raw, [ACME], resolver=None, numbered=True)
    assert message.text == text
    assert [w.citation for w in message.warnings if w.code == "unknown_target"] == left_out  # type: ignore[attr-defined]
    assert [r.chunk_id for r in message.references] == (["acme-p3"] if "[1]" in text else [])


@pytest.mark.parametrize(("items", "error"), [
    (["acme"], "source 1 is not an object: give {chunk_id, text?} or {source, id, text?}"),
    ([ACME, {"text": "no id"}], "source 2: Value error, give chunk_id (a passage) or source and id (a post)"),
    ([{"source": "reddit"}], "source 1: Value error, a post needs both source and id"),
    ([{"chunk_id": "c", "text": 5}], "source 1: text: Input should be a valid string"),
    ([{"chunk_id": "c", "txt": "typo"}], "source 1: txt: Extra inputs are not permitted"),
])
def test_a_bad_source_is_a_usage_error_naming_it(items: list[Any], error: str) -> None:
    with pytest.raises(UsageError) as caught:
        read_sources(items, None)
    assert str(caught.value.message) == error


def _cli(store: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "citewell", "cite", "--store", str(store), *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_cli_cites_inline_sources_that_are_in_no_store(tmp_path: Path) -> None:
    sources = tmp_path / "sources.json"
    sources.write_text(json.dumps([ACME, {"chunk_id": "ghost"}, POST, {"source": "tiktok", "id": "99"}]),
                       encoding="utf-8")
    raw = "Revenue was $12.4 million [1, 2]. Puts are printing [3]. Rally [4]. Odd [5]."
    proc = _cli(tmp_path / "empty.sqlite", "--sources", str(sources), "--numbered", stdin=raw)
    assert proc.returncode == 0, proc.stderr
    message = json.loads(proc.stdout)
    assert message["text"] == "Revenue was $12.4 million [1]\\[2\\]. Puts are printing [2]. Rally [3]. Odd \\[5\\]."
    assert [(r["citation"], r["chunk_id"], r["source"]) for r in message["references"]] == [
        (1, "acme-p3", None), (2, message["references"][1]["chunk_id"], "reddit"), (3, None, "tiktok")]
    assert [r["occurrences"][0]["support"]["verdict"] for r in message["references"]] == [
        "supported", "supported", "unchecked"]  # the number kept as prose, \[2\], is no figure of the sentence
    assert [w["code"] for w in message["warnings"]] == ["source_not_found", "source_text_unknown", "unknown_target",
                                                       "unknown_target"]
    # stderr says what could not be resolved; stdout is the one JSON document
    assert "source 2, chunk ghost, is not in the workspace" in proc.stderr
    assert "source 4, post tiktok/99, is not in the workspace" in proc.stderr
    # streamed through the citer: the same text and numbering
    chunks = tmp_path / "chunks.json"
    chunks.write_text(json.dumps(["Revenue was $12.4 million [1,", " 2]. Puts are printing [", "3]. Rally [4]. ",
                                  "Odd [5]."]), encoding="utf-8")
    streamed = _cli(tmp_path / "empty.sqlite", "--sources", str(sources), "--numbered", "--chunks", str(chunks),
                    stdin="")
    assert streamed.returncode == 0, streamed.stderr
    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    final = events[-1]["message"]
    assert "".join(e["text"] for e in events if e["event"] == "delta") == final["text"] == message["text"]
    assert [(r["citation"], r["chunk_id"], r["source"]) for r in final["references"]] == \
        [(r["citation"], r["chunk_id"], r["source"]) for r in message["references"]]
    assert [w["code"] for w in final["warnings"]] == [w["code"] for w in message["warnings"]]
    # a bad source list is bad usage: exit 2, one line, no traceback
    sources.write_text(json.dumps([{"chunk_id": "c", "text": 5}]), encoding="utf-8")
    bad = _cli(tmp_path / "empty.sqlite", "--sources", str(sources), stdin="x")
    assert bad.returncode == 2 and "source 1: text: Input should be a valid string" in bad.stderr
    assert "Traceback" not in bad.stderr and bad.stdout == ""


def test_a_source_named_twice_is_an_error_with_another_text_and_a_warning_with_the_same(engine: Engine,
                                                                                        tmp_path: Path) -> None:
    other = {**ACME, "text": "Net income was $3.1 million in 2022."}
    with pytest.raises(UsageError) as caught:
        read_sources([ACME, ACME_MARGIN, other], None)
    assert caught.value.code == "DUPLICATE_SOURCE"
    assert caught.value.message.startswith("source 3 names chunk acme-p3, as source 1 does, with a different text")
    with pytest.raises(UsageError) as caught:  # one post (source, id), two texts
        read_sources([POST, {**POST, "text": "Acme calls are worthless.", "chunk_id": "p2"}], None)
    assert caught.value.code == "DUPLICATE_SOURCE"
    assert caught.value.message.startswith("source 2 names post reddit/7, as source 1 does")
    # the same text twice: kept once; its number cites the first; a warning names the dropped item
    message = cite_sources("Acme revenue was $12.4 million in 2022 [3]. Margin was 41 percent [2].",
                           [ACME, ACME_MARGIN, dict(ACME)], resolver=None, numbered=True)
    assert message.text == "Acme revenue was $12.4 million in 2022 [1]. Margin was 41 percent [2]."
    assert [r.chunk_id for r in message.references] == ["acme-p3", "acme-p4"]
    assert [(w.code, w.model_extra) for w in message.warnings] == [
        ("duplicate_source", {"position": 3, "duplicate_of": 1, "chunk_id": "acme-p3"})]
    assert "source 3 repeats source 1 (chunk acme-p3" in message.warnings[0].message
    # by id: the store's passage, once; the same chunk id given another text is an error
    chunk = stored_chunk(engine)
    given = read_sources([{"chunk_id": chunk}, {"chunk_id": chunk}], engine.resolver)
    assert given.targets[0] is given.targets[1] and [w.code for w in given.warnings] == ["duplicate_source"]
    with pytest.raises(UsageError) as caught:
        read_sources([{"chunk_id": chunk}, {"chunk_id": chunk, "text": "Visits are short."}], engine.resolver)
    assert caught.value.code == "DUPLICATE_SOURCE"
    # the CLI: bad usage, one line naming both items
    sources = tmp_path / "dup.json"
    sources.write_text(json.dumps([ACME, other]), encoding="utf-8")
    proc = _cli(tmp_path / "empty.sqlite", "--sources", str(sources), "--numbered", stdin="Revenue [1].")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: DUPLICATE_SOURCE: source 2 names chunk acme-p3, as source 1 does")
