"""Presigned downloads and the citation viewer (issue 6), through the ASGI app.

Real files: a one-page PDF of the shared corpus (bytes read, the corpus stays read-only),
a transcript of the corpus, and a posts file written here (one post carries
``<script>``). Answers come from the API itself (sessions, ``resource_ids`` restricting
retrieval to one file); the references' ``viewer_url`` and the viewer's page images are
opened without a key. Expiry is tested by signing with an explicit expiry in the past
(no sleeping).
"""

from __future__ import annotations

import html
import io
import json
import re
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
from PIL import Image, ImageChops, ImageDraw

from citewell import Engine
from citewell.web import create_app, signing
from citewell.web.viewer_page import clock
from citewell.web.viewer_render import OUTLINE_PX, PAD_PX, box_pixels, cache_path

from .conftest import CORPUS

with warnings.catch_warnings():  # starlette nags about httpx2; the client works the same
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

PDF = CORPUS / "pdf" / "2305.03393v1-pg9.pdf"
PDF_QUESTION = "What is the inference time of OTSL compared to HTML?"
TRANSCRIPT = CORPUS / "transcripts" / "twiml-409_deep-learning-ocr_cha-zhang.vtt"
TRANSCRIPT_QUESTION = "What makes OCR of text in photos in the wild hard?"
NO_KEY = {"X-API-KEY": ""}

POSTS = [
    {"source": "reddit", "id": "t3_evil", "title": "<img src=x onerror=alert(2)>",
     "text": "Puts on Zorblax Corp <script>alert(1)</script> look great before earnings.",
     "author": "<b>bob</b>", "community": "r/wallstreetbets", "created_at": "2022-01-05T10:00:00Z",
     "score": 42, "num_comments": 7, "url": "javascript:alert(3)",
     "permalink": "https://www.reddit.com/r/wallstreetbets/comments/evil/"},
    {"source": "reddit", "id": "t3_ship", "text": "The lighthouse keeper logs every passing ship.",
     "created_at": "2022-01-06T10:00:00Z", "score": 1},
    {"source": "reddit", "id": "t3_fruit", "text": "Bananas are cheap this week at the market.",
     "created_at": "2022-01-07T10:00:00Z", "score": 2},
]


# -- helpers -----------------------------------------------------------------------------------

