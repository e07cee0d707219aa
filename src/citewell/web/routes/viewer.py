"""The viewer (seeds 003/004 "How to view original documents"): one citation shown in place.

- ``GET /rms/viewer?chat_message_id=&citation_idx=`` — the reference numbered
  ``citation_idx`` of that assistant message;
- ``GET /rms/viewer?conversation_id=&citation_idx=`` — the reference numbered
  ``citation_idx`` across the whole conversation, as the conversation references route
  numbers them (:func:`~citewell.profiles.analytics.conversation_citations`: every
  answer's references in order, ``"1"``, ``"2"`` …), so the number names exactly one;

answer an HTML page (:mod:`citewell.web.viewer_page`). For a PDF citation the page embeds
``GET /rms/viewer/page?chat_message_id=&citation_idx=&page=&boxes=`` — the cited page as a
PNG with the reference's ``offset`` boxes drawn in (``boxes=false``: the plain page;
:mod:`citewell.web.viewer_render`). Only the pages the citation is on are served.

Access: an API key like every route (``X-API-KEY``/``Authorization: Bearer``, with the
acting-for parameters of :mod:`citewell.web.auth`), **or** a signed link: the query
carries ``workspace_id``, ``expires`` and ``signature`` (:mod:`citewell.web.signing`) and
no key is needed. Every analytics reference carries such a link as additive
``viewer_url`` (:class:`citewell.web.reflinks.ReferenceLinks`; valid one to two hours), and the page images the
viewer embeds are signed links too, so a browser shows the whole page without a header.
A link with a ``signature`` is judged by the signature alone.

Errors are JSON in the analytics envelope (``{"error": {code, msg, message}, "payload":
null}``, :mod:`citewell.web.errors`): 400 ``CHAT_MESSAGE_ID_MISSING`` without either id,
``CITATION_IDX_MISSING``, ``INVALID_REQUEST_BODY`` for both ids or a ``citation_idx`` that
is not a positive whole number; 401 without a key or signature; 403 ``FORBIDDEN`` for an
expired or altered link, or one whose API key was revoked; 404 ``NOT_FOUND`` for an unknown (or another workspace's)
message or conversation, a number the message does not cite, or a page that is not
cited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from starlette.datastructures import URL

from ...digits import MAX_DIGITS, whole_number
from ...engine import Engine
from ...errors import NotFoundError
from ...models import Message, Reference
from ...profiles.analytics import conversation_citations, numbered_references
from .. import signing
from ..auth import (API_KEY_HEADER, BEARER, ORGANIZATION_ID, USER_EMAIL, USER_ID, blank, key_of,
                    resolve_principal)
from .. import rules
from ..errors import ApiError
from ..viewer_page import SECURITY_HEADERS, Cited, cited_pages, page_boxes, render_page
from ..viewer_data import viewer_data
from ..viewer_render import page_png
from .common import error_docs, payload
from .files import document_url

router = APIRouter(tags=["viewer"])

CHAT_MESSAGE_ID = "chat_message_id"
CONVERSATION_ID = "conversation_id"


class PNGResponse(Response):
    """A PNG image answer."""

    media_type = "image/png"


def _docs(media_type: str, description: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses of a viewer route: 200 in ``media_type``, the errors as JSON in
    the analytics envelope (given as content, not as a model, which FastAPI would put
    under the route's HTML/PNG media type)."""
    docs: dict[int | str, dict[str, Any]] = {}
    for status, doc in error_docs("analytics").items():
        docs[status] = {"description": doc["description"],
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AnalyticsError"}}}}
    docs[401]["description"] = "API_KEY_MISSING or INVALID_API_KEY: neither a key nor a signed link."
    docs[403]["description"] = ("FORBIDDEN: an expired or altered signed link, or a key that may not act for that "
                                "organization or user.")
    docs[200] = {"description": description,
                 "content": {media_type: {"schema": {"type": "string"} if media_type == "text/html"
                                          else {"type": "string", "format": "binary"}}}}
    return docs


#: OpenAPI: a key, or none (a signed link).
_OPTIONAL_KEY: dict[str, Any] = {"security": [{}]}


@dataclass(frozen=True)
class ViewerTarget:
    """A viewer request, authorized: the ``engine`` on the workspace it may read,
    ``user_id`` (a platform key acting for a user, else None), the citation it names
    (``chat_message_id`` or ``conversation_id``, and ``citation_idx`` as given), whether
    it came through a signed link (``signed``) and the API key whose links it hands on
    (``key_id``: the request's key, or the one that made the signed link)."""

    engine: Engine
    user_id: str | None
    chat_message_id: str | None
    conversation_id: str | None
    citation_idx: str
    signed: bool
    key_id: str


def viewer_target(
    request: Request,
    chat_message_id: str | None = Query(
        None, description="An assistant message id (any profile). Instead of it, `conversation_id` (a session or "
                          "chat id) numbers the references of the whole conversation, as its references route "
                          "does, for citation_idx; give one of the two. A signed link (viewer_url) also carries "
                          "`workspace_id`, `key_id`, `expires` and `signature`, and needs no API key.",
        json_schema_extra={"x-required": True, "x-schema": rules.nonblank()}),
    # the alternative to chat_message_id, and the fields of a signed link (made by this API,
    # not by clients): rules between parameters, so described above rather than in the schema
    conversation_id: str | None = Query(None, include_in_schema=False),
    citation_idx: str = Query(..., description="The reference's citation_idx: its [N] in the message "
                                               "(chat_message_id), or its number across the conversation "
                                               "(conversation_id).",
                              json_schema_extra={"x-schema": rules.citation_number()}),
    workspace_id: str | None = Query(None, include_in_schema=False),
    key_id: str | None = Query(None, include_in_schema=False),
    expires: str | None = Query(None, include_in_schema=False),
    signature: str | None = Query(None, include_in_schema=False),
    api_key: str | None = API_KEY_HEADER,
    bearer: HTTPAuthorizationCredentials | None = BEARER,
    organization_id: str | None = ORGANIZATION_ID,
    user_id: str | None = USER_ID,
    user_email: str | None = USER_EMAIL,
) -> ViewerTarget:
    """FastAPI dependency: the :class:`ViewerTarget` of a viewer request, by signed link or
    by key (errors in the module docstring)."""
    message_id, conversation = blank(chat_message_id), blank(conversation_id)
    if message_id is not None and conversation is not None:
        raise ApiError("give chat_message_id or conversation_id, not both", code="INVALID_REQUEST_BODY")
    if message_id is None and conversation is None:
        raise ApiError("chat_message_id or conversation_id is required", code="CHAT_MESSAGE_ID_MISSING")
    store = request.app.state.store
    generator = getattr(request.app.state, "generator", None)
    if blank(signature) is not None:
        if blank(workspace_id) is None:
            raise ApiError("workspace_id is required in a signed link", code="WORKSPACE_ID_MISSING")
        if blank(expires) is None:
            raise ApiError("expires is required in a signed link", code="EXPIRES_MISSING")
        if blank(key_id) is None:
            raise ApiError("key_id is required in a signed link", code="KEY_ID_MISSING")
        assert workspace_id is not None and expires is not None and signature is not None and key_id is not None
        target, target_id = (CHAT_MESSAGE_ID, message_id) if message_id is not None else (CONVERSATION_ID,
                                                                                          conversation)
        signing.verify_viewer(store, workspace_id, target, str(target_id), citation_idx, key_id, expires, signature)
        engine = Engine.for_workspace_id(store, workspace_id, generator=generator)
        return ViewerTarget(engine, None, message_id, conversation, citation_idx, True, key_id)
    who = resolve_principal(store, key_of(api_key, bearer), organization_id=organization_id, user_id=user_id,
                            user_email=user_email, require_organization=True)
    engine = Engine.for_workspace_id(store, who.workspace_id, generator=generator)
    return ViewerTarget(engine, who.user_id, message_id, conversation, citation_idx, False, who.key_id or "")


# -- finding the citation ------------------------------------------------------------------

def _number(citation_idx: str) -> int:
    number = whole_number(citation_idx.strip())
    if number is None or number < 1:
        raise ApiError(f"citation_idx must be a positive whole number of at most {MAX_DIGITS} digits (the [N] of "
                       "the answer)", code="INVALID_REQUEST_BODY")
    return number


def find_citation(target: ViewerTarget) -> tuple[Message, Reference]:
    """The message and its reference that ``target.citation_idx`` names: the ``[N]`` of
    ``chat_message_id``, or the reference at that position across ``conversation_id``
    (:func:`~citewell.profiles.analytics.conversation_citations`). ``NotFoundError`` when
    there is none (or the id is another workspace's); ``ApiError`` 400 for a
    ``citation_idx`` that is no positive whole number."""
    number = _number(target.citation_idx)
    engine = target.engine
    if target.chat_message_id is not None:
        message = engine.message(target.chat_message_id, user_id=target.user_id)
        ref = next((r for r in numbered_references(message) if r.citation == number), None)
        if ref is None:
            raise NotFoundError(f"message {target.chat_message_id} has no citation [{number}]")
        return message, ref
    assert target.conversation_id is not None
    engine.get_chat(target.conversation_id, user_id=target.user_id)
    cited = conversation_citations(engine.history(target.conversation_id, user_id=target.user_id))
    if number > len(cited):
        raise NotFoundError(f"conversation {target.conversation_id} has no reference {number}")
    return cited[number - 1]


def _relative(url: URL) -> str:
    return url.path + (f"?{url.query}" if url.query else "")


def viewer_url(request: Request, workspace_id: str, chat_message_id: str, citation_idx: str, key_id: str,
               expires: int, *, route: str = "rms_viewer", **extra: Any) -> URL:
    """The absolute signed URL of the viewer (``route="rms_viewer"``) or of a page image
    (``"rms_viewer_page"``, ``extra``: ``page``, ``boxes``) of one citation, made by API key
    ``key_id`` and valid until ``expires`` (Unix seconds) or until that key is revoked."""
    params = signing.sign_viewer(request.app.state.store, workspace_id, CHAT_MESSAGE_ID, chat_message_id,
                                 str(citation_idx), key_id, expires)
    return request.url_for(route).include_query_params(**extra, **params)


def _cited(request: Request, target: ViewerTarget, message: Message, ref: Reference) -> Cited:
    engine = target.engine
    resource = None
    if ref.resource_id:
        try:
            resource = engine.resource(ref.resource_id)
        except NotFoundError:
            resource = None
    cited = Cited(number=str(ref.citation), reference=ref, resource=resource)
    if ref.type == "post" and ref.source and ref.id:
        found = engine.store.mentions(engine.workspace_id, [(ref.source, ref.id)], dataset_ids=[ref.resource_id])
        cited.mention = found[0] if found else None
    kind = cited.kind
    if resource is not None and kind in ("transcript", "text"):
        cited.chunks = engine.store.resource_chunks(engine.workspace_id, resource.id)
    stored = resource is not None and engine.has_original(resource)
    if stored and kind == "pdf" and message.id is not None:
        expires = signing.viewer_expiry()
        cited.page_images = {page: _relative(viewer_url(request, engine.workspace_id, message.id, str(ref.citation),
                                                        target.key_id, expires, route="rms_viewer_page", page=page))
                             for page in cited_pages(ref)}
    if stored and kind != "post" and not target.signed:  # a key holder may fetch the whole file anyway
        assert resource is not None
        cited.download_url = document_url(request, resource.id, engine.workspace_id, target.key_id,
                                          signing.now() + signing.DEFAULT_DOCUMENT_SECONDS)
    return cited


@router.get("/rms/viewer", name="rms_viewer", response_class=HTMLResponse, summary="View a citation in place",
            responses=_docs("text/html", "An HTML page showing the citation where it lives."),
            openapi_extra=_OPTIONAL_KEY)
def viewer(request: Request, target: ViewerTarget = Depends(viewer_target)) -> HTMLResponse:
    """An HTML page showing one citation where it lives: a PDF's cited page with the
    passage's boxes drawn in and the passage beside it; a transcript's cues around the
    cited time (with the recording when its metadata names one); a post with its author,
    time, engagement and link. Needs an API key, or a signed link (``viewer_url`` of the
    references)."""
    message, ref = find_citation(target)
    return HTMLResponse(render_page(_cited(request, target, message, ref)), headers=SECURITY_HEADERS)


@router.get("/rms/viewer/data", name="rms_viewer_data", summary="A citation in place, as JSON (the web app's viewer)",
            responses=error_docs("analytics"), openapi_extra=_OPTIONAL_KEY)
def viewer_json(request: Request, target: ViewerTarget = Depends(viewer_target)) -> JSONResponse:
    """What the viewer shows, as data (:mod:`citewell.web.viewer_data`): the cited passage,
    each citing sentence with its span in the passage and, for a PDF, that span's own
    line boxes (fractions of the displayed page, top-left origin) and the cited pages'
    plain images (signed links, ``boxes=false``); a transcript's cues with the quoted ones
    marked and their times, and its recording (``media_url``); a post with its quoted span.
    Access and errors as ``GET /rms/viewer`` (a key, or the signed ``viewer_url``'s fields)."""
    message, ref = find_citation(target)
    cited = _cited(request, target, message, ref)
    engine = target.engine
    pdf = None
    page_count = None
    if cited.kind == "pdf" and cited.resource is not None and cited.page_images:
        expires = signing.viewer_expiry()
        assert message.id is not None
        cited.page_images = {page: _relative(viewer_url(request, engine.workspace_id, message.id, str(ref.citation),
                                                        target.key_id, expires, route="rms_viewer_page", page=page,
                                                        boxes="false"))
                             for page in cited_pages(ref)}
        pdf = (engine.original_path(cited.resource), cited.resource.sha256)
        count = cited.resource.metadata.get("page_count")
        page_count = count if isinstance(count, int) else None
    data = viewer_data(cited, message, citation_idx=target.citation_idx, pdf=pdf, page_count=page_count)
    return JSONResponse(payload(data), headers={"Cache-Control": "private, no-store"})


@router.get("/rms/viewer/page", name="rms_viewer_page", response_class=PNGResponse,
            summary="A cited PDF page as an image, the citation's boxes drawn in",
            responses=_docs("image/png", "The page as displayed, as a PNG; the boxes a translucent amber fill "
                                         "with an outline."),
            openapi_extra=_OPTIONAL_KEY)
def viewer_page_image(page: int | None = Query(None, ge=1, description="A 1-based page the citation is on "
                                                                       "(default: its first)."),
                      boxes: bool = Query(True, description="Draw the citation's boxes (false: the plain page)."),
                      target: ViewerTarget = Depends(viewer_target)) -> Response:
    """The cited page of a PDF citation as a PNG with the reference's ``offset`` boxes
    (fractions of the displayed page, top-left origin) drawn in. 404 for a citation that
    is not a PDF's, a page it is not on, or a document no longer stored."""
    _, ref = find_citation(target)
    pages = cited_pages(ref)
    if (ref.metadata or {}).get("source_type") != "pdf" or not pages or not ref.resource_id:
        raise NotFoundError(f"citation [{ref.citation}] is not on a PDF page")
    number = pages[0] if page is None else page
    if number not in pages:
        raise NotFoundError(f"citation [{ref.citation}] is not on page {number}")
    engine = target.engine
    resource = engine.resource(ref.resource_id)
    png = page_png(engine.store.blobs, engine.original_path(resource), resource.sha256, number, page_boxes(ref, number) if boxes else ())
    return PNGResponse(png, headers={"Cache-Control": "private, max-age=300", "X-Content-Type-Options": "nosniff"})


__all__ = ["ViewerTarget", "find_citation", "router", "viewer_target", "viewer_url"]
