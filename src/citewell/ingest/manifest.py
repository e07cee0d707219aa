"""Metadata manifests: JSONL rows that attach titles and typed metadata to files.

A row matches a file by ``sha256`` first, then by its path (``path``, ``file`` or
``pdf_path``) relative to the corpus root or to the manifest's own folder. A file
``citewell-manifest.jsonl`` at a corpus root is read automatically.

Row keys understood (anything else lands in ``custom_metadata``):

- native: ``title``, ``metadata`` (object of typed fields), ``custom_metadata``, and the
  typed fields of seeds 003/004 at top level (``calendar_date``, ``fiscal_year``,
  ``fiscal_quarter``, ``tickers``/``ticker``, ``company_names``, ``document_category``,
  ``document_subcategory``, ``sector``, ``subsector``, ``publisher``, ``source``,
  ``external_url``, ``countries``, ``regions``, ``tags``);
- FinanceBench ``financebench_document_information.jsonl``: ``doc_name`` → title,
  ``ticker`` → tickers, ``company`` → company_names, ``gics_sector`` → sector,
  ``doc_period`` → fiscal_year, ``doc_type`` 10k/10q/8k → document_category ``filing``
  with subcategory ``10-K``/``10-Q``/``8-K``, ``Earnings`` → ``corporate_data`` /
  ``earning``, ``doc_link`` → external_url.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from ..digits import whole_number
from ..errors import IngestError
from ..validtext import title_problem
from .text import jsonl_lines

AUTO_MANIFEST = "citewell-manifest.jsonl"
LIST_FIELDS = ("tickers", "company_names", "sector", "subsector", "countries", "regions", "tags",
               "stock_ids", "document_tags")
SCALAR_FIELDS = ("calendar_date", "fiscal_year", "fiscal_quarter", "document_category",
                 "document_subcategory", "publisher", "source", "external_url")
_MATCH_KEYS = ("sha256", "path", "file", "pdf_path")
_DOC_TYPES = {
    "10k": ("filing", "10-K"), "10-k": ("filing", "10-K"),
    "10q": ("filing", "10-Q"), "10-q": ("filing", "10-Q"),
    "8k": ("filing", "8-K"), "8-k": ("filing", "8-K"),
    "earnings": ("corporate_data", "earning"),
}


@dataclass
class ManifestEntry:
    """Metadata for one file: ``title`` (or None), typed ``metadata``, ``custom_metadata``;
    ``origin`` is ``"<manifest path>:<line>"`` (empty for rows built in code)."""

    title: str | None = None
    origin: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    custom_metadata: dict[str, Any] = field(default_factory=dict)


def parse_quarter(value: Any) -> int | None:
    """``4``, ``"4"``, ``"Q4"``, ``"q4"`` → 4; ``None``/empty → None; else ``ValueError``."""
    if value is None or value == "":
        return None
    if isinstance(value, float) and value.is_integer():  # JSON has one number type: 4.0 is 4
        value = int(value)
    text = str(value).strip().upper().removeprefix("Q")
    quarter = whole_number(text, max_digits=1)
    if quarter is None or not 1 <= quarter <= 4:
        raise ValueError(f"fiscal_quarter must be 1-4, got {value!r}")
    return quarter


def _iso_date(value: Any) -> str:
    """Validate an ISO-8601 date or date-time (``2023-08-15`` or ``2023-08-15T00:00:00Z``)."""
    text = str(value).strip()
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"calendar_date must be an ISO-8601 date such as 2023-08-15, got {value!r}") from exc
    return text


def _kind(value: Any) -> str:
    """How a JSON value is called in messages: ``a string``, ``a list`` …"""
    kinds = {bool: "true or false", str: "a string", int: "a number", float: "a number", list: "a list",
             dict: "an object"}
    return next((name for cls, name in kinds.items() if isinstance(value, cls)), "null")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def entry_from_row(row: dict[str, Any]) -> ManifestEntry:
    """Map one manifest row (native or FinanceBench keys) to a :class:`ManifestEntry`.

    Raises ``ValueError`` for a value of the wrong type (e.g. ``fiscal_quarter: 7``).
    """
    entry = ManifestEntry()
    meta: dict[str, Any] = {}
    for key in ("custom_metadata", "metadata"):  # objects of fields: anything else is a caller's mistake
        value = row.get(key)
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{key} must be a JSON object of fields (such as {{\"team\": \"ocr\"}}), "
                             f"not {_kind(value)}")
    custom: dict[str, Any] = dict(row.get("custom_metadata") or {})
    typed = dict(row.get("metadata") or {})
    for key, value in row.items():
        if key in ("metadata", "custom_metadata") or key in _MATCH_KEYS:
            continue
        if key in ("title", "doc_name"):
            if value not in (None, "") and not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise ValueError(f"{key} must be text, not {_kind(value)}")
            entry.title = str(value) if value not in (None, "") else entry.title
            problem = title_problem(entry.title) if entry.title else None
            if problem:
                raise ValueError(f"{key}: {problem}")
        elif key in LIST_FIELDS or key in SCALAR_FIELDS:
            typed.setdefault(key, value)
        elif key == "ticker":
            typed.setdefault("tickers", value)
        elif key in ("company", "company_name"):
            typed.setdefault("company_names", value)
        elif key == "gics_sector":
            typed.setdefault("sector", value)
        elif key == "doc_period":
            typed.setdefault("fiscal_year", value)
        elif key == "doc_link":
            typed.setdefault("external_url", value)
        elif key == "doc_type":
            mapped = _DOC_TYPES.get(str(value).strip().lower())
            if mapped:
                typed.setdefault("document_category", mapped[0])
                typed.setdefault("document_subcategory", mapped[1])
            else:
                custom["doc_type"] = value
        else:
            custom[key] = value
    for key, value in typed.items():
        if value is None:
            continue
        if key in LIST_FIELDS:
            meta[key] = [str(v) for v in _as_list(value) if v is not None]
        elif key == "fiscal_year":
            text = str(int(value) if isinstance(value, float) and value.is_integer() else value).strip()
            if not re.fullmatch(r"(?i)(FY)?\s*\d{4}", text):
                raise ValueError(f"fiscal_year must be a year such as 2022 or FY2022, got {value!r}")
            meta[key] = int(text[-4:])
        elif key == "calendar_date":
            meta[key] = _iso_date(value)
        elif key == "fiscal_quarter":
            quarter = parse_quarter(value)
            if quarter is not None:
                meta[key] = quarter
        else:
            meta[key] = value
    entry.metadata = meta
    entry.custom_metadata = custom
    return entry


class Manifest:
    """Rows of one or more manifest files, indexed by sha256 and by relative path."""

    def __init__(self) -> None:
        self._by_sha: dict[str, ManifestEntry] = {}
        self._by_path: dict[str, ManifestEntry] = {}
        self._rows: list[ManifestEntry] = []
        self._matched: set[int] = set()
        #: ``"manifest:line: reason"`` of rows that were skipped because they are invalid.
        self.errors: list[str] = []

    def __len__(self) -> int:
        return len(self._rows)

    def unmatched(self) -> list[str]:
        """Origins (``"manifest:line"``) of rows that no looked-up file matched so far."""
        return [e.origin for e in self._rows if id(e) not in self._matched]

    def load(self, path: Path, *, roots: Sequence[Path] = ()) -> None:
        """Read a manifest JSONL file; paths in it are relative to one of ``roots`` (the
        corpus roots) or to the manifest's own folder.

        Raises :class:`IngestError` ``MANIFEST_NOT_FOUND`` when the file does not exist,
        ``JSONL_MALFORMED`` when it cannot be read; an invalid row is skipped and listed in
        :attr:`errors` (``"manifest:line: reason"``).
        """
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError as exc:
            raise IngestError(f"manifest {path} does not exist", code="MANIFEST_NOT_FOUND") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise IngestError(f"manifest {path}: cannot read ({exc})", code="JSONL_MALFORMED") from exc
        bases = [*roots, path.parent]
        for number, line in enumerate(jsonl_lines(text), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError("a row must be a JSON object")
                entry = entry_from_row(row)
                entry.origin = f"{path}:{number}"
            except (ValueError, TypeError, RecursionError) as exc:
                # one bad row must not block the folder: it is skipped and reported
                self.errors.append(f"{path}:{number}: {exc if not isinstance(exc, RecursionError) else 'nested too deeply'}")
                continue
            self._rows.append(entry)
            if isinstance(row.get("sha256"), str):
                self._by_sha[row["sha256"].lower()] = entry
            for key in ("path", "file", "pdf_path"):
                if isinstance(row.get(key), str):
                    for base in bases:
                        self._by_path[str((base / row[key]).resolve())] = entry

    def lookup(self, *, sha256: str, path: Path) -> ManifestEntry | None:
        """The entry for a file: by ``sha256`` first, then by its resolved path."""
        if not self._rows:
            return None
        entry = self._by_sha.get(sha256.lower()) or self._by_path.get(str(path.resolve()))
        if entry is not None:
            self._matched.add(id(entry))
        return entry