class Api:
    """Workspace ``acme`` (key on the client) and workspace ``other`` (``other_key``) on one app."""

    def __init__(self, client: TestClient, store_path: Path, key: str, workspace_id: str, other_key: str,
                 other_workspace_id: str, key_id: str = "") -> None:
        self.client, self.store_path, self.key, self.workspace_id = client, store_path, key, workspace_id
        self.key_id = key_id  # the id of the stored key: signed links name it
        self.other = {"X-API-KEY": other_key}
        self.other_workspace_id = other_workspace_id

    @property
    def store(self) -> Any:
        return self.client.app.state.store  # type: ignore[attr-defined]

    def upload(self, name: str, data: bytes, metadata: dict[str, Any] | None = None,
               headers: dict[str, str] | None = None) -> dict[str, Any]:
        """Upload and wait until processed: the resource."""
        form = {"metadata": json.dumps(metadata)} if metadata is not None else None
        r = self.client.post("/v1/resources", files={"file": (name, data, "application/octet-stream")}, data=form,
                             headers=headers)
        assert r.status_code == 202, r.text
        rid = r.json()["data"]["resource"]["id"]
        for _ in range(600):
            resource = self.client.get(f"/v1/resources/{rid}", headers=headers).json()["data"]["resource"]
            if resource["status"] != "processing":
                assert resource["status"] == "ready", resource
                return resource
            time.sleep(0.05)
        raise AssertionError(f"resource {rid} still processing")

    def ask(self, question: str, resource_id: str, headers: dict[str, str] | None = None) -> tuple[str, str]:
        """Ask in a new session restricted to one resource: ``(session id, assistant message id)``."""
        sid = self.client.post("/v1/sessions", json={"title": "viewer"}, headers=headers).json()["data"]["session"]["id"]
        r = self.client.post(f"/v1/sessions/{sid}/messages", json={"content": question, "resource_ids": [resource_id]},
                             headers=headers)
        assert r.status_code == 200, r.text
        answer = r.json()["data"]["assistant_message"]
        return sid, answer["id"]

    def references(self, message_id: str, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
        r = self.client.get("/v1/references", params={"chat_message_id": message_id}, headers=headers)
        assert r.status_code == 200, r.text
        refs = r.json()["references"]
        assert refs, "the answer must cite"
        return refs


@pytest.fixture
def api(store_path: Path):
    with Engine(store_path, workspace="acme") as acme, Engine(store_path, workspace="other") as other:
        key, record = acme.create_key()
        other_key, _ = other.create_key()
        ids = acme.workspace_id, other.workspace_id
    with TestClient(create_app(store_path)) as client:
        client.headers["X-API-KEY"] = key
        yield Api(client, store_path, key, ids[0], other_key, ids[1], record.id)


def altered(url: str, **changes: str) -> str:
    """``url`` with query parameters replaced."""
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    query.update(changes)
    return urlunsplit(parts._replace(query=urlencode(query)))


def flip(text: str) -> str:
    """``text`` with its last character changed."""
    return text[:-1] + ("A" if text[-1] != "A" else "B")


def analytics_error(r: Any, status: int, code: str) -> None:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["payload"] is None and body["error"]["code"] == code, body
    assert body["error"]["msg"] == body["error"]["message"]


def png(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image.convert("RGB")


def image_src(page_html: str) -> list[str]:
    return [html.unescape(src) for src in re.findall(r'<img src="([^"]+)"', page_html)]


# -- presigned URLs ----------------------------------------------------------------------------

def test_presigned_url_serves_the_original_without_a_key(api: Api) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes())
    before = int(time.time())
    r = api.client.get("/v1/presigned_url", params={"document_id": doc["id"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["error"] is None and set(body["payload"]) == {"url", "expires_at"}
    url, expires_at = body["payload"]["url"], body["payload"]["expires_at"]
    assert url.startswith(f"http://testserver/v1/presigned_url/{doc['id']}?")
    query = parse_qs(urlsplit(url).query)
    assert query["workspace_id"] == [api.workspace_id]
    expires = int(query["expires"][0])
    assert before + 900 <= expires <= int(time.time()) + 900  # default: 15 minutes
    assert expires_at == datetime.fromtimestamp(expires, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    download = api.client.get(url, headers=NO_KEY)
    assert download.status_code == 200
    assert download.content == PDF.read_bytes()
    with_key = api.client.get(f"/v1/resources/{doc['id']}/content")
    for header in ("content-type", "content-disposition"):
        assert download.headers[header] == with_key.headers[header]
    assert download.headers["content-type"] == "application/pdf"
    assert download.headers["content-disposition"] == 'inline; filename="otsl-page9.pdf"'

    r = api.client.get("/v1/presigned_url", params={"document_id": doc["id"], "expires_in": 60})
    expires = int(parse_qs(urlsplit(r.json()["payload"]["url"]).query)["expires"][0])
    assert expires - int(time.time()) in range(58, 61)


def test_presigned_url_parameters(api: Api) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes())
    analytics_error(api.client.get("/v1/presigned_url"), 400, "DOCUMENT_ID_MISSING")
    analytics_error(api.client.get("/v1/presigned_url", params={"document_id": "  "}), 400, "DOCUMENT_ID_MISSING")
    for bad in ("0", "86401", "-5", "soon"):
        analytics_error(api.client.get("/v1/presigned_url", params={"document_id": doc["id"], "expires_in": bad}),
                        400, "INVALID_REQUEST_BODY")
    for good in ("1", "86400"):
        r = api.client.get("/v1/presigned_url", params={"document_id": doc["id"], "expires_in": good})
        assert r.status_code == 200, r.text
    analytics_error(api.client.get("/v1/presigned_url", params={"document_id": doc["id"]}, headers=NO_KEY),
                    401, "API_KEY_MISSING")
    analytics_error(api.client.get("/v1/presigned_url", params={"document_id": "no-such-document"}), 404,
                    "NOT_FOUND")
    # a link that lost a part is a bad request (the missing parameter named), never a download
    url = api.client.get("/v1/presigned_url", params={"document_id": doc["id"]}).json()["payload"]["url"]
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    del query["signature"]
    analytics_error(api.client.get(urlunsplit(parts._replace(query=urlencode(query))), headers=NO_KEY), 400,
                    "SIGNATURE_MISSING")


def test_an_expired_presigned_url_is_forbidden(api: Api) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes())
    now = int(time.time())
    for expires in (now - 1, now - 3600):
        params = signing.sign_document(api.store, doc["id"], api.workspace_id, api.key_id, expires)
        r = api.client.get(f"/v1/presigned_url/{doc['id']}", params=params, headers=NO_KEY)
        analytics_error(r, 403, "FORBIDDEN")
    params = signing.sign_document(api.store, doc["id"], api.workspace_id, api.key_id, now + 120)
    assert api.client.get(f"/v1/presigned_url/{doc['id']}", params=params, headers=NO_KEY).status_code == 200
    # the clock of the check: valid up to the second before the expiry, not at it
    expires = now + 120
    assert signing.verify_document(api.store, doc["id"], api.workspace_id, api.key_id, str(expires),
                                   params["signature"], at=expires - 1) == expires
    with pytest.raises(signing.ApiError) as caught:
        signing.verify_document(api.store, doc["id"], api.workspace_id, api.key_id, str(expires), params["signature"],
                                at=expires)
    assert caught.value.code == "FORBIDDEN"


def test_a_tampered_presigned_url_is_forbidden(api: Api) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes())
    second = api.upload("notes.md", b"# Notes\n\nThe lighthouse keeper logs every passing ship.\n")
    theirs = api.upload("theirs.md", b"# Theirs\n\nAnother workspace's notes.\n", headers=api.other)
    url = api.client.get("/v1/presigned_url", params={"document_id": doc["id"]}).json()["payload"]["url"]
    assert api.client.get(url, headers=NO_KEY).status_code == 200
    query = parse_qs(urlsplit(url).query)
    tampered = [
        url.replace(doc["id"], second["id"]),          # another document of the same workspace
        url.replace(doc["id"], theirs["id"]),          # a document of another workspace
        altered(url, workspace_id=api.other_workspace_id),
        altered(url, expires=str(int(query["expires"][0]) + 1)),
        altered(url, expires=str(int(query["expires"][0]) + 10 ** 6)),
        altered(url, expires="0" + query["expires"][0]),
        altered(url, expires="never"),
        altered(url, signature=flip(query["signature"][0])),
        altered(url, signature=query["signature"][0] + "A"),
        altered(url, signature="x"),
        altered(url, key_id=api.key_id[:-1] + ("0" if api.key_id[-1] != "0" else "1")),  # another key's id
    ]
    for bad in tampered:
        analytics_error(api.client.get(bad, headers=NO_KEY), 403, "FORBIDDEN")
        # a key does not rescue an altered link: the link alone decides
        analytics_error(api.client.get(bad), 403, "FORBIDDEN")


def test_presigned_urls_are_tenant_scoped(api: Api) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes())
    theirs = api.upload("otsl-page9.pdf", PDF.read_bytes(), headers=api.other)  # the same bytes, theirs
    analytics_error(api.client.get("/v1/presigned_url", params={"document_id": theirs["id"]}), 404, "NOT_FOUND")
    analytics_error(api.client.get("/v1/presigned_url", params={"document_id": doc["id"]}, headers=api.other),
                    404, "NOT_FOUND")
    # their own link works for them (and needs no key); a link of one workspace never opens the other's
    url = api.client.get("/v1/presigned_url", params={"document_id": theirs["id"]},
                         headers=api.other).json()["payload"]["url"]
    assert api.client.get(url, headers=NO_KEY).status_code == 200
    # a validly signed link for a document that is gone since: 404
    api.client.delete(f"/v1/resources/{doc['id']}")
    params = signing.sign_document(api.store, doc["id"], api.workspace_id, api.key_id, int(time.time()) + 60)
    analytics_error(api.client.get(f"/v1/presigned_url/{doc['id']}", params=params, headers=NO_KEY), 404,
                    "NOT_FOUND")


def test_revoking_a_key_revokes_the_links_it_made(api: Api) -> None:
    """Issue 14: a presigned or viewer link lives no longer than the API key whose request
    made it; the links of another key of the same workspace keep working."""
    talk = api.upload("ocr-talk.vtt", TRANSCRIPT.read_bytes())
    _, mid = api.ask(TRANSCRIPT_QUESTION, talk["id"])
    with Engine(api.store_path, workspace="acme") as acme:
        second_key, second = acme.create_key()
    mine = {"download": api.client.get("/v1/presigned_url", params={"document_id": talk["id"]}).json()["payload"]["url"],
            "viewer": api.references(mid)[0]["viewer_url"]}
    kept = {"download": api.client.get("/v1/presigned_url", params={"document_id": talk["id"]},
                                       headers={"X-API-KEY": second_key}).json()["payload"]["url"],
            "viewer": api.references(mid, headers={"X-API-KEY": second_key})[0]["viewer_url"]}
    assert parse_qs(urlsplit(mine["viewer"]).query)["key_id"] == [api.key_id]
    assert parse_qs(urlsplit(kept["download"]).query)["key_id"] == [second.id]
    for url in (*mine.values(), *kept.values()):
        assert api.client.get(url, headers=NO_KEY).status_code == 200
    assert api.store.delete_api_key(api.key_id)  # citewell keys revoke
    for url in mine.values():
        r = api.client.get(url, headers=NO_KEY)
        analytics_error(r, 403, "FORBIDDEN")
        assert "revoked" in r.json()["error"]["message"]
    for url in kept.values():
        assert api.client.get(url, headers=NO_KEY).status_code == 200
    # a link cannot be moved to the surviving key: the key id is signed
    analytics_error(api.client.get(altered(mine["viewer"], key_id=second.id), headers=NO_KEY), 403, "FORBIDDEN")


def test_signatures_cover_every_field() -> None:
    secret = b"s" * 32
    base = signing.signature(secret, "document", ["doc", "ws", "100"])
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", base)
    assert base == signing.signature(secret, "document", ["doc", "ws", "100"])
    others = [signing.signature(secret, "document", ["doc", "ws", "101"]),
              signing.signature(secret, "document", ["doc2", "ws", "100"]),
              signing.signature(secret, "document", ["doc", "ws2", "100"]),
              signing.signature(secret, "viewer", ["doc", "ws", "100"]),
              signing.signature(secret, "document", ["do", "cws", "100"]),  # fields cannot run together
              signing.signature(b"t" * 32, "document", ["doc", "ws", "100"])]
    assert base not in others and len(set(others)) == len(others)
    # viewer links expire on a whole hour, one to two hours ahead
    assert signing.viewer_expiry(7200) == 3 * 3600 and signing.viewer_expiry(7201) == 4 * 3600


# -- the viewer --------------------------------------------------------------------------------

def test_pdf_citation_viewer_draws_the_boxes_on_the_page(api: Api) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes(), {"title": "OTSL <page 9>", "publisher": "arXiv"})
    sid, mid = api.ask(PDF_QUESTION, doc["id"])
    ref = api.references(mid)[0]
    assert ref["document_id"] == doc["id"] and ref["metadata"]["offset"]
    boxes = ref["metadata"]["offset"]
    page = boxes[0]["page"]

    r = api.client.get(ref["viewer_url"], headers=NO_KEY)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert csp.startswith("default-src 'none'") and "script-src 'self';" in csp  # this server's scripts only
    assert "unsafe-inline" not in csp.split("script-src", 1)[1].split(";", 1)[0] and "unsafe-eval" not in csp
    assert re.findall(r"<script[^>]*>", r.text) == ['<script type="module" src="/app/js/viewer-main.js">']
    assert r.headers["referrer-policy"] == "no-referrer"
    assert "OTSL &lt;page 9&gt;" in r.text and "OTSL <page 9>" not in r.text
    assert html.escape(ref["text"], quote=True) in r.text  # the passage beside the page
    sources = image_src(r.text)
    assert len(sources) == 1 and sources[0].startswith("/rms/viewer/page?")
    assert parse_qs(urlsplit(sources[0]).query)["page"] == [str(page)]

    drawn = api.client.get(sources[0], headers=NO_KEY)
    assert drawn.status_code == 200 and drawn.headers["content-type"] == "image/png"
    plain = api.client.get(altered(sources[0], boxes="false"), headers=NO_KEY)
    assert plain.status_code == 200 and plain.headers["content-type"] == "image/png"
    with_boxes, without = png(drawn.content), png(plain.content)
    assert with_boxes.size == without.size and without.size[0] > 500

    diff = ImageChops.difference(with_boxes, without).convert("L")
    changed = diff.point(lambda v: 255 if v else 0)
    inside_total = inside_changed = 0
    for box in boxes:
        x0, y0, x1, y1 = box_pixels(box, without.size)  # type: ignore[misc]
        region = changed.crop((x0 + 1, y0 + 1, x1, y1))
        inside_total += region.width * region.height
        inside_changed += region.width * region.height - region.histogram()[0]
    assert inside_total > 10_000 and inside_changed == inside_total  # every pixel in a box is tinted
    # well outside the boxes the page is untouched
    mask = Image.new("L", without.size, 0)
    margin = PAD_PX + OUTLINE_PX + 2
    pen = ImageDraw.Draw(mask)
    for box in boxes:
        x0, y0, x1, y1 = box_pixels(box, without.size)  # type: ignore[misc]
        pen.rectangle((x0 - margin, y0 - margin, x1 + margin, y1 + margin), fill=255)
    outside = ImageChops.multiply(changed, ImageChops.invert(mask))
    assert outside.getbbox() is None
    assert mask.histogram()[0] > 100_000  # there is a real outside to compare

    # the plain render is cached under the store's blob folder, keyed by sha/page/scale
    cached = cache_path(api.store.blobs, doc["sha256"], page)
    assert cached.is_file() and cached.read_bytes() == plain.content
    assert api.client.get(sources[0], headers=NO_KEY).content == drawn.content

    # with a key instead of a link, and by conversation
    by_key = api.client.get("/rms/viewer", params={"chat_message_id": mid, "citation_idx": ref["citation_idx"]})
    assert by_key.status_code == 200 and html.escape(ref["text"], quote=True) in by_key.text
    assert "/v1/presigned_url/" in by_key.text  # a key holder gets a link to the original
    by_chat = api.client.get("/rms/viewer", params={"conversation_id": sid, "citation_idx": "1"})
    assert by_chat.status_code == 200 and image_src(by_chat.text)
    # only the cited page, and only PDF citations have page images
    page_url = altered(sources[0], page=str(page + 1))
    analytics_error(api.client.get(page_url, headers=NO_KEY), 404, "NOT_FOUND")


