"""The routers: thin handlers over :class:`~citewell.Engine` and the profile serializers.

- :mod:`.sessions` — ``/v1/sessions…`` (seed 001);
- :mod:`.resources` — ``/v1/resources…`` (uploads, listing, content);
- :mod:`.references` — ``/v1/references`` and ``/v2/analytics/conversations/{id}/references``
  (seeds 003/004);
- :mod:`.chats` — ``POST /v1/ask`` and ``/v1/chats…`` (seed 000: turns that settle in the
  background, history);
- :mod:`.mentions` — ``POST /v1/mentions`` (seed 000: posts by reference or by query);
- :mod:`.entities` — ``/v1/datasets/{id}``, ``/v1/research_previews/{id}``,
  ``/v1/patterns/{id}`` (seed 000 entity references).
"""

from __future__ import annotations

from . import chats, entities, mentions, references, resources, sessions

ROUTERS = (sessions.router, resources.router, references.router, chats.router, mentions.router, entities.router)

__all__ = ["ROUTERS", "chats", "entities", "mentions", "references", "resources", "sessions"]
