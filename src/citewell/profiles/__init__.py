"""Wire profiles: each renders the canonical :class:`~citewell.models.Message` in the shape
of one seed (docs/architecture.md "One engine, three wire profiles").

- :mod:`citewell.profiles.chats` — seed 000: ``text`` with ``[N]`` and flat ``references[]``;
- :mod:`citewell.profiles.sessions` — seed 001: ``content`` without markers,
  ``response.parts[]`` each with one ``source``, ``citations[]``, ``resource_ids``;
- :mod:`citewell.profiles.analytics` — seeds 003/004: a message's numbered references as
  RMSReferences (``citation_idx``, ``document_id``, typed ``metadata`` …).

Serializers only (pure functions of a message); the HTTP routers come later.
"""

from __future__ import annotations

from . import analytics, chats, sessions

__all__ = ["analytics", "chats", "sessions"]
