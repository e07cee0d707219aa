"""Untrusted files are extracted in a child process with memory and time limits, and the
engine refuses oversized or unencodable input (found by adversarial testing)."""

from __future__ import annotations

import zlib

import pytest

from citewell import Engine
from citewell.errors import IngestError, UsageError
from citewell.ingest.isolate import extract_isolated

from .conftest import CORPUS


def flate_bomb(megabytes: int) -> bytes:
    """A one-page PDF whose content stream inflates to ``megabytes`` MB of spaces."""
    comp = zlib.compressobj(1)
    pieces = [comp.compress(b"BT /F1 12 Tf 10 10 Td (Revenue bomb) Tj ET\n")]
    block = b" " * (1 << 20)
    pieces += [comp.compress(block) for _ in range(megabytes)]
    stream = b"".join(pieces) + comp.flush()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    pdf, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    pdf += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    return pdf + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


def test_a_flate_bomb_fails_under_the_memory_limit() -> None:
    with pytest.raises(IngestError) as failed:
        extract_isolated(flate_bomb(800), name="bomb.pdf", fmt="pdf", memory_mb=400)
    assert failed.value.code == "PDF_CORRUPT"


def test_a_real_pdf_extracts_the_same_in_the_child() -> None:
    from citewell.ingest.pipeline import extract

    data = (CORPUS / "pdf" / "2305.03393v1-pg9.pdf").read_bytes()
    isolated = extract_isolated(data, name="p.pdf", fmt="pdf", memory_mb=1024)
    direct = extract(data, name="p.pdf", fmt="pdf")
    assert isolated.text == direct.text
    assert [c.metadata for c in isolated.chunks] == [c.metadata for c in direct.chunks]


def test_the_childs_own_errors_and_timeouts_come_back_coded() -> None:
    with pytest.raises(IngestError) as corrupt:
        extract_isolated(b"%PDF-1.7\nnot a pdf", name="x.pdf", fmt="pdf")
    assert corrupt.value.code == "PDF_CORRUPT"
    with pytest.raises(IngestError) as slow:
        extract_isolated((CORPUS / "pdf" / "3M_2022_10K.pdf").read_bytes(), name="3m.pdf", fmt="pdf",
                         timeout_s=0.05)
    assert slow.value.code == "PDF_CORRUPT" and "longer than 0.05 s" in slow.value.message


def test_an_uploaded_bomb_ends_failed_and_the_engine_goes_on(engine: Engine, monkeypatch) -> None:
    monkeypatch.setenv("CITEWELL_EXTRACT_MEMORY_MB", "400")
    failed = engine.process(engine.upload("bomb.pdf", flate_bomb(800)).id)
    assert failed.status == "failed" and failed.error.code == "PDF_CORRUPT" and failed.blob_key is None
    ok = engine.process(engine.upload("ok.txt", b"Pumps run at forty bar.\n").id)
    assert ok.status == "ready"


def test_oversized_questions_and_titles_are_refused(engine: Engine) -> None:
    with pytest.raises(UsageError) as long_question:
        engine.ask("revenue " * 2000)
    assert "8,000 characters" in long_question.value.message
    with pytest.raises(UsageError):
        engine.chat("t" * 1001)
    assert engine.chat("t" * 1000).title == "t" * 1000


def test_lone_surrogates_are_replaced_at_the_edges(engine: Engine) -> None:
    resource = engine.upload("a\ud800.txt", b"Pumps run at forty bar.\n",
                             metadata={"note": "x\ud800y", "publisher": "P\udc00"})
    assert resource.file_name == "a\ufffd.txt"
    assert resource.custom_metadata == {"note": "x\ufffdy"} and resource.metadata["publisher"] == "P\ufffd"
    engine.process(resource.id)
    for listed in engine.resources():
        listed.model_dump_json()  # encodable: no lone surrogate was stored
    chat = engine.chat("title \ud83d")
    assert chat.title == "title \ufffd"
    answer = engine.ask("pumps \ud800 bar", chat_id=chat.id)
    assert engine.history(chat.id)[0].text == "pumps \ufffd bar" and answer.references


def test_the_cli_extracts_under_the_same_caps_so_a_bomb_fails_alone(tmp_path) -> None:
    """Issue 14: ``citewell ingest`` and ``ask --corpus`` extracted in-process: a flate bomb
    aborted the whole run (SIGABRT), the folder's other files were never ingested, and every
    later ``ask --corpus`` aborted again. The CLI runs here with its own address space
    limited (a machine with less memory than the bomb needs)."""
    import json
    import os
    import resource
    import subprocess
    import sys

    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "bomb.pdf").write_bytes(flate_bomb(1200))  # about 5 MB on disk, 1.2 GB inflated
    (folder / "notes.txt").write_text("Pumps run at forty bar.\n", encoding="utf-8")
    (folder / "posts.jsonl").write_text(json.dumps({"source": "reddit", "id": "1", "text": "Valves open at ten bar."})
                                        + "\n", encoding="utf-8")
    assert (folder / "bomb.pdf").stat().st_size < 8 << 20
    env = {**os.environ, "CITEWELL_EXTRACT_MEMORY_MB": "400", "CITEWELL_RETRIEVAL_MODE": "lexical"}

    def small_machine() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1000 << 20, 1000 << 20))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "citewell", *args, "--store", str(tmp_path / "s.sqlite")],
                              capture_output=True, text=True, env=env, preexec_fn=small_machine, timeout=300)

    ingest = run("ingest", str(folder), "--json")
    assert ingest.returncode == 1, ingest.stderr  # one file failed, after the rest were ingested
    outcomes = {os.path.basename(o["path"]): (o["action"], o["code"]) for o in json.loads(ingest.stdout)}
    assert outcomes == {"bomb.pdf": ("failed", "PDF_CORRUPT"), "notes.txt": ("ingested", None),
                        "posts.jsonl": ("ingested", None)}
    for _ in range(2):  # later questions on the folder do not abort, and do not retry the bomb
        ask = run("ask", "At what pressure do pumps run?", "--corpus", str(folder))
        assert ask.returncode == 0, ask.stderr
        assert "Pumps run at forty bar" in ask.stdout