def test_transcript_citation_viewer_shows_the_cues_and_times(api: Api) -> None:
    talk = api.upload("ocr-talk.vtt", TRANSCRIPT.read_bytes())
    sid, mid = api.ask(TRANSCRIPT_QUESTION, talk["id"])
    ref = api.references(mid)[0]
    meta = ref["metadata"]
    start, end = meta["start_time"], meta["end_time"]
    r = api.client.get(ref["viewer_url"], headers=NO_KEY)
    assert r.status_code == 200
    assert f'<span class="start">{start:.3f}</span>' in r.text and f'<span class="end">{end:.3f}</span>' in r.text
    assert clock(start) in r.text and clock(end) in r.text
    cues = [line for line in ref["text"].split("\n") if line]
    for cue in cues:
        assert f"<mark>{html.escape(cue, quote=True)}</mark>" in r.text
    assert r.text.count('class="context"') >= 1  # cues around the cited ones
    assert "<audio" not in r.text and "<video" not in r.text  # no recording stored
    assert "<img" not in r.text
    # the page image route is for PDF citations only
    analytics_error(api.client.get("/rms/viewer/page", params={"chat_message_id": mid, "citation_idx": "1"}),
                    404, "NOT_FOUND")
    by_chat = api.client.get("/rms/viewer", params={"conversation_id": sid, "citation_idx": "1"})
    assert by_chat.status_code == 200 and clock(start) in by_chat.text


