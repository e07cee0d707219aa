"""Filters in SQL, shared by every concern that reads searchable chunks.

- :func:`filter_sql`: a search's :class:`~citewell.store.base.Condition`\\ s as ``AND …``
  clauses over ``r`` (resources) and ``c`` (chunks);
- :func:`under_sql`: the folder scope (resources with a present file under a folder);
- :func:`facet_rows`: the rows of table ``facets`` a resource's metadata gives (what the
  resource-level conditions test).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from .records import Condition

LIST_FACETS = ("tickers", "company_names", "sector", "subsector", "countries", "regions", "tags",
               "stock_ids", "document_tags")
SCALAR_FACETS = ("calendar_date", "fiscal_year", "fiscal_quarter", "document_category",
                 "document_subcategory", "publisher", "source")
#: filter keys on chunk columns: searches with them skip the resource-level caches
CHUNK_KEYS = frozenset({"created_at", "source"})


def facet_rows(resource_id: str, metadata: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(resource_id, key, value)`` rows of ``facets`` for ``metadata``: one per value of each
    facet key (lists give several), values stripped and lower-cased."""
    rows: list[tuple[str, str, str]] = []
    for key in LIST_FACETS + SCALAR_FACETS:
        value = metadata.get(key)
        if value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                rows.append((resource_id, key, str(item).strip().lower()))
    return rows


def under_sql(under: str | None) -> tuple[str, list[Any]]:
    """``AND …`` over ``r`` (resources) keeping those with a present file under folder
    ``under`` (an absolute path), and its parameters; nothing for None."""
    if under is None:
        return "", []
    prefix = under.rstrip("/") + "/"
    return (" AND EXISTS (SELECT 1 FROM files f WHERE f.present = 1 AND f.workspace_id = r.workspace_id "
            "AND f.resource_id = r.id AND substr(f.path, 1, ?) = ?)", [len(prefix), prefix])


def filter_sql(conditions: Sequence[Condition]) -> tuple[str, list[Any]]:
    """Translate conditions to ``AND …`` SQL over ``r`` (resources) and ``c`` (chunks), and
    its parameters (``""``, ``[]`` for none)."""
    clauses: list[str] = []
    args: list[Any] = []
    for cond in conditions:
        values = list(cond.values)
        marks = ",".join("?" * len(values))
        facet = ("EXISTS (SELECT 1 FROM facets f WHERE f.resource_id = r.id AND f.key = ? AND {test})")
        if cond.key == "document_name":  # title, stored file name, or the name of a present path
            paths = " OR ".join("lower(f.path) LIKE ? ESCAPE '\\'" for _ in values)
            clauses.append(f"(lower(r.title) IN ({marks}) OR lower(r.file_name) IN ({marks}) OR EXISTS "
                           f"(SELECT 1 FROM files f WHERE f.resource_id = r.id AND f.present = 1 AND ({paths})))")
            args += values + values + ["%/" + re.sub(r"([%_\\])", r"\\\1", v) for v in values]
        elif cond.key == "kind":
            clauses.append(f"r.kind IN ({marks})")
            args += values
        elif cond.key == "resource_id" and cond.op == "ne":  # none of them (nothing to leave out: no clause)
            if values:
                clauses.append(f"r.id NOT IN ({marks})")
                args += values
        elif cond.key == "resource_id":
            clauses.append(f"r.id IN ({marks})")
            args += values
        elif cond.key == "created_at":
            if cond.op == "ge":
                clauses.append("c.created_at >= ?")
                args.append(values[0])
            elif cond.op == "le":  # a date bound includes that whole day: 2022-06-30T12:00Z <= 2022-06-30
                clauses.append("(c.created_at <= ? OR substr(c.created_at, 1, ?) = ?)")
                args += [values[0], len(values[0]), values[0]]
            else:
                clauses.append("(" + " OR ".join("c.created_at LIKE ?" for _ in values) + ")")
                args += [v + "%" for v in values]
        elif cond.key == "source":
            clauses.append(f"(lower(c.post_source) IN ({marks}) OR "
                           + facet.format(test=f"f.value IN ({marks})") + ")")
            args += values + ["source"] + values
        elif cond.op == "ge":
            clauses.append(facet.format(test="f.value >= ?"))
            args += [cond.key, values[0]]
        elif cond.op == "le":
            clauses.append(facet.format(test="(f.value <= ? OR substr(f.value, 1, ?) = ?)"))
            args += [cond.key, values[0], len(values[0]), values[0]]
        elif cond.key == "calendar_date":
            clauses.append(facet.format(test="(" + " OR ".join("f.value LIKE ?" for _ in values) + ")"))
            args += [cond.key] + [v + "%" for v in values]
        else:
            clauses.append(facet.format(test=f"f.value IN ({marks})"))
            args += [cond.key] + values
    return "".join(" AND " + c for c in clauses), args
