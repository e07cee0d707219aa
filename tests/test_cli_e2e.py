"""End to end through the real ``citewell`` command: sync, ask, cite, print.

Every [N] in an answer must resolve to a reference whose passage contains the cited
sentence, and ``text[start_index:end_index] == "[N]"`` for every reference.
"""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import CORPUS, copy_corpus_files

FILES = (
    "pdf/PEPSICO_2023_8K_dated-2023-05-05.pdf",
    "pdf/FOOTLOCKER_2022_8K_dated-2022-05-20.pdf",
    "pdf/ocr_test.pdf",
    "transcripts/twiml-409_deep-learning-ocr_cha-zhang.vtt",
    "transcripts/twiml-409_deep-learning-ocr_cha-zhang.srt",
    "transcripts/elephants-dream_captions.en.vtt",
    "posts/reddit_wallstreetbets_2022-01.jsonl",
    "posts/stocktwits_2022-06_07.jsonl",
    "README.md",
)
_ESCAPES = re.compile(r"\\([\\\[\]`])")
_MARKERS = re.compile(r"\s*\[(\d+)\]")
PEPSI_Q = ("At the PepsiCo annual meeting of shareholders, what was the outcome of the vote on the shareholder "
           "proposal for a congruency report on net-zero emissions policies?")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_corpus_files(tmp_path_factory.mktemp("corpus"), *FILES)


@pytest.fixture(scope="module")
def store(module_store_location: str | Path) -> str | Path:
    """The module's store (a SQLite file or a PostgreSQL URL, passed as ``--store``)."""
    return module_store_location


def run(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "citewell", *args, "--store", str(store)],
                          capture_output=True, text=True, timeout=300)


def ask_json(question: str, corpus: Path, store: Path, *extra: str) -> dict:
    proc = run("ask", question, "--corpus", str(corpus), "--json", *extra, store=store)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # exactly one JSON document: json.loads rejects trailing data


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", _ESCAPES.sub(r"\1", text)).strip()


_RESTATED = re.compile(r"(?P<label>[^:]+): (?P<values>.+\))(?:, in (?P<unit>thousands|millions|billions))?")


def check_message(message: dict) -> None:
    """Offsets, numbering and 'the passage contains the cited sentence' for every [N]."""
    text = message["text"]
    numbered = {r["citation"]: r for r in message["references"] if r.get("citation")}
    assert sorted(numbered) == list(range(1, len(numbered) + 1))
    for n, ref in numbered.items():
        assert text[ref["start_index"]:ref["end_index"]] == f"[{n}]"
        assert ref["offset_unit"] == "codepoint"
        for occ in ref["occurrences"]:
            assert text[occ["start_index"]:occ["end_index"]] == f"[{n}]"
    assert set(int(m) for m in re.findall(r"(?<!\\)\[(\d+)\]", text)) == set(numbered)
    assert "".join(p["text"] for p in message["parts"]) == text
    for part in message["parts"]:
        cited = [int(m) for m in _MARKERS.findall(part["text"])]
        if not cited:
            continue
        sentence = _flat(_MARKERS.sub("", part["text"])).rstrip(".")
        if sentence.endswith("…"):
            sentence = sentence[:-1]
        for n in cited:
            passage = _flat(numbered[n]["text"])
            restated = _RESTATED.fullmatch(sentence)
            if restated and sentence not in passage:  # a statement row as "Label: value (period), …"
                assert restated["label"] in passage, (sentence, passage[:200])
                if restated["unit"]:  # the unit is the scale the statement declares
                    assert restated["unit"] in numbered[n]["text"].lower() or \
                        restated["unit"] in str(numbered[n]["metadata"]).lower(), (sentence, passage[:200])
                flat = "".join(passage.split())
                for item in restated["values"].split("), "):
                    value = item.rsplit(" (", 1)[0]
                    assert value.replace("$", "") in flat.replace("$", ""), (value, passage[:200])
            else:
                assert sentence in passage, (sentence, numbered[n]["text"][:200])


def test_ask_cites_pdf_pages(corpus: Path, store: Path) -> None:
    message = ask_json(PEPSI_Q, corpus, store)
    check_message(message)
    pepsi = [r for r in message["references"] if r.get("resource_title") == "PEPSICO_2023_8K_dated-2023-05-05"]
    assert pepsi, message["text"]
    for ref in pepsi:
        meta = ref["metadata"]
        assert meta["source_type"] == "pdf" and 1 <= meta["page"] <= 5
        assert meta["offset"] and all(0 <= b["top"] <= 1 and 0 <= b["left"] <= 1 for b in meta["offset"])
        assert all(b["page"] == meta["page"] for b in meta["offset"])
    assert message["citations"][0]["resource_id"] == message["resource_ids"][0]


