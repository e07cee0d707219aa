"""Tracking agents and patterns (issue 17; chats envelope, bare success objects).

- ``POST /v1/tracking_agents`` (201), ``GET /v1/tracking_agents``,
  ``GET``/``PATCH``/``DELETE /v1/tracking_agents/{id}``: manage agents (an agent is an
  entity you manage, never a reference type);
- ``POST /v1/tracking_agents/{id}/run``: run now, under the same store lease as the
  scheduler (409 ``AGENT_BUSY`` while another process runs it, 409 ``AGENT_PAUSED`` for a
  paused agent);
- ``GET /v1/tracking_agents/{id}/messages``: its alerts, newest first, each a canonical
  assistant message in seed 000's shape (:func:`citewell.profiles.chats.render_message`:
  ``text`` with ``[N]``, post references obeying the slice rule, a ``pattern`` entity
  reference for a pattern spanning datasets); ``…/messages/{alert_id}`` one of them;
- ``GET /v1/patterns`` (newest first) and ``GET /v1/patterns/{id}`` (with its members,
  each a ``post_refs`` item of ``POST /v1/mentions``).

An id of another workspace answers exactly like an unknown id (404 ``NOT_FOUND``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from ...agents import Agents
from ...agents.spec import agent_json
from ...errors import NotFoundError
from ...models import Message
from ...profiles.chats import render_message
from ..agent_schemas import (AlertsPage, Deleted, PatternList, PatternOut, RunOut, TrackingAgentBody,
                             TrackingAgentList, TrackingAgentOut, TrackingAgentPatch)
from ..deps import Context, context
from ..schemas import ChatMessage, OffsetUnit
from .common import error_docs

router = APIRouter(tags=["tracking agents"])

OFFSETS = Query(None, description="Unit of every offset in the alerts: codepoint (default), utf16 or utf8.")


def alert_json(message: Message, offsets: str | None = None) -> dict[str, Any]:
    """An alert in seed 000's shape, plus ``tracking_agent_id`` and ``mention_count``."""
    return render_message(message, offsets=offsets)


@router.post("/v1/tracking_agents", status_code=201, response_model=TrackingAgentOut,
             responses=error_docs("chats"), summary="Create a tracking agent")
def create_agent(body: TrackingAgentBody, ctx: Context = Depends(context)) -> JSONResponse:
    """A new agent, due at once (its first run looks at every post already ingested). 400
    ``INVALID_REQUEST_BODY`` / ``INVALID_FILTER`` for a bad field."""
    agent = Agents(ctx.engine).create(**body.model_dump())
    return JSONResponse(agent_json(agent), status_code=201,
                        headers={"Location": f"/v1/tracking_agents/{agent.id}"})


@router.get("/v1/tracking_agents", response_model=TrackingAgentList, responses=error_docs("chats"),
            summary="List tracking agents")
def list_agents(ctx: Context = Depends(context)) -> dict[str, Any]:
    """``{tracking_agents: [...]}``, oldest first."""
    return {"tracking_agents": [agent_json(a) for a in Agents(ctx.engine).list()]}


@router.get("/v1/tracking_agents/{agent_id}", response_model=TrackingAgentOut, responses=error_docs("chats"),
            summary="Get a tracking agent")
def get_agent(agent_id: str, ctx: Context = Depends(context)) -> dict[str, Any]:
    """One agent: what it watches, its schedule and state (last run, last error)."""
    return agent_json(Agents(ctx.engine).get(agent_id))


@router.patch("/v1/tracking_agents/{agent_id}", response_model=TrackingAgentOut, responses=error_docs("chats"),
              summary="Change a tracking agent (pause, resume, query, filters, schedule)")
def update_agent(agent_id: str, body: TrackingAgentPatch, ctx: Context = Depends(context)) -> dict[str, Any]:
    """Change the fields given (``state: "paused"`` pauses, ``"active"`` resumes); the
    agent as stored afterwards. The body is an object (``{}`` changes nothing); an unknown
    field is 400 ``INVALID_REQUEST_BODY``."""
    changes = body.model_dump()
    return agent_json(Agents(ctx.engine).update(agent_id, **changes))


