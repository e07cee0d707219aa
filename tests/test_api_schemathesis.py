"""schemathesis against the app's own OpenAPI document (issue 4, "Done when").

Every operation gets generated requests twice: with a valid key and without one. Checks:
no 5xx (``not_a_server_error``), every answer matches the documented schema
(``response_schema_conformance``) and status (``status_code_conformance``). Examples are
bounded so the file stays well under a minute.

With the key, generated ids are half the time swapped for real ones of a seeded
workspace (a ready transcript, a session with a cited answer, a posts dataset and a chat
whose turn settled with post citations, a tracking agent with an alert and a pattern), so
the success answers are validated too, not only the 404s. The chats routes (issue 5) and
the tracking-agent and pattern routes (issue 17) are in the same runs.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (positive_data_acceptance, response_schema_conformance,
                                              status_code_conformance)

from citewell import Engine
from citewell.agents import Agents
from citewell.web import create_app
from citewell.web.errors import ApiError
from citewell.web.routes.mentions import decode_cursor, encode_cursor
from citewell.web.rules import CURSOR_FORMAT

from .conftest import CORPUS

CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance]
MAX_EXAMPLES = 40

_tmp = Path(tempfile.mkdtemp(prefix="citewell-schemathesis-"))
atexit.register(shutil.rmtree, _tmp, ignore_errors=True)
_store = _tmp / "citewell.sqlite"


def _seed() -> tuple[str, dict[str, str]]:
    """A workspace with a ready transcript, a session holding one cited turn, a posts file
    and a chats-profile turn citing posts; its key and ids."""
    with Engine(_store, workspace="acme") as engine:
        key, _ = engine.create_key()
        data = (CORPUS / "transcripts" / "twiml-409_deep-learning-ocr_cha-zhang.vtt").read_bytes()
        resource = engine.upload("ocr.vtt", data, metadata={"title": "OCR talk"})
        engine.process(resource.id)
        chat = engine.chat("seeded")
        answer = engine.ask("What makes OCR of text in photos in the wild hard?", chat_id=chat.id, sync=False)
        assert answer.references, "the seeded answer must cite"
        posts = engine.upload("stocktwits.jsonl", (CORPUS / "posts" / "stocktwits_2022-06_07.jsonl").read_bytes())
        engine.process(posts.id)
        pending = engine.begin_turn("What do people say about $BTC.X and $ETH.X?", filters={"kind": "post"})
        settled = engine.complete_turn(pending)
        assert settled.status == "settled" and settled.references, "the seeded turn must cite posts"
        agents = Agents(engine)
        agent = agents.create(query="$BTC.X $ETH.X price", interval_s=3600)
        ran = agents.run(agent.id)
        assert ran.alert is not None and ran.patterns, "the seeded agent must alert and find a pattern"
        ids = {"agent_id": agent.id, "alert_id": str(ran.alert.id), "pattern_id": ran.patterns[0].id,
               "resource_id": resource.id, "session_id": chat.id, "conversation_id": chat.id,
               "chat_message_id": str(answer.id), "chat_id": pending.chat.id, "message_id": str(settled.id),
               "research_preview_id": str(settled.id), "dataset_id": posts.id,
               "document_id": resource.id, "citation_idx": "1"}
    return key, ids


KEY, REAL_IDS = _seed()
# a mentions cursor is what next_cursor gave (its schema says so with this format): real cursors of any key
schemathesis.openapi.format(CURSOR_FORMAT, st.lists(st.text(st.characters(exclude_categories=("Cs",))),
                                                    min_size=4, max_size=4).map(lambda key: encode_cursor(tuple(key))))
app = create_app(_store)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


def _use_real_ids(case: Any) -> None:
    """Swap generated ids for real ones in about half the cases, and mostly drop the
    acting-for parameters (a plain key with them is 403), deterministically per value."""
    if case.query:
        for name in ("organization_id", "user_id", "user_email"):
            if name in case.query and zlib.crc32(repr(case.query[name]).encode()) % 4 != 0:
                del case.query[name]
    body = case.body if isinstance(case.body, dict) else None
    if body is not None and isinstance(body.get("cursor"), str):
        try:  # the cursor format is only what next_cursor gave; some phases ignore the registered format
            decode_cursor(body["cursor"])
        except ApiError:
            body["cursor"] = encode_cursor((body["cursor"], "", "", ""))
    if case.method.upper() == "DELETE":
        return  # keep the seeded resource for the other operations
    for container in (case.path_parameters, case.query):
        if not container:
            continue
        for name, value in list(container.items()):
            if name in REAL_IDS and zlib.crc32(repr(value).encode()) % 2 == 0:
                container[name] = REAL_IDS[name]


#: Operations that take a signed link instead of a key (``signature`` in the query).
SIGNED_PREFIXES = ("/v1/presigned_url/", "/rms/viewer")


def _settings(fn: Any) -> Any:
    return settings(max_examples=MAX_EXAMPLES, deadline=None,
                    suppress_health_check=list(HealthCheck))(fn)


def _real_cursor(case: Any) -> None:
    """A mentions ``cursor`` is only what ``next_cursor`` gave (its schema's format says so):
    a drawn one that is not such a cursor becomes one. Some phases draw strings of a custom
    format from Hypothesis's pool of the project's own string constants (``"STATIC"``, names
    in ``__all__``) instead of the format's registered strategy."""
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("cursor"), str):
        try:
            decode_cursor(body["cursor"])
        except ApiError:
            body["cursor"] = encode_cursor(("2022-01-01T00:00:00Z", "reddit", body["cursor"][:40], ""))