def test_transcript_viewer_seeks_the_recording_when_one_is_named(api: Api) -> None:
    data = (CORPUS / "transcripts" / "elephants-dream_captions.en.vtt").read_bytes()
    film = api.upload("elephants.vtt", data, {"media_url": "https://media.example.org/elephants-dream.webm"})
    _, mid = api.ask("Everything is safe?", film["id"])
    ref = api.references(mid)[0]
    start, end = ref["metadata"]["start_time"], ref["metadata"]["end_time"]
    r = api.client.get(ref["viewer_url"], headers=NO_KEY)
    assert r.status_code == 200
    assert f'<video controls preload="metadata" src="https://media.example.org/elephants-dream.webm#t={start:g},{end:g}"' \
        in r.text


def test_post_viewer_shows_the_post_escaped(api: Api) -> None:
    data = "".join(json.dumps(p) + "\n" for p in POSTS).encode()
    dataset = api.upload("<posts>.jsonl", data)
    _, mid = api.ask("Zorblax", dataset["id"])
    ref = api.references(mid)[0]
    assert ref["metadata"]["id"] == "t3_evil"
    r = api.client.get(ref["viewer_url"], headers=NO_KEY)
    assert r.status_code == 200
    page = r.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert re.findall(r"<script[^>]*>", page.lower()) == ['<script type="module" src="/app/js/viewer-main.js">']
    assert "&lt;img src=x onerror=alert(2)&gt;" in page and "<img" not in page
    assert "&lt;b&gt;bob&lt;/b&gt;" in page and "<b>" not in page
    assert "&lt;posts&gt;" in page and "<posts>" not in page
    assert "javascript:" not in page  # an unsafe link is not written at all
    assert '<a href="https://www.reddit.com/r/wallstreetbets/comments/evil/"' in page
    assert "2022-01-05T10:00:00Z" in page and "r/wallstreetbets" in page
    assert "<dt>score</dt><dd>42</dd>" in page and "<dt>num_comments</dt><dd>7</dd>" in page


