"""The evaluation harness behind ``citewell eval``: question files with gold evidence
(:mod:`~citewell.eval.dataset`), metric definitions (:mod:`~citewell.eval.metrics`, whose
docstring defines every figure exactly, and :mod:`~citewell.eval.figures` for
figure-in-answer), the run (:mod:`~citewell.eval.runner`) and the
readable tables (:mod:`~citewell.eval.report`).

::

    from citewell import Engine
    from citewell.eval import load_questions, run_eval

    with Engine("/tmp/eval.sqlite") as engine:
        engine.sync("corpus/pdf", manifests=["corpus/eval/financebench_dev_docs.jsonl"])
        report = run_eval(engine, load_questions("corpus/eval/financebench_dev.jsonl"), corpus="corpus/pdf")
    report["overall"]["answer"]["evidence_hit@5"]
"""

from __future__ import annotations

from .dataset import EvalFileError, Question, financebench_page, is_financebench, load_questions
from .metrics import (
                      ANSWER_K,
                      KS,
                      AnswerScore,
                      GoldItem,
                      Location,
                      first_gold_rank,
                      matches,
                      passage_location,
                      reference_location,
                      resource_names,
                      retrieval_metrics,
                      score_answer,
)
from .report import render_report, report_tables
from .figures import figure_in_answer, figure_in_text, gold_figure
from .runner import EvalSet, evaluate_question, locate_references, run_eval, run_sets, summarize

__all__ = ["ANSWER_K", "KS", "AnswerScore", "EvalFileError", "EvalSet", "GoldItem", "Location", "Question",
           "evaluate_question", "figure_in_answer", "figure_in_text", "financebench_page", "first_gold_rank",
           "gold_figure", "is_financebench", "load_questions", "locate_references", "matches", "passage_location",
           "reference_location", "render_report", "report_tables", "resource_names", "retrieval_metrics",
           "run_eval", "run_sets", "score_answer", "summarize"]
