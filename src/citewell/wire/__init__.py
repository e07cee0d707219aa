"""The wire model: every JSON shape the HTTP API answers with, written once.

One module per profile (docs/architecture.md "One engine, three wire profiles"):

- :mod:`.sessions` — seed 001: sessions, their messages, parts and citations;
- :mod:`.resources` — resources, pages of them, deletions;
- :mod:`.chats` — seed 000: chats, messages with ``[N]`` markers, mentions, datasets;
- :mod:`.analytics` — seeds 003/004: evidence references, presigned URLs;
- :mod:`.agents` — tracking agents and patterns;
- :mod:`.errors` — the error envelopes and the coded ``ErrorInfo``/``Notice``.

These classes are the server's response models: :mod:`citewell.web.schemas` and
:mod:`citewell.web.agent_schemas` re-export them, FastAPI validates answers and writes the
OpenAPI document with them. Where a shape equals a canonical model of
:mod:`citewell.models` (``Mention``, ``Notice``, ``ErrorInfo``) it subclasses that model
instead of repeating its fields. The typed client's models (:mod:`citewell.client.types`)
are thin open subclasses of these (:mod:`.open_copy`), and
:mod:`.drift` compares the three sides (``tests/test_wire_model.py``).
"""

from __future__ import annotations
