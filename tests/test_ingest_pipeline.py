"""Ingestion pipeline: sync rules, versions, missing files, bad input, concurrency."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fpdf import FPDF

from citewell import Engine
from citewell.ingest import pipeline
from citewell.ingest.pipeline import EXTRACTOR_VERSIONS
from citewell.store.ids import chunk_id_for, post_chunk_id

from .conftest import CORPUS, copy_corpus_files, is_sqlite, sql_rows

GOOD_VTT = "WEBVTT\n\n00:01.000 --> 00:04.000\nThe reactor was commissioned in March.\n"
POSTS = [
    {"source": "reddit", "id": "t3_a1", "text": "Gamma squeeze incoming on GME", "created_at": "2022-01-18T10:00:00Z"},
    {"source": "StockTwits", "id": 77, "text": "Bullish on $TSLA deliveries", "created_at": "2022-06-25T10:00:00Z"},
]


def _encrypted_pdf() -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Secret quarterly numbers")
    pdf.set_encryption(owner_password="owner", user_password="user")
    return bytes(pdf.output())


def _write_posts(path: Path, posts: list[dict]) -> None:
    path.write_text("".join(json.dumps(p) + "\n" for p in posts), encoding="utf-8")


@pytest.fixture
def bad_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "corrupt.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf\n")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "locked.pdf").write_bytes(_encrypted_pdf())
    (folder / "broken.vtt").write_text("WEBVTT\n\nthis line is no timing line\nnor is this\n", encoding="utf-8")
    (folder / "broken.jsonl").write_text('{"source": "reddit", "id": \n', encoding="utf-8")
    (folder / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me".encode("latin-1"))
    (folder / "notes.txt").write_text("The reactor was commissioned in March 2021 after two delays.\n",
                                      encoding="utf-8")
    (folder / "talk.vtt").write_text(GOOD_VTT, encoding="utf-8")
    _write_posts(folder / "posts.jsonl", POSTS)
    (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return folder


EXPECTED_FAILURES = {
    "corrupt.pdf": "PDF_CORRUPT",
    "empty.txt": "EMPTY_FILE",
    "locked.pdf": "PDF_ENCRYPTED",
    "broken.vtt": "VTT_MALFORMED",
    "broken.jsonl": "JSONL_MALFORMED",
    "latin1.txt": "TEXT_ENCODING",
}


def test_bad_files_fail_with_their_code_and_the_rest_is_ingested(engine: Engine, bad_folder: Path,
                                                                  store_path: Path) -> None:
    report = engine.ingest([bad_folder])
    by_name = {Path(o.path).name: o for o in report.outcomes}
    for name, code in EXPECTED_FAILURES.items():
        assert by_name[name].action == "failed", name
        assert by_name[name].code == code, name
        assert by_name[name].message and name in by_name[name].message
    assert by_name["image.png"].action == "skipped" and by_name["image.png"].code == "UNSUPPORTED_FILE"
    for name in ("notes.txt", "talk.vtt", "posts.jsonl"):
        assert by_name[name].action == "ingested", name

    resources = {r.file_name: r for r in engine.resources()}
    for name, code in EXPECTED_FAILURES.items():
        r = resources[name]
        assert r.status == "failed" and r.error is not None and r.error.code == code
        assert r.chunk_count == 0 and r.blob_key is None
        assert sql_rows(store_path, "SELECT count(*) FROM chunks WHERE resource_id = ?", r.id) == [(0,)]
        assert sql_rows(store_path, "SELECT count(*) FROM mentions WHERE dataset_id = ?", r.id) == [(0,)]
    # exactly one row per failed file, and blobs only for the good ones
    assert len([r for r in resources.values() if r.status == "failed"]) == len(EXPECTED_FAILURES)
    blobs = sorted(p.name for p in engine.store.blobs.root.rglob("*") if p.is_file())
    good = {hashlib.sha256((bad_folder / n).read_bytes()).hexdigest() for n in ("notes.txt", "talk.vtt", "posts.jsonl")}
    assert {b.split(".")[0] for b in blobs} == good
    assert "image.png" not in resources


def test_explicit_unsupported_file_fails(engine: Engine, tmp_path: Path) -> None:
    odd = tmp_path / "sheet.xlsx"
    odd.write_bytes(b"PK\x03\x04 not really")
    report = engine.ingest([odd])
    assert [(o.action, o.code) for o in report.outcomes] == [("failed", "UNSUPPORTED_FILE")]


def test_failed_new_version_leaves_the_ready_version_untouched(engine: Engine, tmp_path: Path) -> None:
    talk = tmp_path / "talk.vtt"
    talk.write_text(GOOD_VTT, encoding="utf-8")
    first = engine.sync(tmp_path)
    good_id = first.outcomes[0].resource_id
    good_chunks = engine.store.resource_chunks(engine.workspace_id, good_id)
    talk.write_text("WEBVTT\n\ngarbage without cues\n", encoding="utf-8")
    second = engine.sync(tmp_path)
    assert [(o.action, o.code) for o in second.outcomes] == [("failed", "VTT_MALFORMED")]
    good = engine.store.resource(engine.workspace_id, good_id)
    assert good.status == "ready"
    assert engine.store.resource_chunks(engine.workspace_id, good_id) == good_chunks
    hits = engine.retrieve("reactor commissioned", corpus=tmp_path)
    assert [p.chunk.resource_id for p in hits] == [good_id]


def test_sync_skips_unchanged_supersedes_changed_and_marks_missing(engine: Engine, tmp_path: Path,
                                                                    store_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Budget for 2021 was 4 million euros.\n", encoding="utf-8")
    other = tmp_path / "other.md"
    other.write_text("# Plan\n\nThe plan has three phases.\n", encoding="utf-8")
    first = engine.sync(tmp_path)
    assert [o.action for o in first.outcomes] == ["ingested", "ingested"]
    again = engine.sync(tmp_path)
    assert [o.action for o in again.outcomes] == ["unchanged", "unchanged"]
    # touching without change: size and mtime differ from the record, sha256 equal -> unchanged
    os.utime(notes, ns=(notes.stat().st_atime_ns, notes.stat().st_mtime_ns + 5_000_000_000))
    assert [o.action for o in engine.sync(tmp_path).outcomes] == ["unchanged", "unchanged"]

    old_id = first.outcomes[0].resource_id
    old_chunk = engine.store.resource_chunks(engine.workspace_id, old_id)[0]
    notes.write_text("Budget for 2022 was 5 million euros.\n", encoding="utf-8")
    changed = engine.sync(tmp_path)
    assert [o.action for o in changed.outcomes] == ["ingested", "unchanged"]
    new_id = changed.outcomes[0].resource_id
    assert new_id != old_id
    assert engine.store.resource(engine.workspace_id, old_id).status == "superseded"
    # old chunks stay readable for stored messages, but are no longer retrieved
    assert engine.store.chunks(engine.workspace_id, [old_chunk.id])[old_chunk.id].chunk.text == old_chunk.text
    assert [p.chunk.resource_id for p in engine.retrieve("budget euros", corpus=tmp_path)] == [new_id]

    other.unlink()
    gone = engine.sync(tmp_path)
    other_id = first.outcomes[1].resource_id
    assert gone.missing == [other_id]
    assert engine.store.resource(engine.workspace_id, other_id).status == "missing"
    assert sql_rows(store_path, "SELECT count(*) FROM chunks WHERE resource_id = ?", other_id)[0][0] > 0
    assert engine.retrieve("plan phases", corpus=tmp_path) == []
    # the file comes back: the same content is ready again, with the same id
    other.write_text("# Plan\n\nThe plan has three phases.\n", encoding="utf-8")
    back = engine.sync(tmp_path)
    assert back.outcomes[1].resource_id == other_id
    assert engine.store.resource(engine.workspace_id, other_id).status == "ready"


def test_chunk_ids_are_stable_uuid5(engine: Engine, tmp_path: Path) -> None:
    copy_corpus_files(tmp_path, "transcripts/elephants-dream_chapters.en.vtt")
    report = engine.sync(tmp_path)
    resource = engine.store.resource(engine.workspace_id, report.outcomes[0].resource_id)
    chunks = engine.store.resource_chunks(engine.workspace_id, resource.id)
    assert chunks
    for chunk in chunks:
        assert chunk.id == chunk_id_for(engine.workspace_id, resource.sha256, EXTRACTOR_VERSIONS["vtt"],
                                        chunk.chunk_index)
    # a second store with the same workspace id would compute the same ids: ids do not depend on the path
    moved = tmp_path / "moved"
    moved.mkdir()
    (tmp_path / "transcripts" / "elephants-dream_chapters.en.vtt").rename(moved / "chapters.vtt")
    relinked = engine.sync(tmp_path)
    assert {o.action for o in relinked.outcomes} == {"linked"}
    assert engine.store.resource_chunks(engine.workspace_id, resource.id) == chunks


def test_resource_text_slices_equal_chunk_texts(engine: Engine, tmp_path: Path) -> None:
    copy_corpus_files(tmp_path, "transcripts/teams-style-short-timestamps_webvtt-py-fixture.vtt",
                      "posts/stocktwits_2022-06_07.jsonl", "README.md")
    engine.sync(tmp_path)
    for resource in engine.resources():
        text = engine.store.resource_text(engine.workspace_id, resource.id)
        for chunk in engine.store.resource_chunks(engine.workspace_id, resource.id):
            assert text[chunk.char_start:chunk.char_end] == chunk.text


def test_each_posts_file_keeps_its_own_copy_of_a_post(engine: Engine, tmp_path: Path, store_path: Path,
                                                        monkeypatch) -> None:
    """docs/architecture.md "Posts": the same (source, id) in another file is that file's copy; a post
    seen again in the same file (re-extracted) keeps its chunk id."""
    _write_posts(tmp_path / "a.jsonl", POSTS)
    (a,) = [o.resource_id for o in engine.sync(tmp_path).outcomes]
    cid = post_chunk_id(engine.workspace_id, a, "stocktwits", "77")
    passage = engine.store.post_passage(engine.workspace_id, "STOCKTWITS", "77")
    assert passage is not None and passage.chunk.id == cid and passage.chunk.resource_id == a
    assert passage.chunk.metadata["source"] == "StockTwits" and passage.chunk.metadata["id"] == "77"
    # the same post in another file, edited: that file's copy; the first file's is untouched
    _write_posts(tmp_path / "b.jsonl", [{**POSTS[1], "source": "STOCKTWITS", "text": "Bullish on $TSLA deliveries, "
                                                                                    "edited", "likes": 3}])
    report = engine.sync(tmp_path)
    assert [o.action for o in report.outcomes] == ["unchanged", "ingested"]
    b = report.outcomes[1].resource_id
    assert sql_rows(store_path, "SELECT dataset_id, text FROM mentions WHERE id = '77' ORDER BY text") == [
        (a, "Bullish on $TSLA deliveries"), (b, "Bullish on $TSLA deliveries, edited")]
    mine, theirs, nope = engine.store.mentions(engine.workspace_id, [("stocktwits", "77")] * 2 + [("reddit", "x")],
                                               dataset_ids=[a, b, None])
    assert (mine.text, mine.dataset_id, mine.chunk_id) == ("Bullish on $TSLA deliveries", a, cid)
    assert (theirs.text, theirs.dataset_id, theirs.model_extra.get("likes")) == (
        "Bullish on $TSLA deliveries, edited", b, 3)
    assert nope is None
    assert [c.text for c in engine.store.resource_chunks(engine.workspace_id, a)] == [p["text"] for p in POSTS]
    # without a dataset: the most recently added ready one
    assert engine.store.mentions(engine.workspace_id, [("stocktwits", "77")])[0].dataset_id == b
    # re-extracted by a newer posts extractor: the same chunk ids, in place
    monkeypatch.setitem(pipeline.EXTRACTOR_VERSIONS, "posts", "posts-99")
    assert [o.action for o in engine.sync(tmp_path).outcomes] == ["reindexed", "reindexed"]
    again = engine.store.post_passage(engine.workspace_id, "stocktwits", "77", dataset_id=a)
    assert (again.chunk.id, again.chunk.text) == (cid, "Bullish on $TSLA deliveries")
    assert sql_rows(store_path, "SELECT count(*) FROM chunks WHERE post_id = '77'") == [(2,)]


def test_corpus_jsonl_that_is_not_posts_is_skipped(engine: Engine, tmp_path: Path) -> None:
    copy_corpus_files(tmp_path, "eval/financebench_dev_docs.jsonl", "posts/reddit_wallstreetbets_2022-01.jsonl")
    report = engine.sync(tmp_path)
    actions = {Path(o.path).name: (o.action, o.code) for o in report.outcomes}
    assert actions["financebench_dev_docs.jsonl"] == ("skipped", "not_a_posts_file")
    assert actions["reddit_wallstreetbets_2022-01.jsonl"] == ("ingested", None)
    (posts,) = engine.resources()
    # 300 posts; the 31 longer than 250 words are cut into pieces (issue 14)
    assert posts.kind == "post" and posts.metadata["post_count"] == 300 and posts.chunk_count == 380
    mentions = engine.store.mentions(engine.workspace_id, [("reddit", "t3_s74lpw")])
    assert mentions[0].text == "Elon Musk want you to have more kids but won't help you to raise your kids"
    assert mentions[0].model_extra["num_comments"] == 17 and mentions[0].dataset_id == posts.id


def test_posts_file_with_bad_lines_warns_per_line(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "posts.jsonl"
    path.write_text(json.dumps(POSTS[0]) + "\n{oops\n" + json.dumps({"source": "x"}) + "\n"
                    + json.dumps(POSTS[1]) + "\n", encoding="utf-8")
    engine.sync(tmp_path)
    (resource,) = engine.resources()
    assert resource.status == "ready" and resource.chunk_count == 2
    assert [(w.code, w.model_extra["line"]) for w in resource.warnings] == [("LINE_SKIPPED", 2), ("LINE_SKIPPED", 3)]


def test_a_post_text_with_a_unicode_line_separator_is_one_line(engine: Engine, tmp_path: Path) -> None:
    # U+2028, U+2029, U+0085 and form feeds are valid unescaped in a JSON string; JSON Lines splits at \n only
    text = "First line\u2028second line\u2029third\x85fourth\x0cfifth"
    path = tmp_path / "posts.jsonl"
    path.write_text(json.dumps({"source": "reddit", "id": "u1", "text": text}, ensure_ascii=False) + "\r\n"
                    + json.dumps(POSTS[1]) + "\n", encoding="utf-8")
    engine.sync(tmp_path)
    (resource,) = engine.resources()
    assert resource.status == "ready" and resource.warnings == []
    assert resource.metadata["post_count"] == 2
    texts = [c.text for c in engine.store.resource_chunks(engine.workspace_id, resource.id)]
    assert text in texts


def test_two_processes_ingesting_one_folder_store_one_copy(tmp_path: Path, store_location: str | Path) -> None:
    folder = copy_corpus_files(tmp_path / "corpus", "transcripts/twiml-22_alphavertex-financial-knowledge-graph.vtt",
                               "transcripts/elephants-dream_captions.en.vtt", "posts/stocktwits_2022-06_07.jsonl",
                               "pdf/PEPSICO_2023_8K_dated-2023-05-05.pdf", "README.md")
    store = store_location
    Engine(store).close()  # create the schema once, as a first run would
    cmd = [sys.executable, "-m", "citewell", "ingest", str(folder), "--store", str(store)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for proc in procs:
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr.decode()
    rows = sql_rows(store, "SELECT file_name, status FROM resources ORDER BY file_name")
    assert rows == sorted((p.name, "ready") for p in folder.rglob("*") if p.is_file())
    assert sql_rows(store, "SELECT count(*) - count(DISTINCT id) FROM chunks") == [(0,)]
    lexical = "chunk_fts" if is_sqlite(store) else "lexical_docs"  # the lexical index's rows
    assert sql_rows(store, "SELECT count(*) FROM chunks") == sql_rows(store, f"SELECT count(*) FROM {lexical}")
    assert sql_rows(store, "SELECT count(*) FROM mentions") == [(200,)]


def test_store_refuses_a_file_that_is_not_a_store(tmp_path: Path) -> None:
    from citewell import StoreError

    bogus = tmp_path / "bogus.sqlite"
    bogus.write_bytes(b"this is not sqlite at all, just text" * 100)
    with pytest.raises(StoreError):
        Engine(bogus)


def test_manifest_rows_match_by_sha_then_path(engine: Engine, tmp_path: Path) -> None:
    corpus = copy_corpus_files(tmp_path / "c", "pdf/FOOTLOCKER_2022_8K_dated-2022-05-20.pdf",
                               "pdf/PEPSICO_2023_8K_dated-2023-05-05.pdf")
    manifest = tmp_path / "m.jsonl"
    rows = [json.loads(line) for line in (CORPUS / "eval/financebench_dev_docs.jsonl").read_text().splitlines()]
    pepsi = next(r for r in rows if r["doc_name"].startswith("PEPSICO"))
    foot = next(r for r in rows if r["doc_name"].startswith("FOOTLOCKER"))
    pepsi_by_path = {**pepsi, "sha256": None}  # no sha: must match by path relative to the corpus root
    manifest.write_text(json.dumps(pepsi_by_path) + "\n" + json.dumps(foot) + "\n", encoding="utf-8")
    engine.sync(corpus, manifests=[manifest])
    by_title = {r.title: r for r in engine.resources()}
    assert set(by_title) == {"PEPSICO_2023_8K_dated-2023-05-05", "FOOTLOCKER_2022_8K_dated-2022-05-20"}
    meta = by_title["FOOTLOCKER_2022_8K_dated-2022-05-20"].metadata
    assert meta["tickers"] == ["FL"] and meta["company_names"] == ["Foot Locker"]
    assert meta["document_category"] == "filing" and meta["document_subcategory"] == "8-K"
    assert meta["fiscal_year"] == 2022 and meta["external_url"] == foot["doc_link"]
    assert by_title["PEPSICO_2023_8K_dated-2023-05-05"].metadata["tickers"] == ["PEP"]


def test_corpus_post_keys_and_texts(engine: Engine, tmp_path: Path) -> None:
    copy_corpus_files(tmp_path, "posts/stocktwits_2022-06_07.jsonl", "posts/reddit_wallstreetbets_2022-01.jsonl")
    engine.sync(tmp_path)
    for name, source in (("stocktwits_2022-06_07.jsonl", "stocktwits"), ("reddit_wallstreetbets_2022-01.jsonl", "reddit")):
        rows = [json.loads(line) for line in (CORPUS / "posts" / name).read_text(encoding="utf-8").splitlines()]
        found = engine.store.mentions(engine.workspace_id, [(r["source"], str(r["id"])) for r in rows])
        assert [(m.source, m.id, m.text) for m in found] == [(source, str(r["id"]), r["text"]) for r in rows]
        chunks = engine.store.resource_chunks(engine.workspace_id, found[0].dataset_id)
        for row, mention in zip(rows, found):
            passage = engine.store.post_passage(engine.workspace_id, source, str(row["id"]))
            assert passage.chunk.id == mention.chunk_id and row["text"].startswith(passage.chunk.text)
            assert passage.chunk.text_type == "post" and passage.chunk.metadata["created_at"] == row["created_at"]
            pieces = [c for c in chunks if c.metadata["id"] == str(row["id"])]  # a long post: its pieces, in order
            assert pieces[0].id == mention.chunk_id
            assert "".join("".join(c.text.split()) for c in pieces) == "".join(row["text"].split())
            assert [c.metadata.get("part", 0) for c in pieces] == list(range(len(pieces)))
    first = engine.store.mentions(engine.workspace_id, [("stocktwits", "468303772")])[0]
    assert first.author == "user_0001" and first.model_extra["cashtags"] == ["$BTC.X", "$ETH.X"]
    assert first.model_extra["likes"] == 0 and first.created_at == "2022-06-25T13:39:06Z"


def test_a_fixed_file_retires_its_failed_attempt(engine: Engine, tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_bytes("Caf\xe9".encode("latin-1"))
    failed = engine.sync(tmp_path).outcomes[0]
    assert (failed.action, failed.code) == ("failed", "TEXT_ENCODING")
    note.write_text("Café menus list twelve dishes.\n", encoding="utf-8")
    fixed = engine.sync(tmp_path).outcomes[0]
    assert fixed.action == "ingested"
    old = engine.store.resource(engine.workspace_id, failed.resource_id)
    assert old.status == "superseded" and old.error is not None and old.error.code == "TEXT_ENCODING"
    assert engine.resources(statuses=["failed"]) == []
    # the broken bytes come back: the old row is failed again, never "ready" without chunks
    note.write_bytes("Caf\xe9".encode("latin-1"))
    again = engine.sync(tmp_path).outcomes[0]
    assert (again.action, again.code, again.resource_id) == ("failed", "TEXT_ENCODING", failed.resource_id)
    assert engine.store.resource(engine.workspace_id, failed.resource_id).status == "failed"
    assert engine.store.resource(engine.workspace_id, fixed.resource_id).status == "ready"


def test_manifest_paths_are_relative_to_the_ingested_folder(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("Alpha report on turbines.\n", encoding="utf-8")
    manifest = tmp_path / "elsewhere" / "m.jsonl"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"path": "a.txt", "title": "Alpha", "ticker": "ALP"}) + "\n"
                        + json.dumps({"path": "nope.txt", "title": "Ghost"}) + "\n", encoding="utf-8")
    report = engine.ingest([folder], manifests=[manifest])
    assert [r.title for r in engine.resources()] == ["Alpha"]
    assert report.manifest_unmatched == [f"{manifest}:2"]


def test_missing_manifest_is_reported(engine: Engine, tmp_path: Path) -> None:
    from citewell import IngestError

    with pytest.raises(IngestError) as info:
        engine.sync(tmp_path, manifests=[tmp_path / "absent.jsonl"])
    assert info.value.code == "MANIFEST_NOT_FOUND"


def test_hostile_inputs_never_stop_the_folder(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "surrogate.jsonl").write_text('{"source": "x", "id": "2", "text": "bad \\ud800 revenue"}\n',
                                            encoding="utf-8")
    (folder / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    (folder / "deep-later.jsonl").write_text(json.dumps(POSTS[0]) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n",
                                             encoding="utf-8")
    bad_name = os.fsdecode(b"bad\xffname.txt")
    (folder / bad_name).write_text("Turbines spin at night.\n", encoding="utf-8")
    (folder / "good.txt").write_text("Turbines spin by day.\n", encoding="utf-8")
    report = engine.sync(folder)
    by_name = {Path(o.path).name: o for o in report.outcomes}
    assert (by_name["deep.jsonl"].action, by_name["deep.jsonl"].code) == ("failed", "JSONL_MALFORMED")
    assert by_name["deep-later.jsonl"].action == "ingested"
    assert by_name["surrogate.jsonl"].action == "ingested"
    assert by_name["good.txt"].action == "ingested"
    assert by_name["bad\\xffname.txt"].action == "ingested"
    titles = sorted(r.title for r in engine.resources(statuses=["ready"]))
    assert titles == ["bad\\xffname", "deep-later", "good", "surrogate"]
    post = engine.store.post_passage(engine.workspace_id, "x", "2")
    assert post.chunk.text == "bad \ufffd revenue"
    later = next(r for r in engine.resources() if r.title == "deep-later")
    assert [(w.code, w.model_extra["line"]) for w in later.warnings] == [("LINE_SKIPPED", 2)]
    again = engine.sync(folder)  # the odd name is found again; the failed file stays failed
    assert (again.count("unchanged"), [Path(o.path).name for o in again.failed]) == (4, ["deep.jsonl"])


def test_post_sources_differing_in_case_are_one_post(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    _write_posts(path, [{"source": "Reddit", "id": "9", "text": "first"}, {"source": "reddit", "id": "9", "text": "second"}])
    engine.sync(tmp_path)
    (resource,) = engine.resources()
    assert resource.chunk_count == 1
    assert [(w.code, w.model_extra["line"]) for w in resource.warnings] == [("LINE_SKIPPED", 1)]
    chunks = engine.store.resource_chunks(engine.workspace_id, resource.id)
    assert [(c.chunk_index, c.text) for c in chunks] == [(0, "second")]


def test_deleting_or_changing_one_posts_file_never_changes_anothers_post(engine: Engine, tmp_path: Path) -> None:
    """Issue 14: b.jsonl holding a.jsonl's post with other text, then deleted, must leave
    a.jsonl's post, its mention and its answers with a's text."""
    _write_posts(tmp_path / "a.jsonl", [{"source": "reddit", "id": "z1", "text": "Original turbine revenue post"},
                                        {"source": "reddit", "id": "t3_a", "text": "only in a"}])
    (a,) = [o.resource_id for o in engine.sync(tmp_path).outcomes]
    b = engine.upload("b.jsonl", json.dumps({"source": "REDDIT", "id": "z1", "text": "Rewritten turbine revenue "
                                                                                     "claim"}).encode())
    assert engine.process(b.id).status == "ready"
    hits = engine.retrieve("turbine revenue", k=5, corpus=tmp_path)
    assert [(p.chunk.text, p.chunk.resource_id) for p in hits] == [("Original turbine revenue post", a)]
    answer = engine.ask("turbine revenue", corpus=tmp_path)
    assert [(r.resource_id, r.text) for r in answer.references] == [(a, "Original turbine revenue post")]
    engine.delete_resource(b.id)
    assert [c.text for c in engine.store.resource_chunks(engine.workspace_id, a)] == [
        "Original turbine revenue post", "only in a"]
    (mention,) = engine.store.mentions(engine.workspace_id, [("reddit", "z1")])
    assert (mention.text, mention.dataset_id) == ("Original turbine revenue post", a)
    assert engine.store.resource_text(engine.workspace_id, a).startswith("Original turbine revenue post")
    # a changed a.jsonl is a new version of a; the other file's copy is its own
    c = engine.upload("c.jsonl", json.dumps({"source": "reddit", "id": "z1", "text": "Third turbine copy"}).encode())
    engine.process(c.id)
    _write_posts(tmp_path / "a.jsonl", [{"source": "reddit", "id": "z1", "text": "Fourth turbine version"}])
    engine.sync(tmp_path)
    assert engine.store.mentions(engine.workspace_id, [("reddit", "z1")], dataset_ids=[c.id])[0].text == \
        "Third turbine copy"
    (hit,) = engine.retrieve("turbine", k=5, corpus=tmp_path)
    assert hit.chunk.text == "Fourth turbine version"


def test_a_foreign_sqlite_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    from citewell import StoreError

    foreign = tmp_path / "app.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    before = foreign.read_bytes()
    with pytest.raises(StoreError) as info:
        Engine(foreign)
    assert "not a citewell store" in info.value.message
    assert foreign.read_bytes() == before


def _legacy_store(path: Path, version: int) -> sqlite3.Connection:
    """An empty store of schema ``version`` as that version of citewell made it (the
    migration scripts up to it), for rows written as that version wrote them."""
    from citewell.store.sqlite import schema as store_sql

    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.create_function("citewell_sha256", 1, lambda t: hashlib.sha256(t.encode()).hexdigest())
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for target, script in store_sql._MIGRATIONS:
        if target <= version:
            for statement in script.split(";\n"):
                if statement.strip():
                    conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(version),))
    conn.execute("INSERT INTO workspaces VALUES ('ws', 'default', '2024-01-01T00:00:00+00:00')")
    return conn


def _legacy_resource(conn: sqlite3.Connection, rid: str, name: str, kind: str, text: str, version: str,
                     chunks: int) -> None:
    conn.execute("INSERT INTO resources (id, workspace_id, sha256, title, file_name, kind, media_type, size_bytes, "
                 "blob_key, status, warnings, metadata, extractor_version, chunk_count, extracted_text, created_at, "
                 "updated_at) VALUES (?, 'ws', ?, ?, ?, ?, 'text/plain', 1, NULL, 'ready', '[]', '{}', ?, ?, ?, ?, ?)",
                 (rid, hashlib.sha256(rid.encode()).hexdigest(), Path(name).stem, name, kind, version, chunks, text,
                  f"2024-01-0{len(rid)}T00:00:00+00:00", "2024-01-01T00:00:00+00:00"))


def _legacy_post(conn: sqlite3.Connection, cid: str, owner: str, index: int, pid: str, text: str, start: int) -> int:
    meta = {"source_type": "post", "source": "reddit", "id": pid, "dataset_id": owner}
    rowid = conn.execute("INSERT INTO chunks (id, workspace_id, resource_id, chunk_index, text, text_type, "
                         "char_start, char_end, metadata, post_source) VALUES (?, 'ws', ?, ?, ?, 'post', ?, ?, ?, "
                         "'reddit')", (cid, owner, index, text, start, start + len(text), json.dumps(meta))).lastrowid
    conn.execute("INSERT INTO chunk_fts (rowid, title, text) VALUES (?, '', ?)", (rowid, text))
    return rowid


@pytest.mark.sqlite_only("upgrades a SQLite file of an older schema")
def test_schema_v1_store_migrates_to_the_current_version(store_path: Path) -> None:
    conn = _legacy_store(store_path, 1)
    _legacy_resource(conn, "p1", "a.jsonl", "post", "first post\n\nsecond post", "posts-1", 2)
    _legacy_resource(conn, "t22", "b.txt", "text", "Pumps run at forty bar.", "text-1", 1)
    _legacy_post(conn, "c-p1", "p1", 0, "1", "first post", 0)
    _legacy_post(conn, "c-p2", "p1", 1, "2", "second post", 12)
    for pid, cid in (("1", "c-p1"), ("2", "c-p2")):
        conn.execute("INSERT INTO mentions VALUES ('ws', 'reddit', ?, 'reddit', ?, NULL, NULL, NULL, 'p1', ?, ?)",
                     (pid, f"post {pid}", cid, json.dumps({"source": "reddit", "id": pid})))
    rowid = conn.execute("INSERT INTO chunks (id, workspace_id, resource_id, chunk_index, text, text_type, char_start, "
                         "char_end, metadata) VALUES ('c-t', 'ws', 't22', 0, 'Pumps run at forty bar.', 'paragraph', 0, "
                         "23, '{}')").lastrowid
    conn.execute("INSERT INTO chunk_fts (rowid, title, text) VALUES (?, 'b', 'Pumps run at forty bar.')", (rowid,))
    conn.commit()
    conn.close()
    with Engine(store_path) as eng:
        from citewell.store.sqlite import SCHEMA_VERSION

        assert sql_rows(store_path, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
        assert [c.id for c in eng.store.resource_chunks(eng.workspace_id, "p1")] == ["c-p1", "c-p2"]
        assert [c.text for c in eng.store.resource_chunks(eng.workspace_id, "t22")] == ["Pumps run at forty bar."]
        assert sql_rows(store_path, "SELECT id, version, post_id FROM chunks ORDER BY id") == [
            ("c-p1", "posts-1", "1"), ("c-p2", "posts-1", "2"), ("c-t", "text-1", None)]
        assert [(m.dataset_id, m.chunk_id) for m in eng.store.mentions(eng.workspace_id, [("reddit", "2")])] == [
            ("p1", "c-p2")]
        assert [p.chunk.id for p in eng.retrieve("pumps forty", k=3)] == ["c-t"]


@pytest.mark.sqlite_only("upgrades a SQLite file of an older schema")
def test_a_v8_store_gives_each_posts_file_its_own_copy_and_loses_nothing(store_path: Path, tmp_path: Path) -> None:
    """Schema v9 (issue 14). In a v8 store a post two files held was one row that the last
    writer had set; opening it gives the other file a copy (and a mention) of its own, and
    re-extracting that file from its bytes restores its own text."""
    folder = tmp_path / "f"
    folder.mkdir()
    own = [{"source": "reddit", "id": "z1", "text": "Original turbine text"},
           {"source": "reddit", "id": "t3_a", "text": "only in a"}]
    _write_posts(folder / "a.jsonl", own)
    data = (folder / "a.jsonl").read_bytes()
    a_sha = hashlib.sha256(data).hexdigest()
    conn = _legacy_store(store_path, 8)
    _legacy_resource(conn, "a1", "a.jsonl", "post", "Original turbine text\n\nonly in a", "posts-1", 2)
    conn.execute("UPDATE resources SET sha256 = ? WHERE id = 'a1'", (a_sha,))
    _legacy_resource(conn, "b22", "b.jsonl", "post", "Rewritten turbine claim", "posts-1", 1)
    # v8: z1 is one row, rewritten by b (the last writer) and moved to it; a holds it through dataset_posts
    _legacy_post(conn, "old-z1", "b22", 0, "z1", "Rewritten turbine claim", 0)
    _legacy_post(conn, "old-a", "a1", 1, "t3_a", "only in a", 23)
    conn.executemany("INSERT INTO dataset_posts VALUES (?, ?, ?)",
                     [("a1", "old-z1", 0), ("a1", "old-a", 1), ("b22", "old-z1", 0)])
    conn.executemany("INSERT INTO mentions VALUES ('ws', 'reddit', ?, 'reddit', ?, NULL, NULL, NULL, ?, ?, ?)",
                     [("z1", "Rewritten turbine claim", "b22", "old-z1", json.dumps({"source": "reddit", "id": "z1"})),
                      ("t3_a", "only in a", "a1", "old-a", json.dumps({"source": "reddit", "id": "t3_a"}))])
    st = (folder / "a.jsonl").stat()
    conn.execute("INSERT INTO files VALUES ('ws', ?, 'a1', 'a1', ?, ?, ?, 1, '2024-01-01')",
                 (str(folder / "a.jsonl"), a_sha, st.st_size, st.st_mtime_ns))
    conn.execute("UPDATE chunks SET version = NULL, text_hash = citewell_sha256(text)")
    conn.commit()
    conn.close()
    with Engine(store_path) as eng:
        ws = eng.workspace_id
        assert eng.workspace_id == "ws"
        assert "dataset_posts" not in {r[0] for r in sql_rows(store_path, "SELECT name FROM sqlite_master")}
        copy = post_chunk_id(ws, "a1", "reddit", "z1")
        assert [(c.id, c.text) for c in eng.store.resource_chunks(ws, "a1")] == [
            (copy, "Rewritten turbine claim"), ("old-a", "only in a")]
        assert [c.id for c in eng.store.resource_chunks(ws, "b22")] == ["old-z1"]  # b's row keeps its id
        a_z1, b_z1 = eng.store.mentions(ws, [("reddit", "z1")] * 2, dataset_ids=["a1", "b22"])
        assert (a_z1.dataset_id, a_z1.chunk_id, b_z1.dataset_id, b_z1.chunk_id) == ("a1", copy, "b22", "old-z1")
        assert {p.chunk.resource_id for p in eng.store.search_text(ws, ["turbine"], limit=5)} == {"a1", "b22"}
        assert len(eng.retrieve("turbine", k=5)) == 1  # one post: one passage offered
        eng.delete_resource("b22")  # deleting b leaves a's copy
        assert [c.text for c in eng.store.resource_chunks(ws, "a1")] == ["Rewritten turbine claim", "only in a"]
        # a's file, re-extracted by posts-2 from its own bytes: its own text again, same ids for its posts
        report = eng.sync(folder)
        assert [(o.action, o.resource_id) for o in report.outcomes] == [("reindexed", "a1")]
        assert [(c.id, c.text) for c in eng.store.resource_chunks(ws, "a1")] == [
            (copy, "Original turbine text"), (post_chunk_id(ws, "a1", "reddit", "t3_a"), "only in a")]
        (mention,) = eng.store.mentions(ws, [("reddit", "z1")])
        assert (mention.text, mention.dataset_id) == ("Original turbine text", "a1")
        assert eng.store.chunks(ws, ["old-a"])["old-a"].chunk.text == "only in a"  # stored answers still read it
        assert [p.chunk.text for p in eng.retrieve("turbine", k=5)] == ["Original turbine text"]


def test_a_newer_extractor_reindexes_unchanged_files(engine: Engine, tmp_path: Path, monkeypatch) -> None:
    from citewell.ingest import pipeline

    (tmp_path / "a.txt").write_text("The pump runs at forty bar.\n\nThe valve opens at ten bar.\n", encoding="utf-8")
    (rid,) = [o.resource_id for o in engine.sync(tmp_path).outcomes]
    old = engine.store.resource_chunks(engine.workspace_id, rid)
    monkeypatch.setitem(pipeline.EXTRACTOR_VERSIONS, "text", "text-99")
    report = engine.sync(tmp_path)
    assert [(o.action, o.resource_id) for o in report.outcomes] == [("reindexed", rid)]
    new = engine.store.resource_chunks(engine.workspace_id, rid)
    assert [c.text for c in new] == [c.text for c in old]
    assert {c.id for c in new}.isdisjoint({c.id for c in old})  # ids carry the extractor version
    assert engine.store.resource(engine.workspace_id, rid).extractor_version == "text-99"
    assert [p.chunk.id for p in engine.retrieve("pump forty bar", corpus=tmp_path)] == [new[0].id]
    assert engine.store.chunks(engine.workspace_id, [old[0].id])[old[0].id].chunk.text == old[0].text
    assert [o.action for o in engine.sync(tmp_path).outcomes] == ["unchanged"]


def test_failed_attempts_do_not_pile_up_and_go_missing_with_their_file(engine: Engine, tmp_path: Path) -> None:
    bad = tmp_path / "latin.txt"
    bad.write_bytes("Caf\xe9".encode("latin-1"))
    first = engine.sync(tmp_path).outcomes[0]
    bad.write_bytes("Cr\xe8me".encode("latin-1"))
    second = engine.sync(tmp_path).outcomes[0]
    assert first.resource_id != second.resource_id
    assert [r.id for r in engine.resources(statuses=["failed"])] == [second.resource_id]
    assert engine.store.resource(engine.workspace_id, first.resource_id).status == "superseded"
    bad.unlink()
    engine.sync(tmp_path)
    assert engine.resources(statuses=["failed"]) == []
    gone = engine.store.resource(engine.workspace_id, second.resource_id)
    assert gone.status == "missing" and gone.error.code == "TEXT_ENCODING"


def test_a_renamed_file_takes_its_new_name(engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\nThe pump runs at 40 bar.\n", encoding="utf-8")
    (rid,) = [o.resource_id for o in engine.sync(tmp_path).outcomes]
    (tmp_path / "notes.md").rename(tmp_path / "pump-notes.md")
    engine.sync(tmp_path)
    renamed = engine.store.resource(engine.workspace_id, rid)
    assert (renamed.status, renamed.file_name, renamed.title) == ("ready", "pump-notes.md", "pump-notes")
    assert renamed.paths == [str(tmp_path / "pump-notes.md")]


@pytest.mark.sqlite_only("the blob folder beside a SQLite file")
def test_blobs_live_beside_the_store_under_its_name(engine: Engine, store_path: Path, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Blob test text.\n", encoding="utf-8")
    engine.sync(tmp_path)
    (resource,) = engine.resources()
    blob = store_path.parent / "citewell.blobs" / resource.blob_key
    assert blob.read_bytes() == (tmp_path / "a.txt").read_bytes()