@schema.parametrize()
@_settings
def test_with_a_valid_key(case: Any) -> None:
    _use_real_ids(case)
    _real_cursor(case)
    case.call_and_validate(headers={"X-API-KEY": KEY}, checks=[*CHECKS, positive_data_acceptance])


@schema.parametrize()
@_settings
def test_without_a_key(case: Any) -> None:
    headers = dict(case.headers or {})
    for name in list(headers):
        if name.lower() in ("x-api-key", "authorization"):
            del headers[name]
    case.headers = headers
    response = case.call_and_validate(checks=CHECKS)
    # signed links (presigned downloads, the viewer) need no key: a generated signature is 403
    signed = (403,) if case.path.startswith(SIGNED_PREFIXES) else ()
    # OPTIONS (sent by the coverage phase) names the path's methods; on a signed route no key is asked
    options = (204,) if response.request.method == "OPTIONS" and case.path.startswith(SIGNED_PREFIXES) else ()
    assert response.status_code in (400, 401, 405, *signed, *options), (response.status_code, response.text)


def test_the_seeded_ids_answer() -> None:
    """The real ids the valid-key run swaps in do reach data (else it would only see 404s)."""
    with Engine(_store, workspace="acme") as engine:
        deadline = time.monotonic() + 30
        while engine.resource(REAL_IDS["resource_id"]).status == "processing" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine.resource(REAL_IDS["resource_id"]).status == "ready"
        assert engine.message(REAL_IDS["chat_message_id"]).references
        assert engine.message(REAL_IDS["message_id"]).chat_id == REAL_IDS["chat_id"]
        assert engine.resource(REAL_IDS["dataset_id"]).kind == "post"
        agents = Agents(engine)
        assert agents.alert(REAL_IDS["alert_id"])[0] == REAL_IDS["agent_id"]
        assert agents.pattern(REAL_IDS["pattern_id"]).size >= 2


def test_openapi_documents_every_error_envelope_and_no_422() -> None:
    doc = app.openapi()
    operations = [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()]
    assert sorted((m.upper(), p) for p, m, _ in operations) == sorted([
        ("POST", "/v1/sessions"), ("GET", "/v1/sessions/{session_id}"), ("PATCH", "/v1/sessions/{session_id}"),
        ("GET", "/v1/workspace"), ("GET", "/v1/resources/{resource_id}/pages/{page}"), ("GET", "/rms/viewer/data"),
        ("GET", "/v1/sessions/{session_id}/messages"), ("POST", "/v1/sessions/{session_id}/messages"),
        ("POST", "/v1/resources"), ("GET", "/v1/resources"), ("GET", "/v1/resources/{resource_id}"),
        ("DELETE", "/v1/resources/{resource_id}"), ("GET", "/v1/resources/{resource_id}/content"),
        ("GET", "/v1/references"), ("GET", "/v2/analytics/conversations/{conversation_id}/references"),
        ("POST", "/v1/ask"), ("GET", "/v1/chats"), ("GET", "/v1/chats/{chat_id}"),
        ("GET", "/v1/chats/{chat_id}/messages"), ("GET", "/v1/chats/{chat_id}/messages/{message_id}"),
        ("POST", "/v1/mentions"), ("GET", "/v1/datasets/{dataset_id}"),
        ("GET", "/v1/research_previews/{research_preview_id}"), ("GET", "/v1/patterns/{pattern_id}"),
        ("GET", "/v1/patterns"), ("POST", "/v1/tracking_agents"), ("GET", "/v1/tracking_agents"),
        ("GET", "/v1/tracking_agents/{agent_id}"), ("PATCH", "/v1/tracking_agents/{agent_id}"),
        ("DELETE", "/v1/tracking_agents/{agent_id}"), ("POST", "/v1/tracking_agents/{agent_id}/run"),
        ("GET", "/v1/tracking_agents/{agent_id}/messages"),
        ("GET", "/v1/tracking_agents/{agent_id}/messages/{alert_id}"),
        ("GET", "/v1/presigned_url"), ("GET", "/v1/presigned_url/{document_id}"), ("GET", "/rms/viewer"),
        ("GET", "/rms/viewer/page"), ("POST", "/v2/analytics/sse"), ("GET", "/v2/analytics/sse")])
    chats = ("/v1/ask", "/v1/chats", "/v1/mentions", "/v1/datasets", "/v1/research_previews", "/v1/patterns",
             "/v1/tracking_agents")
    for path, _, op in operations:
        envelope = "AnalyticsError" if path.startswith(("/v1/references", "/v2/analytics", "/v1/presigned_url",
                                                        "/rms")) else \
            "ChatsError" if path.startswith(chats) else "SessionsError"
        assert "422" not in op["responses"]
        if path == "/v1/presigned_url/{document_id}":  # a signed link: no key, no 401, nobody to act for
            assert "security" not in op and "401" not in op["responses"]
            assert {"workspace_id", "expires", "signature"} <= {p["name"] for p in op["parameters"]}
            continue
        for status in ("400", "401", "403", "404", "500"):
            ref = op["responses"][status]["content"]["application/json"]["schema"]["$ref"]
            assert ref == f"#/components/schemas/{envelope}", (path, status)
        assert {"ApiKeyAuth": []} in op["security"] and {"BearerAuth": []} in op["security"]
        assert {"organization_id", "user_id", "user_email"} <= {p["name"] for p in op.get("parameters", [])}
    assert doc["paths"]["/v1/resources"]["post"]["responses"]["413"]
    assert "202" in doc["paths"]["/v1/ask"]["post"]["responses"]
    assert "HTTPValidationError" not in doc["components"]["schemas"]
