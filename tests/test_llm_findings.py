"""What the model is given and what citewell does with its answer (issue 28 parts 3-4): the
statement rows, the calculation and the scope check's verdict in the prompt; a refusal of a
question the scope check found answerable never passed off; the answer timeout derived
from the prompt and the endpoint's speed; the progress line while the model reads the
prompt; benchmarks/llamacpp_server.py's command line. The model is scripted on 127.0.0.1
(tests/llm_server.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from citewell import Engine
from citewell.errors import LLM_REFUSED
from citewell.generate.base import GenerationRequest, ScopeVerdict
from citewell.generate.llm import (BUDGET_BASE_S, FLOOR_ANSWER_TPS, FLOOR_CHARS_PER_TOKEN, FLOOR_PROMPT_TPS, SAFETY,
                                   LLMGenerator, ReadingProgress)
from citewell.generate.prompt import NO_ANSWER, REFUSE_CHECKED, chat_messages
from citewell.models import Message
from citewell.settings import LLMSettings

from .conftest import SHARED
from .llm_server import LLMServer, Stream

ROOT = Path(__file__).resolve().parents[1]
ATVI = SHARED / "financebench-dev2" / "pdf" / "ACTIVISIONBLIZZARD_2019_10K.pdf"
TURNOVER = ("What is the FY2019 fixed asset turnover ratio for Activision Blizzard? Fixed asset turnover ratio is "
            "defined as: FY2019 revenue / (average PP&E between FY2018 and FY2019).")
needs_atvi = pytest.mark.skipif(not ATVI.is_file(), reason="needs ../shared/financebench-dev2")


@pytest.fixture
def fake():
    with LLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def atvi_store(tmp_path_factory) -> Path:
    """A store holding Activision Blizzard's 2019 10-K (ingested once for the module)."""
    path = tmp_path_factory.mktemp("atvi") / "s.sqlite"
    with Engine(path, mode="lexical") as engine:
        engine.ingest([ATVI])
    return path


def _llm(fake, **settings) -> LLMSettings:
    return LLMSettings(**{"base_url": fake.base_url, "model": "fake-model", "timeout": 5.0, "retries": 0,
                          "answer_timeout": 60.0, **settings})


def _copy(store: Path, tmp_path: Path) -> Path:
    """A copy of a store (each test writes its own chats)."""
    out = tmp_path / "s.sqlite"
    out.write_bytes(store.read_bytes())
    return out


@needs_atvi
def test_the_prompt_carries_the_rows_the_calculation_and_the_scope_verdict(atvi_store: Path, tmp_path: Path,
                                                                            fake) -> None:
    fake.script(Stream(["The fixed asset turnover ratio for 2019 was 24.26 [S1]."]))
    with Engine(_copy(atvi_store, tmp_path), llm=_llm(fake), generator="llm", mode="lexical") as engine:
        message = engine.ask(TURNOVER)
    system, user = fake.chats[0]["messages"][0]["content"], fake.chats[0]["messages"][-1]["content"]
    assert REFUSE_CHECKED in system and NO_ANSWER not in system  # the scope check found it: no refusal asked for
    findings = user.split("<findings>\n", 1)[1].split("\n</findings>", 1)[0].splitlines()
    assert findings[0].startswith("Scope check: the sources hold Activision Blizzard and 2018 and 2019 "
                                  "(ACTIVISIONBLIZZARD_2019_10K)")
    rows = [line for line in findings if line.startswith("- ")]
    assert any(line.startswith("- Total net revenues | company as a whole | 2019 | millions | 6,489 | [S")
               for line in rows), rows
    assert any(line.startswith("- Property and equipment, net | company as a whole | December 31, 2018 | millions "
                               "| 282 | [S") for line in rows), rows
    assert findings[-1] == ("Computation asked: Computed from the figures below: revenue / average PP&E = 24.26 "
                            "(6,489 / ((282 + 253) / 2)).")
    # each row line's tag is the passage that states it
    tag = next(line for line in rows if line.startswith("- Total net revenues")).rsplit("[", 1)[1].rstrip("]")
    body = user.split(f"=== [{tag}] ", 1)[1].split(f"=== end of [{tag}] ===", 1)[0]
    assert "6,489" in body
    assert user.index("</passages>") < user.index("<findings>") < user.index("Question: ")
    assert message.generation["generator"] == "llm"  # type: ignore[attr-defined]


