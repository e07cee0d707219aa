"""Run an evaluation: every question through ``Engine.retrieve`` and ``Engine.ask``,
scored with :mod:`citewell.eval.metrics` and summarised overall and per question type."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine import Engine
from ..models import Message
from .dataset import Question
from .figures import figure_in_text, gold_figure
from .metrics import (
    ANSWER_K,
    KS,
    Location,
    first_gold_rank,
    mean,
    passage_location,
    reference_location,
    retrieval_metrics,
    score_answer,
)

#: ``progress(done, total, record)`` after each question (``record`` as in ``questions``).
EvalProgress = Callable[[int, int, dict[str, Any]], None]
RETRIEVAL_KEYS: tuple[str, ...] = (*(f"hit@{k}" for k in KS), *(f"recall@{k}" for k in KS), "mrr")


def locate_references(engine: Engine, message: Message) -> dict[int, Location]:
    """The :class:`Location` of each numbered reference of ``message``: its chunk as
    stored (names, page, character range), else what the reference itself carries."""
    located: dict[int, Location] = {}
    for ref in message.references:
        if ref.citation is None:
            continue
        passage = engine.resolver.chunk(ref.chunk_id) if ref.chunk_id else None
        located[ref.citation] = (passage_location(passage) if passage is not None
                                 else reference_location(ref.resource_title, None, ref.metadata))
    return located


def evaluate_question(engine: Engine, question: Question, *, k: int = 5, filter_doc: bool = True,
                      corpus: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Retrieve (top ``max(KS)``) and answer (``k`` passages) one question and score both;
    returns its record for the ``questions`` list of the report."""
    filters = question.query_filters(filter_doc)
    retrieval: dict[str, Any]
    if question.gold:
        passages = engine.retrieve(question.text, k=max(KS), filters=filters, corpus=corpus)
        ranked = [passage_location(p) for p in passages]
        retrieval = dict(retrieval_metrics(ranked, question.gold))
        retrieval["gold_rank"] = first_gold_rank(ranked, question.gold)
    else:  # no gold evidence (an unanswerable question, or a control without gold)
        retrieval = {key: None for key in RETRIEVAL_KEYS} | {"gold_rank": None}
    message = engine.ask(question.text, k=k, filters=filters, corpus=corpus, sync=False)
    score = score_answer(message, question.gold, locate_references(engine, message))
    figure = gold_figure(question.answer)
    in_answer = None if figure is None else figure_in_text(figure, message.text)
    abstained = not any(ref.citation is not None for ref in message.references)
    return {
        "id": question.id,
        "line": question.line,
        "question_type": question.question_type,
        "question": question.text,
        "filters": filters,
        "gold": [{"document": g.document, **({"page": g.page} if g.page is not None else {"span": list(g.span or ())})}
                 for g in question.gold],
        "retrieval": retrieval,
        "answer": {
            f"evidence_hit@{ANSWER_K}": (1.0 if score.evidence_hit else 0.0) if question.gold else None,
            "citation_precision": score.citation_precision,
            "citation_recall": score.citation_recall,
            "citations": score.citations,
            "correct_citations": score.correct_citations,
            "sentences": score.sentences,
            "supported_sentences": score.supported_sentences,
            "cited": score.cited,
            "warnings": [w.code for w in message.warnings],
            "figure_in_answer": None if in_answer is None else float(in_answer),
            "figure": None if figure is None else {"gold": figure.text, "in_answer": in_answer},
            "relevant_citation_precision": score.relevant_citation_precision,
            "relevant_citations": score.relevant_citations,
            "answerable": question.answerable,
            "abstained": abstained,
        },
    }


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def abstention_summary(answers: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Abstention figures of answers whose question says whether it is answerable
    (module docstring of :mod:`citewell.eval.metrics`, "Abstention"), with the counts."""
    marked = [a for a in answers if a.get("answerable") is not None]
    unanswerable = [a for a in marked if a["answerable"] is False]
    controls = [a for a in marked if a["answerable"] is True]
    abstained = [a for a in marked if a["abstained"]]
    right = sum(1 for a in unanswerable if a["abstained"])
    answered = sum(1 for a in controls if not a["abstained"])
    return {"unanswerable": len(unanswerable), "answerable": len(controls), "abstained": len(abstained),
            "abstained_unanswerable": right, "answered_controls_n": answered,
            "abstention_precision": _ratio(right, len(abstained)),
            "abstention_recall": _ratio(right, len(unanswerable)),
            "answered_controls": _ratio(answered, len(controls))}


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means of the per-question figures of ``records`` (module docstring of
    :mod:`citewell.eval.metrics`, "Aggregation"), with the counts behind them."""
    retrieval: dict[str, Any] = {}
    for key in RETRIEVAL_KEYS:
        retrieval[key], _ = mean(r["retrieval"][key] for r in records)
    retrieval["hits"] = {f"hit@{k}": sum(1 for r in records if r["retrieval"][f"hit@{k}"]) for k in KS}
    answers = [r["answer"] for r in records]
    hit_key = f"evidence_hit@{ANSWER_K}"
    answer: dict[str, Any] = {hit_key: mean(a[hit_key] for a in answers)[0],
                              "evidence_hits": sum(1 for a in answers if a[hit_key])}
    for key in ("citation_precision", "citation_recall"):
        answer[key], answer[f"{key}_n"] = mean(a[key] for a in answers)
    for key in ("citations", "correct_citations", "sentences", "supported_sentences"):
        answer[key] = sum(a[key] for a in answers)
    answer["relevant_citation_precision"], answer["relevant_citation_precision_n"] = mean(
        a.get("relevant_citation_precision") for a in answers)
    answer["relevant_citations"] = sum(a.get("relevant_citations", 0) for a in answers)
    if any(a.get("answerable") is not None for a in answers):
        answer["abstention"] = abstention_summary(answers)
    answer["figure_in_answer"], answer["figure_in_answer_n"] = mean(a.get("figure_in_answer") for a in answers)
    answer["figure_hits"] = sum(1 for a in answers if a.get("figure_in_answer"))
    return {"questions": len(records), "retrieval": retrieval, "answer": answer}


def _report(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``{"overall": …, "by_type": {question_type: …}}`` of ``records``."""
    types = sorted({r["question_type"] for r in records})
    return {"overall": summarize(records),
            "by_type": {t: summarize([r for r in records if r["question_type"] == t]) for t in types}}


def run_eval(engine: Engine, questions: Sequence[Question], *, k: int = 5, filter_doc: bool = True,
             corpus: str | os.PathLike[str] | None = None, progress: EvalProgress | None = None) -> dict[str, Any]:
    """Evaluate every question (see :func:`evaluate_question`); returns the report
    ``{"overall": …, "by_type": {question_type: …}, "questions": […]}``. The engine's
    store must hold the corpus already (sync it first)."""
    records: list[dict[str, Any]] = []
    for i, question in enumerate(questions, start=1):
        record = evaluate_question(engine, question, k=k, filter_doc=filter_doc, corpus=corpus)
        records.append(record)
        if progress is not None:
            progress(i, len(questions), record)
    return {**_report(records), "questions": records}


@dataclass(frozen=True)
class EvalSet:
    """One question file of a run: its ``name`` (shown in tables and on each question
    record as ``set``), its ``questions``, the ``corpus`` folder they are scoped to (or
    None: the whole workspace) and the ``file`` it was read from."""

    name: str
    questions: Sequence[Question]
    corpus: str | os.PathLike[str] | None = None
    file: str | None = None


def run_sets(engine: Engine, sets: Sequence[EvalSet], *, k: int = 5, filter_doc: bool = True,
             progress: EvalProgress | None = None) -> dict[str, Any]:
    """Evaluate several question sets, each within its own ``corpus``; returns
    ``{"overall", "by_type", "questions", "sets"}``: ``overall``/``by_type`` over every
    question of every set together, ``questions`` all records (each with its ``set``),
    and ``sets`` one ``{"name", "file", "corpus", "overall", "by_type"}`` per set, in
    order. ``progress(done, total, record)`` counts over all sets."""
    total = sum(len(s.questions) for s in sets)
    done = 0
    records: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    for eval_set in sets:
        own: list[dict[str, Any]] = []
        for question in eval_set.questions:
            record = {"set": eval_set.name, **evaluate_question(engine, question, k=k, filter_doc=filter_doc,
                                                                 corpus=eval_set.corpus)}
            own.append(record)
            done += 1
            if progress is not None:
                progress(done, total, record)
        records.extend(own)
        summaries.append({"name": eval_set.name, "file": eval_set.file,
                          "corpus": None if eval_set.corpus is None else str(eval_set.corpus), **_report(own)})
    return {**_report(records), "questions": records, "sets": summaries}


__all__ = ["RETRIEVAL_KEYS", "EvalProgress", "EvalSet", "abstention_summary", "evaluate_question", "locate_references", "run_eval",
           "run_sets", "summarize"]
