"""The routers: thin handlers over :class:`~citewell.Engine` and the profile serializers.

- :mod:`.sessions` — ``/v1/sessions…`` (seed 001);
- :mod:`.resources` — ``/v1/resources…`` (uploads, listing, content);
- :mod:`.references` — ``/v1/references`` and ``/v2/analytics/conversations/{id}/references``
  (seeds 003/004);
- :mod:`.chats` — ``POST /v1/ask`` and ``/v1/chats…`` (seed 000: turns that settle in the
  background, history);
- :mod:`.mentions` — ``POST /v1/mentions`` (seed 000: posts by reference or by query);
- :mod:`.entities` — ``/v1/datasets/{id}``, ``/v1/research_previews/{id}`` (seed 000
  entity references);
- :mod:`.agents` — ``/v1/tracking_agents…`` (agents, run now, alerts) and ``/v1/patterns…``
  (issue 17);
- :mod:`.analytics` — ``POST``/``GET /v2/analytics/sse`` (seeds 003/004: answers streamed as
  Server-Sent Events, resumable with ``Last-Event-ID``);
- :mod:`.files` — ``GET /v1/presigned_url`` and the presigned download
  ``/v1/presigned_url/{document_id}`` (seed 004; signed, no key);
- :mod:`.workspace` — ``GET /v1/workspace`` (whom a key acts for: the web app's sign-in);
- :mod:`.viewer` — ``GET /rms/viewer`` and its page images ``/rms/viewer/page`` (seeds
  003/004; a key or a signed ``viewer_url``).
"""

from __future__ import annotations

from . import agents, analytics, chats, entities, files, mentions, references, resources, sessions, viewer, workspace

ROUTERS = (sessions.router, resources.router, references.router, chats.router, mentions.router, entities.router,
           analytics.router, files.router, viewer.router, agents.router, workspace.router)

__all__ = ["ROUTERS", "agents", "analytics", "chats", "entities", "files", "mentions", "references", "resources", "sessions",
           "viewer", "workspace"]