@needs_atvi
def test_a_refusal_where_the_scope_check_found_the_subject_is_answered_extractively(atvi_store: Path, tmp_path: Path,
                                                                                  fake) -> None:
    fake.script(Stream(["The sources do ", "not answer this ", "question."]))
    with Engine(_copy(atvi_store, tmp_path), llm=_llm(fake), generator="llm", mode="lexical") as engine:
        events = list(engine.ask_stream(TURNOVER))
    sent = "".join(e.data["text"] for e in events if e.kind == "delta")
    message = Message(**events[-1].data["message"])
    assert "do not answer" not in sent  # never shown, not even in part
    assert message.text == sent and message.text.startswith("Computed from the figures below: revenue / average "
                                                             "PP&E = 24.26")
    assert message.generation["generator"] == "extractive"  # type: ignore[attr-defined]
    [refused] = [w for w in message.warnings if w.code == LLM_REFUSED]
    assert "The sources do not answer this question." in refused.message and refused.fallback == "extractive"
    assert len(fake.chats) == 1


@needs_atvi
def test_an_answer_that_only_begins_like_a_refusal_is_kept(atvi_store: Path, tmp_path: Path, fake) -> None:
    fake.script(Stream(["The sources do ", "not state the ratio directly, but revenue was 6,489 and average PP&E "
                        "was 267.5, so the ratio is 24.26 [S1]."]))
    with Engine(_copy(atvi_store, tmp_path), llm=_llm(fake), generator="llm", mode="lexical") as engine:
        message = engine.ask(TURNOVER)
    assert message.text.startswith("The sources do not state the ratio directly")
    assert message.generation["generator"] == "llm"  # type: ignore[attr-defined]
    assert not [w for w in message.warnings if w.code == LLM_REFUSED]


def test_without_a_scope_verdict_the_model_may_refuse(fake) -> None:
    generator = LLMGenerator(_llm(fake))
    fake.script(Stream([NO_ANSWER]))
    request = GenerationRequest.build("What is the boiling point of mercury?", [])
    assert "".join(generator.write(request)) == NO_ANSWER
    assert f'reply exactly: "{NO_ANSWER}"' in chat_messages(request)[0]["content"]
    checked = GenerationRequest.build("q", [], scope=ScopeVerdict(checked=True, subjects=("Acme",)))
    assert REFUSE_CHECKED in chat_messages(checked)[0]["content"]


def test_the_answer_timeout_is_derived_from_the_prompt_and_the_measured_speed(fake) -> None:
    generator = LLMGenerator(_llm(fake, answer_timeout=None, max_tokens=400, timeout=60.0))
    chars = 7000  # 2,000 tokens at the assumed 3.5 characters a token
    total, first = generator.budget(chars)
    reading = chars / FLOOR_CHARS_PER_TOKEN / FLOOR_PROMPT_TPS
    assert total == pytest.approx(reading + 400 / FLOOR_ANSWER_TPS + BUDGET_BASE_S)
    assert first == pytest.approx(max(60.0, reading + BUDGET_BASE_S))
    # llama.cpp's own timings: 1,476 prompt tokens read in 92.4 s (16/s), 25 written in 51.3 s
    generator.speed.record(prompt_tokens=1476, prompt_chars=5166, first_token_s=140.0, completion_tokens=25,
                           writing_s=50.0, timings={"prompt_n": 1476, "prompt_ms": 92385.0, "predicted_n": 25,
                                                    "predicted_ms": 51347.0})
    total, first = generator.budget(chars)
    tokens = chars / (5166 / 1476)
    reading = tokens / (1476 / 92.385) * SAFETY
    assert total == pytest.approx(reading + 400 / (25 / 51.347) * SAFETY + BUDGET_BASE_S)
    assert first == pytest.approx(reading + BUDGET_BASE_S)
    # a slower answer later counts (the slowest of the last few); an explicit setting is used as given
    generator.speed.record(prompt_tokens=2000, prompt_chars=7000, first_token_s=400.0, completion_tokens=None,
                           writing_s=None)
    assert generator.speed.prompt_tps() == pytest.approx(5.0)
    fixed = LLMGenerator(_llm(fake, answer_timeout=45.0, timeout=7.0))
    assert fixed.budget(chars) == (45.0, 7.0)