def test_viewer_links_in_references_open_without_a_key(api: Api) -> None:
    talk = api.upload("ocr-talk.vtt", TRANSCRIPT.read_bytes())
    sid, mid = api.ask(TRANSCRIPT_QUESTION, talk["id"])
    refs = api.references(mid)
    conversation = api.client.get(f"/v2/analytics/conversations/{sid}/references").json()["payload"]["references"]
    assert conversation and all("viewer_url" in ref for ref in [*refs, *conversation])
    # the same link for the same citation within the hour: a reference list reads the same twice
    assert [r["viewer_url"] for r in refs] == [r["viewer_url"] for r in api.references(mid)]
    for ref in refs:
        url = ref["viewer_url"]
        assert url.startswith("http://testserver/rms/viewer?")
        query = parse_qs(urlsplit(url).query)
        assert query["chat_message_id"] == [mid] and query["citation_idx"] == [ref["citation_idx"]]
        assert int(query["expires"][0]) - time.time() >= 3600 - 5
        assert api.client.get(url, headers=NO_KEY).status_code == 200
        for bad in (altered(url, citation_idx="2" if ref["citation_idx"] != "2" else "1"),
                    altered(url, chat_message_id=sid), altered(url, workspace_id=api.other_workspace_id),
                    altered(url, expires=str(int(query["expires"][0]) + 3600)),
                    altered(url, signature=flip(query["signature"][0]))):
            analytics_error(api.client.get(bad, headers=NO_KEY), 403, "FORBIDDEN")
    # an expired viewer link
    expired = signing.sign_viewer(api.store, api.workspace_id, "chat_message_id", mid, "1", api.key_id,
                                  int(time.time()) - 1)
    analytics_error(api.client.get("/rms/viewer", params=expired, headers=NO_KEY), 403, "FORBIDDEN")
    # a link for a conversation signs the conversation
    by_chat = signing.sign_viewer(api.store, api.workspace_id, "conversation_id", sid, "1", api.key_id,
                                  int(time.time()) + 60)
    assert api.client.get("/rms/viewer", params=by_chat, headers=NO_KEY).status_code == 200
    # neither a key nor a link
    analytics_error(api.client.get("/rms/viewer", params={"chat_message_id": mid, "citation_idx": "1"},
                                   headers=NO_KEY), 401, "API_KEY_MISSING")
    analytics_error(api.client.get("/rms/viewer", params={"chat_message_id": mid, "citation_idx": "1"},
                                   headers={"X-API-KEY": "cw_nope"}), 401, "INVALID_API_KEY")


