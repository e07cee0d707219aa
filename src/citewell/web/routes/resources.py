"""Resources: ``/v1/resources…`` (sessions envelope).

An upload answers 202 at once with the resource (status ``processing``); the app's
:class:`~citewell.jobs.workers.UploadWorker` extracts it, and the resource becomes ``ready``
or ``failed`` with its coded error (``UNSUPPORTED_FILE``, ``EMPTY_FILE``, ``PDF_CORRUPT`` …).
A resource renders as the canonical Resource JSON without ``paths``.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool

from ...errors import NotFoundError
from ...models import Resource
from .. import rules
from ..deps import Context, context
from ..errors import ApiError
from ..schemas import DeletedResponse, ResourceListResponse, ResourceResponse, ResourceStatus
from ..uploads import read_upload
from ..viewer_render import plain_page
from .viewer import PNGResponse
from .common import error_docs, ok

router = APIRouter(tags=["resources"])

_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "format": "binary",
                                 "description": "The file (PDF, VTT/SRT transcript, text/markdown, posts JSONL)."},
                        "metadata": {**rules.upload_metadata(),
                                     "description": "Optional JSON object (this part's content type is JSON): "
                                                    "title, custom_metadata and the typed fields (fiscal_year, "
                                                    "fiscal_quarter, tickers, calendar_date, document_category …); "
                                                    "other keys are custom metadata."},
                    },
                    "required": ["file"],
                },
                "encoding": {"metadata": {"contentType": "application/json"}},
            },
        },
    },
}


def resource_json(resource: Resource) -> dict[str, Any]:
    """The canonical Resource JSON without ``paths`` (server file paths)."""
    return resource.model_dump(mode="json", exclude={"paths"})


def _metadata(text: str | None) -> dict[str, Any] | None:
    if text is None or not text.strip():
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser goes
        raise ApiError("metadata is not valid JSON", code="INVALID_REQUEST_BODY") from None
    if not isinstance(value, dict):
        raise ApiError("metadata must be a JSON object", code="INVALID_REQUEST_BODY")
    return value


@router.post("/v1/resources", status_code=202, response_model=ResourceResponse,
             responses=error_docs("sessions", 413), openapi_extra=_UPLOAD_BODY, summary="Upload a file")
async def upload_resource(request: Request, ctx: Context = Depends(context)) -> dict[str, Any]:
    """Upload a file (multipart part ``file``, optional ``metadata`` JSON text): 202 with
    the resource (status ``processing``, or the existing resource of identical bytes);
    extraction runs in the background. 400 ``FILE_MISSING`` without a file part, 400
    ``INVALID_REQUEST_BODY`` for bad metadata, 413 ``FILE_TOO_LARGE`` over the cap."""
    upload = await read_upload(request, request.app.state.max_upload_bytes, ctx.engine.spool)
    try:
        if upload.path is None:
            raise ApiError("the request has no file part (send the file as multipart part 'file')",
                           code="FILE_MISSING")
        if not upload.file_name or not upload.file_name.strip():
            raise ApiError("part 'file' must be a file with a file name", code="INVALID_REQUEST_BODY")
        metadata = _metadata(upload.metadata)
    except BaseException:
        if upload.path is not None:
            upload.path.unlink(missing_ok=True)
        raise
    # the spooled file is handed over: staged, or removed, whatever happens
    resource = await run_in_threadpool(ctx.engine.upload, upload.file_name, upload.path, metadata=metadata)
    if resource.status == "processing":
        request.app.state.worker.submit(resource.workspace_id, resource.id)
    return ok({"resource": resource_json(resource)})


@router.get("/v1/resources", response_model=ResourceListResponse, responses=error_docs("sessions"),
            summary="List resources")
def list_resources(limit: int = Query(50, ge=1, le=1000, description="Page size."),
                   offset: int = Query(0, ge=0, le=1 << 53, description="Resources to skip."),
                   status: list[ResourceStatus] | None = Query(None, description="Only these statuses (repeatable)."),
                   ctx: Context = Depends(context)) -> dict[str, Any]:
    """A page of the workspace's resources, oldest first, with the total count."""
    statuses = list(dict.fromkeys(status)) if status else None
    items = ctx.engine.resources(statuses=statuses, limit=limit, offset=offset)
    total = ctx.engine.count_resources_total(statuses=statuses)
    return ok({"resources": [resource_json(r) for r in items], "total": total, "limit": limit, "offset": offset})


@router.get("/v1/resources/{resource_id}", response_model=ResourceResponse, responses=error_docs("sessions"),
            summary="Get a resource")
def get_resource(resource_id: str, ctx: Context = Depends(context)) -> dict[str, Any]:
    """One resource of the workspace (poll it after an upload until it is not processing)."""
    return ok({"resource": resource_json(ctx.engine.resource(resource_id))})


@router.delete("/v1/resources/{resource_id}", response_model=DeletedResponse, responses=error_docs("sessions"),
               summary="Delete a resource")
def delete_resource(resource_id: str, ctx: Context = Depends(context)) -> dict[str, Any]:
    """Delete a resource with its passages (and its bytes, unless another resource shares
    them). Stored answers keep their citations."""
    ctx.engine.delete_resource(resource_id)
    return ok({"resource_id": resource_id, "deleted": True})


@router.get("/v1/resources/{resource_id}/content", response_class=FileResponse, summary="Download a resource",
            responses={200: {"description": "The original bytes, with their media type and file name.",
                             "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}},
                       **error_docs("sessions")})
def resource_content(resource_id: str, ctx: Context = Depends(context)) -> FileResponse:
    """The original bytes of a resource (``Content-Type`` its media type,
    ``Content-Disposition`` its file name); 404 when it has none (failed upload)."""
    path, media_type, file_name = ctx.engine.resource_content(resource_id)
    return FileResponse(path, media_type=media_type, filename=file_name, content_disposition_type="inline",
                        headers={"X-Content-Type-Options": "nosniff"})


@router.get("/v1/resources/{resource_id}/pages/{page}", summary="A page of a PDF as an image",
            response_class=PNGResponse,
            responses={200: {"description": "The page as displayed (CropBox and /Rotate applied), as a PNG.",
                             "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}},
                       # errors are JSON (named as content: the route's own media type is PNG)
                       **{status: {"description": doc["description"], "content": {"application/json": {
                           "schema": {"$ref": "#/components/schemas/SessionsError"}}}}
                          for status, doc in error_docs("sessions", 503).items()}})
def resource_page(resource_id: str, page: int = PathParam(..., ge=1, le=1_000_000, description="1-based page."),
                  ctx: Context = Depends(context)) -> PNGResponse:
    """Page ``page`` (1-based) of a stored PDF as a PNG (the viewer's render, cached; no
    citation boxes: the web app draws its own). 404 ``NOT_FOUND`` for a resource that is
    not a stored PDF or a page it does not have; 503 ``SERVER_BUSY`` when every renderer
    stays busy."""
    resource = ctx.engine.resource(resource_id)
    if resource.kind != "pdf":
        raise NotFoundError(f"resource {resource_id} is not a PDF")
    count = resource.metadata.get("page_count")
    if isinstance(count, int) and page > count:
        raise NotFoundError(f"resource {resource_id} has no page {page}")
    path = ctx.engine.original_path(resource)
    png = plain_page(ctx.engine.store.blobs, path, resource.sha256, page).read_bytes()
    return PNGResponse(png, headers={"Cache-Control": "private, max-age=300", "X-Content-Type-Options": "nosniff"})


__all__ = ["resource_json", "router"]
