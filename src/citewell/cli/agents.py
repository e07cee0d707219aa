"""``citewell agents …``: tracking agents from the command line (issue 17), the same
operations as ``/v1/tracking_agents…`` (:class:`citewell.agents.Agents`).

``create QUERY [--name] [--filter K=V …] [--keyword W …] [--author A …] [--every SECONDS]
[--paused]``, ``list``, ``show ID``, ``update ID [...]``, ``pause ID``, ``resume ID``,
``delete ID``, ``run ID`` (run now: prints the alert, or says nothing matched on stderr),
``alerts ID [--limit N]`` (newest first), ``patterns``, ``pattern ID``, and ``work`` (a
worker process: the scheduler alone, without the HTTP API). ``--json`` prints one JSON
document (alerts in seed 000's shape). Errors as the other commands (exit 2 for bad usage,
1 otherwise).
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.console import Console

from ..agents import AgentRunner, Agents, Scheduler, tick_seconds
from ..agents.spec import agent_json
from ..engine import Engine
from ..models import Message
from ..profiles.chats import render_message
from ..settings import Settings
from ..store import open_store
from .options import BlobsOpt, ConfigOpt, StoreOpt, WorkspaceOpt

agents_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                         help="Tracking agents: watch the posts, alert with citations, find patterns.")
_err = Console(stderr=True, highlight=False, soft_wrap=True)

JsonOpt = typer.Option(False, "--json", help="Print one JSON document.")


def _agents(store: Optional[str], workspace: Optional[str], config: Optional[Path]) -> Agents:
    settings = Settings.resolve(store=store, workspace=workspace, config=config)
    return Agents(Engine(settings.store, workspace=settings.workspace))


def _out(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False))


def _line(agent: dict[str, Any]) -> str:
    last = agent["last_run_at"] or "never"
    error = f"  last error {agent['last_error']['code']}" if agent["last_error"] else ""
    return (f"{agent['id']}  {agent['state']:<6}  every {agent['interval_s']}s  alerts {agent['alerts']}  "
            f"last run {last}  next {agent['next_run_at']}  {agent['name']}{error}")


def _alert_text(message: Message) -> str:
    lines = [message.text, ""]
    for ref in message.references:
        if ref.type == "post":
            lines.append(f"[{ref.citation}] {ref.source}/{ref.id}")
        elif ref.citation is None:
            lines.append(f"{ref.type}: {ref.id}")
    return "\n".join(lines).rstrip() + "\n"


def _filters(filters: Optional[List[str]]) -> Optional[List[str]]:
    return list(filters) if filters else None


@agents_app.command("create")
def create(query: str = typer.Argument(..., help="The question or topic to watch."),
           name: Optional[str] = typer.Option(None, "--name", help="A name (default: the query)."),
           filters: Optional[List[str]] = typer.Option(None, "--filter", help="KEY=VALUE (repeatable): source, "
                                                       "resource_id (a dataset), created_at>=…, tickers …"),
           keywords: Optional[List[str]] = typer.Option(None, "--keyword", help="A word or cashtag a post must "
                                                        "contain (repeatable: any of them)."),
           authors: Optional[List[str]] = typer.Option(None, "--author", help="Only posts by this author "
                                                       "(repeatable)."),
           every: Optional[int] = typer.Option(None, "--every", help="Seconds between runs (default 3600)."),
           paused: bool = typer.Option(False, "--paused", help="Create it paused."),
           as_json: bool = JsonOpt, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt,
           config: Optional[Path] = ConfigOpt) -> None:
    """Create an agent (due at once: its first run looks at every post already ingested)."""
    agent = agent_json(_agents(store, workspace, config).create(
        query=query, name=name, filters=_filters(filters), keywords=keywords, authors=authors, interval_s=every,
        state="paused" if paused else None))
    _out(agent) if as_json else typer.echo(_line(agent))


@agents_app.command("list")
def list_(as_json: bool = JsonOpt, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt,
          config: Optional[Path] = ConfigOpt) -> None:
    """List the workspace's agents, oldest first."""
    agents = [agent_json(a) for a in _agents(store, workspace, config).list()]
    if as_json:
        _out(agents)
        return
    for agent in agents:
        typer.echo(_line(agent))
    if not agents:
        _err.print("no tracking agents", markup=False)


@agents_app.command("show")
def show(agent_id: str, as_json: bool = JsonOpt, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt,
         workspace: Optional[str] = WorkspaceOpt, config: Optional[Path] = ConfigOpt) -> None:
    """Show one agent."""
    agent = agent_json(_agents(store, workspace, config).get(agent_id))
    _out(agent) if as_json else typer.echo(_line(agent))


