"""Record real answers of the HTTP API as OpenAPI examples: ``src/citewell/web/openapi_examples.json``.

The API is served in process (FastAPI's TestClient) on a fresh temporary store; a key is
made with :meth:`Engine.create_key`; a text file, a VTT transcript and a posts JSONL
written here are uploaded and waited for; then every JSON route is called with real
values (and a few error answers, one per envelope), and each answer body is kept.

Ids and times are normalised so that a re-run gives the same file when nothing changed:
every UUID becomes ``00000000-0000-4000-8000-<n>`` (numbered in order of first appearance),
every time within two days of the run becomes ``2025-01-01T00:00:00…Z`` (same precision),
and the ``expires``/``signature`` of signed links become fixed values. Times written by
this script's data (the posts' 2022 dates) stay.

The file maps ``path → method → status → {example name: body}`` (the shape of an OpenAPI
``paths`` object), e.g. ``["/v1/mentions"]["post"]["200"]["by_refs"]``; an SSE route's
example is the event stream text. :func:`citewell.web.openapi.add_examples` puts them into an OpenAPI
document (``content[media type].examples``), for the app to use.

    python scripts/openapi_examples.py            # rewrite the file
    python scripts/openapi_examples.py --check    # exit 1 when the structure changed

``tests/test_openapi_examples.py`` regenerates the examples and compares their structure
(keys and JSON types) with the file, and validates each against the route's models.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "src" / "citewell" / "web" / "openapi_examples.json"
sys.path.insert(0, str(ROOT / "src"))

from citewell.web.openapi import Examples  # noqa: E402 - after the path above

TEXT = ("Acme revenue was $12.4 million in 2022. Acme gross margin was 41 percent in 2022.\n\n"
        "Acme opened a new factory in Ohio in 2022.\n")
VTT = ("WEBVTT\n\n00:00:01.000 --> 00:00:06.000\n<v Ana>Acme revenue grew in 2022 because wind turbine orders "
       "doubled.\n\n00:00:06.000 --> 00:00:12.000\n<v Ben>Turbine demand should stay strong next year.\n")
POSTS = [
    {"source": "reddit", "id": "t3_a1", "text": "Activision puts are printing after the Microsoft news.",
     "created_at": "2022-01-18T10:00:00Z", "author": "u/puts_guy", "score": 120, "num_comments": 14,
     "url": "https://www.reddit.com/r/wallstreetbets/comments/a1/"},
    {"source": "reddit", "id": "t3_a2", "text": "Selling my Activision puts, the Microsoft deal ended them.",
     "created_at": "2022-01-19T09:30:00Z", "author": "u/bagholder", "score": 45, "num_comments": 3,
     "url": "https://www.reddit.com/r/wallstreetbets/comments/a2/"},
    {"source": "stocktwits", "id": "9001", "text": "$ATVI puts are the trade of the week, Activision falls.",
     "created_at": "2022-01-18T15:00:00Z", "author": "trader9", "likes": 3,
     "url": "https://stocktwits.com/trader9/message/9001"},
]
CHATS_QUESTION = "What happened to Activision puts after the Microsoft news?"


# -- normalising ------------------------------------------------------------------------------------

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_SIGNED = re.compile(r"\b(expires|signature)=([A-Za-z0-9_\-%.]+)")


class Normaliser:
    """Stable placeholders for the ids and times of one recording (see the module docstring)."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime.now(UTC)
        self.ids: dict[str, str] = {}

    def _id(self, match: re.Match[str]) -> str:
        key = match.group(0).lower()
        if key not in self.ids:
            self.ids[key] = f"00000000-0000-4000-8000-{len(self.ids) + 1:012d}"
        return self.ids[key]

    def _time(self, match: re.Match[str]) -> str:
        y, mo, d, h, mi, s, frac, zone = match.groups()
        try:
            moment = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=UTC)
        except ValueError:
            return match.group(0)
        if abs(moment - self.now) > timedelta(days=2):
            return match.group(0)  # a time of the data, not of the run
        return "2025-01-01T00:00:00" + ("." + "0" * (len(frac) - 1) if frac else "") + zone

    @staticmethod
    def _signed(match: re.Match[str]) -> str:
        return f"{match.group(1)}=" + ("1735689600" if match.group(1) == "expires" else "SIGNATURE")

    def text(self, value: str) -> str:
        """``value`` with its UUIDs, run times and link signatures replaced."""
        value = _UUID.sub(self._id, value)
        value = _TIME.sub(self._time, value)
        return _SIGNED.sub(self._signed, value)

    def __call__(self, value: Any) -> Any:
        """A JSON value with every string normalised (object keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self(v) for k, v in value.items()}
        return value


# -- structure ----------------------------------------------------------------------------------------

def shape(value: Any) -> Any:
    """The structure of a JSON value: objects as ``{key: shape}``, arrays as the sorted
    distinct shapes of their items (so lengths do not matter), scalars as their JSON type
    (``number`` for ints and floats alike). An SSE example (text) is the list of its event
    names with the keys of their data."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        distinct = {json.dumps(shape(v), sort_keys=True) for v in value}
        return [json.loads(s) for s in sorted(distinct)]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, str) and value.startswith("id: ") and "\nevent: " in value:
        return sse_shape(value)
    return "string"


