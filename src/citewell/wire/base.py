"""The two flavours every wire model is declared in: open and closed.

An open shape (``extra="allow"``) is one the canonical data may grow (docs/architecture.md
"Canonical data": names are the interface, fields may be added), so its JSON Schema says
``additionalProperties: true``; a closed shape (``extra="forbid"``) is an envelope or page
whose keys are fixed. The typed client's copies are always open
(:mod:`citewell.wire.open_copy`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

OffsetUnit = Literal["codepoint", "utf16", "utf8"]
ResourceStatus = Literal["processing", "ready", "failed", "superseded", "missing"]


class OpenModel(BaseModel):
    """A wire shape that keeps (and documents as allowed) keys it does not declare."""

    model_config = ConfigDict(extra="allow")


class ClosedModel(BaseModel):
    """A wire shape with exactly the keys it declares."""

    model_config = ConfigDict(extra="forbid")


__all__ = ["ClosedModel", "OffsetUnit", "OpenModel", "ResourceStatus"]
