"""The scheduler that runs due tracking agents inside ``citewell serve`` and ``citewell
agents work`` (issue 17, "Scheduling").

No second service: every process that serves or works on a store runs one
:class:`Scheduler` thread, which every ``tick_s`` seconds (``CITEWELL_AGENT_TICK_S``,
default 30) runs the agents due then (:meth:`AgentRunner.run_due`). The schedule lives in
the store (each agent's ``next_run_at``), so it survives restarts, and each run claims its
agent's lease in the store first, so several processes sharing one store run a due agent
once per tick (the others find the lease taken, or the agent no longer due).
"""

from __future__ import annotations

import logging
import os
import threading

from ..errors import StoreUnavailable
from .runner import AgentRunner

log = logging.getLogger("citewell.agents")

#: Default seconds between two looks at the schedule.
DEFAULT_TICK_S = 30.0


def tick_seconds() -> float:
    """``CITEWELL_AGENT_TICK_S`` (seconds, above 0; ``0`` or below turns the scheduler off:
    returns 0), default :data:`DEFAULT_TICK_S`. Raises ``ValueError`` for a value that is not a
    number."""
    raw = os.environ.get("CITEWELL_AGENT_TICK_S")
    if raw is None or not raw.strip():
        return DEFAULT_TICK_S
    value = float(raw)
    return value if value > 0 else 0.0


class Scheduler:
    """A daemon thread running ``runner.run_due()`` every ``tick_s`` seconds until :meth:`stop`."""

    def __init__(self, runner: AgentRunner, *, tick_s: float) -> None:
        self.runner = runner
        self.tick_s = tick_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (the first look is at once)."""
        if self._thread is None and self.tick_s > 0:
            self._thread = threading.Thread(target=self._loop, name="citewell-agents", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        away = False  # whether the last tick met the store unreachable (said once per outage)
        while not self._stop.is_set():
            try:
                for result in self.runner.run_due():
                    log.info("tracking agent %s ran: %d new mention(s), %d matched%s", result.agent_id,
                             result.new_mentions, result.matched,
                             f", error {result.error['code']}" if result.error else "")
                if away:
                    away = False
                    log.warning("tracking agents: the store is reachable again")
            except StoreUnavailable as exc:  # the database is away: the next tick tries again
                if not away:
                    away = True
                    log.warning("tracking agents: %s; trying again every %g s", exc, self.tick_s)
            except Exception:  # noqa: BLE001 - the scheduler outlives a bad tick (a store briefly locked …)
                log.exception("tracking agents: the tick failed")
            self._stop.wait(self.tick_s)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the run in progress (waits at most ``timeout`` seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


__all__ = ["DEFAULT_TICK_S", "Scheduler", "tick_seconds"]
