"""Tracking agents (issue 17): agents that watch a workspace's posts, write alerts with
post citations, find patterns of similar mentions, and the scheduler that runs them.

- :mod:`.spec` — what an agent watches, validated;
- :mod:`.matching` — which new mentions match;
- :mod:`.patterns` — groups of similar mentions (scikit-learn clustering of embeddings);
- :mod:`.alerts` — the alert message (cite stage, or the answering pipeline with a model);
- :mod:`.runner` — one run under the store's lease;
- :mod:`.scheduler` — the thread that runs due agents in ``serve`` and ``agents work``;
- :mod:`.service` — the operations the HTTP API, CLI and MCP server share.
"""

from .runner import AgentBusy, AgentPaused, AgentRunner, RunResult
from .scheduler import Scheduler, tick_seconds
from .service import Agents

__all__ = ["AgentBusy", "AgentPaused", "AgentRunner", "Agents", "RunResult", "Scheduler", "tick_seconds"]
