"""Every route of the HTTP API through the ASGI app (issue 4), on a temporary store.

Real uploads from the shared corpus (bytes copied, the corpus stays read-only) are
extracted by the app's background worker; the tests poll the resource until it is no
longer processing (a bounded loop, no timing assertion).
"""

from __future__ import annotations

import base64
import json
import logging
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF

from citewell import Engine
from citewell.embed import minilm as embedder_mod
from citewell.store.base import Condition
from citewell.web import create_app

from .conftest import CORPUS

with warnings.catch_warnings():  # starlette nags about httpx2; the client works the same
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TRANSCRIPT = "transcripts/twiml-409_deep-learning-ocr_cha-zhang.vtt"
TEXT = "README.md"
PDF = "pdf/2305.03393v1-pg9.pdf"
OCR_QUESTION = "What makes OCR of text in photos in the wild hard?"


# -- helpers ---------------------------------------------------------------------------------

def corpus_bytes(rel: str) -> bytes:
    """The bytes of a shared corpus file (read-only: only read)."""
    return (CORPUS / rel).read_bytes()


def upload(client: TestClient, name: str, data: bytes, metadata: Any = None, **kw: Any) -> Any:
    """POST /v1/resources with ``data`` as part ``file`` (and ``metadata`` JSON text)."""
    form = {"metadata": metadata if isinstance(metadata, str) else json.dumps(metadata)} if metadata is not None \
        else None
    return client.post("/v1/resources", files={"file": (name, data, "application/octet-stream")}, data=form, **kw)


def wait_done(client: TestClient, resource_id: str, **kw: Any) -> dict[str, Any]:
    """Poll GET /v1/resources/{id} until it is not processing (at most ~30 s); the resource."""
    for _ in range(600):
        r = client.get(f"/v1/resources/{resource_id}", **kw)
        assert r.status_code == 200, r.text
        resource = r.json()["data"]["resource"]
        if resource["status"] != "processing":
            return resource
        time.sleep(0.05)
    raise AssertionError(f"resource {resource_id} still processing")


def uploaded(client: TestClient, name: str, data: bytes, metadata: Any = None, **kw: Any) -> dict[str, Any]:
    """Upload and wait: the resource once processed."""
    r = upload(client, name, data, metadata, **kw)
    assert r.status_code == 202, r.text
    return wait_done(client, r.json()["data"]["resource"]["id"], **kw)


def new_session(client: TestClient, title: str | None = "t", **kw: Any) -> str:
    r = client.post("/v1/sessions", json={"title": title}, **kw)
    assert r.status_code == 200, r.text
    return r.json()["data"]["session"]["id"]


def pdf_bytes(text: str) -> bytes:
    """A one-page PDF with ``text`` in its text layer."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=14)
    pdf.multi_cell(0, 10, text=text)
    return bytes(pdf.output())


def blob_files(blobs: Path) -> list[Path]:
    """Every stored blob in the blob folder ``blobs`` (the staging folder excluded)."""
    return sorted(p for p in blobs.rglob("*") if p.is_file() and ".incoming" not in p.parts)


def staged_files(blobs: Path) -> list[Path]:
    incoming = blobs / ".incoming"
    return sorted(incoming.iterdir()) if incoming.is_dir() else []


class Api:
    """A client with workspace ``acme``'s key, the engine on the same store, and the store path."""

    def __init__(self, client: TestClient, engine: Engine, key: str, store_path: Path) -> None:
        self.client, self.engine, self.key, self.store_path = client, engine, key, store_path


@pytest.fixture
def api(store_path: Path):
    engine = Engine(store_path, workspace="acme")
    key, _ = engine.create_key()
    with TestClient(create_app(store_path)) as client:
        client.headers["X-API-KEY"] = key
        yield Api(client, engine, key, store_path)
    engine.close()


@pytest.fixture
def ready(api: Api) -> dict[str, dict[str, Any]]:
    """The transcript and the text file uploaded (with metadata) and ready."""
    transcript = uploaded(api.client, "ocr-talk.vtt", corpus_bytes(TRANSCRIPT),
                          {"title": "OCR talk", "fiscal_year": 2021, "tickers": ["MSFT"],
                           "custom_metadata": {"team": "ocr"}})
    text = uploaded(api.client, "corpus-readme.md", corpus_bytes(TEXT))
    assert transcript["status"] == "ready" and text["status"] == "ready"
    return {"transcript": transcript, "text": text}


# -- keys, envelopes, request ids --------------------------------------------------------------

def test_missing_and_invalid_keys_in_both_envelopes(api: Api) -> None:
    anon = {"X-API-KEY": ""}
    r = api.client.get("/v1/resources", headers=anon)
    assert r.status_code == 401
    assert r.json() == {"status": "error", "error": {"code": "API_KEY_MISSING",
                                                     "message": "header does not contain api key"}}
    r = api.client.get("/v1/references", params={"chat_message_id": "x"}, headers=anon)
    assert r.status_code == 401
    assert r.json() == {"error": {"code": "API_KEY_MISSING", "msg": "header does not contain api key",
                                  "message": "header does not contain api key"}, "payload": None}
    r = api.client.get("/v1/sessions/whatever", headers={"X-API-KEY": "cw_not-a-key"})
    assert (r.status_code, r.json()["error"]["code"]) == (401, "INVALID_API_KEY")
    r = api.client.get("/v2/analytics/conversations/x/references", headers={"X-API-KEY": "cw_nope"})
    assert (r.status_code, r.json()["error"]["code"], r.json()["payload"]) == (401, "INVALID_API_KEY", None)
    # the same key as a bearer token
    r = api.client.get("/v1/resources", headers={"X-API-KEY": "", "Authorization": f"Bearer {api.key}"})
    assert r.status_code == 200 and r.json()["data"]["total"] == 0
    r = api.client.get("/v1/resources", headers={"X-API-KEY": "", "Authorization": f"Basic {api.key}"})
    assert (r.status_code, r.json()["error"]["code"]) == (401, "API_KEY_MISSING")