def test_ask_cites_transcript_moments(corpus: Path, store: Path) -> None:
    message = ask_json("How has deep learning changed OCR and document understanding?", corpus, store,
                       "--filter", "kind=transcript")
    check_message(message)
    assert message["references"]
    for ref in message["references"]:
        meta = ref["metadata"]
        assert meta["source_type"] == "transcript"
        assert 0 <= meta["start_time"] <= meta["end_time"] <= 3800
        assert meta["blocks"] == sorted(meta["blocks"])


def test_ask_cites_posts_by_source_and_id(corpus: Path, store: Path) -> None:
    message = ask_json("Are people buying puts on Activision?", corpus, store, "--filter", "source=reddit")
    check_message(message)
    posts = [r for r in message["references"] if r["type"] == "post"]
    assert posts
    for ref in posts:
        assert ref["source"] == "reddit" and ref["id"].startswith(("t3_", "t1_"))
        assert ref["metadata"]["source_type"] == "post"
    assert len({(r["source"], r["id"]) for r in posts}) == len(posts)
    # every post counts as its own resource in citations[]
    assert [(c["source"], c["id"]) for c in message["citations"]] == [(r["source"], r["id"]) for r in posts]


def test_plain_output_and_second_ask_is_immediate(corpus: Path, store: Path) -> None:
    proc = run("ask", PEPSI_Q, "--corpus", str(corpus), store=store)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\x1b[" not in out  # plain when piped
    answer, _, sources = out.partition("\n\nSources:\n")
    assert re.search(r"\[1\]", answer)
    first = sources.splitlines()[0]
    assert re.fullmatch(r"\[1\] PEPSICO_2023_8K_dated-2023-05-05\.pdf, p\. \d", first), first
    excerpt = sources.splitlines()[1]
    assert excerpt.startswith("    ") and len(excerpt.strip()) <= 302
    assert "ingested" not in proc.stderr and "failed" not in proc.stderr  # nothing new to sync


def test_transcript_time_format(corpus: Path, store: Path) -> None:
    proc = run("ask", "OCR research at Microsoft after one hour", "--corpus", str(corpus), "--filter",
               "document_name=twiml-409_deep-learning-ocr_cha-zhang.vtt", "-k", "3", store=store)
    assert proc.returncode == 0, proc.stderr
    heads = [line for line in proc.stdout.splitlines() if re.match(r"\[\d+\] ", line)]
    assert heads
    for head in heads:
        assert re.search(r", (\d+:)?\d{1,2}:\d{2}–(\d+:)?\d{1,2}:\d{2}$", head), head


def test_no_evidence_answer_cites_nothing(corpus: Path, store: Path) -> None:
    message = ask_json("zyzzyva quokka xylophone", corpus, store)
    assert message["references"] == [] and message["citations"] == []
    assert message["text"] and message["grounded"] is False


def test_offsets_flag_changes_the_unit(corpus: Path, store: Path) -> None:
    message = ask_json("Are people buying puts on Activision?", corpus, store, "--offsets", "utf16",
                       "--filter", "source=reddit")
    data = message["text"].encode("utf-16-le")
    for ref in message["references"]:
        assert ref["offset_unit"] == "utf16"
        assert data[2 * ref["start_index"]:2 * ref["end_index"]].decode("utf-16-le") == f"[{ref['citation']}]"


def test_resources_lists_status_kind_and_warnings(corpus: Path, store: Path) -> None:
    proc = run("resources", "--json", store=store)
    assert proc.returncode == 0, proc.stderr
    items = {r["file_name"]: r for r in json.loads(proc.stdout)}
    assert items["ocr_test.pdf"]["status"] == "ready" and items["ocr_test.pdf"]["chunk_count"] == 0
    assert [w["code"] for w in items["ocr_test.pdf"]["warnings"]] == ["NO_TEXT_LAYER"]
    assert items["reddit_wallstreetbets_2022-01.jsonl"]["kind"] == "post"
    plain = run("resources", store=store).stdout
    assert "NO_TEXT_LAYER×1" in plain


@pytest.mark.parametrize("args, code", [
    (("ask", "q", "--filter", "colour=red"), "INVALID_FILTER"),
    (("ask", "q", "--filter", "fiscal_quarter=Q7"), "INVALID_FILTER"),
    (("ask", "q", "--offsets", "bytes"), "--offsets"),
    (("ask", "q", "--corpus", "/nonexistent/folder"), "not a folder"),
    (("ask", "q", "--bogus"), "No such option"),
])
def test_bad_usage_exits_2_with_a_message(store: Path, args: tuple[str, ...], code: str) -> None:
    proc = run(*args, store=store)
    assert proc.returncode == 2
    assert code in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_ingest_exits_1_when_a_file_failed_but_ingests_the_rest(tmp_path: Path,
                                                               store_location: str | Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "bad.pdf").write_bytes(b"garbage")
    (folder / "ok.txt").write_text("A fine paragraph about turbines.\n", encoding="utf-8")
    store = store_location
    proc = run("ingest", str(folder), store=store)
    assert proc.returncode == 1
    assert "PDF_CORRUPT" in proc.stderr
    listed = json.loads(run("resources", "--json", store=store).stdout)
    assert sorted((r["file_name"], r["status"]) for r in listed) == [("bad.pdf", "failed"), ("ok.txt", "ready")]


def test_ask_names_the_files_its_sync_skipped(tmp_path: Path, store_location: str | Path) -> None:
    """The summary of ask --corpus names the skipped files and why (the first three, then a
    count), so that "2 skipped" is not a riddle; citewell ingest lists each."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "ok.txt").write_text("A fine paragraph about turbines.\n", encoding="utf-8")
    (folder / "image.png").write_bytes(b"\x89PNG")
    (folder / "table.jsonl").write_text('{"a": 1}\n', encoding="utf-8")
    proc = run("ask", "What about turbines?", "--corpus", str(folder), "--mode", "lexical", store=store_location)
    assert proc.returncode == 0
    assert ("1 ingested, 2 skipped (not ingested: image.png (UNSUPPORTED_FILE), table.jsonl (not_a_posts_file); "
            "citewell ingest DIR lists each)") in proc.stderr.splitlines()
    for i in range(4):
        (folder / f"picture{i}.png").write_bytes(b"\x89PNG")
    (folder / "more.txt").write_text("Another paragraph about pumps.\n", encoding="utf-8")
    proc = run("ask", "What about pumps?", "--corpus", str(folder), "--mode", "lexical", store=store_location)
    summary = next(line for line in proc.stderr.splitlines() if "skipped" in line)
    assert summary.startswith("1 ingested, 1 unchanged, 6 skipped (not ingested: ") and " and 3 more;" in summary


def test_workspace_flag_and_env_scope_everything(tmp_path: Path, corpus: Path,
                                                 store_location: str | Path) -> None:
    store = store_location
    txt = tmp_path / "only"
    txt.mkdir()
    (txt / "note.txt").write_text("Turbine maintenance happens every 400 hours.\n", encoding="utf-8")
    assert run("ingest", str(txt), "--workspace", "alpha", store=store).returncode == 0
    alpha = json.loads(run("resources", "--json", "--workspace", "alpha", store=store).stdout)
    beta = json.loads(run("resources", "--json", "--workspace", "beta", store=store).stdout)
    assert [r["file_name"] for r in alpha] == ["note.txt"] and beta == []


def test_shared_corpus_readme_question_runs(store: Path) -> None:
    """The README's main job, on the real corpus folder the README names (read-only)."""
    message = ask_json("What was 3M's capital expenditure in FY2022?", CORPUS / "pdf", store, "--filter",
                       "document_name=3M_2022_10K")
    check_message(message)
    assert {r["resource_title"] for r in message["references"]} == {"3M_2022_10K"}
    # the capex row of the cash-flow statement, with the years of its columns
    assert message["text"].startswith("Purchases of property, plant and equipment")
    assert "(1,749) (2022)" in message["text"]
    assert "Purchases of property, plant and equipment" in message["references"][0]["text"]
    assert message["parts"][0]["support"]["verdict"] == "supported"


def test_cite_command_reads_stdin_and_streams_chunks(corpus: Path, store: Path, tmp_path: Path) -> None:
    assert run("ingest", str(corpus), store=store).returncode == 0
    listed = json.loads(run("resources", "--json", store=store).stdout)
    posts = next(r for r in listed if r["file_name"] == "reddit_wallstreetbets_2022-01.jsonl")
    assert posts["status"] == "ready"
    raw = "Elon wants kids [a](post:reddit:t3_s74lpw) but [b](post:tiktok:1) disagrees [c](chunk:nope)."
    proc = subprocess.run([sys.executable, "-m", "citewell", "cite", "--store", str(store)], input=raw,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    message = json.loads(proc.stdout)
    assert message["text"] == "Elon wants kids [1] but [2] disagrees c."
    assert [(r["source"], r["id"]) for r in message["references"]] == [("reddit", "t3_s74lpw"), ("tiktok", "1")]
    assert message["references"][0]["text"].startswith("Elon Musk want you to have more kids")
    assert [w["code"] for w in message["warnings"]] == ["unknown_target"]
    sources = tmp_path / "sources.json"
    sources.write_text(json.dumps([{"source": "reddit", "id": "t3_s74lpw"}]), encoding="utf-8")
    numbered = subprocess.run([sys.executable, "-m", "citewell", "cite", "--store", str(store), "--sources",
                               str(sources), "--numbered", "--offsets", "utf16"],
                              input="Musk wants more kids 🙂 [1] and [2].", capture_output=True, text=True, timeout=120)
    assert numbered.returncode == 0, numbered.stderr
    out = json.loads(numbered.stdout)
    data = out["text"].encode("utf-16-le")
    ref = out["references"][0]
    assert data[2 * ref["start_index"]:2 * ref["end_index"]].decode("utf-16-le") == "[1]"
    assert out["text"].endswith("and \\[2\\].") and out["warnings"][0]["code"] == "unknown_target"
    chunks = tmp_path / "chunks.json"
    chunks.write_text(json.dumps(["Elon wants kids [a](post:red", "dit:t3_s74lpw) today."]), encoding="utf-8")
    streamed = run("cite", "--chunks", str(chunks), store=store)
    assert streamed.returncode == 0, streamed.stderr
    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert [e["event"] for e in events][0] == "citation" and events[-1]["event"] == "done"
    deltas = "".join(e["text"] for e in events if e["event"] == "delta")
    assert deltas == events[-1]["message"]["text"] == "Elon wants kids [1] today."
    assert all("post:" not in e.get("text", "") for e in events if e["event"] == "delta")


def test_cite_command_streams_numbered_forms(store: Path, tmp_path: Path, corpus: Path) -> None:
    assert run("ingest", str(corpus), store=store).returncode == 0
    sources = tmp_path / "s.json"
    sources.write_text(json.dumps([{"source": "reddit", "id": "t3_s74lpw"}]), encoding="utf-8")
    chunks = tmp_path / "c.json"
    chunks.write_text(json.dumps(["Musk wants more kids [", "1]. Other [", "7]."]), encoding="utf-8")
    proc = run("cite", "--chunks", str(chunks), "--sources", str(sources), "--numbered", store=store)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    final = events[-1]["message"]
    assert "".join(e["text"] for e in events if e["event"] == "delta") == final["text"]
    assert final["text"] == "Musk wants more kids [1]. Other \\[7\\]."
    assert [(w["code"], w["citation"]) for w in final["warnings"]] == [("unknown_target", 7)]


def test_cite_numbered_with_a_marker_of_thousands_of_digits(tmp_path: Path, store_location: str | Path) -> None:
    """Issue 14: a 5,000-digit ``[N]`` is a number no passage has (a warning), not an internal error."""
    store = store_location
    (tmp_path / "posts.jsonl").write_text(json.dumps({"source": "reddit", "id": "t3_a", "text": "Kids cost money."})
                                          + "\n", encoding="utf-8")
    assert run("ingest", str(tmp_path / "posts.jsonl"), store=store).returncode == 0
    sources = tmp_path / "s.json"
    sources.write_text(json.dumps([{"source": "reddit", "id": "t3_a"}]), encoding="utf-8")
    huge = "7" * 5000
    proc = subprocess.run([sys.executable, "-m", "citewell", "cite", "--store", str(store), "--sources", str(sources),
                           "--numbered"], input=f"Kids cost money [1]. Odd [{huge}].", capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    message = json.loads(proc.stdout)
    assert message["text"] == f"Kids cost money [1]. Odd \\[{huge}\\]."
    assert [(r["source"], r["id"]) for r in message["references"]] == [("reddit", "t3_a")]
    assert [(w["code"], w["label"]) for w in message["warnings"]] == [("unknown_target", f"[{huge}]")]


def test_names_with_control_and_bidi_characters_are_printed_escaped(tmp_path: Path,
                                                                    store_location: str | Path) -> None:
    """Issue 14: ``citewell resources`` and ingest reports printed file names raw: a
    right-to-left override made ``evil\u202etxt.exe`` show as another name, a newline
    forged a line of the listing."""
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "evil\u202etxt.exe.txt").write_text("Pumps run at forty bar.\n", encoding="utf-8")
    (folder / "two\nlines\x1b[31m.md").write_text("Valves open at ten bar.\n", encoding="utf-8")
    (folder / "bad\u200b\u202e.txt").write_bytes(b"Caf\xe9 menus\n")  # not UTF-8
    store = store_location
    ingest = run("ingest", str(folder), store=store)
    assert ingest.returncode == 1
    assert "bad\\u200b\\u202e.txt: TEXT_ENCODING" in ingest.stderr
    listing = run("resources", store=store)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert len(lines) == 4  # the header and one line per resource: no name breaks a line
    printed = listing.stdout + ingest.stderr
    assert not any(c in printed for c in "\u202e\u200b\x1b")
    assert any("evil\\u202etxt.exe (evil\\u202etxt.exe.txt)" in line for line in lines)
    assert any("two\\x0alines\\x1b[31m (two\\x0alines\\x1b[31m.md)" in line for line in lines)
    as_json = json.loads(run("resources", "--json", store=store).stdout)  # JSON keeps the names as they are
    assert sorted(r["file_name"] for r in as_json) == sorted(p.name for p in folder.iterdir())


def test_warnings_go_to_stderr_not_into_the_answer(corpus: Path, store: Path) -> None:
    done = run("ask", "capex", "--corpus", str(corpus), "--filter", "ticker=NOPE", store=store)
    assert done.returncode == 0, done.stderr
    assert "warning:" not in done.stdout and "NO_MATCHING_RESOURCES" not in done.stdout
    assert "warning: NO_MATCHING_RESOURCES:" in done.stderr


def test_serve_refuses_a_bad_retrieval_mode_before_it_starts(tmp_path: Path) -> None:
    store = tmp_path / "serve.sqlite"
    flag = run("serve", "--port", "0", "--mode", "fuzzy", store=store)
    assert flag.returncode == 2 and "--mode must be one of" in flag.stderr
    env = {**os.environ, "CITEWELL_RETRIEVAL_MODE": "bogus"}
    proc = subprocess.run([sys.executable, "-m", "citewell", "serve", "--port", "0", "--store", str(store)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2 and "CITEWELL_RETRIEVAL_MODE must be one of" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_commands_take_a_postgresql_store_by_flag_or_environment(postgres_server, tmp_path: Path) -> None:
    """Issue 18: ``citewell migrate`` creates a PostgreSQL store named by ``--store`` (or
    ``CITEWELL_STORE``), and ``keys create`` / ``keys list`` use it; no message shows the
    URL's password (trust authentication on the test server ignores it)."""
    import os

    url = postgres_server.new_database().replace("postgresql://postgres@", "postgresql://postgres:s3cret@")
    safe = url.replace(":s3cret", "")
    env = {**os.environ, "CITEWELL_BLOBS": str(tmp_path / "blobs")}
    env.pop("CITEWELL_STORE", None)
    migrated = subprocess.run([sys.executable, "-m", "citewell", "migrate", "--store", url], capture_output=True,
                              text=True, timeout=300, env=env)
    assert migrated.returncode == 0, migrated.stderr
    from citewell.store.migrate import HEAD

    assert migrated.stdout == f"store {safe}: schema revision {HEAD} (version {int(HEAD[1:])})\n"
    created = subprocess.run([sys.executable, "-m", "citewell", "keys", "create", "--workspace", "pg"],
                             capture_output=True, text=True, timeout=300, env={**env, "CITEWELL_STORE": url})
    assert created.returncode == 0, created.stderr
    assert f"in {safe}." in created.stderr and "s3cret" not in created.stderr + created.stdout
    listed = subprocess.run([sys.executable, "-m", "citewell", "keys", "list", "--json", "--store", url],
                            capture_output=True, text=True, timeout=300, env=env)
    assert [row["workspace"] for row in json.loads(listed.stdout)] == ["pg"]
    assert created.stdout.strip().startswith(json.loads(listed.stdout)[0]["prefix"])


def test_a_follow_up_in_a_named_chat_reads_the_turn_before(corpus: Path, store: Path) -> None:
    """``--chat TITLE`` keeps the turns in the store's chat of that title (created on first
    use): a follow-up asked in it keeps the subject and never repeats the answer before it."""
    first = ask_json("What does Cha Zhang say is the blocking issue for document understanding?", corpus, store,
                     "--chat", "ocr talk")
    follow = ask_json("And why?", corpus, store, "--chat", "ocr talk")
    check_message(follow)
    assert follow["text"] and follow["text"] != first["text"]
    assert all(r["resource_title"].startswith("twiml-409") for r in follow["references"] if r.get("citation"))
    from citewell import Engine
    with Engine(store) as engine:
        [chat] = [c for c in engine.chats() if c.title == "ocr talk"]
        history = engine.history(chat.id)
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[2].text == "And why?" and history[3].text == follow["text"]
    blank = run("ask", "x", "--chat", " ", store=store)
    assert blank.returncode == 2 and "--chat needs a title of one line" in blank.stderr
