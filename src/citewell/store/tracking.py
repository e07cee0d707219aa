"""What the store keeps for tracking agents (issue 17): agents, their alerts, post
arrivals, patterns and the run lease. The interface is :class:`TrackingStore`; a store
hands out its implementation with ``Store.tracking()`` (:class:`TrackingAccess`, the
tracking concern of :class:`~citewell.store.base.Store`).

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

:class:`SQLTracking` implements it in the SQL both databases share (no dialect piece:
``ON CONFLICT DO NOTHING`` and a conditional ``UPDATE`` mean the same on both); the store
classes reach it through the :class:`Tracking` mixin.
"""

from __future__ import annotations

import json
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from ..errors import NotFoundError
from ..models import Message
from .records import iso_utc

if TYPE_CHECKING:
    from .sqlbase import SQLBase

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

#: keys read per query (under SQLite's default limit of bound parameters)
_BATCH = 500


def _iso(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat()


def _dt(value: str | None) -> datetime | None:
    if not value:
        return None
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def next_due(previous: datetime, interval_s: int, now: datetime) -> datetime:
    """The next scheduled run after a run at ``now`` of an agent that was due at
    ``previous``: ``previous`` itself when it is still ahead (a run-now between two ticks
    keeps the schedule), else the first ``previous + k * interval_s`` after ``now`` (ticks
    missed while no process ran are skipped, never made up one by one)."""
    if previous > now:
        return previous
    step = max(1, int(interval_s))
    missed = int((now - previous).total_seconds() // step) + 1
    return previous + timedelta(seconds=missed * step)


class SQLTracking:
    """:class:`TrackingStore` in SQL both databases share, on a store's connection hooks
    (``_conn``, ``_write`` of :class:`~citewell.store.sqlbase.SQLBase`): the lease is a
    conditional ``UPDATE`` of the agent's row, which the database serialises between
    processes (SQLite: one writer at a time; PostgreSQL: the row lock of the update)."""

    def __init__(self, store: SQLBase) -> None:
        self._store = store

    # -- agents ------------------------------------------------------------------------
    @staticmethod
    def _agent(row: Any, alerts: int = 0) -> AgentRecord:
        return AgentRecord(
            id=row["id"], workspace_id=row["workspace_id"], name=row["name"], query=row["query"],
            filters=json.loads(row["filters"]), interval_s=int(row["interval_s"]), state=row["state"],
            created_at=_dt(row["created_at"]), updated_at=_dt(row["updated_at"]),  # type: ignore[arg-type]
            next_run_at=_dt(row["next_run_at"]), last_run_at=_dt(row["last_run_at"]),  # type: ignore[arg-type]
            last_error=json.loads(row["last_error"]) if row["last_error"] else None,
            watermark=int(row["watermark"]), runs=int(row["runs"]), alerts=alerts,
            lease_owner=row["lease_owner"], lease_until=_dt(row["lease_until"]))

    def _alert_count(self, conn: Any, agent_id: str) -> int:
        return int(conn.execute("SELECT COUNT(*) FROM agent_alerts WHERE agent_id = ?", (agent_id,)).fetchone()[0])

    def create_agent(self, workspace_id: str, *, name: str, query: str, filters: dict[str, Any],
                     interval_s: int, state: str) -> AgentRecord:
        """Insert an agent, due at once (see :meth:`TrackingStore.create_agent`)."""
        now = _iso(datetime.now(timezone.utc))
        agent_id = str(uuid.uuid4())
        with self._store._write() as conn:
            conn.execute("INSERT INTO tracking_agents (id, workspace_id, name, query, filters, interval_s, state, "
                         "created_at, updated_at, next_run_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                         (agent_id, workspace_id, name, query, json.dumps(filters), int(interval_s), state,
                          now, now, now))
        return self.agent(workspace_id, agent_id)

    def agent(self, workspace_id: str, agent_id: str) -> AgentRecord:
        """One agent of the workspace; ``NotFoundError`` otherwise."""
        conn = self._store._conn()
        row = conn.execute("SELECT * FROM tracking_agents WHERE workspace_id = ? AND id = ?",
                           (workspace_id, agent_id)).fetchone()
        if row is None:
            raise NotFoundError(f"no tracking agent {agent_id}")
        return self._agent(row, self._alert_count(conn, agent_id))

    def agents(self, workspace_id: str) -> list[AgentRecord]:
        """The workspace's agents, oldest first."""
        conn = self._store._conn()
        rows = conn.execute("SELECT a.*, (SELECT COUNT(*) FROM agent_alerts x WHERE x.agent_id = a.id) AS n "
                            "FROM tracking_agents a WHERE a.workspace_id = ? ORDER BY a.created_at, a.id",
                            (workspace_id,)).fetchall()
        return [self._agent(row, int(row["n"])) for row in rows]

    def update_agent(self, workspace_id: str, agent_id: str, changes: dict[str, Any]) -> AgentRecord:
        """Apply ``changes`` (see :meth:`TrackingStore.update_agent`)."""
        columns = {k: v for k, v in changes.items() if k in ("name", "query", "filters", "interval_s", "state")}
        with self._store._write() as conn:
            row = conn.execute("SELECT * FROM tracking_agents WHERE workspace_id = ? AND id = ?",
                               (workspace_id, agent_id)).fetchone()
            if row is None:
                raise NotFoundError(f"no tracking agent {agent_id}")
            sets = {k: (json.dumps(v) if k == "filters" else v) for k, v in columns.items()}
            if "interval_s" in columns and int(columns["interval_s"]) != int(row["interval_s"]):
                base = _dt(row["last_run_at"]) or _dt(row["created_at"])
                sets["next_run_at"] = _iso(base + timedelta(seconds=int(columns["interval_s"])))  # type: ignore[operator]
            sets["updated_at"] = _iso(datetime.now(timezone.utc))
            conn.execute(f"UPDATE tracking_agents SET {', '.join(f'{k} = ?' for k in sets)} WHERE id = ?",
                         (*sets.values(), agent_id))
        return self.agent(workspace_id, agent_id)

    def delete_agent(self, workspace_id: str, agent_id: str) -> None:
        """Delete the agent and its alerts (see :meth:`TrackingStore.delete_agent`)."""
        with self._store._write() as conn:
            cur = conn.execute("DELETE FROM tracking_agents WHERE workspace_id = ? AND id = ?",
                               (workspace_id, agent_id))
            if cur.rowcount == 0:
                raise NotFoundError(f"no tracking agent {agent_id}")
            conn.execute("DELETE FROM agent_alerts WHERE agent_id = ?", (agent_id,))
            conn.execute("DELETE FROM agent_alerted_posts WHERE agent_id = ?", (agent_id,))

    # -- scheduling and the lease --------------------------------------------------------
    def due_agents(self, now: datetime) -> list[tuple[str, str]]:
        """Active agents due at ``now`` with a free or expired lease, longest overdue first."""
        stamp = _iso(now)
        rows = self._store._conn().execute(
            "SELECT workspace_id, id FROM tracking_agents WHERE state = 'active' AND next_run_at <= ? AND "
            "(lease_until IS NULL OR lease_until < ?) ORDER BY next_run_at, id", (stamp, stamp)).fetchall()
        return [(row["workspace_id"], row["id"]) for row in rows]

    def claim(self, workspace_id: str, agent_id: str, *, owner: str, now: datetime, lease_s: float,
              due_only: bool) -> str | None:
        """One conditional update (see :meth:`TrackingStore.claim`)."""
        token = secrets.token_hex(16)
        stamp = _iso(now)
        sql = ("UPDATE tracking_agents SET lease_owner = ?, lease_token = ?, lease_until = ? WHERE workspace_id = ? "
               "AND id = ? AND (lease_until IS NULL OR lease_until < ?)")
        args: list[Any] = [owner, token, _iso(now + timedelta(seconds=lease_s)), workspace_id, agent_id, stamp]
        if due_only:
            sql += " AND state = 'active' AND next_run_at <= ?"
            args.append(stamp)
        with self._store._write() as conn:
            won = conn.execute(sql, args).rowcount == 1
        return token if won else None

    def _end(self, conn: Any, agent_id: str, token: str, now: datetime,
             error: dict[str, Any] | None, watermark: int | None) -> bool:
        row = conn.execute("SELECT * FROM tracking_agents WHERE id = ? AND lease_token = ?",
                           (agent_id, token)).fetchone()
        if row is None:
            return False
        due = next_due(_dt(row["next_run_at"]), int(row["interval_s"]), now)  # type: ignore[arg-type]
        conn.execute("UPDATE tracking_agents SET last_run_at = ?, last_error = ?, next_run_at = ?, runs = runs + 1, "
                     "watermark = COALESCE(?, watermark), lease_owner = NULL, lease_token = NULL, "
                     "lease_until = NULL WHERE id = ?",
                     (_iso(now), json.dumps(error) if error else None, _iso(due), watermark, agent_id))
        return True

    def release(self, workspace_id: str, agent_id: str, token: str, *, now: datetime,
                error: dict[str, Any] | None) -> bool:
        """End a run without results (see :meth:`TrackingStore.release`)."""
        with self._store._write() as conn:
            return self._end(conn, agent_id, token, now, error, None)

    # -- arrivals ----------------------------------------------------------------------
    def register_arrivals(self, workspace_id: str) -> int:
        """Number the workspace's posts not numbered yet (see :meth:`TrackingStore.register_arrivals`)."""
        with self._store._write() as conn:
            conn.execute(
                "INSERT INTO post_arrivals (workspace_id, source_key, post_id, arrived_at) "
                "SELECT m.workspace_id, m.source_key, m.id, ? FROM mentions m JOIN resources r ON r.id = m.dataset_id "
                "WHERE m.workspace_id = ? AND r.status = 'ready' AND NOT EXISTS (SELECT 1 FROM post_arrivals a "
                "WHERE a.workspace_id = m.workspace_id AND a.source_key = m.source_key AND a.post_id = m.id) "
                "GROUP BY m.workspace_id, m.source_key, m.id ORDER BY MIN(COALESCE(m.created_at, '')), m.source_key, m.id "
                "ON CONFLICT DO NOTHING",
                (_iso(datetime.now(timezone.utc)), workspace_id))
            row = conn.execute("SELECT MAX(seq) FROM post_arrivals WHERE workspace_id = ?", (workspace_id,)).fetchone()
        return int(row[0] or 0)

    def arrivals(self, workspace_id: str, *, after: int, upto: int) -> list[tuple[str, str]]:
        """Posts that arrived in ``(after, upto]``, in arrival order."""
        rows = self._store._conn().execute(
            "SELECT source_key, post_id FROM post_arrivals WHERE workspace_id = ? AND seq > ? AND seq <= ? "
            "ORDER BY seq", (workspace_id, after, upto)).fetchall()
        return [(row["source_key"], row["post_id"]) for row in rows]

    def alerted(self, workspace_id: str, agent_id: str, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of ``keys`` the agent alerted for already (one query per
        :data:`_BATCH` keys, not one per key: on PostgreSQL each is a round trip)."""
        conn = self._store._conn()
        wanted = set(keys)
        found: set[tuple[str, str]] = set()
        ids = sorted({post_id for _, post_id in wanted})
        for start in range(0, len(ids), _BATCH):
            batch = ids[start:start + _BATCH]
            rows = conn.execute("SELECT source_key, post_id FROM agent_alerted_posts WHERE agent_id = ? AND post_id IN "
                                f"({','.join('?' * len(batch))})", (agent_id, *batch)).fetchall()
            found.update(key for key in ((row[0], row[1]) for row in rows) if key in wanted)
        return found

    # -- a run's results -----------------------------------------------------------------
    def finish_run(self, workspace_id: str, agent_id: str, token: str, *, now: datetime, watermark: int,
                   alert: Message | None, alerted: Sequence[tuple[str, str]],
                   patterns: Sequence[PatternRecord]) -> bool:
        """One transaction, only while the lease is ``token``'s (see :meth:`TrackingStore.finish_run`)."""
        with self._store._write() as conn:
            if conn.execute("SELECT 1 FROM tracking_agents WHERE id = ? AND workspace_id = ? AND lease_token = ?",
                            (agent_id, workspace_id, token)).fetchone() is None:
                return False
            seq = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM patterns WHERE workspace_id = ?",
                                   (workspace_id,)).fetchone()[0])
            for pattern in patterns:
                seq += 1
                conn.execute("INSERT INTO patterns VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                             (pattern.id, workspace_id, pattern.agent_id, pattern.label,
                              json.dumps([m.to_dict() for m in pattern.members]), json.dumps(list(pattern.datasets)),
                              json.dumps(list(pattern.sources)), pattern.first_seen, pattern.last_seen,
                              json.dumps(pattern.trend), _iso(pattern.created_at or now), seq))
            if alert is not None:
                number = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM agent_alerts WHERE agent_id = ?",
                                          (agent_id,)).fetchone()[0]) + 1
                conn.execute("INSERT INTO agent_alerts VALUES (?,?,?,?,?,?)",
                             (alert.id, workspace_id, agent_id, number, alert.model_dump_json(),
                              _iso(alert.created_at)))
                conn.executemany("INSERT INTO agent_alerted_posts VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
                                 [(agent_id, s, p, alert.id) for s, p in alerted])
            return self._end(conn, agent_id, token, now, None, watermark)

    def alerts(self, workspace_id: str, agent_id: str, *, limit: int, before: str | None = None) -> list[Message]:
        """The agent's alerts, newest first (see :meth:`TrackingStore.alerts`)."""
        self.agent(workspace_id, agent_id)
        conn = self._store._conn()
        sql = "SELECT payload FROM agent_alerts WHERE workspace_id = ? AND agent_id = ?"
        args: list[Any] = [workspace_id, agent_id]
        if before is not None:
            row = conn.execute("SELECT seq FROM agent_alerts WHERE agent_id = ? AND id = ?",
                               (agent_id, before)).fetchone()
            if row is None:
                raise NotFoundError(f"no alert {before} of tracking agent {agent_id}")
            sql += " AND seq < ?"
            args.append(row["seq"])
        rows = conn.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, limit)).fetchall()
        return [Message.model_validate_json(row["payload"]) for row in rows]

    def alert(self, workspace_id: str, message_id: str) -> tuple[str, Message]:
        """One alert by id (see :meth:`TrackingStore.alert`)."""
        row = self._store._conn().execute("SELECT agent_id, payload FROM agent_alerts WHERE workspace_id = ? AND id = ?",
                                          (workspace_id, message_id)).fetchone()
        if row is None:
            raise NotFoundError(f"no alert {message_id}")
        return row["agent_id"], Message.model_validate_json(row["payload"])

    # -- patterns ----------------------------------------------------------------------
    @staticmethod
    def _pattern(row: Any) -> PatternRecord:
        return PatternRecord(
            id=row["id"], workspace_id=row["workspace_id"], agent_id=row["agent_id"], label=row["label"],
            members=tuple(PatternMember(**m) for m in json.loads(row["members"])),
            datasets=tuple(json.loads(row["datasets"])), sources=tuple(json.loads(row["sources"])),
            first_seen=row["first_seen"], last_seen=row["last_seen"], trend=json.loads(row["trend"]),
            created_at=_dt(row["created_at"]))

    def patterns(self, workspace_id: str, *, limit: int, offset: int = 0) -> list[PatternRecord]:
        """The workspace's patterns, newest first."""
        rows = self._store._conn().execute("SELECT * FROM patterns WHERE workspace_id = ? ORDER BY seq DESC "
                                           "LIMIT ? OFFSET ?", (workspace_id, limit, offset)).fetchall()
        return [self._pattern(row) for row in rows]

    def total_patterns(self, workspace_id: str) -> int:
        """How many patterns the workspace has."""
        return int(self._store._conn().execute("SELECT COUNT(*) FROM patterns WHERE workspace_id = ?",
                                               (workspace_id,)).fetchone()[0])

    def pattern(self, workspace_id: str, pattern_id: str) -> PatternRecord:
        """One pattern of the workspace; ``NotFoundError`` otherwise."""
        row = self._store._conn().execute("SELECT * FROM patterns WHERE workspace_id = ? AND id = ?",
                                          (workspace_id, pattern_id)).fetchone()
        if row is None:
            raise NotFoundError(f"no pattern {pattern_id}")
        return self._pattern(row)


class TrackingAccess(Protocol):
    """The tracking concern of :class:`~citewell.store.base.Store`: :meth:`tracking` hands
    out the :class:`TrackingStore` (agents, alerts, post arrivals, patterns, run leases)
    on the store's connections."""

    def tracking(self) -> TrackingStore:
        """Tracking agents, their alerts, post arrivals, patterns and run leases
        (:class:`citewell.store.tracking.TrackingStore`, issue 17) on this store."""
        ...


class Tracking:
    """The tracking concern of a store (a mixin of the store classes): :meth:`tracking`."""

    def tracking(self) -> SQLTracking:
        """Tracking agents, alerts, post arrivals and patterns (schema v10) on this
        store's connections."""
        return SQLTracking(self)  # type: ignore[arg-type]


__all__ = ["AGENT_STATES", "AgentRecord", "PatternMember", "PatternRecord", "SQLTracking", "Tracking",
           "TrackingAccess", "TrackingStore", "next_due"]
