"""What a tracking agent watches, validated (issue 17, "Tracking agents").

An agent is ``{name, query, filters, keywords, authors, interval_s, state}``:

- ``name``: one line of text (no control or bidirectional formatting character,
  :func:`citewell.validtext.name_problem`), at most 1,000 characters;
- ``query``: the question or topic (not blank, at most 8,000 characters, no control
  character but tab and line breaks: :func:`citewell.validtext.text_problem`);
- ``filters``: docs/architecture.md "Filters" (an object or ``"key=value"`` strings: ``source``,
  ``resource_id`` — the datasets, i.e. posts files —, ``created_at>=``/``<=`` and the
  resource-level keys ``document_name``, ``tickers`` …), checked by
  :func:`citewell.retrieve.parse_filters` (``INVALID_FILTER``);
- ``keywords``: words or cashtags (``$ATVI``); when given a post must contain one of them
  (case-insensitive) or list it among its ``cashtags``;
- ``authors``: when given, only posts by one of them (case-insensitive); a keyword or
  author is one line (as a name) of at most :data:`MAX_TERM_CHARS` characters;
- ``interval_s``: seconds between scheduled runs, 1 to 30 days; ``state``: ``active`` or
  ``paused`` (a paused agent is never run by the scheduler, nor by "run now").

The stored ``filters`` column holds ``{"filters": …, "keywords": […], "authors": […],
"paths": […]}``; ``paths`` are the files the ``resource_id`` filter's datasets were read
from when the filter was set (:func:`followed_paths`), so the filter follows each file's
newer versions: a posts file that grows and is synced again is a new resource (the old one
``superseded``), and its appended posts still match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..errors import NotFoundError, UsageError
from ..retrieve import parse_filters
from ..store.base import Condition, ResourceStore
from ..store.tracking import AGENT_STATES, AgentRecord
from ..validtext import name_problem, one_line, text_problem, valid_text

#: Bounds of ``interval_s``: one second (tests, demos) to 30 days.
MIN_INTERVAL_S = 1
MAX_INTERVAL_S = 30 * 86400
#: Default interval: one hour.
DEFAULT_INTERVAL_S = 3600
MAX_QUERY_CHARS = 8000
MAX_NAME_CHARS = 1000
MAX_TERMS = 50
#: The longest keyword or author, in characters.
MAX_TERM_CHARS = 200


@dataclass(frozen=True)
class Watch:
    """What an agent watches, parsed: the query, the filter conditions, keywords and
    authors (lower-cased)."""

    query: str
    conditions: tuple[Condition, ...]
    keywords: tuple[str, ...]
    authors: tuple[str, ...]
    #: Files whose current version a ``resource_id`` condition also selects.
    paths: tuple[str, ...] = ()

    @classmethod
    def of(cls, agent: AgentRecord) -> "Watch":
        """The watch of a stored agent (its filters were checked when stored)."""
        stored = agent.filters
        return cls(agent.query, tuple(parse_filters(stored.get("filters"))),
                   tuple(k.lower() for k in stored.get("keywords", [])),
                   tuple(a.lower() for a in stored.get("authors", [])),
                   tuple(stored.get("paths") or ()))


def _terms(name: str, values: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for value in values or []:
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"{name}: every item must be a non-blank string")
        if len(value) > MAX_TERM_CHARS or name_problem(value):
            raise UsageError(f"{name}: every item one line of at most {MAX_TERM_CHARS} characters"
                             + (f" ({name_problem(value)})" if name_problem(value) else ""))
        out.append(valid_text(value.strip()))
    if len(out) > MAX_TERMS:
        raise UsageError(f"{name}: at most {MAX_TERMS} items")
    return list(dict.fromkeys(out))


def check_fields(fields: Mapping[str, Any], *, creating: bool) -> dict[str, Any]:
    """Validate the fields of a new agent (``creating``) or of a change (only those given,
    None meaning "unchanged"); returns the store's columns (``name``, ``query``,
    ``filters`` as stored, ``interval_s``, ``state``). Raises ``INVALID_REQUEST`` (a
    blank or too long name or query, an interval out of bounds, an unknown state) and
    ``INVALID_FILTER`` (a bad filter)."""
    out: dict[str, Any] = {}
    for key in ("query", "name", "state"):
        if fields.get(key) is not None and not isinstance(fields[key], str):
            raise UsageError(f"{key}: must be a string")
    query = fields.get("query")
    if query is not None or creating:
        query = valid_text(str(query or ""))
        if not query.strip():
            raise UsageError("query: the question or topic to watch must not be blank")
        if len(query) > MAX_QUERY_CHARS:
            raise UsageError(f"query: at most {MAX_QUERY_CHARS:,} characters")
        if text_problem(query):
            raise UsageError(f"query: {text_problem(query)}")
        out["query"] = query
    name = fields.get("name")
    if name is not None or creating:
        name = valid_text(str(name)) if name is not None else one_line(str(query))[:80]
        if not name.strip() or len(name) > MAX_NAME_CHARS or name_problem(name):
            raise UsageError(f"name: one line of text, 1 to {MAX_NAME_CHARS} characters"
                             + (f" ({name_problem(name)})" if name_problem(name) else ""))
        out["name"] = name
    interval = fields.get("interval_s")
    if interval is not None or creating:
        interval = DEFAULT_INTERVAL_S if interval is None else interval
        if isinstance(interval, bool) or not isinstance(interval, int) or not (
                MIN_INTERVAL_S <= interval <= MAX_INTERVAL_S):
            raise UsageError(f"interval_s: whole seconds from {MIN_INTERVAL_S} to {MAX_INTERVAL_S}")
        out["interval_s"] = interval
    state = fields.get("state")
    if state is not None or creating:
        state = state or "active"
        if state not in AGENT_STATES:
            raise UsageError(f"state: one of {', '.join(AGENT_STATES)}")
        out["state"] = state
    if creating or any(fields.get(k) is not None for k in ("filters", "keywords", "authors")):
        filters = fields.get("filters")
        parse_filters(filters)  # INVALID_FILTER before anything is stored
        out["filters"] = {"filters": filters if filters else None,
                          "keywords": _terms("keywords", fields.get("keywords")),
                          "authors": _terms("authors", fields.get("authors"))}
    return out


def followed_paths(store: ResourceStore, workspace_id: str, filters: Any) -> list[str]:
    """The file paths (sorted) the datasets named by the ``resource_id`` conditions of
    ``filters`` (already checked) are read from now: the files whose later versions the
    filter follows. An unknown id, or a dataset uploaded without a path, adds none."""
    out: set[str] = set()
    for condition in parse_filters(filters):
        if condition.key != "resource_id":
            continue
        for resource_id in condition.values:
            try:
                out.update(store.resource(workspace_id, resource_id).paths)
            except NotFoundError:
                continue
    return sorted(out)


def merge_watch(stored: Mapping[str, Any], change: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The stored ``filters`` column after a change that gave only some of ``filters``,
    ``keywords``, ``authors`` (those not ``given`` keep their stored value)."""
    out = dict(stored)
    for key in ("filters", "keywords", "authors"):
        if given.get(key) is not None:
            out[key] = change[key]
    return out


def agent_json(agent: AgentRecord) -> dict[str, Any]:
    """An agent as the API and CLI show it: :meth:`AgentRecord.to_dict` with ``filters``,
    ``keywords`` and ``authors`` as separate fields."""
    data = agent.to_dict()
    stored = data.pop("filters")
    data["filters"] = stored.get("filters")
    data["keywords"] = stored.get("keywords", [])
    data["authors"] = stored.get("authors", [])
    return data


__all__ = ["DEFAULT_INTERVAL_S", "MAX_INTERVAL_S", "MAX_TERM_CHARS", "MIN_INTERVAL_S", "Watch", "agent_json", "check_fields",
           "followed_paths", "merge_watch"]
