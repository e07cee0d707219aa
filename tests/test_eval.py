"""The evaluation harness (``citewell.eval``, ``citewell eval``): its arithmetic on a
hand-made fixture with a scripted retriever and generator, so that every expected figure
is known exactly. Not a quality threshold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from citewell import Engine
from citewell.eval import (
    EvalFileError,
    GoldItem,
    Location,
    load_questions,
    matches,
    retrieval_metrics,
    run_eval,
    score_answer,
)
from citewell.generate import GenerationRequest
from citewell.models import Message, Occurrence, Part, Passage, Reference
from citewell.embed import minilm as embedder_mod

PAGES = [
    "Alpha revenue was 100 million dollars in 2022.",
    "Alpha opened a plant in Ohio.",
    "Beta revenue was 300 million dollars in 2022.",
    "Delta and Gamma text on page four.",  # Q3's name in its retrieved passages: no abstention
    "Epsilon text on page five.",
    "Zeta text on page six.",
    "Eta text on page seven.",
]
NOTES = "Gamma hired 50 engineers in 2023. Gamma closed an office in Lyon."

Q1 = "What was Alpha revenue in 2022?"
Q2 = "What was Beta revenue?"
Q3 = "What did Gamma do?"


def _pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=14)
    for text in PAGES:
        pdf.add_page()
        pdf.cell(0, 10, text)
    pdf.output(str(path))


class ScriptedRetriever:
    """Returns a fixed ranking per question (passages by key), cut at ``k``."""

    def __init__(self, rankings: dict[str, list[Passage]]) -> None:
        self.rankings = rankings

    def retrieve(self, question: str, *, k: int, conditions: Sequence[object] = (),
                 under: str | None = None) -> list[Passage]:
        """The scripted ranking of ``question``, its first ``k`` ranked 1..k."""
        return [p.model_copy(update={"rank": i}) for i, p in enumerate(self.rankings[question][:k], start=1)]


class ScriptedGenerator:
    """Writes a fixed raw answer per question (``{KEY}`` replaced by chunk ids)."""

    def __init__(self, answers: dict[str, str], ids: dict[str, str]) -> None:
        self.answers = answers
        self.ids = ids

    def write(self, request: GenerationRequest) -> Iterator[str]:
        """The scripted raw answer of the question, in one piece."""
        yield self.answers[request.query].format(**self.ids)


@pytest.fixture
def fixture(tmp_path: Path):
    """A corpus (a 7-page PDF, a text file), a gold file, and an engine whose retriever and
    generator follow a script: (engine, corpus folder, gold file)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _pdf(docs / "report.pdf")
    (docs / "notes.txt").write_text(NOTES, encoding="utf-8")
    gold = tmp_path / "gold.jsonl"
    rows = [
        {"id": "q1", "question": Q1, "question_type": "lookup", "gold": [{"file": "report.pdf", "page": 1}],
         "answer": "$100 million"},
        {"id": "q2", "question": Q2, "question_type": "lookup",
         "gold": [{"document": "Report", "page": 3}, {"file": "notes.txt", "span": [0, 10]}],
         "answer": "Yes. Beta revenue was $300 million in 2022."},
        {"id": "q3", "question": Q3, "gold": [{"document": "NOTES", "span": [0, 5]}]},
    ]
    gold.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    with Engine(tmp_path / "store.sqlite") as engine:  # the real pipeline ingests the files
        engine.sync(docs)
        passages: dict[str, Passage] = {}
        for resource in engine.resources():
            chunks = engine.store.resource_chunks(engine.workspace_id, resource.id)
            found = engine.store.chunks(engine.workspace_id, [c.id for c in chunks])
            for chunk in chunks:
                key = f"P{chunk.metadata['page']}" if resource.kind == "pdf" else "T"
                assert key not in passages, "one chunk per page expected"
                passages[key] = found[chunk.id]
        assert sorted(passages) == ["P1", "P2", "P3", "P4", "P5", "P6", "P7", "T"]
    ids = {key: p.chunk.id for key, p in passages.items()}
    retriever = ScriptedRetriever({
        Q1: [passages[k] for k in ("P2", "P1", "P3")],                       # gold at rank 2
        Q2: [passages[k] for k in ("P3", "P1")],                             # gold p3 at rank 1, notes never
        Q3: [passages[k] for k in ("P1", "P2", "P3", "P4", "P5", "P6", "P7", "T")],  # gold at rank 8
    })
    generator = ScriptedGenerator({
        # [1] P1 gold + supported, [2] P2 supported only, [3] P3 neither (900 is not in it)
        Q1: "Alpha revenue was 100 million dollars in 2022 [a](chunk:{P1}). "
            "Alpha opened a plant in Ohio [b](chunk:{P2}). "
            "Alpha revenue was 900 million dollars [c](chunk:{P3}).",
        # [1] P3 gold but unsupported (999); a second sentence without a citation
        Q2: "Beta revenue was 999 million dollars [x](chunk:{P3}). No more is said.",
        # [1] P2: supported, not gold
        Q3: "Alpha opened a plant in Ohio [y](chunk:{P2}).",
    }, ids)
    with Engine(tmp_path / "store.sqlite", retriever=retriever, generator=generator) as engine:
        yield engine, docs, gold


