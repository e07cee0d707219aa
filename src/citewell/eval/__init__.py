"""The evaluation harness behind ``citewell eval``: question files with gold evidence
(:mod:`~citewell.eval.dataset`), metric definitions (:mod:`~citewell.eval.metrics`, whose
docstring defines every figure exactly), the run (:mod:`~citewell.eval.runner`) and the
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
from .runner import evaluate_question, locate_references, run_eval, summarize

__all__ = ["ANSWER_K", "KS", "AnswerScore", "EvalFileError", "GoldItem", "Location", "Question",
           "evaluate_question", "financebench_page", "first_gold_rank", "is_financebench", "load_questions",
           "locate_references", "matches", "passage_location", "reference_location", "render_report",
           "report_tables", "resource_names", "retrieval_metrics", "run_eval", "score_answer", "summarize"]
