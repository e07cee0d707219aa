"""Signed links: URLs that work without an API key until they expire.

Two kinds of link are signed here, both with the store's secret ``presign``
(:meth:`~citewell.store.Store.secret`: 32 random bytes kept in the store, so every
process serving the store signs and checks alike):

- a **document link** (``GET /v1/presigned_url`` → ``/v1/presigned_url/{document_id}``):
  the original bytes of one resource; signed fields: document id, workspace id, expiry;
- a **viewer link** (``viewer_url`` of every analytics reference → ``/rms/viewer``, and
  the page images the viewer embeds): one citation of one message (or the reference with
  that ``citation_idx`` across a conversation); signed fields: workspace id, ``chat_message_id`` or
  ``conversation_id`` and its value, ``citation_idx``, expiry.

The query of a signed link carries ``workspace_id``, ``key_id`` (the id of the API key
whose request made the link), ``expires`` (the expiry as Unix time, whole **seconds**
since the epoch, UTC) and ``signature``: HMAC-SHA256 over the link's kind and fields, the
key id included (a JSON array, so no field can run into the next), base64url without
padding. :func:`verify` compares in constant time (:func:`hmac.compare_digest`) and
refuses with 403 ``FORBIDDEN`` a link whose signature does not match any field, whose
``expires`` is not a whole number, or whose expiry has passed; only then does it read the
store, to refuse a link whose key has been revoked since (``citewell keys revoke``): a
link lives no longer than the key that made it. A bad signature never tells whether a
document or a key exists.

Rotating the secret (deleting the ``secret:presign`` row of the store's ``meta`` table)
invalidates every link handed out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import time
from collections.abc import Sequence
from datetime import datetime, timezone

from ..digits import whole_number
from ..store.base import KeyStore
from .errors import ApiError

#: Name of the store secret that signs every link.
SECRET_NAME = "presign"
#: Lifetime of a presigned document URL unless ``expires_in`` says otherwise (seconds).
DEFAULT_DOCUMENT_SECONDS = 15 * 60
#: Bounds of ``expires_in`` (seconds).
MIN_DOCUMENT_SECONDS, MAX_DOCUMENT_SECONDS = 1, 24 * 60 * 60
#: Least lifetime of a viewer link (seconds); see :func:`viewer_expiry`.
VIEWER_SECONDS = 60 * 60

DOCUMENT = "document"
VIEWER = "viewer"

FORBIDDEN_MESSAGE = "the link is not valid: it has expired or was altered"


def now() -> int:
    """The current Unix time in whole seconds."""
    return int(time.time())


def expires_at_iso(expires: int) -> str:
    """``expires`` (Unix seconds) as ISO 8601 UTC: ``2026-03-02T15:49:29Z``."""
    return datetime.fromtimestamp(expires, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def viewer_expiry(at: int | None = None) -> int:
    """The expiry of a viewer link made at ``at`` (Unix seconds, default now): at least
    :data:`VIEWER_SECONDS` later, rounded up to a whole hour, so the references of a message
    read twice within the same hour carry the same links (at most two hours)."""
    start = now() if at is None else at
    return int(math.ceil((start + VIEWER_SECONDS) / 3600) * 3600)


def signature(secret: bytes, kind: str, fields: Sequence[str]) -> str:
    """HMAC-SHA256 of ``kind`` and ``fields`` (strings, order matters) under ``secret``,
    base64url without padding (43 characters)."""
    message = json.dumps([kind, *fields], separators=(",", ":")).encode("ascii")
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _secret(store: KeyStore) -> bytes:
    return store.secret(SECRET_NAME)


def sign(store: KeyStore, kind: str, fields: Sequence[str], key_id: str, expires: int) -> dict[str, str]:
    """The query parameters that sign ``fields`` of a ``kind`` link made by API key
    ``key_id`` until ``expires`` (Unix seconds): ``{"key_id", "expires", "signature"}``. The
    caller adds the fields themselves to the link (``workspace_id`` and the ids)."""
    expiry = str(int(expires))
    return {"key_id": key_id, "expires": expiry,
            "signature": signature(_secret(store), kind, [*fields, key_id, expiry])}


def verify(store: KeyStore, kind: str, fields: Sequence[str], key_id: str, expires: str, given: str, *,
           at: int | None = None) -> int:
    """Check a signed link: ``given`` must be the signature of ``kind``, ``fields``,
    ``key_id`` and ``expires`` (the query's texts; Unix seconds), the expiry must not have
    passed at ``at`` (Unix seconds, default now) and the key ``key_id`` must still exist.
    Returns the expiry. Raises :class:`ApiError` ``FORBIDDEN`` (403) otherwise; the
    signature is checked first and in constant time, the store is read last."""
    expected = signature(_secret(store), kind, [*fields, key_id, expires])
    if not hmac.compare_digest(expected.encode("ascii"), given.encode("utf-8", "surrogatepass")):
        raise ApiError(FORBIDDEN_MESSAGE, code="FORBIDDEN")
    expiry = whole_number(expires)
    if expiry is None:
        raise ApiError(FORBIDDEN_MESSAGE, code="FORBIDDEN")
    if (now() if at is None else at) >= expiry:
        raise ApiError("the link has expired", code="FORBIDDEN")
    if store.api_key_by_id(key_id) is None:
        raise ApiError("the link is no longer valid: the API key that made it was revoked", code="FORBIDDEN")
    return expiry


# -- the two kinds -------------------------------------------------------------------------

def document_fields(document_id: str, workspace_id: str) -> list[str]:
    """The signed fields of a document link."""
    return [document_id, workspace_id]


def sign_document(store: KeyStore, document_id: str, workspace_id: str, key_id: str, expires: int) -> dict[str, str]:
    """Query parameters of a document link made by API key ``key_id``: ``{workspace_id,
    key_id, expires, signature}`` (the document id is in the path). ``expires``: Unix
    seconds (any value: tests sign links that have already expired)."""
    return {"workspace_id": workspace_id,
            **sign(store, DOCUMENT, document_fields(document_id, workspace_id), key_id, expires)}


def verify_document(store: KeyStore, document_id: str, workspace_id: str, key_id: str, expires: str, given: str, *,
                    at: int | None = None) -> int:
    """:func:`verify` for a document link; the expiry (Unix seconds) or 403 ``FORBIDDEN``."""
    return verify(store, DOCUMENT, document_fields(document_id, workspace_id), key_id, expires, given, at=at)


def viewer_fields(workspace_id: str, target: str, target_id: str, citation_idx: str) -> list[str]:
    """The signed fields of a viewer link; ``target`` is ``"chat_message_id"`` or
    ``"conversation_id"``."""
    return [workspace_id, target, target_id, citation_idx]


def sign_viewer(store: KeyStore, workspace_id: str, target: str, target_id: str, citation_idx: str, key_id: str,
                expires: int) -> dict[str, str]:
    """Query parameters of a viewer link made by API key ``key_id``: ``{<target>,
    citation_idx, workspace_id, key_id, expires, signature}``; ``expires`` in Unix seconds."""
    fields = viewer_fields(workspace_id, target, target_id, citation_idx)
    return {target: target_id, "citation_idx": citation_idx, "workspace_id": workspace_id,
            **sign(store, VIEWER, fields, key_id, expires)}


def verify_viewer(store: KeyStore, workspace_id: str, target: str, target_id: str, citation_idx: str, key_id: str,
                  expires: str, given: str, *, at: int | None = None) -> int:
    """:func:`verify` for a viewer link; the expiry (Unix seconds) or 403 ``FORBIDDEN``."""
    return verify(store, VIEWER, viewer_fields(workspace_id, target, target_id, citation_idx), key_id, expires,
                  given, at=at)


__all__ = [
    "DEFAULT_DOCUMENT_SECONDS",
    "MAX_DOCUMENT_SECONDS",
    "MIN_DOCUMENT_SECONDS",
    "SECRET_NAME",
    "VIEWER_SECONDS",
    "expires_at_iso",
    "now",
    "sign",
    "sign_document",
    "sign_viewer",
    "signature",
    "verify",
    "verify_document",
    "verify_viewer",
    "viewer_expiry",
]