def test_harness_arithmetic(fixture) -> None:
    """Every figure of the report equals its hand computation (see the script's comments)."""
    engine, docs, gold = fixture
    report = run_eval(engine, load_questions(gold), k=5, corpus=docs)
    assert set(report) == {"overall", "by_type", "questions"}
    q1, q2, q3 = report["questions"]

    assert q1["retrieval"] == {"hit@5": 1.0, "hit@10": 1.0, "hit@20": 1.0, "recall@5": 1.0, "recall@10": 1.0,
                               "recall@20": 1.0, "mrr": 0.5, "gold_rank": 2}
    assert q2["retrieval"] == {"hit@5": 1.0, "hit@10": 1.0, "hit@20": 1.0, "recall@5": 0.5, "recall@10": 0.5,
                               "recall@20": 0.5, "mrr": 1.0, "gold_rank": 1}
    assert q3["retrieval"] == {"hit@5": 0.0, "hit@10": 1.0, "hit@20": 1.0, "recall@5": 0.0, "recall@10": 1.0,
                               "recall@20": 1.0, "mrr": 0.125, "gold_rank": 8}

    a1, a2, a3 = (q["answer"] for q in (q1, q2, q3))
    assert (a1["evidence_hit@5"], a1["citations"], a1["correct_citations"], a1["sentences"],
            a1["supported_sentences"]) == (1.0, 3, 2, 3, 2)
    assert a1["citation_precision"] == pytest.approx(2 / 3)
    assert a1["citation_recall"] == pytest.approx(2 / 3)
    assert (a2["evidence_hit@5"], a2["citation_precision"], a2["citation_recall"]) == (1.0, 1.0, 0.0)
    assert (a2["sentences"], a2["supported_sentences"]) == (2, 0)
    assert (a3["evidence_hit@5"], a3["citation_precision"], a3["citation_recall"]) == (0.0, 1.0, 1.0)
    # figures: q1's "$100 million" is in its answer ("100 million dollars"); q2's $300 million is not
    # (its answer says 999); q3 has no gold answer
    assert (a1["figure_in_answer"], a1["figure"]) == (1.0, {"gold": "$100 million", "in_answer": True})
    assert (a2["figure_in_answer"], a2["figure"]) == (0.0, {"gold": "$300 million", "in_answer": False})
    assert (a3["figure_in_answer"], a3["figure"]) == (None, None)

    overall = report["overall"]
    assert overall["questions"] == 3
    r = overall["retrieval"]
    assert r["hit@5"] == pytest.approx(2 / 3) and r["hit@10"] == 1.0 and r["hit@20"] == 1.0
    assert r["hits"] == {"hit@5": 2, "hit@10": 3, "hit@20": 3}
    assert r["recall@5"] == pytest.approx(0.5)
    assert r["recall@10"] == pytest.approx(5 / 6)
    assert r["mrr"] == pytest.approx((0.5 + 1 + 0.125) / 3)
    a = overall["answer"]
    assert a["evidence_hit@5"] == pytest.approx(2 / 3) and a["evidence_hits"] == 2
    assert a["citation_precision"] == pytest.approx(8 / 9) and a["citation_precision_n"] == 3
    assert a["citation_recall"] == pytest.approx(5 / 9) and a["citation_recall_n"] == 3
    assert (a["citations"], a["correct_citations"], a["sentences"], a["supported_sentences"]) == (5, 4, 6, 3)
    assert (a["figure_in_answer"], a["figure_in_answer_n"], a["figure_hits"]) == (0.5, 2, 1)

    lookup = report["by_type"]["lookup"]
    assert lookup["questions"] == 2
    assert lookup["retrieval"]["hit@5"] == 1.0 and lookup["retrieval"]["mrr"] == pytest.approx(0.75)
    assert lookup["retrieval"]["recall@5"] == pytest.approx(0.75)
    assert lookup["answer"]["citation_precision"] == pytest.approx(5 / 6)
    assert (lookup["answer"]["figure_in_answer"], lookup["answer"]["figure_in_answer_n"]) == (0.5, 2)
    untyped = report["by_type"]["(none)"]
    assert untyped["questions"] == 1 and untyped["retrieval"]["hit@5"] == 0.0
    assert (untyped["answer"]["figure_in_answer"], untyped["answer"]["figure_in_answer_n"]) == (None, 0)
    assert untyped["retrieval"]["mrr"] == pytest.approx(0.125)


