"""``citewell jobs``: the jobs in the store (:mod:`citewell.store.jobs`), for operators.

``citewell jobs list [--state S …] [--kind K …] [--limit N] [--json]`` shows jobs, oldest
first: id, kind, workspace, state, attempts of the maximum and, for a failed one (the
dead letter), its error code and message. ``citewell jobs retry ID`` queues a
dead-lettered job again with all its attempts, once what failed it is fixed.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.console import Console

from ..errors import UsageError
from ..store.jobs import JOB_STATES, JobRecord
from .options import BlobsOpt, ConfigOpt, StoreOpt, opened_store
from .render import safe

jobs_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                       help="Jobs in the store: extraction, embedding, questions; retry dead letters.")
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


def job_row(job: JobRecord, workspace: str) -> dict[str, Any]:
    """One job as ``citewell jobs list --json`` prints it (times ISO 8601 UTC; no payload:
    it may hold question text)."""
    return {"id": job.id, "kind": job.kind, "workspace": workspace, "organization_id": job.workspace_id,
            "state": job.state, "attempts": job.attempts, "max_attempts": job.max_attempts, "error": job.error,
            "lease_owner": job.lease_owner, "created_at": _time(job.created_at), "updated_at": _time(job.updated_at)}


@jobs_app.command("list")
def list_jobs(
    state: Optional[List[str]] = typer.Option(None, "--state", help="Only these states (repeatable): "
                                              + ", ".join(JOB_STATES) + " (failed: the dead letters)."),
    kind: Optional[List[str]] = typer.Option(None, "--kind", help="Only these kinds (repeatable): extract, "
                                             "reindex, embed, turn."),
    limit: int = typer.Option(100, "--limit", min=1, max=10_000, help="At most this many jobs."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON array."),
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """List jobs, oldest first, with the error of each failed one."""
    states = [s.strip().lower() for s in state or []]
    bad = [s for s in states if s not in JOB_STATES]
    if bad:
        raise UsageError(f"--state {', '.join(bad)}: expected one of {', '.join(JOB_STATES)}")
    with opened_store(store, config) as opened:
        names: dict[str, str] = {}
        rows = []
        for job in opened.jobs(states=states or None, kinds=kind or None, limit=limit):
            if job.workspace_id not in names:
                try:
                    names[job.workspace_id] = opened.workspace_name(job.workspace_id)
                except Exception:  # noqa: BLE001 - a workspace deleted since
                    names[job.workspace_id] = "?"
            rows.append(job_row(job, names[job.workspace_id]))
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    for row in rows:
        error = f"  {row['error']['code']}: {safe(row['error']['message'], one_line=True)}" if row["error"] else ""
        typer.echo(f"{row['id']}  {row['kind']:<8} {row['state']:<8} {row['attempts']}/{row['max_attempts']}  "
                   f"{safe(row['workspace'], one_line=True)}  {row['updated_at']}{error}")
    if not rows:
        _err.print("no jobs" + (f" in state {', '.join(states)}" if states else ""), markup=False)


@jobs_app.command("retry")
def retry(
    job_id: str = typer.Argument(..., help="The id of a failed job (see citewell jobs list --state failed)."),
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Queue a dead-lettered job again, with all its attempts."""
    with opened_store(store, config) as opened:
        job = opened.requeue_job(job_id)
    _err.print(f"{job.kind} job {job.id} queued again", markup=False)


__all__ = ["jobs_app", "job_row"]
