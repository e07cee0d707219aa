"""The readable form of an evaluation report: two rich tables (retrieval, answer)."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console, Group
from rich.table import Table

from .metrics import ANSWER_K, KS


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _rows(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("overall", report["overall"]), *report["by_type"].items()]


def _tables(report: dict[str, Any], prefix: str = "") -> list[Table]:
    """The retrieval and answer tables of one ``{overall, by_type}`` report."""
    retrieval = Table(title=f"{prefix}Retrieval (top {max(KS)} passages of Engine.retrieve)", title_justify="left")
    retrieval.add_column("questions")
    retrieval.add_column("n", justify="right")
    for k in KS:
        retrieval.add_column(f"hit@{k}", justify="right")
    for k in KS:
        retrieval.add_column(f"recall@{k}", justify="right")
    retrieval.add_column("MRR", justify="right")
    for name, summary in _rows(report):
        r = summary["retrieval"]
        retrieval.add_row(name, str(summary["questions"]),
                          *(f"{_fmt(r[f'hit@{k}'])} ({r['hits'][f'hit@{k}']})" for k in KS),
                          *(_fmt(r[f"recall@{k}"]) for k in KS), _fmt(r["mrr"]))
    answer = Table(title=f"{prefix}Answer (Engine.ask)", title_justify="left")
    answer.add_column("questions")
    answer.add_column("n", justify="right")
    answer.add_column(f"evidence-page hit@{ANSWER_K}", justify="right")
    answer.add_column("figure in answer (n)", justify="right")
    answer.add_column("citation precision (n)", justify="right")
    answer.add_column("faithful+relevant precision (n)", justify="right")
    answer.add_column("citation recall (n)", justify="right")
    for name, summary in _rows(report):
        a = summary["answer"]
        figure = (f"{_fmt(a['figure_in_answer'])} ({a['figure_hits']}/{a['figure_in_answer_n']})"
                  if a.get("figure_in_answer_n") else "–")
        answer.add_row(name, str(summary["questions"]),
                       f"{_fmt(a[f'evidence_hit@{ANSWER_K}'])} ({a['evidence_hits']})", figure,
                       f"{_fmt(a['citation_precision'])} ({a['citation_precision_n']})",
                       f"{_fmt(a.get('relevant_citation_precision'))} ({a.get('relevant_citation_precision_n', 0)})",
                       f"{_fmt(a['citation_recall'])} ({a['citation_recall_n']})")
    tables = [retrieval, answer]
    if "abstention" in report["overall"]["answer"]:
        abstain = Table(title=f"{prefix}Abstention (no numbered citation)", title_justify="left")
        for column in ("questions", "unanswerable", "abstained of them", "controls", "answered of them",
                       "precision", "recall", "controls answered"):
            abstain.add_column(column, justify="left" if column == "questions" else "right")
        for name, summary in _rows(report):
            b = summary["answer"].get("abstention")
            if b is None:
                continue
            abstain.add_row(name, str(b["unanswerable"]), str(b["abstained_unanswerable"]), str(b["answerable"]),
                            str(b["answered_controls_n"]), _fmt(b["abstention_precision"]),
                            _fmt(b["abstention_recall"]), _fmt(b["answered_controls"]))
        tables.append(abstain)
    return tables


def report_tables(report: dict[str, Any]) -> Group:
    """The report of :func:`citewell.eval.run_eval` (or :func:`~citewell.eval.run_sets`)
    as tables: retrieval figures (top 20 of ``Engine.retrieve``) and answer figures
    (``Engine.ask``), one row overall and one per question type, and abstention figures
    when the questions say whether they are answerable. With more than one set,
    each set's two tables come first (titled with its name), then those of all sets
    together."""
    sets = report.get("sets") or []
    if len(sets) < 2:
        return Group(*_tables(report))
    tables: list[Table] = []
    for eval_set in sets:
        tables.extend(_tables(eval_set, f"{eval_set['name']}: "))
    names = " + ".join(str(s["name"]) for s in sets)
    tables.extend(_tables(report, f"all sets ({names}): "))
    return Group(*tables)


def render_report(report: dict[str, Any], *, width: int = 120) -> str:
    """The tables of :func:`report_tables` as plain text (no colour), ``width`` columns."""
    console = Console(width=width, record=True, highlight=False, color_system=None, file=io.StringIO())
    console.print(report_tables(report))
    return console.export_text()


__all__ = ["render_report", "report_tables"]