def test_document_filter_added_only_for_one_gold_document(fixture) -> None:
    """--filter-doc adds document_name only when the gold names one document."""
    _, _, gold = fixture
    q1, q2, q3 = load_questions(gold)
    assert q1.query_filters(True) == ["document_name=report.pdf"] and q1.query_filters(False) is None
    assert q2.query_filters(True) is None  # two gold documents: no document filter
    assert q3.query_filters(True) == ["document_name=NOTES"]


def test_matching_rules() -> None:
    """Same document case-insensitively and same page; spans overlap (touching does not)."""
    loc = Location(frozenset({"report", "report.pdf"}), page=3, span=(100, 200))
    assert matches(GoldItem("REPORT.PDF", page=3), loc)
    assert not matches(GoldItem("report", page=4), loc)           # another page
    assert not matches(GoldItem("other", page=3), loc)            # another document
    assert matches(GoldItem("report", span=(199, 250)), loc)      # overlap of one character
    assert not matches(GoldItem("report", span=(200, 250)), loc)  # touching is not overlapping
    assert not matches(GoldItem("report", span=(0, 5)), Location(frozenset({"report"}), page=1))
    # duplicates of a gold item count once in recall
    figures = retrieval_metrics([loc], [GoldItem("report", page=3), GoldItem("Report", page=3),
                                        GoldItem("report", page=9)])
    assert figures["recall@5"] == 0.5 and figures["mrr"] == 1.0


def test_undefined_answer_figures() -> None:
    """No citations / no sentences: None; a reference numbered 6 is no hit@5."""
    empty = score_answer(Message(text=""), [GoldItem("a", page=1)], {})
    assert empty.citation_precision is None and empty.citation_recall is None and not empty.evidence_hit
    # a gold reference numbered 6 is not an answer-level hit@5; markers-only parts are not sentences
    text = "A [6]. [6]"
    ref = Reference(type="chunk", citation=6, occurrences=[Occurrence(start_index=2, end_index=5),
                                                          Occurrence(start_index=7, end_index=10)])
    message = Message(text=text, references=[ref], parts=[Part(text="A [6]."), Part(text=" [6]")])
    score = score_answer(message, [GoldItem("a", page=1)], {6: Location(frozenset({"a"}), page=1)})
    assert not score.evidence_hit
    assert (score.citations, score.correct_citations, score.sentences, score.supported_sentences) == (2, 2, 1, 0)


