"""Sessions: metadata filters, explicit "no restriction", warnings on the answer; and request
limits found by adversarial testing (oversized bodies, a keyless broken body, a non-ASCII
Last-Event-ID, a deeply nested mentions cursor)."""

from __future__ import annotations

import json

import base64
from typing import Any

import pytest

from citewell import Engine
from citewell.web import create_app

from .test_api_routes import TestClient, new_session, uploaded

NOTES = b"The head barista is Marco.\n"
TALK = b"WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Alice>The new oven arrives in July.\n"


@pytest.fixture
def client(store_location):
    store = store_location
    with Engine(store, workspace="w") as engine:
        key, _ = engine.create_key()
    with TestClient(create_app(store)) as c:
        c.headers["X-API-KEY"] = key
        yield c


def ask(client: TestClient, sid: str, **body: Any) -> dict[str, Any]:
    r = client.post(f"/v1/sessions/{sid}/messages", json=body)
    assert r.status_code == 200, r.text
    return r.json()["data"]


def test_resource_restriction_is_not_inherited_by_a_standalone_question(client: TestClient) -> None:
    uploaded(client, "notes.txt", NOTES, {"publisher": "Cafe"})
    talk = uploaded(client, "talk.vtt", TALK)
    sid = new_session(client)
    first = ask(client, sid, content="When does the oven arrive?", resource_ids=[talk["id"]])
    assert "July" in first["assistant_message"]["content"]
    second = ask(client, sid, content="Who is the head barista?")
    assert second["user_message"]["resource_ids"] == []
    assert second["assistant_message"]["content"].startswith("The head barista is Marco")
    # a follow-up that refers back keeps the restriction; an explicit empty list lifts it
    third = ask(client, sid, content="And why?", resource_ids=[])
    assert third["user_message"]["resource_ids"] == []


def test_metadata_filters_in_a_session(client: TestClient) -> None:
    uploaded(client, "notes.txt", NOTES, {"publisher": "Cafe"})
    uploaded(client, "talk.vtt", TALK, {"publisher": "Bakery"})
    sid = new_session(client)
    data = ask(client, sid, content="Who is the head barista?", filters={"publisher": "bakery"})
    assert "Marco" not in data["assistant_message"]["content"]
    data = ask(client, sid, content="Who is the head barista?", filters=["publisher=cafe"])
    assert data["assistant_message"]["content"].startswith("The head barista is Marco")
    bad = client.post(f"/v1/sessions/{sid}/messages", json={"content": "x", "filters": {"colour": "red"}})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_FILTER"


def test_warnings_reach_the_session_answer(client: TestClient) -> None:
    sid = new_session(client)
    data = ask(client, sid, content="Who is the head barista?", filters={"publisher": "nobody"})
    assistant = data["assistant_message"]
    assert [w["code"] for w in assistant["warnings"]] == ["NO_MATCHING_RESOURCES"]
    uploaded(client, "notes.txt", NOTES)
    answered = ask(client, sid, content="Who is the head barista?", resource_ids=[])
    assert "warnings" not in answered["assistant_message"]  # the seed's shape when all is well


def test_reference_offsets_index_the_text_the_payload_carries(client: TestClient) -> None:
    uploaded(client, "notes.txt", "Café 😀 note: the head barista is Marco.\n".encode())
    sid = new_session(client)
    mid = ask(client, sid, content="Who is the head barista?")["assistant_message"]["id"]
    for unit in ("codepoint", "utf16", "utf8"):
        body = client.get("/v1/references", params={"chat_message_id": mid, "offsets": unit}).json()
        text, (ref,) = body["text"], body["references"]
        encoded = {"codepoint": text, "utf16": text.encode("utf-16-le"), "utf8": text.encode()}[unit]
        width = 2 if unit == "utf16" else 1
        piece = encoded[ref["start_index"] * width:ref["end_index"] * width]
        assert (piece if unit == "codepoint" else piece.decode("utf-16-le" if unit == "utf16" else "utf-8")) == "[1]"
    conv = client.get(f"/v2/analytics/conversations/{sid}/references").json()["payload"]
    assert conv["messages"] == [{"chat_message_id": mid, "text": body["text"]}]
    assert conv["references"][0]["chat_message_id"] == mid


def test_a_keyless_request_with_a_broken_body_is_401_not_400(tmp_path) -> None:
    with TestClient(create_app(tmp_path / "s.sqlite")) as c:
        for path, envelope in (("/v1/sessions", "status"), ("/v1/ask", None), ("/v2/analytics/sse", "payload")):
            r = c.post(path, content=b"{not json", headers={"Content-Type": "application/json"})
            assert r.status_code == 401 and r.headers["x-request-id"], (path, r.text)
            body = r.json()
            assert body["error"]["code"] == "API_KEY_MISSING"
            assert (envelope is None and set(body) == {"error"}) or envelope in body
        assert c.get("/openapi.json").status_code == 200  # the docs stay public


# -- request limits and odd headers (adversarial testing) ------------------------------------

def test_an_oversized_json_body_is_413_before_it_is_parsed(client: TestClient, monkeypatch) -> None:
    monkeypatch.setenv("CITEWELL_MAX_BODY_MB", "1")
    big = b'{"question": "' + b"a" * (2 << 20) + b'"}'
    declared = client.post("/v1/ask", content=big, headers={"Content-Type": "application/json"})
    assert declared.status_code == 413 and declared.json()["error"]["code"] == "REQUEST_TOO_LARGE"

    def chunked():
        yield big[: 1 << 20]
        yield big[1 << 20:]

    streamed = client.post("/v1/ask", content=chunked(), headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413 and streamed.headers["x-request-id"]
    small = client.post("/v1/sessions", content=iter([b'{"title": "ok"}']),
                        headers={"Content-Type": "application/json"})
    assert small.status_code == 200 and small.json()["data"]["session"]["title"] == "ok"


def test_a_content_length_of_thousands_of_digits_is_413_not_500(client: TestClient) -> None:
    """Issue 14: ``int()`` refuses 4,301+ digits. The header is sent as it is (raw ASGI:
    HTTP clients would correct it)."""
    import asyncio

    async def call(path: str, content_type: bytes) -> tuple[int, dict]:
        scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
                 "root_path": "", "scheme": "http", "server": ("testserver", 80), "client": ("127.0.0.1", 1),
                 "http_version": "1.1", "asgi": {"version": "3.0"},
                 "headers": [(b"x-api-key", client.headers["X-API-KEY"].encode()), (b"content-type", content_type),
                             (b"content-length", b"9" * 5000)]}
        sent: list[dict] = []

        async def receive() -> dict:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        await client.app(scope, receive, send)
        return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))

    assert asyncio.run(call("/v1/ask", b"application/json")) == (413, {"error": {
        "code": "REQUEST_TOO_LARGE", "message": "the request body is larger than 16 MB"}})
    status, body = asyncio.run(call("/v1/resources", b"multipart/form-data; boundary=xyz"))
    assert (status, body["error"]["code"]) == (413, "FILE_TOO_LARGE")


def test_a_non_ascii_last_event_id_is_400(client: TestClient) -> None:
    r = client.get("/v2/analytics/sse", params={"chat_message_id": "m"},
                   headers={"Last-Event-ID": "m:\u00b2".encode("latin-1")})
    assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_REQUEST_BODY"


def test_a_deeply_nested_cursor_is_400(client: TestClient) -> None:
    for raw in (b"[" * 100000 + b"]" * 100000, b'["a", "b", "c"]' * 1000):
        cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        r = client.post("/v1/mentions", json={"cursor": cursor})
        assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_REQUEST_BODY"