def test_the_default_answer_timeout_lets_a_slow_prompt_reader_answer(tmp_path: Path, fake) -> None:
    # the endpoint is silent longer than the silence timeout while it "reads the prompt": the
    # derived first-token wait covers it (a fixed 1 s silence timeout alone would fail)
    generator = LLMGenerator(_llm(fake, answer_timeout=None, timeout=1.0))
    seen: list[ReadingProgress] = []
    generator.progress = seen.append
    fake.script(Stream(["Acme's revenue was $12.4 million [S1]."], first_delay=2.5, usage=(900, 12)))
    text = "".join(generator.write(GenerationRequest.build("What was Acme's revenue?", [])))
    assert text == "Acme's revenue was $12.4 million [S1]."
    waiting = [p for p in seen if not p.done]
    assert waiting and all(p.prompt_tokens >= 1 and p.budget_s > 2.5 for p in waiting)
    assert seen[-1].done and [p.done for p in seen].count(True) == 1
    assert generator.speed.chars_per_token() is not None  # measured from the usage


def test_citewell_ask_says_while_the_model_reads_the_prompt(tmp_path: Path, fake) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "acme_10K_revenue.txt").write_text("Acme Corporation reported revenue of $12.4 million in fiscal 2022.",
                                               encoding="utf-8")
    env = {**os.environ, "CITEWELL_STORE": str(tmp_path / "cli.sqlite"), "CITEWELL_LLM_MODEL": "fake-model",
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "CITEWELL_LLM_TIMEOUT": "30"}
    fake.script(Stream(["Acme reported revenue of $12.4 million in fiscal 2022 [S1]."], first_delay=3.0))
    run = subprocess.run([sys.executable, "-m", "citewell", "ask", "What was Acme revenue in fiscal 2022?",
                          "--corpus", str(docs), "--mode", "lexical", "--generator", "llm", "--llm-base-url",
                          fake.base_url], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("Acme reported revenue of $12.4 million in fiscal 2022 [1].")
    lines = [line for line in run.stderr.splitlines() if line.startswith("model reading ~")]
    assert lines and "-token prompt\u2026 " in lines[0] and "(answer timeout " in lines[0], run.stderr


def _server_module():
    spec = importlib.util.spec_from_file_location("llamacpp_server", ROOT / "benchmarks" / "llamacpp_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_llamacpp_server_takes_a_port_and_reads_the_parts_where_they_are(tmp_path: Path) -> None:
    server = _server_module()
    assert server.parser().parse_args([]).port == 8080 == server.DEFAULT_PORT
    args = server.parser().parse_args(["--port", "9090", "--alias", "m", "--ctx", "8192"])
    assert (args.port, args.alias, args.ctx, args.gguf) == (9090, "m", 8192, None)
    assert server.main(["--port", "70000"]) == 2  # refused before llama.cpp is imported
    parts = []
    for i, data in enumerate((b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 7), start=1):
        part = tmp_path / f"part{i:02d}.bin"
        part.write_bytes(data)
        parts.append(part)
    before = sorted(tmp_path.iterdir())
    fd, path = server.join_in_memory(parts)
    try:
        assert Path(path).read_bytes() == b"GGUF" + b"a" * 100 + b"b" * 50 + b"c" * 7
        assert sorted(tmp_path.iterdir()) == before  # nothing written beside the parts
    finally:
        os.close(fd)
    target = server.assemble(parts, tmp_path / "cache" / "m.gguf")
    assert target.read_bytes() == b"GGUF" + b"a" * 100 + b"b" * 50 + b"c" * 7
    assert server.assemble(parts, target) == target  # kept: the right size already
