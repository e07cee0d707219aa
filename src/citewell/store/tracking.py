"""What the store keeps for tracking agents (issue 17): agents, their alerts, post
arrivals, patterns and the run lease. The interface is :class:`TrackingStore`; a store
hands out its implementation with ``Store.tracking()``.

Rows (all scoped to one workspace; an id of another workspace behaves like an unknown id):

- an **agent** (:class:`AgentRecord`): name, ``query``, ``filters``, ``interval_s``,
  ``state`` (``active``/``paused``), schedule (``next_run_at``), the outcome of its last run
  (``last_run_at``, ``last_error``), its ``watermark`` (the last post arrival it has looked
  at) and the lease of the run in progress (``lease_owner``, ``lease_until``);
- **post arrivals**: the order in which the workspace's posts, by ``(source lower-cased,
  id)``, were first seen by any agent run (:meth:`TrackingStore.register_arrivals`): a post
  arrives once, whatever file or version of a file holds it, so a posts file re-ingested
  after it grew brings only its new posts;
- **alerts**: canonical assistant :class:`~citewell.models.Message` rows of one agent, and
  the posts each alert covered (an agent never alerts twice for one post);
- **patterns** (:class:`PatternRecord`): groups of similar mentions a run found.

The lease (rule of issue 17 "Scheduling"): a run first *claims* its agent with one
conditional ``UPDATE`` (free or expired lease, and for a scheduled run: active and due),
which exactly one process wins; the run's results (alert, alerted posts, patterns, new
watermark, next due time) are written by :meth:`TrackingStore.finish_run` in one
transaction that first checks the lease is still its own, so a run whose lease expired and
was taken over writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, Sequence

from ..models import Message
from .base import iso_utc

#: Agent states.
AGENT_STATES = ("active", "paused")


@dataclass(frozen=True)
class AgentRecord:
    """A stored tracking agent.

    ``filters``: what it watches besides ``query`` (keys ``datasets``, ``sources``,
    ``authors``, ``keywords``, ``created_after``, ``created_before``; see
    :mod:`citewell.agents.spec`); ``interval_s``: seconds between scheduled runs;
    ``watermark``: the last post arrival (sequence number) it has looked at (0: none);
    ``last_error``: ``{code, message}`` of its last failed run, None after a good one.
    """

    id: str
    workspace_id: str
    name: str
    query: str
    filters: dict[str, Any]
    interval_s: int
    state: str
    created_at: datetime
    updated_at: datetime
    next_run_at: datetime
    last_run_at: datetime | None = None
    last_error: dict[str, Any] | None = None
    watermark: int = 0
    runs: int = 0
    alerts: int = 0
    lease_owner: str | None = None
    lease_until: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``{id, name, query, filters, interval_s, state, created_at, updated_at,
        next_run_at, last_run_at, last_error, runs, alerts}`` (times ISO 8601 UTC ``Z``)."""
        return {"id": self.id, "name": self.name, "query": self.query, "filters": self.filters,
                "interval_s": self.interval_s, "state": self.state, "created_at": iso_utc(self.created_at),
                "updated_at": iso_utc(self.updated_at), "next_run_at": iso_utc(self.next_run_at),
                "last_run_at": iso_utc(self.last_run_at) if self.last_run_at else None,
                "last_error": self.last_error, "runs": self.runs, "alerts": self.alerts}


