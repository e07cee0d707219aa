"""Resources: one ingested file version as the API shows it, pages of them, and the
``{"status": "ok", "data": …}`` envelopes of the resource routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import ClosedModel, OpenModel, ResourceStatus
from .errors import Notice


class ResourceOut(OpenModel):
    """A resource: the canonical Resource without ``paths`` (server file paths)."""

    id: str
    workspace_id: str
    title: str
    file_name: str
    kind: Literal["pdf", "transcript", "text", "post"] | None
    media_type: str | None
    sha256: str
    size_bytes: int
    blob_key: str | None
    status: ResourceStatus
    error: Notice | None
    warnings: list[Notice]
    metadata: dict[str, Any]
    custom_metadata: dict[str, Any] | None
    extractor_version: str | None
    chunk_count: int
    created_at: str
    updated_at: str


class ResourceData(ClosedModel):
    """``data`` of a one-resource answer."""

    resource: ResourceOut


class ResourceListData(ClosedModel):
    """``data`` of ``GET /v1/resources``: a page and the total."""

    resources: list[ResourceOut]
    total: int = Field(description="How many resources match (all pages).")
    limit: int
    offset: int


class DeletedData(ClosedModel):
    """``data`` of ``DELETE /v1/resources/{resource_id}``."""

    resource_id: str
    deleted: Literal[True]


class ResourceResponse(ClosedModel):
    """``{"status": "ok", "data": {"resource"}}``."""

    status: Literal["ok"]
    data: ResourceData


class ResourceListResponse(ClosedModel):
    """``{"status": "ok", "data": {"resources", "total", "limit", "offset"}}``."""

    status: Literal["ok"]
    data: ResourceListData


class DeletedResponse(ClosedModel):
    """``{"status": "ok", "data": {"resource_id", "deleted": true}}``."""

    status: Literal["ok"]
    data: DeletedData


__all__ = ["DeletedData", "DeletedResponse", "ResourceData", "ResourceListData", "ResourceListResponse",
           "ResourceOut", "ResourceResponse"]