def sse_shape(text: str) -> list[Any]:
    """An event stream as ``[[event name, sorted data keys], …]`` (distinct, in order)."""
    out: list[Any] = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" not in fields:
            continue
        item = [fields["event"], sorted(json.loads(fields.get("data", "{}")))]
        if item not in out:
            out.append(item)
    return out


def structure(examples: Examples) -> dict[str, Any]:
    """``path → method → status → name → shape`` of every example."""
    return {path: {method: {status: {name: shape(body) for name, body in named.items()}
                            for status, named in statuses.items()}
                   for method, statuses in methods.items()}
            for path, methods in examples.items()}


# -- recording ----------------------------------------------------------------------------------------

def _wait(client: Any, resource_id: str) -> dict[str, Any]:
    for _ in range(1200):
        resource = client.get(f"/v1/resources/{resource_id}").json()["data"]["resource"]
        if resource["status"] != "processing":
            return resource
        time.sleep(0.025)
    raise RuntimeError(f"resource {resource_id} still processing")


def _settle(client: Any, chat_id: str, message_id: str) -> dict[str, Any]:
    for _ in range(1200):
        message = client.get(f"/v1/chats/{chat_id}/messages/{message_id}").json()
        if message["status"] != "pending":
            return message
        time.sleep(0.025)
    raise RuntimeError(f"message {message_id} still pending")


