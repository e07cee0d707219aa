"""The tracking-agent operations of one workspace, shared by the HTTP API, the CLI and the
MCP server (:class:`Agents`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..errors import UsageError
from ..models import Message
from ..store.tracking import AgentRecord, PatternRecord
from .runner import AgentRunner, RunResult
from .spec import check_fields, followed_paths, merge_watch

if TYPE_CHECKING:
    from ..engine import Engine

#: Longest page of alerts or patterns.
MAX_PAGE = 200


class Agents:
    """Tracking agents of ``engine``'s workspace: create, list, read, change, delete, run
    now, and read their alerts and the workspace's patterns. Every id of another
    workspace answers ``NOT_FOUND`` like an unknown one."""

    def __init__(self, engine: "Engine") -> None:
        self.engine = engine
        self.workspace_id = engine.workspace_id
        self.tracking = engine.store.tracking()

    def create(self, *, query: str, name: str | None = None, filters: Any = None,
               keywords: Sequence[str] | None = None, authors: Sequence[str] | None = None,
               interval_s: int | None = None, state: str | None = None) -> AgentRecord:
        """A new agent, due at once (its first run looks at every post already there).
        Raises ``INVALID_REQUEST`` / ``INVALID_FILTER`` (:func:`~citewell.agents.spec.check_fields`)."""
        fields = check_fields({"query": query, "name": name, "filters": filters, "keywords": keywords,
                               "authors": authors, "interval_s": interval_s, "state": state}, creating=True)
        fields["filters"]["paths"] = followed_paths(self.engine.store, self.workspace_id, filters)
        return self.tracking.create_agent(self.workspace_id, **fields)

    def list(self) -> list[AgentRecord]:
        """The workspace's agents, oldest first."""
        return self.tracking.agents(self.workspace_id)

    def get(self, agent_id: str) -> AgentRecord:
        """One agent; ``NOT_FOUND`` otherwise."""
        return self.tracking.agent(self.workspace_id, agent_id)

    def update(self, agent_id: str, **changes: Any) -> AgentRecord:
        """Change any of ``name``, ``query``, ``filters``, ``keywords``, ``authors``,
        ``interval_s``, ``state`` (``paused`` pauses, ``active`` resumes); None leaves a
        field as it is. ``NOT_FOUND``, ``INVALID_REQUEST``, ``INVALID_FILTER``."""
        unknown = set(changes) - {"name", "query", "filters", "keywords", "authors", "interval_s", "state"}
        if unknown:
            raise UsageError(f"unknown field(s): {', '.join(sorted(unknown))}")
        agent = self.get(agent_id)
        fields = check_fields(changes, creating=False)
        if "filters" in fields:
            fields["filters"] = merge_watch(agent.filters, fields["filters"], changes)
            if changes.get("filters") is not None:  # the files of the datasets named now
                fields["filters"]["paths"] = followed_paths(self.engine.store, self.workspace_id,
                                                            fields["filters"]["filters"])
        return self.tracking.update_agent(self.workspace_id, agent_id, fields) if fields else agent

    def delete(self, agent_id: str) -> None:
        """Delete an agent and its alerts (patterns stay). ``NOT_FOUND`` otherwise."""
        self.tracking.delete_agent(self.workspace_id, agent_id)

    def run(self, agent_id: str) -> RunResult:
        """Run an agent now, under the same lease as the scheduler (``AGENT_PAUSED``,
        ``AGENT_BUSY``, ``NOT_FOUND``; a failure of the run itself is in ``error``)."""
        runner = AgentRunner(self.engine.store, lambda _: self.engine)
        return runner.run(self.workspace_id, agent_id)

    def alerts(self, agent_id: str, *, limit: int = 50, before: str | None = None) -> tuple[list[Message], str | None]:
        """A page of the agent's alerts, newest first (``before``: an alert id, only older
        ones), and the id to pass as ``before`` for the next page (None on the last).
        ``NOT_FOUND`` for an unknown agent or ``before``; ``INVALID_REQUEST`` for a limit
        outside 1–200."""
        if not 1 <= limit <= MAX_PAGE:
            raise UsageError(f"limit must be 1 to {MAX_PAGE}")
        page = self.tracking.alerts(self.workspace_id, agent_id, limit=limit + 1, before=before)
        more = len(page) > limit
        page = page[:limit]
        return page, (page[-1].id if more else None)

    def alert(self, message_id: str) -> tuple[str, Message]:
        """``(agent_id, alert)`` by the alert's id; ``NOT_FOUND`` otherwise."""
        return self.tracking.alert(self.workspace_id, message_id)

    def patterns(self, *, limit: int = 50, offset: int = 0) -> list[PatternRecord]:
        """The workspace's patterns, newest first."""
        if not 1 <= limit <= MAX_PAGE or offset < 0:
            raise UsageError(f"limit must be 1 to {MAX_PAGE} and offset not negative")
        return self.tracking.patterns(self.workspace_id, limit=limit, offset=offset)

    def total_patterns(self) -> int:
        """How many patterns the workspace has."""
        return self.tracking.total_patterns(self.workspace_id)

    def pattern(self, pattern_id: str) -> PatternRecord:
        """One pattern; ``NOT_FOUND`` otherwise."""
        return self.tracking.pattern(self.workspace_id, pattern_id)


__all__ = ["MAX_PAGE", "Agents"]