def test_financebench_rows(tmp_path: Path) -> None:
    """FinanceBench rows: detected, pages 1-based, duplicate evidence counted once."""
    row = {"financebench_id": "fb1", "question": "Capex?", "question_type": "metrics-generated",
           "doc_name": "3M_2022_10K", "evidence": [{"doc_name": "3M_2022_10K", "page_number_1based": 48},
                                                   {"doc_name": "3M_2022_10K", "page_number_1based": 48},
                                                   {"evidence_page_num": 49}]}
    path = tmp_path / "fb.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (q,) = load_questions(path)
    assert (q.id, q.format, q.question_type, q.document) == ("fb1", "financebench", "metrics-generated", "3M_2022_10K")
    assert [(g.document, g.page) for g in q.gold] == [("3M_2022_10K", 48), ("3M_2022_10K", 50)]


@pytest.mark.parametrize("lines, line, words", [
    (['{"question": "q", "gold": [{"file": "a", "page": 1}]}', "{not json"], 2, "not valid JSON"),
    (['', '["a list"]'], 2, "expected a JSON object"),
    (['{"question": "q", "gold": []}'], 1, "'gold'"),
    (['{"question": "q", "gold": [{"file": "a", "page": 1, "span": [0, 3]}]}'], 1, "exactly one"),
    (['{"question": "q", "gold": [{"file": "a", "span": [5, 2]}]}'], 1, "'span'"),
    (['{"question": "q", "gold": [{"file": "a", "page": 1}], "filters": {"nope": 1}}'], 1, "filters"),
    (['{"question": "", "gold": [{"file": "a", "page": 1}]}'], 1, "'question'"),
])
def test_bad_lines_name_their_line(tmp_path: Path, lines: list[str], line: int, words: str) -> None:
    """A bad row is reported with its 1-based line and the reason."""
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(EvalFileError) as info:
        load_questions(path)
    assert info.value.line == line and words in str(info.value)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``citewell eval`` with ``args`` in a subprocess (lexical retrieval: the harness
    does not depend on the mode, and no embedding model needs loading)."""
    env = {**os.environ, "CITEWELL_RETRIEVAL_MODE": "lexical"}
    return subprocess.run([sys.executable, "-m", "citewell", "eval", *args], capture_output=True, text=True,
                          check=False, timeout=120, env=env)


def test_cli_json_and_exit_codes(tmp_path: Path) -> None:
    """--json prints one document of the documented shape; exit 0 when it ran, 2 on bad usage."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text(NOTES, encoding="utf-8")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "g1", "question": "How many engineers did Gamma hire?",
                                "gold": [{"file": "notes.txt", "span": [0, 20]}]}) + "\n", encoding="utf-8")
    store = str(tmp_path / "s.sqlite")

    done = _cli(str(gold), "--corpus", str(docs), "--store", store, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # exactly one JSON document on stdout
    assert set(report) == {"overall", "by_type", "questions", "sets"}
    assert set(report["overall"]) == {"questions", "retrieval", "answer"}
    assert {"hit@5", "hit@10", "hit@20", "recall@5", "recall@10", "recall@20", "mrr"} <= set(
        report["overall"]["retrieval"])
    assert {"evidence_hit@5", "citation_precision", "citation_recall"} <= set(report["overall"]["answer"])
    assert list(report["by_type"]) == ["(none)"]
    assert report["questions"][0]["id"] == "g1" and report["questions"][0]["retrieval"]["hit@5"] == 1.0
    assert [(s["name"], s["corpus"], s["overall"]["questions"]) for s in report["sets"]] == [
        ("gold", str(docs), 1)]
    assert "[1/1] g1" in done.stderr  # progress goes to stderr

    table = _cli(str(gold), "--store", store, "--no-filter-doc")
    assert table.returncode == 0, table.stderr
    assert "Retrieval" in table.stdout and "citation precision" in table.stdout

    if embedder_mod.available():  # hybrid embeds the scope first, then reports complete figures
        hybrid = _cli(str(gold), "--store", store, "--mode", "hybrid", "--json")
        assert hybrid.returncode == 0, hybrid.stderr
        assert "retrieval mode hybrid" in hybrid.stderr and "embedded: 1 of 1 passages" in hybrid.stderr
        assert json.loads(hybrid.stdout)["questions"][0]["retrieval"]["hit@5"] == 1.0
    odd = tmp_path / "odd.jsonl"  # a lone surrogate (JSON escape) in a question: read as U+FFFD
    odd.write_text('{"question": "\\ud800 How many engineers did Gamma hire?", '
                   '"gold": [{"file": "notes.txt", "span": [0, 20]}]}\n', encoding="utf-8")
    surrogate = _cli(str(odd), "--store", store, "--json")
    assert surrogate.returncode == 0, surrogate.stderr
    assert json.loads(surrogate.stdout)["questions"][0]["question"].startswith("\ufffd How many")
    wrong = _cli(str(gold), "--store", store, "--mode", "fuzzy")
    assert wrong.returncode == 2 and "--mode must be one of" in wrong.stderr and not wrong.stdout

    missing = _cli(str(tmp_path / "nope.jsonl"), "--store", store)
    assert missing.returncode == 2 and "no such question file" in missing.stderr and not missing.stdout

    bad = tmp_path / "bad.jsonl"
    bad.write_text(gold.read_text() + "{oops\n", encoding="utf-8")
    broken = _cli(str(bad), "--store", store, "--json")
    assert broken.returncode == 2 and f"{bad}:2" in broken.stderr and not broken.stdout


def test_cli_scores_several_sets_each_in_its_folder(tmp_path: Path) -> None:
    """Two question files, each with its own --corpus: each set is searched only in its
    folder and reported on its own, then both together (overall and per type)."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "notes.txt").write_text(NOTES, encoding="utf-8")
    (second / "beta.txt").write_text("Beta revenue was 300 million dollars in 2022.", encoding="utf-8")
    set_a, set_b = tmp_path / "set_a.jsonl", tmp_path / "set_b.jsonl"
    set_a.write_text(json.dumps({"id": "a1", "question": "How many engineers did Gamma hire?",
                                 "question_type": "people", "answer": "50",
                                 "gold": [{"file": "notes.txt", "span": [0, 20]}]}) + "\n", encoding="utf-8")
    set_b.write_text("\n".join(json.dumps(r) for r in [
        {"id": "b1", "question": "What was Beta revenue in 2022?", "question_type": "money",
         "answer": "$300 million", "gold": [{"file": "beta.txt", "span": [0, 20]}]},
        # the notes are not in b's folder: no passage can be found for it there
        {"id": "b2", "question": "How many engineers did Gamma hire?", "question_type": "people",
         "answer": "50", "gold": [{"file": "notes.txt", "span": [0, 20]}]},
    ]) + "\n", encoding="utf-8")
    store = str(tmp_path / "s.sqlite")
    done = _cli(str(set_a), str(set_b), "--corpus", str(first), "--corpus", str(second), "--store", store,
                "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    by_id = {q["id"]: q for q in report["questions"]}
    assert [(q["id"], q["set"]) for q in report["questions"]] == [("a1", "set_a"), ("b1", "set_b"), ("b2", "set_b")]
    assert by_id["a1"]["retrieval"]["hit@5"] == 1.0 and by_id["b1"]["retrieval"]["hit@5"] == 1.0
    assert by_id["b2"]["retrieval"]["hit@20"] == 0.0  # scoped to its own folder
    assert (by_id["a1"]["answer"]["figure_in_answer"], by_id["b1"]["answer"]["figure_in_answer"],
            by_id["b2"]["answer"]["figure_in_answer"]) == (1.0, 1.0, 0.0)
    a, b = report["sets"]
    assert (a["name"], a["corpus"], a["overall"]["questions"]) == ("set_a", str(first), 1)
    assert (b["name"], b["corpus"], b["overall"]["questions"]) == ("set_b", str(second), 2)
    assert b["overall"]["retrieval"]["hit@5"] == 0.5 and b["overall"]["answer"]["figure_in_answer"] == 0.5
    assert report["overall"]["questions"] == 3
    assert report["overall"]["retrieval"]["hits"]["hit@5"] == 2
    assert report["overall"]["answer"]["figure_in_answer"] == pytest.approx(2 / 3)
    people = report["by_type"]["people"]
    assert (people["questions"], people["answer"]["figure_hits"], people["answer"]["figure_in_answer_n"]) == (2, 1, 2)
    table = _cli(str(set_a), str(set_b), "--corpus", str(first), "--corpus", str(second), "--store", store)
    assert table.returncode == 0, table.stderr
    for title in ("set_a: Retrieval", "set_b: Answer", "all sets (set_a + set_b): Answer", "figure in answer"):
        assert title in table.stdout
    mismatch = _cli(str(set_a), str(set_b), "--corpus", str(first), "--corpus", str(second), "--corpus",
                    str(first), "--store", store)
    assert mismatch.returncode == 2 and "once per file" in mismatch.stderr and not mismatch.stdout


def test_abstention_and_relevant_citation_figures(fixture, tmp_path: Path) -> None:
    """Questions marked answerable: abstention precision and recall, answered controls, and
    citation precision counting only faithful and relevant citations, computed exactly."""
    engine, docs, _ = fixture
    q_absent = "What did Omega report in 2022?"           # no source names Omega: the scope check abstains
    q_answered = Q1                                       # marked unanswerable, but the script cites: a miss
    engine.retriever.rankings[q_absent] = []
    rows = [
        {"id": "u1", "question": q_absent, "question_type": "unanswerable", "answerable": False},
        {"id": "u2", "question": q_answered, "question_type": "unanswerable", "answerable": False},
        {"id": "c1", "question": Q3, "question_type": "control", "answerable": True},
    ]
    path = tmp_path / "abstain.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    report = run_eval(engine, load_questions(path), k=5, corpus=docs)
    u1, u2, c1 = (q["answer"] for q in report["questions"])
    assert (u1["abstained"], u2["abstained"], c1["abstained"]) == (True, False, False)
    assert report["questions"][0]["retrieval"]["hit@5"] is None  # no gold: no retrieval figures
    abstention = report["overall"]["answer"]["abstention"]
    assert abstention == {"unanswerable": 2, "answerable": 1, "abstained": 1, "abstained_unanswerable": 1,
                          "answered_controls_n": 1, "abstention_precision": 1.0, "abstention_recall": 0.5,
                          "answered_controls": 1.0}
    # Q1's three citations: [1] supported and relevant; [2] "Alpha opened a plant in Ohio" is
    # supported but not about revenue; [3] unsupported (900 is not in its passage)
    assert (u2["citations"], u2["relevant_citations"]) == (3, 1)
    assert u2["relevant_citation_precision"] == pytest.approx(1 / 3)
    # Q3 asks what Gamma did; its answer quotes an Alpha passage: faithful, not relevant
    assert (c1["citations"], c1["relevant_citations"], c1["relevant_citation_precision"]) == (1, 0, 0.0)
    assert report["overall"]["answer"]["relevant_citation_precision"] == pytest.approx(1 / 6)


def test_unanswerable_rows_are_checked(tmp_path: Path) -> None:
    """An unanswerable row has no gold; 'answerable' is a boolean."""
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"question": "q", "answerable": False, "gold": [{"file": "a", "page": 1}]}) + "\n",
                    encoding="utf-8")
    with pytest.raises(EvalFileError, match="has no 'gold'"):
        load_questions(path)
    path.write_text(json.dumps({"question": "q", "answerable": "no"}) + "\n", encoding="utf-8")
    with pytest.raises(EvalFileError, match="true or false"):
        load_questions(path)
