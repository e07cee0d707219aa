"""Metadata filters (docs/architecture.md "Filters"): parse and normalise, then the store applies them.

Keys: ``document_name``, ``kind``, ``source``, ``resource_id``, ``created_at`` and the
typed metadata fields of seeds 003/004 (``tickers`` — alias ``ticker`` —,
``company_names``, ``fiscal_year``, ``fiscal_quarter``, ``document_category``,
``document_subcategory``, ``sector``, ``subsector``, ``publisher``, ``calendar_date``,
``countries``, ``regions``, ``tags``).

Semantics: a list field matches when it contains the value; strings compare
case-insensitively; a repeated key means any of its values; different keys must all
match; ``calendar_date`` and ``created_at`` also take ``>=``/``<=``. ``fiscal_quarter``
is 1–4 and accepts ``Q4``. An unknown key or an unusable value raises
:class:`~citewell.errors.FilterError` (``INVALID_FILTER``).
"""

from __future__ import annotations

import re
from datetime import datetime
from collections import OrderedDict
from typing import Any, Iterable, Mapping

from ..errors import FilterError
from ..ingest.manifest import parse_quarter
from ..store.base import Condition

KEYS = ("document_name", "kind", "source", "resource_id", "created_at", "tickers", "company_names",
        "fiscal_year", "fiscal_quarter", "document_category", "document_subcategory", "sector", "subsector",
        "publisher", "calendar_date", "countries", "regions", "tags")
ALIASES = {"ticker": "tickers", "company": "company_names", "company_name": "company_names"}
RANGE_KEYS = ("calendar_date", "created_at", "fiscal_year")
KINDS = ("pdf", "transcript", "text", "post")
_EXPR = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|=)\s*(.*?)\s*$", re.S)
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?)?)?$")


def _valid_date(text: str) -> bool:
    """True for a real calendar date or date-time (``2022``, ``2022-06``, ``2022-06-30T12:00Z``)."""
    padded = text + "-01" * (2 - text.count("-")) if "T" not in text and " " not in text else text
    try:
        datetime.fromisoformat(padded.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _normalise(key: str, op: str, value: Any) -> str:
    text = str(value).strip()
    if text == "":
        raise FilterError(f"filter {key}: empty value")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FilterError(f"filter {key}: the value is not valid UTF-8") from exc
    if key == "fiscal_quarter":
        try:
            quarter = parse_quarter(text)
        except ValueError as exc:
            raise FilterError(f"filter fiscal_quarter: expected 1-4 or Q1-Q4, got {text!r}") from exc
        return str(quarter)
    if key == "fiscal_year":
        if not re.fullmatch(r"(FY)?\d{4}", text, re.I):
            raise FilterError(f"filter fiscal_year: expected a year such as 2022, got {text!r}")
        return text[-4:]
    if key in ("calendar_date", "created_at"):
        if not _DATE.match(text) or not _valid_date(text):
            raise FilterError(f"filter {key}: expected an ISO-8601 date such as 2022-01-31, got {text!r}")
        return text.replace(" ", "T")
    if key == "kind":
        if text.lower() not in KINDS:
            raise FilterError(f"filter kind: expected one of {', '.join(KINDS)}, got {text!r}")
    if key == "resource_id":
        return text
    return text.lower()


def parse_filters(filters: Iterable[str] | Mapping[str, Any] | None) -> list[Condition]:
    """Parse ``KEY=VALUE`` / ``KEY>=VALUE`` strings or a mapping into store conditions.

    A mapping value may be a list (any of its values), and a string value starting with
    ``>=`` or ``<=`` is a bound (``{"fiscal_year": ">=2022"}``). Returns one :class:`Condition`
    per (key, operator), values de-duplicated, in first-seen order. Raises
    :class:`FilterError` for unknown keys, ranges on keys without order, or bad values.
    """
    if not filters:
        return []
    items: list[tuple[str, str, Any]] = []
    if isinstance(filters, Mapping):
        for key, value in filters.items():
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, float) and v.is_integer():  # JSON has one number type: 2022.0 is 2022
                    v = int(v)
                if isinstance(v, str) and v[:2] in (">=", "<="):  # {"fiscal_year": ">=2022"}: a bound
                    items.append((str(key), v[:2], v[2:].strip()))
                else:
                    items.append((str(key), "=", v))
    else:
        for expr in filters:
            match = _EXPR.match(str(expr))
            if not match:
                raise FilterError(f"filter {expr!r}: expected KEY=VALUE (or KEY>=VALUE, KEY<=VALUE)")
            items.append((match.group(1), match.group(2), match.group(3)))
    grouped: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
    for raw_key, op_text, value in items:
        key = ALIASES.get(raw_key.lower(), raw_key.lower())
        if key not in KEYS:
            raise FilterError(f"unknown filter key {raw_key!r}; known keys: {', '.join(KEYS)} "
                              f"(aliases: {', '.join(f'{a}={k}' for a, k in ALIASES.items())})")
        op = {"=": "eq", ">=": "ge", "<=": "le"}[op_text]
        if op != "eq" and key not in RANGE_KEYS:
            raise FilterError(f"filter {key} takes only '=' (ranges work on {', '.join(RANGE_KEYS)})")
        values = grouped.setdefault((key, op), [])
        norm = _normalise(key, op, value)
        if norm not in values:
            values.append(norm)
    conditions: list[Condition] = []
    for (key, op), values in grouped.items():
        if op != "eq" and len(values) > 1:
            raise FilterError(f"filter {key}: give one lower and one upper bound at most")
        conditions.append(Condition(key=key, op=op, values=tuple(values)))
    return conditions
