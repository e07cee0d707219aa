"""Tracking agents and the patterns they find (issue 17): what the
``/v1/tracking_agents…`` and ``/v1/patterns…`` routes answer."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import ClosedModel, OpenModel
from .chats import ChatMessage
from .errors import Notice


class TrackingAgentOut(OpenModel):
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


class TrackingAgentList(ClosedModel):
    """``GET /v1/tracking_agents``."""

    tracking_agents: list[TrackingAgentOut]


class Deleted(ClosedModel):
    """A deleted entity."""

    id: str
    deleted: bool


class AlertsPage(ClosedModel):
    """``GET /v1/tracking_agents/{id}/messages``: alerts, newest first."""

    messages: list[ChatMessage]
    next_before: str | None = Field(description="Pass as `before` for the next (older) page; null on the last.")


class PatternMemberOut(ClosedModel):
    """A member of a pattern: a ``post_refs`` item of ``POST /v1/mentions``."""

    source: str
    id: str
    dataset_id: str
    created_at: str | None


class PatternSummary(OpenModel):
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


class PatternList(ClosedModel):
    """``GET /v1/patterns``: newest first."""

    patterns: list[PatternSummary]
    total: int


class RunOut(ClosedModel):
    """``POST /v1/tracking_agents/{id}/run``: what the run did."""

    agent_id: str
    ran: bool = Field(description="False when another process held the agent's lease.")
    new_mentions: int = Field(description="Mentions ingested since the previous run.")
    matched: int = Field(description="Of those, the ones the agent's watch matched and had not alerted for.")
    alert: ChatMessage | None = Field(description="The alert written (null: nothing matched).")
    patterns: list[str] = Field(description="Ids of the patterns the run found.")
    error: Notice | None = Field(description="{code, message} when the run failed.")


__all__ = ["AlertsPage", "Deleted", "PatternList", "PatternMemberOut", "PatternOut", "PatternSummary", "RunOut",
           "TrackingAgentList", "TrackingAgentOut"]