def test_viewer_parameters(api: Api) -> None:
    talk = api.upload("ocr-talk.vtt", TRANSCRIPT.read_bytes())
    sid, mid = api.ask(TRANSCRIPT_QUESTION, talk["id"])
    get = api.client.get
    analytics_error(get("/rms/viewer", params={"citation_idx": "1"}), 400, "CHAT_MESSAGE_ID_MISSING")
    analytics_error(get("/rms/viewer", params={"chat_message_id": mid}), 400, "CITATION_IDX_MISSING")
    analytics_error(get("/rms/viewer", params={"chat_message_id": mid, "conversation_id": sid, "citation_idx": "1"}),
                    400, "INVALID_REQUEST_BODY")
    for bad in ("zero", "0", "-1", "1.5", "١", "9" * 5000):  # 4,301+ digits: past int()'s limit, still 400
        analytics_error(get("/rms/viewer", params={"chat_message_id": mid, "citation_idx": bad}), 400,
                        "INVALID_REQUEST_BODY")
    analytics_error(get("/rms/viewer", params={"chat_message_id": mid, "citation_idx": "99"}), 404, "NOT_FOUND")
    analytics_error(get("/rms/viewer", params={"conversation_id": sid, "citation_idx": "99"}), 404, "NOT_FOUND")
    # a user message cites nothing
    user = get(f"/v1/sessions/{sid}/messages").json()["data"]["messages"][0]
    assert user["role"] == "user"
    analytics_error(get("/rms/viewer", params={"chat_message_id": user["id"], "citation_idx": "1"}), 404,
                    "NOT_FOUND")
    signed = signing.sign_viewer(api.store, api.workspace_id, "chat_message_id", mid, "1", api.key_id,
                                 int(time.time()) + 60)
    del signed["workspace_id"]
    analytics_error(get("/rms/viewer", params=signed, headers=NO_KEY), 400, "WORKSPACE_ID_MISSING")


