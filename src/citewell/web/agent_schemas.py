"""Request and response models of the tracking-agent and pattern routes (issue 17): what
the OpenAPI document says about ``/v1/tracking_agents…`` and ``/v1/patterns…``. Request
schemas state exactly what the routes accept (:mod:`citewell.web.rules`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, StrictInt, StrictStr, WithJsonSchema

from ..agents.spec import MAX_INTERVAL_S, MAX_TERM_CHARS, MAX_TERMS, MIN_INTERVAL_S
from . import rules
from .schemas import ChatMessage, FilterValue, Notice, _Body, _Closed, _Open

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


class TrackingAgentOut(_Open):
    """A tracking agent."""

    id: str
    name: str
    query: str
    filters: Any = Field(description="The filters as given (object, list of strings, or null).")
    keywords: list[str]
    authors: list[str]
    interval_s: int
    state: Literal["active", "paused"]
    created_at: str
    updated_at: str
    next_run_at: str = Field(description="When the scheduler runs it next (ISO 8601 UTC).")
    last_run_at: str | None
    last_error: Notice | None = Field(description="{code, message} of the last run when it failed, else null.")
    runs: int
    alerts: int


class TrackingAgentList(_Closed):
    """``GET /v1/tracking_agents``."""

    tracking_agents: list[TrackingAgentOut]


class Deleted(_Closed):
    """A deleted entity."""

    id: str
    deleted: bool


class AlertsPage(_Closed):
    """``GET /v1/tracking_agents/{id}/messages``: alerts, newest first."""

    messages: list[ChatMessage]
    next_before: str | None = Field(description="Pass as `before` for the next (older) page; null on the last.")


class PatternMemberOut(_Closed):
    """A member of a pattern: a ``post_refs`` item of ``POST /v1/mentions``."""

    source: str
    id: str
    dataset_id: str
    created_at: str | None


class PatternSummary(_Open):
    """A pattern without its members (``GET /v1/patterns``)."""

    id: str
    label: str
    size: int
    datasets: list[str]
    sources: list[str]
    first_seen: str | None
    last_seen: str | None
    trend: dict[str, Any] = Field(description="{direction: rising|falling|steady, buckets: [{start, end, count}]}.")
    agent_id: str | None
    created_at: str | None


class PatternOut(PatternSummary):
    """A pattern: similar mentions grouped by a tracking agent's run, with its members."""

    members: list[PatternMemberOut]


class PatternList(_Closed):
    """``GET /v1/patterns``: newest first."""

    patterns: list[PatternSummary]
    total: int


class RunOut(_Closed):
    """``POST /v1/tracking_agents/{id}/run``: what the run did."""

    agent_id: str
    ran: bool = Field(description="False when another process held the agent's lease.")
    new_mentions: int = Field(description="Mentions ingested since the previous run.")
    matched: int = Field(description="Of those, the ones the agent's watch matched and had not alerted for.")
    alert: ChatMessage | None = Field(description="The alert written (null: nothing matched).")
    patterns: list[str] = Field(description="Ids of the patterns the run found.")
    error: Notice | None = Field(description="{code, message} when the run failed.")


__all__ = ["AlertsPage", "Deleted", "PatternList", "PatternOut", "RunOut", "TrackingAgentBody", "TrackingAgentList",
           "TrackingAgentOut", "TrackingAgentPatch"]
