"""Request and response models of the tracking-agent and pattern routes (issue 17): what
the OpenAPI document says about ``/v1/tracking_agents…`` and ``/v1/patterns…``. Request
schemas state exactly what the routes accept (:mod:`citewell.web.rules`); the response
shapes are written once in :mod:`citewell.wire.agents` (the typed client derives its own
from them) and re-exported here."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, StrictInt, StrictStr, WithJsonSchema

from ..agents.spec import MAX_INTERVAL_S, MAX_TERM_CHARS, MAX_TERMS, MIN_INTERVAL_S
from ..wire.agents import (AlertsPage, Deleted, PatternList, PatternMemberOut, PatternOut, PatternSummary, RunOut,
                           TrackingAgentList, TrackingAgentOut)
from . import rules
from .schemas import FilterValue, _Body

_NAME = {"anyOf": [rules.name(), {"type": "null"}]}
_TERMS = {"anyOf": [{"type": "array", "items": rules.name(MAX_TERM_CHARS), "maxItems": MAX_TERMS},
                    {"type": "null"}]}
_FILTERS_DESCRIPTION = ('What to watch besides the query, as docs/architecture.md "Filters": source, resource_id '
                        '(a dataset, i.e. a posts file), created_at>= / <=, and resource-level keys (tickers …); an '
                        'object or "key=value" strings. An unknown key is 400 INVALID_FILTER.')


def _whole(value: Any) -> Any:
    """A JSON number without a fraction (``60.0`` is an integer to JSON Schema) as an int;
    anything else as it is, for :class:`StrictInt` to refuse a bool or a string."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class _AgentFields(_Body):
    # strict: true is no interval nor "60" a number; an unknown (misspelt) field is 400, never ignored
    model_config = ConfigDict(extra="forbid")

    name: Annotated[StrictStr | None, WithJsonSchema(_NAME)] = Field(
        None, description="A name: one line of text without bidirectional formatting characters, not blank "
                          "(default: the query's first 80 characters).")
    filters: Annotated[dict[str, FilterValue | list[FilterValue]] | list[str] | None,
                       WithJsonSchema(rules.filters())] = Field(None, description=_FILTERS_DESCRIPTION)
    keywords: Annotated[list[StrictStr] | None, WithJsonSchema(_TERMS)] = Field(
        None, description="Words or cashtags ($ATVI): a post must contain one (case-insensitive) or list it "
                          "among its cashtags. At most 50, each one line of at most 200 characters.")
    authors: Annotated[list[StrictStr] | None, WithJsonSchema(_TERMS)] = Field(
        None, description="Only posts by one of these authors (case-insensitive). At most 50, each one line of "
                          "at most 200 characters.")
    interval_s: Annotated[StrictInt | None, BeforeValidator(_whole)] = Field(None, ge=MIN_INTERVAL_S, le=MAX_INTERVAL_S,
                                   description="Seconds between scheduled runs (default 3600).")
    state: Literal["active", "paused"] | None = Field(
        None, description="active (the default) runs on schedule; paused never runs.")


class TrackingAgentBody(_AgentFields):
    """``POST /v1/tracking_agents`` body."""

    query: Annotated[StrictStr, WithJsonSchema(rules.watched_text())] = Field(
        description="The question or topic to watch: not blank, at most 8,000 characters, no control character "
                    "but tab and line breaks.")


class TrackingAgentPatch(_AgentFields):
    """``PATCH /v1/tracking_agents/{id}`` body: the fields to change (absent or null: unchanged)."""

    query: Annotated[StrictStr | None, WithJsonSchema({"anyOf": [rules.watched_text(), {"type": "null"}]})] = Field(
        None, description="A new question or topic.")


__all__ = ["AlertsPage", "Deleted", "PatternList", "PatternMemberOut", "PatternOut", "PatternSummary", "RunOut",
           "TrackingAgentBody", "TrackingAgentList", "TrackingAgentOut", "TrackingAgentPatch"]