@dataclass(frozen=True)
class PatternMember:
    """One mention of a pattern: the post ``(source, id)`` and the copy (``dataset_id``) it
    was found in, with its ``created_at`` (ISO string as the post gave it, or None)."""

    source: str
    id: str
    dataset_id: str
    created_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{source, id, dataset_id, created_at}`` (a ``post_refs`` item of ``POST /v1/mentions``)."""
        return {"source": self.source, "id": self.id, "dataset_id": self.dataset_id, "created_at": self.created_at}


@dataclass(frozen=True)
class PatternRecord:
    """A stored pattern: a group of similar mentions (see :mod:`citewell.agents.patterns`).

    ``agent_id``: the agent whose run found it; ``trend``: ``{direction, buckets}`` over the
    members' time window; ``first_seen``/``last_seen``: the members' earliest and latest
    ``created_at`` (None when no member has one)."""

    id: str
    workspace_id: str
    agent_id: str | None
    label: str
    members: tuple[PatternMember, ...]
    datasets: tuple[str, ...]
    sources: tuple[str, ...]
    first_seen: str | None
    last_seen: str | None
    trend: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None

    @property
    def size(self) -> int:
        """How many mentions it groups."""
        return len(self.members)

    def to_dict(self, *, members: bool = True) -> dict[str, Any]:
        """JSON-ready ``{id, label, size, datasets, sources, first_seen, last_seen, trend,
        agent_id, created_at, members?}``."""
        out: dict[str, Any] = {
            "id": self.id, "label": self.label, "size": self.size, "datasets": list(self.datasets),
            "sources": list(self.sources), "first_seen": self.first_seen, "last_seen": self.last_seen,
            "trend": self.trend, "agent_id": self.agent_id,
            "created_at": iso_utc(self.created_at) if self.created_at else None}
        if members:
            out["members"] = [m.to_dict() for m in self.members]
        return out


class TrackingStore(Protocol):
    """Persistence of tracking agents, their alerts, post arrivals, patterns and run leases."""

    def create_agent(self, workspace_id: str, *, name: str, query: str, filters: dict[str, Any],
                     interval_s: int, state: str) -> AgentRecord:
        """Store a new agent (UUIDv4 id), due at once."""
        ...

    def agent(self, workspace_id: str, agent_id: str) -> AgentRecord:
        """One agent; ``NotFoundError`` for an unknown id or one of another workspace."""
        ...

    def agents(self, workspace_id: str) -> list[AgentRecord]:
        """The workspace's agents, oldest first."""
        ...

    def update_agent(self, workspace_id: str, agent_id: str, changes: dict[str, Any]) -> AgentRecord:
        """Change ``name``, ``query``, ``filters``, ``interval_s`` and/or ``state`` (a change
        of interval moves ``next_run_at`` to the last run plus the new interval); returns the
        agent as stored. ``NotFoundError`` as :meth:`agent`."""
        ...

    def delete_agent(self, workspace_id: str, agent_id: str) -> None:
        """Delete an agent with its alerts (its patterns stay: they describe the workspace's
        mentions). ``NotFoundError`` as :meth:`agent`."""
        ...

    def due_agents(self, now: datetime) -> list[tuple[str, str]]:
        """``(workspace_id, agent_id)`` of every active agent of any workspace due at ``now``
        whose lease is free or expired, the longest overdue first."""
        ...

    def claim(self, workspace_id: str, agent_id: str, *, owner: str, now: datetime, lease_s: float,
              due_only: bool) -> str | None:
        """Take the run lease of an agent until ``now + lease_s``: a token when this call won
        it, None when another run holds it (or, with ``due_only``, the agent is not active and
        due). One atomic conditional update: of several processes, exactly one wins."""
        ...

    def release(self, workspace_id: str, agent_id: str, token: str, *, now: datetime,
                error: dict[str, Any] | None) -> bool:
        """End a run that failed (or found nothing to write) without :meth:`finish_run`:
        record ``error`` (None: clear it), ``last_run_at`` and the next due time, free the
        lease. False when the lease is no longer ``token``'s (nothing written)."""
        ...

    def register_arrivals(self, workspace_id: str) -> int:
        """Give every post of the workspace's ready posts files that has none yet an arrival
        number (in the order of their ``created_at``); returns the largest number of the
        workspace (0 when it has no post)."""
        ...

    def arrivals(self, workspace_id: str, *, after: int, upto: int) -> list[tuple[str, str]]:
        """``(source lower-cased, id)`` of the posts that arrived after ``after`` up to ``upto``
        (inclusive), in arrival order."""
        ...

    def alerted(self, workspace_id: str, agent_id: str, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of ``keys`` (``(source lower-cased, id)``) the agent has alerted for already."""
        ...

    def finish_run(self, workspace_id: str, agent_id: str, token: str, *, now: datetime, watermark: int,
                   alert: Message | None, alerted: Sequence[tuple[str, str]],
                   patterns: Sequence[PatternRecord]) -> bool:
        """Write a run's results in one transaction: the patterns, the alert (a stored
        assistant message of this agent, with the posts it covers), the new ``watermark``,
        ``last_run_at`` = ``now``, no ``last_error``, the next due time, and free the lease.
        False (and nothing written) when the lease is no longer ``token``'s."""
        ...

    def alerts(self, workspace_id: str, agent_id: str, *, limit: int,
               before: str | None = None) -> list[Message]:
        """The agent's alerts, newest first, at most ``limit``; with ``before`` (an alert id
        of this agent) only older ones. ``NotFoundError`` for an unknown agent or ``before``."""
        ...

    def alert(self, workspace_id: str, message_id: str) -> tuple[str, Message]:
        """``(agent_id, message)`` of one alert; ``NotFoundError`` otherwise."""
        ...

    def patterns(self, workspace_id: str, *, limit: int, offset: int = 0) -> list[PatternRecord]:
        """The workspace's patterns, newest first."""
        ...

    def total_patterns(self, workspace_id: str) -> int:
        """How many patterns the workspace has."""
        ...

    def pattern(self, workspace_id: str, pattern_id: str) -> PatternRecord:
        """One pattern; ``NotFoundError`` for an unknown id or one of another workspace."""
        ...


__all__ = ["AGENT_STATES", "AgentRecord", "PatternMember", "PatternRecord", "TrackingStore"]
