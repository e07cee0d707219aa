"""The routers: thin handlers over :class:`~citewell.Engine` and the profile serializers.

- :mod:`.sessions` — ``/v1/sessions…`` (seed 001);
- :mod:`.resources` — ``/v1/resources…`` (uploads, listing, content);
- :mod:`.references` — ``/v1/references`` and ``/v2/analytics/conversations/{id}/references``
  (seeds 003/004).
"""

from __future__ import annotations

from . import references, resources, sessions

ROUTERS = (sessions.router, resources.router, references.router)

__all__ = ["ROUTERS", "references", "resources", "sessions"]
