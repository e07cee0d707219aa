"""Presigned downloads (seed 004 "Direct Download"), analytics envelope.

- ``GET /v1/presigned_url?document_id=&expires_in=`` (API key) →
  ``{"error": null, "payload": {"url", "expires_at"}}``: an absolute URL (from the
  request's base URL) of the route below, valid for ``expires_in`` seconds (default 900,
  1..86400); ``expires_at`` is the expiry as ISO 8601 UTC (``2026-03-02T15:49:29Z``).
- ``GET /v1/presigned_url/{document_id}?workspace_id=&key_id=&expires=&signature=`` (no key) → the
  original bytes, with the media type and ``Content-Disposition`` of
  ``GET /v1/resources/{id}/content``; 403 ``FORBIDDEN`` once expired or when any part of the
  link was altered or the API key that made it was revoked (:mod:`citewell.web.signing`), 404 ``NOT_FOUND`` when the document is
  gone since.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import FileResponse

from ...engine import Engine
from ...wire.analytics import PresignedUrl, PresignedUrlResponse
from .. import rules, signing
from ..deps import Context, context
from ..errors import ApiError
from ..schemas import AnalyticsError
from ..signing import DEFAULT_DOCUMENT_SECONDS, MAX_DOCUMENT_SECONDS, MIN_DOCUMENT_SECONDS
from .common import error_docs, payload

router = APIRouter(tags=["documents"])

#: The error answers of a signed route: no 401 (it takes no key); 403 for a bad link.
SIGNED_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": AnalyticsError, "description": "A missing parameter of the link (*_MISSING)."},
    403: {"model": AnalyticsError, "description": "FORBIDDEN: the link has expired, a part of it (an id, the "
                                                  "workspace, the key, the expiry, the signature) was altered, "
                                                  "or the API key that made it was revoked."},
    404: {"model": AnalyticsError, "description": "NOT_FOUND: the document is no longer stored."},
    500: {"model": AnalyticsError, "description": "SERVER_ERROR; never a trace."},
}


def _presign_docs() -> dict[int | str, dict[str, Any]]:
    docs = error_docs("analytics")
    docs[403] = {"model": AnalyticsError,
                 "description": "FORBIDDEN: the key may not act for that organization or user."}
    return docs


def document_url(request: Request, document_id: str, workspace_id: str, key_id: str, expires: int) -> str:
    """The absolute presigned URL of ``document_id`` of ``workspace_id``, made by API key
    ``key_id``, that expires at ``expires`` (Unix seconds) or when that key is revoked, on
    the request's base URL."""
    base = request.url_for("presigned_download", document_id=document_id)
    return str(base.include_query_params(**signing.sign_document(request.app.state.store, document_id,
                                                                  workspace_id, key_id, expires)))


@router.get("/v1/presigned_url", response_model=PresignedUrlResponse, responses=_presign_docs(),
            summary="A presigned URL of a document's original bytes")
def presigned_url(request: Request,
                  document_id: str = Query(..., description="The document (resource) id, as references give it "
                                                            "in document_id.", json_schema_extra={"pattern": rules.NONBLANK}),
                  expires_in: int = Query(DEFAULT_DOCUMENT_SECONDS, ge=MIN_DOCUMENT_SECONDS, le=MAX_DOCUMENT_SECONDS,
                                          description="Lifetime of the URL in seconds (1..86400)."),
                  ctx: Context = Depends(context)) -> dict[str, Any]:
    """A URL that serves the document's original bytes without an API key until it
    expires (``expires_in`` seconds, default 900). 400 ``DOCUMENT_ID_MISSING`` without an
    id, 400 ``INVALID_REQUEST_BODY`` for ``expires_in`` out of 1..86400, 404 for an
    unknown (or foreign) id or a document without stored bytes (a failed upload)."""
    if not document_id.strip():
        raise ApiError("document_id is required", code="DOCUMENT_ID_MISSING")
    ctx.engine.stored_resource(document_id)  # NOT_FOUND unless the workspace holds its bytes
    expires = signing.now() + expires_in
    return payload({"url": document_url(request, document_id, ctx.who.workspace_id, ctx.who.key_id or "", expires),
                    "expires_at": signing.expires_at_iso(expires)})


@router.get("/v1/presigned_url/{document_id}", name="presigned_download", response_class=FileResponse,
            summary="Download a document through a presigned URL (no API key)",
            responses={200: {"description": "The original bytes, with their media type and file name.",
                             "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}},
                       **SIGNED_ERRORS})
def presigned_download(request: Request, document_id: str = Path(..., description="The document id."),
                       workspace_id: str = Query(..., description="The workspace the link was made for (signed)."),
                       key_id: str = Query(..., description="The API key whose request made the link (signed; "
                                                            "revoking the key revokes the link)."),
                       expires: str = Query(..., description="Expiry, Unix seconds (signed)."),
                       signature: str = Query(..., description="HMAC-SHA256 of the link, base64url.")) -> FileResponse:
    """The original bytes of a document, without an API key, while the link is valid: 403
    ``FORBIDDEN`` when it has expired or any part was altered; 404 when the document is no
    longer stored."""
    store = request.app.state.store
    signing.verify_document(store, document_id, workspace_id, key_id, expires, signature)
    path, media_type, file_name = Engine.for_workspace_id(store, workspace_id).resource_content(document_id)
    return FileResponse(path, media_type=media_type, filename=file_name, content_disposition_type="inline",
                        headers={"Cache-Control": "private, no-store", "Referrer-Policy": "no-referrer"})


__all__ = ["SIGNED_ERRORS", "PresignedUrl", "PresignedUrlResponse", "document_url", "router"]