def test_request_id_on_every_answer(api: Api) -> None:
    r = api.client.get("/v1/resources", headers={"X-Request-ID": "trace-42.a:b"})
    assert r.headers["X-Request-ID"] == "trace-42.a:b"
    r = api.client.get("/v1/resources", headers={"X-Request-ID": "bad id with spaces"})
    assert r.headers["X-Request-ID"] != "bad id with spaces" and len(r.headers["X-Request-ID"]) == 32
    for response in (api.client.get("/v1/resources", headers={"X-API-KEY": ""}),  # 401
                     api.client.get("/nowhere"),  # 404 route
                     api.client.put("/v1/sessions"),  # 405
                     api.client.get("/v1/resources", params={"limit": 0})):  # 400
        assert len(response.headers["X-Request-ID"]) == 32
    ids = {api.client.get("/v1/resources").headers["X-Request-ID"] for _ in range(3)}
    assert len(ids) == 3


def test_access_log_line_carries_request_id(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    from citewell.logcontext import RequestIdFilter

    caplog.handler.addFilter(RequestIdFilter())  # as citewell serve's log handler does
    try:
        with caplog.at_level(logging.INFO, logger="citewell"):
            r = api.client.post("/v1/sessions", json={"title": "x"}, headers={"X-Request-ID": "req-access-1"})
            other = api.client.get("/v1/resources")
    finally:
        caplog.handler.filters.clear()
    lines = [rec for rec in caplog.records if rec.name == "citewell.access"]
    assert [rec.getMessage().split()[:3] for rec in lines] == [["POST", "/v1/sessions", "200"],
                                                              ["GET", "/v1/resources", "200"]]
    assert [rec.request_id for rec in lines] == ["req-access-1", other.headers["X-Request-ID"]]
    assert r.headers["X-Request-ID"] == "req-access-1"


def test_worker_log_lines_carry_the_upload_request_id(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    from citewell.logcontext import RequestIdFilter

    caplog.handler.addFilter(RequestIdFilter())
    try:
        with caplog.at_level(logging.INFO, logger="citewell"):
            r = upload(api.client, "traced.md", b"# Traced\n\nA line about lighthouses.\n",
                       headers={"X-Request-ID": "upload-7"})
            resource = wait_done(api.client, r.json()["data"]["resource"]["id"])
            # the worker logs once the resource is ready: wait until its job has ended
            assert api.client.app.state.worker.wait_idle(timeout_s=60)
    finally:
        caplog.handler.filters.clear()
    assert r.headers["X-Request-ID"] == "upload-7" and resource["status"] == "ready"
    worker = [rec for rec in caplog.records if rec.name == "citewell.jobs.extraction"]
    assert [(rec.request_id, rec.getMessage()) for rec in worker] == [
        ("upload-7", f"upload {resource['id']} is ready (1 chunks)")]


def test_an_upload_is_streamed_to_disk_not_held_in_memory(api: Api) -> None:
    """Issue 14: a 24 MB upload, sent in pieces, never sits whole in the server's memory
    (it was collected in a bytearray); its bytes reach the store intact."""
    import hashlib
    import tracemalloc

    piece = bytes(range(256)) * 4096  # 1 MB
    boundary = "citewell-boundary-7f3a"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.txt\"\r\n"
            "Content-Type: text/plain\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def send_raw(chunks: list[bytes] | Any) -> tuple[int, dict[str, Any]]:
        """POST /v1/resources straight to the app, the body in pieces (an HTTP test client
        would buffer it whole first)."""
        import asyncio

        scope = {"type": "http", "method": "POST", "path": "/v1/resources", "raw_path": b"/v1/resources",
                 "query_string": b"", "root_path": "", "scheme": "http", "server": ("testserver", 80),
                 "client": ("127.0.0.1", 1), "http_version": "1.1", "asgi": {"version": "3.0"},
                 "headers": [(b"x-api-key", api.key.encode()),
                             (b"content-type", f"multipart/form-data; boundary={boundary}".encode())]}
        pieces = iter(chunks)
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            chunk = next(pieces, None)
            return {"type": "http.request", "body": chunk or b"", "more_body": chunk is not None}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        asyncio.run(api.client.app(scope, receive, send))
        return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))

    def body():
        yield head
        for _ in range(24):
            yield piece
        yield tail

    tracemalloc.start()
    try:
        status, answer = send_raw(body())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 202, answer
    resource = answer["data"]["resource"]
    assert resource["size_bytes"] == 24 << 20
    assert resource["sha256"] == hashlib.sha256(piece * 24).hexdigest()
    assert peak < 8 << 20, peak  # pieces in flight, not the file
    incoming = api.engine.store.blobs.root / ".incoming"
    for _ in range(600):  # processed (it fails: binary bytes are no UTF-8 text); nothing left to spool
        resource = api.client.get(f"/v1/resources/{resource['id']}").json()["data"]["resource"]
        if resource["status"] != "processing":
            break
        time.sleep(0.05)
    assert resource["status"] == "failed" and resource["error"]["code"] == "TEXT_ENCODING"
    assert not [p.name for p in incoming.iterdir()] if incoming.is_dir() else True
    # an upload refused midway leaves no spool file behind
    assert send_raw([head, piece, b"--" + boundary.encode()])[0] == 400
    assert not [p.name for p in incoming.iterdir()] if incoming.is_dir() else True


