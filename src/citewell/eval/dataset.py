"""Question files of ``citewell eval``: FinanceBench's JSONL and a generic JSONL.

FinanceBench (detected by a row with ``financebench_id``, or with both ``doc_name`` and
``evidence``)::

    {"financebench_id": "…", "question": "…", "question_type": "domain-relevant",
     "doc_name": "3M_2022_10K",
     "evidence": [{"doc_name": "3M_2022_10K", "page_number_1based": 48, …}, …], …}

Each evidence item is a gold page: its ``doc_name`` (else the row's) and its
``page_number_1based`` (else ``page_index_0based`` + 1, else ``evidence_page_num`` + 1,
FinanceBench's 0-based page number). The document filter value is the row's ``doc_name``.
The row's ``answer`` (a string) is the gold answer (figure-in-answer,
:mod:`citewell.eval.figures`).

Generic::

    {"id": "q1", "question": "…", "question_type": "lookup",
     "gold": [{"file": "report.pdf", "page": 3}, {"document": "Notes", "span": [120, 180]}],
     "filters": {"ticker": "MMM"}}

``gold``: a non-empty list; each item names a document by ``file`` or ``document``
(title or file name, compared case-insensitively) and gives a 1-based ``page`` or a
``span`` ``[start, end)`` of code points of the document's extracted text. ``filters``
(optional) are as ``citewell ask --filter`` / ``Engine.ask(filters=…)`` take them: an
object or a list of ``KEY=VALUE`` strings. ``id``, ``question_type`` and ``answer`` (the
gold answer as text, for figure-in-answer) are optional. ``answerable`` (optional, a
boolean) marks an abstention benchmark: ``false`` for a question the sources cannot
answer (it has no ``gold``), ``true`` for a control (``gold`` then optional).
The document filter value is the gold document when all gold items name the same one.

Blank lines are skipped; the two formats may not be mixed in one file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CitewellError
from ..ingest.text import jsonl_lines
from ..retrieve import parse_filters
from ..validtext import valid_json
from .metrics import GoldItem, unique_gold

UNTYPED = "(none)"


class EvalFileError(ValueError):
    """A question file cannot be read: ``line`` (1-based, 0 for the whole file) and why."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass
class Question:
    """One evaluation question (``answerable`` None, or whether the sources can answer it):
    ``text``, its ``gold`` items, ``question_type``, the
    ``filters`` it always applies, the ``document`` its document filter uses (or None),
    its ``id``, the ``line`` of the file it came from and its gold ``answer`` text (or None)."""

    id: str
    text: str
    gold: list[GoldItem]
    question_type: str = UNTYPED
    filters: Any = None
    document: str | None = None
    line: int = 0
    format: str = "generic"
    extra: dict[str, Any] = field(default_factory=dict)
    answer: str | None = None
    answerable: bool | None = None

    def query_filters(self, filter_doc: bool) -> Any:
        """The filters to ask with: the question's own, plus ``document_name=<document>``
        when ``filter_doc`` and the question has a document (and sets no
        ``document_name`` itself)."""
        filters = self.filters
        if not filter_doc or self.document is None:
            return filters
        if filters is None:
            return [f"document_name={self.document}"]
        if isinstance(filters, dict):
            return filters if "document_name" in filters else {**filters, "document_name": self.document}
        if any(str(f).split("=", 1)[0].strip() == "document_name" for f in filters):
            return filters
        return [*filters, f"document_name={self.document}"]


def is_financebench(row: dict[str, Any]) -> bool:
    """True when a row is in FinanceBench's format."""
    return "financebench_id" in row or ("doc_name" in row and "evidence" in row)


def financebench_page(evidence: dict[str, Any]) -> int:
    """The 1-based physical page of a FinanceBench evidence item (``page_number_1based``,
    else ``page_index_0based`` + 1, else ``evidence_page_num`` + 1); ``ValueError`` if none."""
    for key, offset in (("page_number_1based", 0), ("page_index_0based", 1), ("evidence_page_num", 1)):
        value = evidence.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value + offset
    raise ValueError("an evidence item has no page (page_number_1based)")


def _text(row: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = row.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key!r} must be a non-empty string")
    return value


def _answer(row: dict[str, Any]) -> str | None:
    """The row's gold ``answer`` text: None when absent or blank; ``ValueError`` when not a string."""
    value = row.get("answer")
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("'answer' must be a string")
    return value if value.strip() else None


