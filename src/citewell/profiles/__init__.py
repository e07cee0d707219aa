"""Wire profiles: each renders the canonical :class:`~citewell.models.Message` in the shape
of one seed (DESIGN.md "One engine, three wire profiles").

- :mod:`citewell.profiles.chats` — seed 000: ``text`` with ``[N]`` and flat ``references[]``;
- :mod:`citewell.profiles.sessions` — seed 001: ``content`` without markers,
  ``response.parts[]`` each with one ``source``, ``citations[]``, ``resource_ids``.

Serializers only (pure functions of a message); the HTTP routers come later.
"""

from __future__ import annotations

from . import chats, sessions

__all__ = ["chats", "sessions"]