def test_unknown_route_and_wrong_method(api: Api) -> None:
    r = api.client.get("/v1/nothing-here")
    assert r.status_code == 404
    assert r.json() == {"status": "error", "error": {"code": "NOT_FOUND",
                                                     "message": "The requested resource was not found."}}
    r = api.client.delete("/v1/sessions")
    assert r.status_code == 405 and r.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert r.headers["Allow"] == "OPTIONS, POST"
    # Allow names every method of the path, not only the first route's (GET and POST share /v1/resources)
    r = api.client.put("/v1/resources")
    assert r.status_code == 405 and r.headers["Allow"] == "GET, OPTIONS, POST"
    for path, allow in (("/v1/resources", "GET, OPTIONS, POST"), ("/v1/resources/any-id", "DELETE, GET, OPTIONS"),
                        ("/v2/analytics/sse", "GET, OPTIONS, POST"), ("/rms/viewer", "GET, OPTIONS")):
        r = api.client.options(path)
        assert (r.status_code, r.headers["Allow"], r.content) == (204, allow, b""), path
    assert api.client.options("/v1/nothing-here").status_code == 404
    r = api.client.post("/v1/references")
    assert r.status_code == 405 and r.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert r.json()["payload"] is None  # analytics envelope


def test_validation_failures_are_400_never_422(api: Api) -> None:
    sid = new_session(api.client)
    cases = [
        api.client.post(f"/v1/sessions/{sid}/messages", json={}),  # content missing
        api.client.post(f"/v1/sessions/{sid}/messages", content=b"{not json",
                        headers={"Content-Type": "application/json"}),
        api.client.post(f"/v1/sessions/{sid}/messages", json={"content": "   "}),  # empty, no image
        api.client.post(f"/v1/sessions/{sid}/messages", json={"content": "x", "offsets": "bytes"}),
        api.client.post(f"/v1/sessions/{sid}/messages", json={"content": 5}),
        api.client.post("/v1/sessions", json={"title": ["not", "a", "string"]}),
        api.client.get("/v1/resources", params={"limit": 0}),
        api.client.get("/v1/resources", params={"offset": -1}),
        api.client.get("/v1/resources", params={"status": "done"}),
        api.client.get(f"/v1/sessions/{sid}/messages", params={"offsets": "utf32"}),
        api.client.get("/v1/references", params={"chat_message_id": "x", "offsets": "words"}),
    ]
    for r in cases:
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "INVALID_REQUEST_BODY", r.text
    r = api.client.get("/v1/references")
    assert r.status_code == 400
    assert r.json()["error"] == {"code": "CHAT_MESSAGE_ID_MISSING", "msg": "chat_message_id is required",
                                 "message": "chat_message_id is required"}
    r = api.client.get("/v1/references", params={"chat_message_id": " "})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "CHAT_MESSAGE_ID_MISSING")


