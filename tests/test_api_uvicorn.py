"""The HTTP API through a real server: ``citewell serve`` (uvicorn) on 127.0.0.1, httpx.

The key is made with ``citewell keys create`` on the same store file the server uses
(the CLI and the server share one SQLite file). Every route is called once; the server's
log (stderr) must carry one access line per request with its request id.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .conftest import CORPUS
from .servers import free_port, running

TRANSCRIPT = CORPUS / "transcripts" / "twiml-409_deep-learning-ocr_cha-zhang.vtt"


def citewell(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "citewell", *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment that keeps the CLI off the user's config and data folders."""
    return {**os.environ, "CITEWELL_CONFIG": "", "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}


def test_every_route_through_uvicorn(tmp_path: Path, env: dict[str, str], store_location: str | Path) -> None:
    store = store_location
    made = citewell("keys", "create", "--workspace", "acme", "--store", str(store), env=env)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("cw_")

    port = free_port()
    log_path = tmp_path / "server.log"
    command = [sys.executable, "-m", "citewell", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--store", str(store)]
    with running(command, port, log_path, env) as base, httpx.Client(base_url=base, timeout=30.0) as client:
        r = client.get("/v1/resources", headers={"X-Request-ID": "no-key-1"})
        assert (r.status_code, r.json()["error"]["code"]) == (401, "API_KEY_MISSING")
        assert r.headers["X-Request-ID"] == "no-key-1"

        client.headers["Authorization"] = f"Bearer {key}"
        up = client.post("/v1/resources", files={"file": ("ocr.vtt", TRANSCRIPT.read_bytes(), "text/vtt")},
                         data={"metadata": '{"title": "OCR talk"}'}, headers={"X-Request-ID": "upload-1"})
        assert up.status_code == 202, up.text
        rid = up.json()["data"]["resource"]["id"]
        for _ in range(600):
            resource = client.get(f"/v1/resources/{rid}").json()["data"]["resource"]
            if resource["status"] != "processing":
                break
            time.sleep(0.05)
        assert (resource["status"], resource["title"], resource["kind"]) == ("ready", "OCR talk", "transcript")

        listed = client.get("/v1/resources", params={"limit": 10}).json()["data"]
        assert [x["id"] for x in listed["resources"]] == [rid] and listed["total"] == 1
        content = client.get(f"/v1/resources/{rid}/content")
        assert content.status_code == 200 and content.content == TRANSCRIPT.read_bytes()

        sid = client.post("/v1/sessions", json={"title": "served"}).json()["data"]["session"]["id"]
        assert client.get(f"/v1/sessions/{sid}").json()["data"]["session"]["title"] == "served"
        turn = client.post(f"/v1/sessions/{sid}/messages",
                           json={"content": "What makes OCR of text in photos in the wild hard?"})
        assert turn.status_code == 200, turn.text
        answer = turn.json()["data"]["assistant_message"]
        assert {c["resource_id"] for c in answer["citations"]} == {rid}
        messages = client.get(f"/v1/sessions/{sid}/messages").json()["data"]["messages"]
        assert [m["id"] for m in messages] == [turn.json()["data"]["user_message"]["id"], answer["id"]]

        refs = client.get("/v1/references", params={"chat_message_id": answer["id"]})
        assert refs.status_code == 200 and set(refs.json()) == {"references", "text"}
        assert {x["document_id"] for x in refs.json()["references"]} == {rid}
        conv = client.get(f"/v2/analytics/conversations/{sid}/references", headers={"X-Request-ID": "conv-1"})
        assert [x["chat_message_id"] for x in conv.json()["payload"]["references"]] == \
            [answer["id"]] * len(refs.json()["references"])

        gone = client.delete(f"/v1/resources/{rid}")
        assert gone.json() == {"status": "ok", "data": {"resource_id": rid, "deleted": True}}
        assert client.get(f"/v1/resources/{rid}").status_code == 404
        # the stored answer keeps its references after the resource is gone
        assert client.get("/v1/references", params={"chat_message_id": answer["id"]}).json() \
            ["references"][0]["document_id"] == rid
    log = log_path.read_text()
    assert "Traceback" not in log
    assert "[no-key-1] GET /v1/resources 401" in log
    assert "[upload-1] POST /v1/resources 202" in log
    assert f"[upload-1] upload {rid} is ready" in log  # the worker's line carries the upload's id
    assert f"[conv-1] GET /v2/analytics/conversations/{sid}/references 200" in log
