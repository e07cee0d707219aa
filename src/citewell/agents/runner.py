"""One run of a tracking agent, under the store's lease (issue 17, "Alerts", "Scheduling").

A run:

1. **claims** the agent (:meth:`TrackingStore.claim`: one atomic conditional update, so of
   several processes sharing the store exactly one runs it; a scheduled run also needs the
   agent active and due, a run-now an active agent);
2. numbers the workspace's posts not seen before (:meth:`TrackingStore.register_arrivals`)
   and reads those that arrived after the agent's watermark: the mentions ingested since
   its previous run (a posts file re-ingested after it grew brings only its new posts);
3. keeps those its watch matches (:mod:`citewell.agents.matching`), minus any it has
   alerted for already;
4. groups them into patterns (:mod:`citewell.agents.patterns`) and writes the alert
   (:mod:`citewell.agents.alerts`) when anything matched;
5. **finishes** in one transaction (:meth:`TrackingStore.finish_run`) that stores the
   patterns, the alert, the posts it covers and the new watermark, moves the schedule on
   and frees the lease, only while the lease is still this run's. A failure frees the
   lease with ``last_error`` ``{code, message}`` and leaves the watermark, so the next run
   looks at the same mentions again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ..answer.pipeline import failure
from ..errors import CitewellError
from ..models import Mention, Message
from ..store.records import worker_id
from ..store.base import MentionStore, Store
from ..store.tracking import AgentRecord, PatternRecord
from .alerts import alert_message
from .matching import allowed_datasets, matching
from .patterns import find_patterns
from .spec import Watch

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger("citewell.agents")

#: Seconds a run holds its lease (a process that dies mid-run frees the agent after this).
LEASE_S = 600.0


class AgentBusy(CitewellError):
    """The agent is being run by another run (409 ``AGENT_BUSY``)."""

    code = "AGENT_BUSY"


class AgentPaused(CitewellError):
    """A paused agent is never run (409 ``AGENT_PAUSED``)."""

    code = "AGENT_PAUSED"


@dataclass
class RunResult:
    """What one run did: ``ran`` (False when another process held the lease or it was lost),
    ``new_mentions`` looked at, ``matched``, the ``alert`` written (None: no match),
    ``patterns`` found, ``error`` ``{code, message}`` of a failed run."""

    agent_id: str
    ran: bool = False
    new_mentions: int = 0
    matched: int = 0
    alert: Message | None = None
    patterns: list[PatternRecord] = field(default_factory=list)
    error: dict[str, str] | None = None


def _copies(store: MentionStore, workspace_id: str, keys: list[tuple[str, str]], datasets: set[str]) -> list[Mention]:
    """One copy of each post ``keys`` names, of a dataset in ``datasets`` (the copy the store
    prefers when it is one of them, else the first of them holding it)."""
    preferred = store.mentions(workspace_id, keys)
    out: list[Mention] = []
    for key, mention in zip(keys, preferred):
        if mention is not None and mention.dataset_id in datasets:
            out.append(mention)
            continue
        for dataset in sorted(datasets):
            found = store.mentions(workspace_id, [key], dataset_ids=[dataset])[0]
            if found is not None:
                out.append(found)
                break
    return out


class AgentRunner:
    """Runs agents of any workspace of ``store``. ``engine_for(workspace_id)``: the engine
    (generator, embedder) a run of that workspace answers with; ``owner``: who holds the
    leases (default: this process, :func:`citewell.jobs.runner.worker_id`)."""

    def __init__(self, store: Store, engine_for: Callable[[str], "Engine"], *, owner: str | None = None,
                 lease_s: float = LEASE_S) -> None:
        self.store = store
        self.engine_for = engine_for
        self.owner = owner or worker_id()
        self.lease_s = lease_s

    def run_due(self, now: datetime | None = None) -> list[RunResult]:
        """Run every agent due at ``now`` that this process can claim (one tick)."""
        now = now or datetime.now(timezone.utc)
        results = []
        for workspace_id, agent_id in self.store.tracking().due_agents(now):
            result = self.run(workspace_id, agent_id, scheduled=True)
            if result.ran or result.error:
                results.append(result)
        return results

    def run(self, workspace_id: str, agent_id: str, *, scheduled: bool = False) -> RunResult:
        """Run one agent now (see the module docstring). ``scheduled``: only when active and
        due (else nothing happens and ``ran`` is False). A run-now raises ``NOT_FOUND`` for an
        unknown agent, :class:`AgentPaused` for a paused one and :class:`AgentBusy` when
        another run holds its lease."""
        tracking = self.store.tracking()
        if not scheduled and tracking.agent(workspace_id, agent_id).state != "active":
            raise AgentPaused(f"tracking agent {agent_id} is paused: resume it (state active) to run it")
        now = datetime.now(timezone.utc)
        token = tracking.claim(workspace_id, agent_id, owner=self.owner, now=now, lease_s=self.lease_s,
                               due_only=scheduled)
        result = RunResult(agent_id)
        if token is None:
            if scheduled:
                return result
            raise AgentBusy(f"tracking agent {agent_id} is running in another process; try again shortly")
        try:
            agent = tracking.agent(workspace_id, agent_id)
            if not scheduled and agent.state != "active":  # paused between the check and the claim
                tracking.release(workspace_id, agent_id, token, now=now, error=None)
                raise AgentPaused(f"tracking agent {agent_id} is paused: resume it (state active) to run it")
            self._run(agent, token, result)
        except AgentPaused:
            raise
        except Exception as exc:  # noqa: BLE001 - a run records its failure and frees the lease
            code, text = failure(exc)
            log.warning("tracking agent %s failed: %s: %s", agent_id, code, text,
                        exc_info=not isinstance(exc, CitewellError))
            result.error = {"code": code, "message": text}
            tracking.release(workspace_id, agent_id, token, now=datetime.now(timezone.utc), error=result.error)
        return result

    def _run(self, agent: AgentRecord, token: str, result: RunResult) -> None:
        tracking = self.store.tracking()
        workspace_id = agent.workspace_id
        upto = tracking.register_arrivals(workspace_id)
        keys = tracking.arrivals(workspace_id, after=agent.watermark, upto=upto)
        result.new_mentions = len(keys)
        watch = Watch.of(agent)
        mentions = _copies(self.store, workspace_id, keys, allowed_datasets(self.store, workspace_id, watch)) \
            if keys else []
        matched = matching(self.store, workspace_id, watch, mentions)
        done = tracking.alerted(workspace_id, agent.id, [(m.source.lower(), m.id) for m in matched])
        matched = [m for m in matched if (m.source.lower(), m.id) not in done]
        result.matched = len(matched)
        alert = None
        patterns: list[PatternRecord] = []
        if matched:
            engine = self.engine_for(workspace_id)
            try:
                embedder = engine.embedder if engine.dense_available() else None
            except CitewellError:
                embedder = None
            patterns = find_patterns(self.store, workspace_id, embedder, matched, agent_id=agent.id)
            passages = [p for p in (self.store.post_passage(workspace_id, m.source, m.id, dataset_id=m.dataset_id)
                                    for m in matched) if p is not None]
            alert = alert_message(engine, agent.query, matched, passages, patterns, agent_id=agent.id)
        finished = tracking.finish_run(workspace_id, agent.id, token, now=datetime.now(timezone.utc),
                                       watermark=upto, alert=alert,
                                       alerted=[(m.source.lower(), m.id) for m in matched], patterns=patterns)
        result.ran = finished
        if finished:
            result.alert, result.patterns = alert, patterns


__all__ = ["LEASE_S", "AgentBusy", "AgentPaused", "AgentRunner", "RunResult"]