def record(workdir: Path) -> Examples:
    """Serve the API on a fresh store in ``workdir``, call its routes, return the
    normalised examples (see the module docstring)."""
    from citewell import Engine
    from citewell.web import create_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    store = workdir / "store" / "citewell.sqlite"
    with Engine(store, workspace="acme") as engine:
        key, _ = engine.create_key()
    app = create_app(store, max_upload_mb=0.01, agent_tick_s=0)  # agents run when called here
    paths = set(app.openapi().get("paths", {}))
    examples: Examples = {}
    normalise = Normaliser()

    def keep(path: str, method: str, response: Any, name: str = "example") -> Any:
        """Keep ``response`` (normalised) as example ``name`` of its status; return its raw body."""
        status = str(response.status_code)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            body: Any = response.text
        else:
            body = response.json()
        examples.setdefault(path, {}).setdefault(method, {}).setdefault(status, {})[name] = normalise(body)
        return body

    with TestClient(app) as client:
        anonymous: Callable[..., Any] = client.get
        client.headers["X-API-KEY"] = key

        # resources
        up = client.post("/v1/resources", files={"file": ("acme-2022.txt", TEXT.encode(), "text/plain")},
                         data={"metadata": json.dumps({"title": "Acme 2022", "fiscal_year": 2022,
                                                       "tickers": ["ACME"]})})
        keep("/v1/resources", "post", up)
        text_id = up.json()["data"]["resource"]["id"]
        talk_id = client.post("/v1/resources", files={"file": ("acme-call.vtt", VTT.encode(), "text/vtt")}) \
            .json()["data"]["resource"]["id"]
        posts_id = client.post("/v1/resources", files={"file": ("wsb.jsonl", "".join(
            json.dumps(p) + "\n" for p in POSTS).encode(), "application/jsonl")}).json()["data"]["resource"]["id"]
        for rid in (text_id, talk_id, posts_id):
            assert _wait(client, rid)["status"] == "ready", rid
        keep("/v1/resources", "post", client.post("/v1/resources", files={
            "file": ("big.txt", b"a" * 20_000, "text/plain")}))
        keep("/v1/resources", "get", client.get("/v1/resources", params={"limit": 2}))
        keep("/v1/resources", "get", client.get("/v1/resources", headers={"X-API-KEY": ""}))
        keep("/v1/resources/{resource_id}", "get", client.get(f"/v1/resources/{talk_id}"))
        keep("/v1/resources/{resource_id}", "get", client.get("/v1/resources/no-such-resource"))

        # sessions
        session = keep("/v1/sessions", "post", client.post("/v1/sessions", json={"title": "Acme numbers"}))
        sid = session["data"]["session"]["id"]
        keep("/v1/sessions/{session_id}", "get", client.get(f"/v1/sessions/{sid}"))
        turn = keep("/v1/sessions/{session_id}/messages", "post", client.post(
            f"/v1/sessions/{sid}/messages", json={"content": "What was Acme revenue in 2022?", "offsets": "utf16"}))
        keep("/v1/sessions/{session_id}/messages", "post", client.post(
            f"/v1/sessions/{sid}/messages", json={"content": "  "}))
        keep("/v1/sessions/{session_id}/messages", "get", client.get(f"/v1/sessions/{sid}/messages"))
        answer_id = turn["data"]["assistant_message"]["id"]

        # references (analytics)
        keep("/v1/references", "get", client.get("/v1/references", params={"chat_message_id": answer_id}))
        keep("/v1/references", "get", client.get("/v1/references", params={"chat_message_id": ""}))
        keep("/v1/references", "get", client.get("/v1/references", params={"chat_message_id": "no-such-message"}))
        keep("/v1/references", "get", anonymous("/v1/references", params={"chat_message_id": answer_id},
                                                headers={"X-API-KEY": "cw_wrong"}))
        keep("/v2/analytics/conversations/{conversation_id}/references", "get",
             client.get(f"/v2/analytics/conversations/{sid}/references"))

        # chats (seed 000)
        accepted = keep("/v1/ask", "post", client.post("/v1/ask", json={"question": CHATS_QUESTION,
                                                                         "filters": {"source": "reddit"}}))
        keep("/v1/ask", "post", client.post("/v1/ask", json={"question": "x", "filters": {"no_such_key": 1}}))
        chat_id, message_id = accepted["chat_id"], accepted["message_id"]
        _settle(client, chat_id, message_id)
        keep("/v1/chats/{chat_id}/messages/{message_id}", "get",
             client.get(f"/v1/chats/{chat_id}/messages/{message_id}", params={"offsets": "utf16"}))
        keep("/v1/chats/{chat_id}/messages", "get", client.get(f"/v1/chats/{chat_id}/messages",
                                                               params={"limit": 50}))
        keep("/v1/chats", "get", client.get("/v1/chats"))
        keep("/v1/chats", "get", client.get("/v1/chats", headers={"X-API-KEY": ""}))
        keep("/v1/chats/{chat_id}", "get", client.get(f"/v1/chats/{chat_id}"))
        keep("/v1/chats/{chat_id}", "get", client.get("/v1/chats/no-such-chat"))
        keep("/v1/mentions", "post", client.post("/v1/mentions", json={"post_refs": [
            {"source": "reddit", "id": "t3_a1"}, {"source": "reddit", "id": "t3_nope"}]}), "by_refs")
        keep("/v1/mentions", "post", client.post("/v1/mentions", json={"query": "Activision", "limit": 2}),
             "by_query")
        keep("/v1/datasets/{dataset_id}", "get", client.get(f"/v1/datasets/{posts_id}"))
        keep("/v1/research_previews/{research_preview_id}", "get",
             client.get(f"/v1/research_previews/{message_id}"))
        keep("/v1/patterns/{pattern_id}", "get", client.get("/v1/patterns/no-such-pattern"))

        # tracking agents and patterns (issue 17)
        agent = keep("/v1/tracking_agents", "post", client.post("/v1/tracking_agents", json={
            "query": "Activision puts", "keywords": ["puts"], "interval_s": 900}))
        keep("/v1/tracking_agents", "post", client.post("/v1/tracking_agents", json={
            "query": "Activision puts", "filters": {"no_such_key": 1}}))
        agent_path = f"/v1/tracking_agents/{agent['id']}"
        run = keep("/v1/tracking_agents/{agent_id}/run", "post", client.post(f"{agent_path}/run"))
        keep("/v1/tracking_agents", "get", client.get("/v1/tracking_agents"))
        keep("/v1/tracking_agents/{agent_id}", "get", client.get(agent_path))
        keep("/v1/tracking_agents/{agent_id}/messages", "get", client.get(f"{agent_path}/messages"))
        keep("/v1/tracking_agents/{agent_id}/messages/{alert_id}", "get",
             client.get(f"{agent_path}/messages/{run['alert']['id']}"))
        found = keep("/v1/patterns", "get", client.get("/v1/patterns"))
        for pattern in found["patterns"][:1]:
            keep("/v1/patterns/{pattern_id}", "get", client.get(f"/v1/patterns/{pattern['id']}"))
        keep("/v1/tracking_agents/{agent_id}", "patch", client.patch(agent_path, json={"state": "paused"}))
        keep("/v1/tracking_agents/{agent_id}/run", "post", client.post(f"{agent_path}/run"))
        keep("/v1/tracking_agents/{agent_id}", "delete", client.delete(agent_path))

        # documents and the answer stream (when the app has them)
        if "/v1/presigned_url" in paths:
            signed = keep("/v1/presigned_url", "get", client.get("/v1/presigned_url",
                                                                 params={"document_id": text_id}))
            if "/v1/presigned_url/{document_id}" in paths:
                url = signed["payload"]["url"].replace("signature=", "signature=x")
                keep("/v1/presigned_url/{document_id}", "get", anonymous(url, headers={"X-API-KEY": ""}))
        if "/v2/analytics/sse" in paths:
            with client.stream("POST", "/v2/analytics/sse", json={"query": "What was Acme revenue in 2022?"}) as r:
                r.read()
                keep("/v2/analytics/sse", "post", r)
            keep("/v2/analytics/sse", "get", client.get("/v2/analytics/sse"))

        # the web app's routes (last: their new ids do not renumber the examples above)
        other = client.post("/v1/sessions", json={}).json()["data"]["session"]["id"]
        keep("/v1/sessions/{session_id}", "patch", client.patch(f"/v1/sessions/{other}", json={"title": "Acme 2022"}))
        keep("/v1/workspace", "get", client.get("/v1/workspace"))
        keep("/rms/viewer/data", "get", client.get("/rms/viewer/data",
                                                   params={"chat_message_id": answer_id, "citation_idx": "1"}))
        keep("/v1/resources/{resource_id}", "delete", client.delete(f"/v1/resources/{talk_id}"))
    return examples


def dump(examples: Examples) -> str:
    """The file's text (stable: two-space indent, non-ASCII kept, newline at the end)."""
    return json.dumps(examples, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Record the examples and write them (``--check``: compare structure, write nothing)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the recorded structure differs")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    # lexical retrieval, as the test suite runs it: hybrid answers on a fresh store depend
    # on how much the embedding budget got through, so they would not record the same twice
    os.environ["CITEWELL_RETRIEVAL_MODE"] = "lexical"
    with tempfile.TemporaryDirectory(prefix="citewell-examples-") as tmp:
        examples = record(Path(tmp))
    if args.check:
        stored = json.loads(args.output.read_text(encoding="utf-8"))
        same = structure(stored) == structure(examples)
        print("the examples match" if same else "the examples changed: run python scripts/openapi_examples.py")
        return 0 if same else 1
    args.output.write_text(dump(examples), encoding="utf-8")
    count = sum(len(named) for methods in examples.values() for statuses in methods.values()
                for named in statuses.values())
    print(f"wrote {count} examples of {len(examples)} paths to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