def _financebench(row: dict[str, Any], line: int) -> Question:
    text = _text(row, "question")
    doc = _text(row, "doc_name")
    evidence = row.get("evidence")
    if not isinstance(evidence, list) or not evidence or not all(isinstance(e, dict) for e in evidence):
        raise ValueError("'evidence' must be a non-empty list of objects")
    gold = unique_gold(GoldItem(str(e.get("doc_name") or doc), page=financebench_page(e)) for e in evidence)
    qtype = row.get("question_type")
    return Question(id=str(row.get("financebench_id") or f"line {line}"), text=text or "", gold=gold,
                    question_type=str(qtype) if qtype else UNTYPED, document=doc, line=line,
                    format="financebench", answer=_answer(row))


def _gold_item(item: Any) -> GoldItem:
    if not isinstance(item, dict):
        raise ValueError("each gold item must be an object")  # noqa: TRY004 - reported with its line
    doc = item.get("file", item.get("document"))
    if not isinstance(doc, str) or not doc.strip():
        raise ValueError("a gold item needs 'file' or 'document' (a non-empty string)")
    page, span = item.get("page"), item.get("span")
    if (page is None) == (span is None):
        raise ValueError("a gold item needs exactly one of 'page' and 'span'")
    if page is not None:
        if not isinstance(page, int) or isinstance(page, bool) or page < 1:
            raise ValueError("'page' must be an integer ≥ 1 (physical page, 1-based)")
        return GoldItem(doc, page=page)
    if (not isinstance(span, list) or len(span) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in span) or not 0 <= span[0] < span[1]):
        raise ValueError("'span' must be [start, end] with integers 0 ≤ start < end")
    return GoldItem(doc, span=(span[0], span[1]))


def _generic(row: dict[str, Any], line: int) -> Question:
    text = _text(row, "question")
    answerable = row.get("answerable")
    if answerable is not None and not isinstance(answerable, bool):
        raise ValueError("'answerable' must be true or false")
    gold_rows = row.get("gold")
    if answerable is False and gold_rows:
        raise ValueError("an unanswerable question ('answerable': false) has no 'gold'")
    if answerable is not None and not gold_rows:
        gold_rows = []
    elif not isinstance(gold_rows, list) or not gold_rows:
        raise ValueError("'gold' must be a non-empty list")
    gold = unique_gold(_gold_item(g) for g in gold_rows)
    filters = row.get("filters")
    if filters is not None:
        if not isinstance(filters, (dict, list)):
            raise ValueError("'filters' must be an object or a list of KEY=VALUE strings")
        try:
            parse_filters(filters)
        except CitewellError as exc:
            raise ValueError(f"bad 'filters': {exc.message}") from exc
    docs = {g.document.strip().casefold() for g in gold}
    qtype = row.get("question_type")
    return Question(id=str(row.get("id") or f"line {line}"), text=text or "", gold=gold,
                    question_type=str(qtype) if qtype else UNTYPED, filters=filters,
                    document=gold[0].document.strip() if len(docs) == 1 else None, line=line,
                    answer=_answer(row), answerable=answerable)


def load_questions(path: str | Path) -> list[Question]:
    """Read a question file (FinanceBench or generic JSONL, see the module docstring).

    Raises :class:`EvalFileError` naming the file and the 1-based line for a file that
    cannot be read, a line that is not a JSON object, a row missing its fields, a mix of
    formats, or a file without questions.
    """
    path = Path(path)
    try:
        lines = jsonl_lines(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalFileError(path, 0, f"cannot read the file ({exc})") from exc
    questions: list[Question] = []
    kind: str | None = None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = valid_json(json.loads(raw))  # a lone surrogate (JSON "\ud800") becomes U+FFFD
        except ValueError as exc:
            raise EvalFileError(path, number, f"not valid JSON ({exc})") from exc
        if not isinstance(row, dict):
            raise EvalFileError(path, number, "expected a JSON object")
        row_kind = "financebench" if is_financebench(row) else "generic"
        if kind is not None and row_kind != kind:
            raise EvalFileError(path, number, f"a {row_kind} row in a {kind} file")
        kind = row_kind
        try:
            questions.append(_financebench(row, number) if row_kind == "financebench" else _generic(row, number))
        except ValueError as exc:
            raise EvalFileError(path, number, str(exc)) from exc
    if not questions:
        raise EvalFileError(path, 0, "no questions in the file")
    return questions


__all__ = ["UNTYPED", "EvalFileError", "Question", "financebench_page", "is_financebench", "load_questions"]