@agents_app.command("update")
def update(agent_id: str, query: Optional[str] = typer.Option(None, "--query", help="A new query."),
           name: Optional[str] = typer.Option(None, "--name"),
           filters: Optional[List[str]] = typer.Option(None, "--filter", help="New filters (replace the old)."),
           keywords: Optional[List[str]] = typer.Option(None, "--keyword", help="New keywords (replace the old)."),
           authors: Optional[List[str]] = typer.Option(None, "--author", help="New authors (replace the old)."),
           every: Optional[int] = typer.Option(None, "--every", help="New interval in seconds."),
           as_json: bool = JsonOpt, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt,
           config: Optional[Path] = ConfigOpt) -> None:
    """Change an agent's query, name, filters or schedule."""
    agent = agent_json(_agents(store, workspace, config).update(
        agent_id, query=query, name=name, filters=_filters(filters), keywords=keywords, authors=authors,
        interval_s=every))
    _out(agent) if as_json else typer.echo(_line(agent))


@agents_app.command("pause")
def pause(agent_id: str, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt,
          config: Optional[Path] = ConfigOpt) -> None:
    """Pause an agent (it does not run until resumed)."""
    typer.echo(_line(agent_json(_agents(store, workspace, config).update(agent_id, state="paused"))))


@agents_app.command("resume")
def resume(agent_id: str, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt,
           config: Optional[Path] = ConfigOpt) -> None:
    """Resume a paused agent."""
    typer.echo(_line(agent_json(_agents(store, workspace, config).update(agent_id, state="active"))))


@agents_app.command("delete")
def delete(agent_id: str, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt,
           config: Optional[Path] = ConfigOpt) -> None:
    """Delete an agent and its alerts."""
    _agents(store, workspace, config).delete(agent_id)
    _err.print(f"deleted {agent_id}", markup=False)


@agents_app.command("run")
def run(agent_id: str, as_json: bool = JsonOpt, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt,
        workspace: Optional[str] = WorkspaceOpt, config: Optional[Path] = ConfigOpt) -> None:
    """Run an agent now: print its alert (text with [N], then the cited posts)."""
    result = _agents(store, workspace, config).run(agent_id)
    if as_json:
        _out({"agent_id": agent_id, "ran": result.ran, "new_mentions": result.new_mentions,
              "matched": result.matched, "alert": render_message(result.alert) if result.alert else None,
              "patterns": [p.id for p in result.patterns], "error": result.error})
    elif result.alert is not None:
        typer.echo(_alert_text(result.alert), nl=False)
    _err.print(f"{result.new_mentions} new mention(s), {result.matched} matched"
               + (f"; error {result.error['code']}: {result.error['message']}" if result.error else ""),
               markup=False)
    if result.error:
        raise typer.Exit(1)


@agents_app.command("alerts")
def alerts(agent_id: str, limit: int = typer.Option(20, "--limit", min=1, max=200),
           as_json: bool = JsonOpt, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt,
           config: Optional[Path] = ConfigOpt) -> None:
    """An agent's alerts, newest first."""
    page, _ = _agents(store, workspace, config).alerts(agent_id, limit=limit)
    if as_json:
        _out([render_message(m) for m in page])
        return
    for message in page:
        typer.echo(f"— {message.id} ({message.created_at.isoformat(timespec='seconds')})")
        typer.echo(_alert_text(message))


@agents_app.command("patterns")
def patterns(limit: int = typer.Option(50, "--limit", min=1, max=200), as_json: bool = JsonOpt,
             store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt,
             config: Optional[Path] = ConfigOpt) -> None:
    """The workspace's patterns, newest first."""
    found = [p.to_dict(members=False) for p in _agents(store, workspace, config).patterns(limit=limit)]
    if as_json:
        _out(found)
        return
    for p in found:
        typer.echo(f"{p['id']}  {p['size']} mentions  {len(p['datasets'])} dataset(s)  {p['trend']['direction']}  "
                   f"{p['first_seen']} – {p['last_seen']}  {p['label']}")


@agents_app.command("pattern")
def pattern(pattern_id: str, store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt,
            config: Optional[Path] = ConfigOpt) -> None:
    """One pattern with its members (JSON; each member is a post_refs item)."""
    _out(_agents(store, workspace, config).pattern(pattern_id).to_dict())


@agents_app.command("work")
def work(tick: Optional[float] = typer.Option(None, "--tick", help="Seconds between looks at the schedule "
                                              "(default CITEWELL_AGENT_TICK_S, else 30)."),
         store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, config: Optional[Path] = ConfigOpt) -> None:
    """A worker: run due agents of every workspace until stopped (SIGINT/SIGTERM), beside or
    instead of citewell serve; the store's lease runs each due agent once across processes."""
    settings = Settings.resolve(store=store, config=config)
    opened = open_store(settings.store)
    tick_s = tick if tick is not None else tick_seconds()
    if tick_s <= 0:
        raise typer.BadParameter("the tick must be above 0 seconds", param_hint="--tick")
    scheduler = Scheduler(AgentRunner(opened, lambda ws: Engine.for_workspace_id(opened, ws)), tick_s=tick_s)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    _err.print(f"citewell agents worker on {settings.store_location} (a look every {tick_s:g} s)", markup=False)
    scheduler.start()
    done.wait()
    scheduler.stop()
    opened.close()


__all__ = ["agents_app"]