def test_unexpected_errors_are_coded_500s_without_a_trace(api: Api, monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    sid = new_session(api.client)

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(Engine, "history", boom)
    monkeypatch.setattr(Engine, "message", boom)
    with caplog.at_level(logging.ERROR, logger="citewell.web"):
        r = api.client.get(f"/v1/sessions/{sid}/messages")
        refs = api.client.get(f"/v2/analytics/conversations/{sid}/references")
        one = api.client.get("/v1/references", params={"chat_message_id": "m"})
    assert r.status_code == 500
    assert r.json() == {"status": "error", "error": {"code": "SERVER_ERROR",
                                                     "message": "An unexpected error occurred on the server."}}
    assert "secret" not in r.text and "Traceback" not in r.text
    for answer in (refs, one):
        assert answer.status_code == 500
        assert answer.json()["error"]["code"] == "GET_REF_FAIL" and answer.json()["payload"] is None
        assert "secret" not in answer.text
    logged = [rec.getMessage() for rec in caplog.records if rec.name == "citewell.web"]
    for answer in (r, refs, one):  # each failure is logged with the answer's request id
        assert any(answer.headers["X-Request-ID"] in line for line in logged)


def test_store_errors_are_server_errors_without_detail(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from citewell import StoreError

    def broken(*a: Any, **k: Any) -> Any:
        raise StoreError("database /secret/path/citewell.sqlite is locked")

    monkeypatch.setattr(Engine, "resource", broken)
    r = api.client.get("/v1/resources/some-id")
    assert (r.status_code, r.json()["error"]["code"]) == (500, "SERVER_ERROR")
    assert "/secret" not in r.text


def test_error_table() -> None:
    from citewell.web.errors import STATUS_BY_CODE, error_body, profile_of, status_for

    assert [status_for(c) for c in ("API_KEY_MISSING", "INVALID_API_KEY", "FORBIDDEN", "NOT_FOUND",
                                    "INVALID_REQUEST_BODY", "INVALID_FILTER", "CHAT_MESSAGE_ID_MISSING",
                                    "DOCUMENT_ID_MISSING", "USER_ID_MISSING", "FILE_TOO_LARGE", "GET_REF_FAIL",
                                    "SERVER_ERROR", "PDF_CORRUPT", "SOMETHING_NEW")] == \
        [401, 401, 403, 404, 400, 400, 400, 400, 400, 413, 500, 500, 400, 500]
    assert all(status_for(code) == status for code, status in STATUS_BY_CODE.items())
    assert [profile_of(p) for p in ("/v1/references", "/v2/analytics/conversations/x/references",
                                    "/v1/sessions", "/v1/resources/x", "/v1/referencesx", "/")] == \
        ["analytics", "analytics", "sessions", "sessions", "sessions", "sessions"]
    assert error_body("analytics", "NOT_FOUND", "m") == {"error": {"code": "NOT_FOUND", "msg": "m", "message": "m"},
                                                         "payload": None}
    assert error_body("sessions", "NOT_FOUND", "m") == {"status": "error", "error": {"code": "NOT_FOUND",
                                                                                     "message": "m"}}


# -- resources -----------------------------------------------------------------------------------

def test_upload_list_get_content(api: Api, ready: dict[str, dict[str, Any]]) -> None:
    transcript, text = ready["transcript"], ready["text"]
    assert transcript["kind"] == "transcript" and transcript["title"] == "OCR talk"
    assert transcript["chunk_count"] > 10 and transcript["file_name"] == "ocr-talk.vtt"
    assert transcript["metadata"]["fiscal_year"] == 2021 and transcript["metadata"]["tickers"] == ["MSFT"]
    assert transcript["custom_metadata"] == {"team": "ocr"}
    assert transcript["workspace_id"] == api.engine.workspace_id and "paths" not in transcript
    assert text["kind"] == "text" and text["title"] == "corpus-readme"
    assert transcript["size_bytes"] == len(corpus_bytes(TRANSCRIPT))

    r = api.client.get("/v1/resources")
    assert r.status_code == 200
    data = r.json()["data"]
    assert (data["total"], data["limit"], data["offset"]) == (2, 50, 0)
    assert [x["id"] for x in data["resources"]] == [transcript["id"], text["id"]]
    page = api.client.get("/v1/resources", params={"limit": 1, "offset": 1}).json()["data"]
    assert [x["id"] for x in page["resources"]] == [text["id"]] and page["total"] == 2
    only = api.client.get("/v1/resources", params={"status": "failed"}).json()["data"]
    assert (only["resources"], only["total"]) == ([], 0)

    r = api.client.get(f"/v1/resources/{transcript['id']}/content")
    assert r.status_code == 200
    assert r.content == corpus_bytes(TRANSCRIPT)
    assert r.headers["content-type"].startswith("text/vtt")
    assert 'filename="ocr-talk.vtt"' in r.headers["content-disposition"]
    r = api.client.get(f"/v1/resources/{text['id']}/content")
    assert r.content == corpus_bytes(TEXT)


def test_same_bytes_twice_give_the_same_resource(api: Api) -> None:
    first = uploaded(api.client, "a.md", b"# Notes\n\nThe zebra crossing was repainted in March.\n")
    r = upload(api.client, "b.md", b"# Notes\n\nThe zebra crossing was repainted in March.\n")
    assert r.status_code == 202
    assert r.json()["data"]["resource"]["id"] == first["id"]
    assert r.json()["data"]["resource"]["status"] == "ready"
    assert api.client.get("/v1/resources").json()["data"]["total"] == 1


def test_delete_resource(api: Api) -> None:
    res = uploaded(api.client, "gone.md", b"# Gone\n\nThis paragraph mentions a purple walrus.\n")
    assert len(blob_files(api.engine.store.blobs.root)) == 1
    r = api.client.delete(f"/v1/resources/{res['id']}")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "data": {"resource_id": res["id"], "deleted": True}}
    for answer in (api.client.get(f"/v1/resources/{res['id']}"), api.client.delete(f"/v1/resources/{res['id']}"),
                   api.client.get(f"/v1/resources/{res['id']}/content")):
        assert (answer.status_code, answer.json()["error"]["code"]) == (404, "NOT_FOUND")
    assert blob_files(api.engine.store.blobs.root) == []
    assert api.client.get("/v1/resources").json()["data"]["total"] == 0


BAD_UPLOADS = [
    ("empty.txt", b"", "EMPTY_FILE"),
    ("slides.docx", b"PK\x03\x04 not a supported format", "UNSUPPORTED_FILE"),
    ("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage without an xref\n", "PDF_CORRUPT"),
    ("bad.vtt", b"WEBVTT\n\n00:00:01.000 --> garbage\nhello\n", "VTT_MALFORMED"),
    ("no-header.vtt", b"not webvtt at all\nhello\n", "VTT_MALFORMED"),
    ("bad.srt", b"1\nnot a time\nhello\n", "SRT_MALFORMED"),
    ("bad.jsonl", b"{not json\nmore\n", "JSONL_MALFORMED"),
    ("latin1.txt", "caf\u00e9 cr\u00e8me br\u00fbl\u00e9e".encode("latin-1"), "TEXT_ENCODING"),
]


@pytest.mark.parametrize(("name", "data", "code"), BAD_UPLOADS, ids=[c[2] + ":" + c[0] for c in BAD_UPLOADS])
def test_bad_upload_fails_with_its_code_and_leaves_nothing(api: Api, name: str, data: bytes, code: str) -> None:
    r = upload(api.client, name, data)
    assert r.status_code == 202
    staged = r.json()["data"]["resource"]
    assert staged["status"] == "processing" and staged["file_name"] == name
    resource = wait_done(api.client, staged["id"])
    assert resource["status"] == "failed"
    assert resource["error"]["code"] == code
    assert name in resource["error"]["message"]
    assert (resource["chunk_count"], resource["blob_key"]) == (0, None)
    assert api.engine.store.resource_chunks(api.engine.workspace_id, resource["id"]) == []
    assert blob_files(api.engine.store.blobs.root) == [] and staged_files(api.engine.store.blobs.root) == []
    r = api.client.get(f"/v1/resources/{resource['id']}/content")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    listed = api.client.get("/v1/resources").json()["data"]
    assert [(x["id"], x["status"]) for x in listed["resources"]] == [(resource["id"], "failed")]


def test_encrypted_pdf_fails_with_pdf_encrypted(api: Api) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="locked text")
    pdf.set_encryption(owner_password="owner", user_password="user")
    resource = uploaded(api.client, "locked.pdf", bytes(pdf.output()))
    assert (resource["status"], resource["error"]["code"]) == ("failed", "PDF_ENCRYPTED")
    assert blob_files(api.engine.store.blobs.root) == []