@router.delete("/v1/tracking_agents/{agent_id}", response_model=Deleted, responses=error_docs("chats"),
               summary="Delete a tracking agent")
def delete_agent(agent_id: str, ctx: Context = Depends(context)) -> dict[str, Any]:
    """Delete an agent and its alerts (its patterns stay): ``{id, deleted: true}``."""
    Agents(ctx.engine).delete(agent_id)
    return {"id": agent_id, "deleted": True}


@router.post("/v1/tracking_agents/{agent_id}/run", response_model=RunOut, responses=error_docs("chats", 409),
             summary="Run a tracking agent now")
def run_agent(agent_id: str, offsets: OffsetUnit | None = OFFSETS, ctx: Context = Depends(context)) -> dict[str, Any]:
    """Run now: look at the mentions ingested since the previous run, alert when any
    matches. 409 ``AGENT_BUSY`` while another process runs it, 409 ``AGENT_PAUSED`` when
    it is paused; a run that fails answers 200 with its ``error`` (also kept as the
    agent's ``last_error``)."""
    result = Agents(ctx.engine).run(agent_id)
    return {"agent_id": agent_id, "ran": result.ran, "new_mentions": result.new_mentions,
            "matched": result.matched,
            "alert": alert_json(result.alert, offsets) if result.alert is not None else None,
            "patterns": [p.id for p in result.patterns], "error": result.error}


@router.get("/v1/tracking_agents/{agent_id}/messages", response_model=AlertsPage, responses=error_docs("chats"),
            summary="List a tracking agent's alerts (newest first)")
def list_alerts(agent_id: str,
                limit: int = Query(50, ge=1, le=200, description="Page size, 1–200."),
                before: str | None = Query(None, description="An alert id of this agent (next_before of the "
                                                             "previous page): only older alerts."),
                offsets: OffsetUnit | None = OFFSETS, ctx: Context = Depends(context)) -> dict[str, Any]:
    """``{messages, next_before}``: the agent's alerts newest first, each a settled
    assistant message in seed 000's shape. 404 for an unknown agent or ``before``."""
    page, next_before = Agents(ctx.engine).alerts(agent_id, limit=limit, before=before or None)
    return {"messages": [alert_json(m, offsets) for m in page], "next_before": next_before}


@router.get("/v1/tracking_agents/{agent_id}/messages/{alert_id}", response_model=ChatMessage,
            responses=error_docs("chats"), summary="Get one alert of a tracking agent")
def get_alert(agent_id: str, alert_id: str, offsets: OffsetUnit | None = OFFSETS,
              ctx: Context = Depends(context)) -> dict[str, Any]:
    """One alert; 404 for an unknown agent or alert, or an alert of another agent."""
    owner, message = Agents(ctx.engine).alert(alert_id)
    if owner != agent_id:
        raise NotFoundError(f"no alert {alert_id} of tracking agent {agent_id}")
    return alert_json(message, offsets)


@router.get("/v1/patterns", response_model=PatternList, responses=error_docs("chats"), summary="List patterns")
def list_patterns(limit: int = Query(50, ge=1, le=200, description="Page size, 1–200."),
                  offset: int = Query(0, ge=0, le=1_000_000, description="Patterns to skip."),
                  ctx: Context = Depends(context)) -> dict[str, Any]:
    """``{patterns, total}``: the workspace's patterns newest first (without their members)."""
    agents = Agents(ctx.engine)
    return {"patterns": [p.to_dict(members=False) for p in agents.patterns(limit=limit, offset=offset)],
            "total": agents.total_patterns()}


@router.get("/v1/patterns/{pattern_id}", response_model=PatternOut, responses=error_docs("chats"),
            summary="Get a pattern with its members")
def get_pattern(pattern_id: str, ctx: Context = Depends(context)) -> dict[str, Any]:
    """A pattern: ``{id, label, size, datasets, sources, first_seen, last_seen, trend,
    members}``; each member ``{source, id, dataset_id, created_at}`` resolves through
    ``POST /v1/mentions`` ``post_refs``."""
    return Agents(ctx.engine).pattern(pattern_id).to_dict()


__all__ = ["alert_json", "router"]
