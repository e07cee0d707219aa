"""Request limits and odd headers found by adversarial testing: oversized bodies, a
non-ASCII Last-Event-ID, a deeply nested mentions cursor."""

from __future__ import annotations

import base64

import pytest

from citewell import Engine
from citewell.web import create_app

from .test_api_routes import TestClient


@pytest.fixture
def client(tmp_path):
    store = tmp_path / "s.sqlite"
    with Engine(store, workspace="w") as engine:
        key, _ = engine.create_key()
    with TestClient(create_app(store)) as c:
        c.headers["X-API-KEY"] = key
        yield c


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


def test_a_non_ascii_last_event_id_is_400(client: TestClient) -> None:
    r = client.get("/v2/analytics/sse", params={"chat_message_id": "m"},
                   headers={"Last-Event-ID": "m:\u00b2".encode("latin-1")})
    assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_REQUEST_BODY"


def test_a_deeply_nested_cursor_is_400(client: TestClient) -> None:
    for raw in (b"[" * 100000 + b"]" * 100000, b'["a", "b", "c"]' * 1000):
        cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        r = client.post("/v1/mentions", json={"cursor": cursor})
        assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_REQUEST_BODY"
