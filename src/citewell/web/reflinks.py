"""The links of the references a request renders (analytics profile, seeds 003/004).

Every RMSReference the HTTP API sends carries links a reader can open without an API key:

- ``viewer_url`` (additive): the signed viewer link of that citation
  (``/rms/viewer?chat_message_id=&citation_idx=`` of the message that cites it, by the
  ``[N]`` of that message's text);
- ``external_url`` (seed 004: a required string): when
  :func:`citewell.profiles.analytics.external_url` knows none (a post's own page, a
  document's metadata ``external_url``), a signed download link of the original file
  (``/v1/presigned_url/{document_id}?…``) when the workspace holds its bytes and the
  source is not a post (a posts file is the whole dataset, not the post), else the
  signed viewer link, which shows the passage in place.

Both are signed (:mod:`citewell.web.signing`) with the id of the API key that asked (they
stop working when it is revoked) to expire at :func:`~citewell.web.signing.viewer_expiry`
of the request (one to two hours, the same links all the hour), so two reads of a message
within the hour give the same answer.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from ..engine import Engine
from ..errors import NotFoundError
from . import signing
from .routes.files import document_url
from .routes.viewer import viewer_url


class ReferenceLinks:
    """Signed links for the references of one request, on the request's base URL.

    ``engine``: the engine of the workspace the references belong to (the links are made
    for that workspace); ``key_id``: the id of the API key the request came with (the
    links work while it exists). Whether a document's bytes are stored is read once per
    document.
    """

    def __init__(self, request: Request, engine: Engine, key_id: str) -> None:
        self.request = request
        self.engine = engine
        self.key_id = key_id
        self.expires = signing.viewer_expiry()
        self._stored: dict[str, bool] = {}

    def viewer(self, chat_message_id: str, citation: int | str) -> str:
        """The absolute signed viewer URL of citation ``[citation]`` of ``chat_message_id``."""
        return str(viewer_url(self.request, self.engine.workspace_id, chat_message_id, str(citation), self.key_id,
                              self.expires))

    def document(self, document_id: str) -> str | None:
        """The absolute signed download URL of a document, or None when the workspace holds
        no bytes of it (unknown, deleted)."""
        stored = self._stored.get(document_id)
        if stored is None:
            try:
                self.engine.stored_resource(document_id)
                stored = True
            except NotFoundError:
                stored = False
            self._stored[document_id] = stored
        if not stored:
            return None
        return document_url(self.request, document_id, self.engine.workspace_id, self.key_id, self.expires)

    def complete(self, rendered: dict[str, Any], chat_message_id: str) -> dict[str, Any]:
        """Add the links of one rendered RMSReference of ``chat_message_id``, in place:
        ``viewer_url``, and ``external_url`` when it is None (see the module docstring).
        ``rendered["citation"]`` (int) is the reference's ``[N]`` in that message. Returns
        ``rendered``."""
        citation = rendered["citation"]
        viewer = self.viewer(chat_message_id, citation)
        if not rendered.get("external_url"):
            document_id = rendered.get("document_id")
            download = None
            if document_id and rendered.get("chunk_text_type") != "post":
                download = self.document(document_id)
            rendered["external_url"] = download or viewer
        rendered["viewer_url"] = viewer
        return rendered


__all__ = ["ReferenceLinks"]
