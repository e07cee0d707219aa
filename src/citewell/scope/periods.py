"""The years the sources report on (a question's own periods are read by
:mod:`citewell.question.periods`).

- A resource's *period* is the latest year it reports on, from its data: the metadata's
  ``fiscal_year`` and ``calendar_date``, and the years (1900–2099) written in its title or
  file name (``3M_2022_10K``, ``reddit_wallstreetbets_2022-01``). A resource with none of
  these has no known period.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ..models import Resource

_TITLE_YEAR_RE = re.compile(r"(?<!\d)(19\d{2}|20\d{2})(?!\d)")


def _year_of(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 1900 <= value <= 2099 else None
    if isinstance(value, str):
        m = _TITLE_YEAR_RE.search(value)
        return int(m.group(1)) if m else None
    return None


def resource_period(resource: Resource) -> int | None:
    """The latest year ``resource`` reports on (module docstring), or None."""
    meta = resource.metadata or {}
    years = [y for y in (_year_of(meta.get("fiscal_year")), _year_of(meta.get("calendar_date"))) if y]
    years.extend(_label_years(resource.title or "", resource.file_name or ""))
    return max(years) if years else None


@lru_cache(maxsize=16384)
def _label_years(title: str, file_name: str) -> tuple[int, ...]:
    """The years written in a resource's title and file name (cached: every question's
    scope check reads the period of each resource it is about)."""
    return tuple(int(y) for label in (title, file_name) for y in _TITLE_YEAR_RE.findall(label))


def latest_period(resources: Iterable[Resource]) -> int | None:
    """The latest period of ``resources`` whose period is known, or None."""
    known = [y for y in (resource_period(r) for r in resources) if y is not None]
    return max(known) if known else None


__all__ = ["latest_period", "resource_period"]