def test_upload_request_errors(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    c = api.client
    r = c.post("/v1/resources", data={"metadata": "{}"}, files={"other": ("x.txt", b"hi", "text/plain")})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "FILE_MISSING")
    r = c.post("/v1/resources", data={"metadata": "{}"})  # urlencoded, not multipart
    assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_REQUEST_BODY")
    for metadata in ("{not json", "[1, 2]", '"title"', '{"fiscal_year": "soon"}'):
        r = upload(c, "ok.txt", b"fine text", metadata)
        assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_REQUEST_BODY"), metadata
    # issue 14: a clean message for fields of the wrong kind (was Python's "dictionary update sequence …"), and a
    # title is one line of text (a NUL was accepted)
    for metadata, message in (
            ({"custom_metadata": "notadict"}, "metadata: custom_metadata must be a JSON object of fields (such as "
                                              '{"team": "ocr"}), not a string'),
            ({"custom_metadata": [1, 2]}, "metadata: custom_metadata must be a JSON object of fields (such as "
                                          '{"team": "ocr"}), not a list'),
            ({"title": "Q3\u0000report"}, "metadata: title: a title may not contain control characters such as NUL "
                                         "or line breaks (found U+0000 at position 2)"),
            ({"title": {"x": 1}}, "metadata: title must be text, not an object")):
        r = upload(c, "ok.txt", b"fine text", metadata)
        assert (r.status_code, r.json()["error"]) == (400, {"code": "INVALID_REQUEST_BODY", "message": message})
    r = c.post("/v1/sessions", json={"title": "a\u0000b"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_REQUEST_BODY")
    assert "control characters" in r.json()["error"]["message"]
    r = c.post("/v1/resources", content=b"--xyz\r\nbroken", headers={"Content-Type": "multipart/form-data; boundary=xyz"})
    assert r.status_code == 400 and r.json()["error"]["code"] in ("INVALID_REQUEST_BODY", "FILE_MISSING")
    assert c.get("/v1/resources").json()["data"]["total"] == 0
    assert blob_files(api.engine.store.blobs.root) == [] and staged_files(api.engine.store.blobs.root) == []


def test_upload_over_the_cap_is_413(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWELL_MAX_UPLOAD_MB", "0.01")  # 10 KiB
    engine = Engine(store_path, workspace="acme")
    key, _ = engine.create_key()
    with TestClient(create_app(store_path)) as client:
        client.headers["X-API-KEY"] = key
        r = upload(client, "big.txt", b"x" * 20_000)
        assert r.status_code == 413
        assert r.json()["error"]["code"] == "FILE_TOO_LARGE" and "0.01 MB" in r.json()["error"]["message"]
        r = upload(client, "small.txt", b"y" * 5_000)
        assert r.status_code == 202
        assert wait_done(client, r.json()["data"]["resource"]["id"])["status"] == "ready"
        assert client.get("/v1/resources").json()["data"]["total"] == 1
    engine.close()


def test_restart_resumes_pending_uploads(store_path: Path) -> None:
    engine = Engine(store_path, workspace="acme")
    key, _ = engine.create_key()
    staged = engine.upload("left-behind.md", b"# Left\n\nA server stopped before this paragraph was read.\n")
    assert staged.status == "processing"
    with TestClient(create_app(store_path)) as client:
        client.headers["X-API-KEY"] = key
        resource = wait_done(client, staged.id)
    assert resource["status"] == "ready" and resource["chunk_count"] == 1
    engine.close()


@pytest.mark.skipif(not embedder_mod.available(), reason="embedding model not installed")
def test_a_ready_upload_is_embedded_in_the_background_in_hybrid_mode(
        store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWELL_RETRIEVAL_MODE", "hybrid")
    engine = Engine(store_path, workspace="acme")
    key, _ = engine.create_key()
    other = Engine(store_path, workspace="other")  # filled by the CLI, never embedded
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tides.md").write_text("# Tides\n\nHigh tide comes twice a day.\n", encoding="utf-8")
    other.ingest([notes])
    assert other.embedding_coverage() == (0, 1)
    app = create_app(store_path)
    with TestClient(app) as client:
        app.state.worker.wait_embedded()  # the server embeds what the CLI left at its start
        assert other.embedding_coverage() == (1, 1)
        client.headers["X-API-KEY"] = key
        first = uploaded(client, "harbour.md", b"# Harbour\n\nThe ferry leaves the harbour at dawn.\n\n"
                                               b"# Market\n\nThe fish market opens after the ferry lands.\n")
        app.state.worker.wait_embedded()
        assert first["status"] == "ready"
        scope = [Condition(key="resource_id", op="eq", values=(first["id"],))]
        embedded, total = engine.store.vector_coverage(engine.workspace_id, embedder_mod.MODEL_ID,
                                                       conditions=scope)
        assert total == first["chunk_count"] and embedded == total
        # a question then waits for nothing: no EMBEDDINGS_INCOMPLETE warning
        answer = engine.ask("When does the ferry leave?", sync=False)
        assert [w.code for w in answer.warnings] == [] and answer.references[0].resource_id == first["id"]
    engine.close()
    other.close()


@pytest.mark.skipif(not embedder_mod.available(), reason="embedding model not installed")
def test_a_stopping_server_answers_without_embedding(store_path: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWELL_RETRIEVAL_MODE", "hybrid")
    engine = Engine(store_path, workspace="acme")
    key, _ = engine.create_key()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tides.md").write_text("# Tides\n\nHigh tide comes twice a day.\n", encoding="utf-8")
    engine.ingest([notes])
    app = create_app(store_path)
    app.state.worker.backfill = lambda: 0  # keep the start-up embedding out of this test
    with TestClient(app) as client:
        client.headers["X-API-KEY"] = key
        app.state.stopping.set()  # what citewell serve does at SIGTERM, before open requests finish
        session = new_session(client)
        r = client.post(f"/v1/sessions/{session}/messages", json={"content": "How often does high tide come?"})
        assert r.status_code == 200, r.text
        assert "twice a day" in r.json()["data"]["assistant_message"]["content"]  # answered lexically
    assert engine.embedding_coverage() == (0, 1)  # and nothing was embedded for it
    engine.close()


# -- sessions --------------------------------------------------------------------------------------

def test_session_create_and_get(api: Api) -> None:
    r = api.client.post("/v1/sessions", json={"title": "Anticoagulant discharge window"})
    assert r.status_code == 200
    session = r.json()["data"]["session"]
    assert r.json()["status"] == "ok"
    assert set(session) == {"id", "title", "workspace_id", "created_at", "updated_at"}
    assert session["title"] == "Anticoagulant discharge window"
    assert session["workspace_id"] == api.engine.workspace_id
    assert session["created_at"].endswith("Z")
    assert api.client.get(f"/v1/sessions/{session['id']}").json() == r.json()
    untitled = api.client.post("/v1/sessions")  # no body at all
    assert untitled.status_code == 200 and untitled.json()["data"]["session"]["title"] == ""  # always a string
    sid = untitled.json()["data"]["session"]["id"]
    # the first question titles it (seed 001 always shows a title); a later one does not retitle it
    long_question = "  What makes OCR of text\nin photos in the wild hard, and how did deep learning change how " \
                    "recognition works?"
    turn = api.client.post(f"/v1/sessions/{sid}/messages", json={"content": long_question})
    title = "What makes OCR of text in photos in the wild hard, and how did deep learning…"
    assert turn.json()["data"]["session"]["title"] == title and len(title) <= 80
    api.client.post(f"/v1/sessions/{sid}/messages", json={"content": OCR_QUESTION})
    assert api.client.get(f"/v1/sessions/{sid}").json()["data"]["session"]["title"] == title
    assert api.client.get(f"/v1/sessions/{sid}/messages").json()["data"]["session"]["title"] == title
    # a given title stays as given
    titled = api.client.get(f"/v1/sessions/{session['id']}").json()["data"]["session"]
    assert titled["title"] == "Anticoagulant discharge window"
    r = api.client.get("/v1/sessions/00000000-0000-0000-0000-000000000000")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    r = api.client.get("/v1/sessions/00000000-0000-0000-0000-000000000000/messages")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    r = api.client.post("/v1/sessions/00000000-0000-0000-0000-000000000000/messages", json={"content": "q"})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")


def test_ask_in_a_session_then_references(api: Api, ready: dict[str, dict[str, Any]]) -> None:
    transcript = ready["transcript"]
    sid = new_session(api.client, "OCR")
    r = api.client.post(f"/v1/sessions/{sid}/messages", json={"content": OCR_QUESTION})
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["session"]["id"] == sid and data["session"]["updated_at"] >= data["session"]["created_at"]
    user, answer = data["user_message"], data["assistant_message"]
    assert (user["role"], user["content"], user["response"], user["citations"]) == ("user", OCR_QUESTION, None, [])
    assert answer["role"] == "assistant" and answer["response"]["type"] == "answer"
    assert "".join(p["text"] for p in answer["response"]["parts"]) == answer["content"]
    assert "[1]" not in answer["content"]
    assert answer["citations"] and {c["resource_id"] for c in answer["citations"]} == {transcript["id"]}
    assert answer["resource_ids"] == [transcript["id"]]
    sources = [p["source"] for p in answer["response"]["parts"] if p["source"]]
    assert sources and all(s["resource_title"] == "OCR talk" for s in sources)
    assert all("start_time" in s["metadata"] for s in sources)
    assert "offset_unit" not in answer and all("start_index" not in p for p in answer["response"]["parts"])

    listed = api.client.get(f"/v1/sessions/{sid}/messages").json()["data"]
    assert listed["session"]["id"] == sid
    assert listed["messages"] == [user, answer]  # read back exactly as first returned

    stored = api.engine.message(answer["id"])
    chunks = {c.id: c for c in api.engine.store.resource_chunks(api.engine.workspace_id, transcript["id"])}
    r = api.client.get("/v1/references", params={"chat_message_id": answer["id"]})
    # seed 004's ReferencesResponse: the references at the top level, no envelope (text is additive)
    assert r.status_code == 200 and set(r.json()) == {"references", "text"} and r.json()["text"] == stored.text
    refs = r.json()["references"]
    assert [x["citation_idx"] for x in refs] == [str(i) for i in range(1, len(refs) + 1)]
    assert len(refs) == len([x for x in stored.references if x.citation is not None])
    for ref in refs:
        assert ref["id"] == ref["citation_idx"] and ref["search_type"] == "rms"
        assert ref["document_id"] == transcript["id"] and ref["document_name"] == "OCR talk"
        assert ref["s3_file_key"] == transcript["blob_key"]
        assert ref["text"] == chunks[ref["chunk_id"]].text
        assert (ref["text_type"], ref["chunk_text_type"]) == ("paragraph", "transcript")  # seed 004's enum
        assert ref["metadata"]["blocks"] == chunks[ref["chunk_id"]].metadata["blocks"]
        assert ref["metadata"]["fiscal_year"] == 2021 and ref["metadata"]["tickers"] == ["MSFT"]
        assert ref["custom_metadata"] == {"team": "ocr"}
        # external_url is never null: here a signed download of the uploaded file, which opens without a key
        assert ref["external_url"].startswith(f"http://testserver/v1/presigned_url/{transcript['id']}?")
        download = api.client.get(ref["external_url"], headers={"X-API-KEY": ""})
        assert download.status_code == 200 and download.content == api.engine.resource_content(
            transcript["id"])[0].read_bytes()
        assert ref["citation"] == int(ref["citation_idx"])
        assert ref["offset_unit"] == "codepoint"
        assert stored.text[ref["start_index"]:ref["end_index"]] == f"[{ref['citation_idx']}]"
        assert "chat_message_id" not in ref
    # the user message has no references
    r = api.client.get("/v1/references", params={"chat_message_id": user["id"]})
    assert r.status_code == 200 and r.json() == {"references": [], "text": user["content"]}
    r = api.client.get("/v1/references", params={"chat_message_id": "no-such-message"})
    assert (r.status_code, r.json()["error"]["code"], r.json()["payload"]) == (404, "NOT_FOUND", None)

    # a second turn: the conversation route lists both answers' references in order, numbered across the
    # conversation (each keeps its own [N] as citation), so every citation_idx names one reference
    second = api.client.post(f"/v1/sessions/{sid}/messages", json={"content": "How do you label fonts?"})
    assert second.status_code == 200
    second_id = second.json()["data"]["assistant_message"]["id"]
    second_refs = api.client.get("/v1/references", params={"chat_message_id": second_id}).json()
    assert second_refs["references"] and second_refs["references"][0]["citation_idx"] == "1"  # its own numbering
    conv = api.client.get(f"/v2/analytics/conversations/{sid}/references")
    assert conv.status_code == 200 and conv.json()["error"] is None
    both = [(answer["id"], x) for x in refs] + [(second_id, x) for x in second_refs["references"]]
    expected = [{**x, "id": str(k), "citation_idx": str(k), "chat_message_id": mid}
                for k, (mid, x) in enumerate(both, start=1)]
    assert conv.json()["payload"]["references"] == expected
    got = conv.json()["payload"]["references"]
    assert len({x["citation_idx"] for x in got}) == len(got)
    assert [x["citation"] for x in got] == [int(x["citation_idx"]) for _, x in both]
    r = api.client.get("/v2/analytics/conversations/no-such-chat/references")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")


def test_offsets_units(api: Api) -> None:
    uploaded(api.client, "emoji.md", "# Caf\u00e9 \U0001F600\n\nThe \U0001F600 caf\u00e9 serves cr\u00e8me br\u00fbl\u00e9e "
             "every Tuesday since 1999.\n".encode())
    sid = new_session(api.client)
    r = api.client.post(f"/v1/sessions/{sid}/messages",
                        json={"content": "When does the caf\u00e9 serve cr\u00e8me br\u00fbl\u00e9e?", "offsets": "utf16"})
    assert r.status_code == 200, r.text
    answer = r.json()["data"]["assistant_message"]
    assert answer["offset_unit"] == "utf16"
    content16 = answer["content"].encode("utf-16-le")
    for part in answer["response"]["parts"]:
        assert content16[2 * part["start_index"]:2 * part["end_index"]].decode("utf-16-le") == part["text"]
    stored = api.engine.message(answer["id"])
    for unit, encode, width in (("utf8", str.encode, 1), ("utf16", lambda s: s.encode("utf-16-le"), 2),
                                ("codepoint", None, 1)):
        refs = api.client.get("/v1/references", params={"chat_message_id": answer["id"], "offsets": unit}).json()
        assert refs["references"]
        for ref in refs["references"]:
            assert ref["offset_unit"] == unit
            marker = f"[{ref['citation_idx']}]"
            if encode is None:
                assert stored.text[ref["start_index"]:ref["end_index"]] == marker
            else:
                raw = encode(stored.text)[width * ref["start_index"]:width * ref["end_index"]]
                assert raw == encode(marker)
    listed = api.client.get(f"/v1/sessions/{sid}/messages", params={"offsets": "utf8"}).json()["data"]["messages"]
    content8 = listed[1]["content"].encode()
    assert listed[1]["offset_unit"] == "utf8"
    for part in listed[1]["response"]["parts"]:
        assert content8[part["start_index"]:part["end_index"]].decode() == part["text"]


def test_resource_ids_restrict_retrieval(api: Api, ready: dict[str, dict[str, Any]]) -> None:
    text = ready["text"]
    sid = new_session(api.client)
    r = api.client.post(f"/v1/sessions/{sid}/messages", json={"content": OCR_QUESTION, "resource_ids": [text["id"]]})
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["user_message"]["resource_ids"] == [text["id"]]
    assert {c["resource_id"] for c in data["assistant_message"]["citations"]} <= {text["id"]}
    r = api.client.post(f"/v1/sessions/{sid}/messages", json={"content": OCR_QUESTION,
                                                               "resource_ids": [text["id"], "no-such-resource"]})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    # the failed request stored nothing
    assert len(api.client.get(f"/v1/sessions/{sid}/messages").json()["data"]["messages"]) == 2


def test_pdf_reference_has_boxes(api: Api) -> None:
    pdf = uploaded(api.client, "otsl.pdf", corpus_bytes(PDF), {"title": "OTSL paper", "document_category": "report",
                                                                 "document_subcategory": "Annual Report"})
    assert (pdf["status"], pdf["kind"]) == ("ready", "pdf")
    sid = new_session(api.client)
    r = api.client.post(f"/v1/sessions/{sid}/messages",
                        json={"content": "What speed up does OTSL give in inference runtime over HTML?"})
    assert r.status_code == 200
    answer = r.json()["data"]["assistant_message"]
    assert {c["resource_id"] for c in answer["citations"]} == {pdf["id"]}
    refs = api.client.get("/v1/references", params={"chat_message_id": answer["id"]}).json()["references"]
    assert refs
    for ref in refs:
        # seed 004's enums: "report" is no document_category (left out: absent, never null; kept in
        # as_given), "Annual Report" names the document_subcategory annual_report
        meta = ref["metadata"]
        assert ref["document_name"] == "OTSL paper" and "document_category" not in meta
        assert meta["document_subcategory"] == "annual_report"
        assert meta["as_given"] == {"document_category": "report", "document_subcategory": "Annual Report"}
        assert ref["metadata"]["blocks"] is None
        boxes = ref["metadata"]["offset"]
        assert boxes and all(b["page"] == 1 and 0 <= b["top"] <= 1 and 0 < b["width"] <= 1 for b in boxes)


# -- image questions -------------------------------------------------------------------------------

def test_image_url_data_and_content_urls(api: Api, ready: dict[str, dict[str, Any]]) -> None:
    sid = new_session(api.client)
    image = pdf_bytes("OCR of text in photos in the wild")
    data_url = "data:application/pdf;base64," + base64.b64encode(image).decode()
    before = set(Path(tempfile.gettempdir()).glob("citewell-image-*"))
    r = api.client.post(f"/v1/sessions/{sid}/messages", json={"content": "", "image_url": data_url})
    assert r.status_code == 200, r.text
    user, answer = r.json()["data"]["user_message"], r.json()["data"]["assistant_message"]
    assert user["image_url"] == data_url and answer["image_url"] == data_url and user["content"] == ""
    assert answer["content"].startswith("The question was taken from the image's text layer")
    assert {c["resource_id"] for c in answer["citations"]} == {ready["transcript"]["id"]}
    assert set(Path(tempfile.gettempdir()).glob("citewell-image-*")) == before  # the temp file is gone

    # this API's own content URL, as a path and as an absolute URL on this host
    pdf = uploaded(api.client, "question.pdf", image)
    for url in (f"/v1/resources/{pdf['id']}/content", f"http://testserver/v1/resources/{pdf['id']}/content"):
        r = api.client.post(f"/v1/sessions/{sid}/messages", json={"content": "", "image_url": url})
        assert r.status_code == 200, r.text
        assert r.json()["data"]["user_message"]["image_url"] == url
        assert r.json()["data"]["assistant_message"]["content"].startswith("The question was taken from the image")

    bad = ["https://example.com/cat.png", f"http://evil.example/v1/resources/{pdf['id']}/content",
           "data:image/png,notbase64", "data:image/png;base64,@@@", "data:text/html;base64,PGI+",
           "file:///etc/passwd", "data:image/png;base64,"]
    for url in bad:
        r = api.client.post(f"/v1/sessions/{sid}/messages", json={"content": "what is this?", "image_url": url})
        assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_REQUEST_BODY"), url
    r = api.client.post(f"/v1/sessions/{sid}/messages",
                        json={"content": "", "image_url": "/v1/resources/no-such-id/content"})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    too_big = "data:image/png;base64," + base64.b64encode(b"\x89PNG" + b"\0" * (10 * 1024 * 1024)).decode()
    r = api.client.post(f"/v1/sessions/{sid}/messages", json={"content": "", "image_url": too_big})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_REQUEST_BODY")
    assert "10 MB" in r.json()["error"]["message"]