def test_viewer_is_tenant_scoped(api: Api) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes())
    theirs = api.upload("otsl-page9.pdf", PDF.read_bytes(), headers=api.other)
    _, mid = api.ask(PDF_QUESTION, doc["id"])
    their_sid, their_mid = api.ask(PDF_QUESTION, theirs["id"], headers=api.other)
    assert api.client.get("/rms/viewer", params={"chat_message_id": their_mid, "citation_idx": "1"},
                          headers=api.other).status_code == 200
    for params in ({"chat_message_id": their_mid, "citation_idx": "1"},
                   {"conversation_id": their_sid, "citation_idx": "1"}):
        analytics_error(api.client.get("/rms/viewer", params=params), 404, "NOT_FOUND")
        analytics_error(api.client.get("/rms/viewer/page", params=params), 404, "NOT_FOUND")
    analytics_error(api.client.get("/rms/viewer", params={"chat_message_id": "no-such-message", "citation_idx": "1"}),
                    404, "NOT_FOUND")
    # a link of one workspace names only that workspace's citation
    url = api.references(mid)[0]["viewer_url"]
    analytics_error(api.client.get(altered(url, chat_message_id=their_mid), headers=NO_KEY), 403, "FORBIDDEN")
    analytics_error(api.client.get(altered(url, workspace_id=api.other_workspace_id), headers=NO_KEY), 403,
                    "FORBIDDEN")
    # a link signed for the other workspace does not reach this workspace's message
    cross = signing.sign_viewer(api.store, api.other_workspace_id, "chat_message_id", mid, "1", api.key_id,
                                int(time.time()) + 60)
    analytics_error(api.client.get("/rms/viewer", params=cross, headers=NO_KEY), 404, "NOT_FOUND")


def test_a_deleted_pdf_still_shows_the_cited_text(api: Api) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes())
    _, mid = api.ask(PDF_QUESTION, doc["id"])
    ref = api.references(mid)[0]
    assert api.client.get("/rms/viewer/page", params={"chat_message_id": mid, "citation_idx": "1"}).status_code == 200
    assert cache_path(api.store.blobs, doc["sha256"], 1).is_file()
    assert api.client.delete(f"/v1/resources/{doc['id']}").status_code == 200
    assert not cache_path(api.store.blobs, doc["sha256"], 1).exists()  # renders go with the bytes
    r = api.client.get(ref["viewer_url"], headers=NO_KEY)
    assert r.status_code == 200 and "<img" not in r.text
    assert html.escape(ref["text"], quote=True) in r.text and "no longer stored" in r.text
    analytics_error(api.client.get("/rms/viewer/page", params={"chat_message_id": mid, "citation_idx": "1"}), 404,
                    "NOT_FOUND")


def test_a_page_that_cannot_be_rendered_is_a_server_error(api: Api, monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes())
    _, mid = api.ask(PDF_QUESTION, doc["id"])
    params = {"chat_message_id": mid, "citation_idx": "1"}
    monkeypatch.setenv("CITEWELL_RENDER_TIMEOUT_S", "0.001")  # the child is stopped before it can answer
    with caplog.at_level("ERROR", logger="citewell.web"):
        r = api.client.get("/rms/viewer/page", params=params)
    analytics_error(r, 500, "SERVER_ERROR")
    assert "Traceback" not in r.text and "took longer" not in r.text
    cached = cache_path(api.store.blobs, doc["sha256"], 1)
    assert not cached.exists() and cached.with_suffix(".failed").is_file()
    monkeypatch.delenv("CITEWELL_RENDER_TIMEOUT_S")
    # the failure is remembered: the page answers at once, without another render
    analytics_error(api.client.get("/rms/viewer/page", params=params), 500, "SERVER_ERROR")
    assert not cached.exists()
    cached.with_suffix(".failed").unlink()  # (or FAILURE_TTL_S later)
    assert api.client.get("/rms/viewer/page", params=params).status_code == 200
    assert cached.is_file()


def test_concurrent_requests_for_one_page_render_it_once(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from citewell.web import viewer_render

    doc = api.upload("otsl-page9.pdf", PDF.read_bytes())
    _, mid = api.ask(PDF_QUESTION, doc["id"])
    params = {"chat_message_id": mid, "citation_idx": "1"}
    calls: list[int] = []
    real = viewer_render.render_isolated

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(viewer_render, "render_isolated", counted)
    statuses: list[int] = []
    threads = [threading.Thread(target=lambda: statuses.append(
        api.client.get("/rms/viewer/page", params=params).status_code)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert statuses == [200] * 6 and len(calls) == 1


def test_rendering_a_page_the_pdf_does_not_have(tmp_path: Path) -> None:
    from citewell.errors import NotFoundError
    from citewell.web.viewer_render import render_isolated

    with pytest.raises(NotFoundError):
        render_isolated(PDF, 2, tmp_path / "p2.png")
    render_isolated(PDF, 1, tmp_path / "p1.png")
    assert png((tmp_path / "p1.png").read_bytes()).size == (918, 1188)  # US Letter at 1.5 px per point


def test_conversation_citation_idx_names_one_reference_across_turns(api: Api) -> None:
    """Each answer numbers its own citations [1], [2] …; the conversation route numbers every
    reference of the conversation once ("1".."K") and ?conversation_id=&citation_idx=k shows
    exactly its k-th reference, whichever turn it belongs to (issue 15)."""
    talk = api.upload("ocr-talk-2.vtt", TRANSCRIPT.read_bytes())
    notes = api.upload("ledger.md", b"# Ledger\n\nThe lighthouse keeper logs every passing ship in a green ledger.\n")
    sid, first = api.ask(TRANSCRIPT_QUESTION, talk["id"])
    r = api.client.post(f"/v1/sessions/{sid}/messages",
                        json={"content": "Where does the lighthouse keeper log passing ships?",
                              "resource_ids": [notes["id"]]})
    second = r.json()["data"]["assistant_message"]["id"]
    assert api.references(first)[0]["citation_idx"] == api.references(second)[0]["citation_idx"] == "1"
    conv = api.client.get(f"/v2/analytics/conversations/{sid}/references").json()["payload"]["references"]
    assert [x["citation_idx"] for x in conv] == [str(k) for k in range(1, len(conv) + 1)]
    assert [x["chat_message_id"] for x in conv][-1] == second and conv[0]["chat_message_id"] == first
    assert conv[-1]["citation"] == 1 and int(conv[-1]["citation_idx"]) > 1  # its own [1], the conversation's K
    for ref in conv:
        page = api.client.get("/rms/viewer", params={"conversation_id": sid, "citation_idx": ref["citation_idx"]})
        assert page.status_code == 200
        first_line = ref["text"].split("\n")[0]
        assert html.escape(first_line, quote=True) in page.text
        # the same page as the signed per-message link of that reference
        assert api.client.get(ref["viewer_url"], headers=NO_KEY).text.count(html.escape(first_line, quote=True)) \
            == page.text.count(html.escape(first_line, quote=True))
    assert "lighthouse keeper" in api.client.get(
        "/rms/viewer", params={"conversation_id": sid, "citation_idx": conv[-1]["citation_idx"]}).text
    assert "lighthouse keeper" not in api.client.get(
        "/rms/viewer", params={"conversation_id": sid, "citation_idx": "1"}).text
    analytics_error(api.client.get("/rms/viewer", params={"conversation_id": sid,
                                                          "citation_idx": str(len(conv) + 1)}), 404, "NOT_FOUND")
