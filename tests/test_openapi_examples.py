"""OpenAPI examples taken from real answers (issue 6): ``src/citewell/web/openapi_examples.json``.

``scripts/openapi_examples.py`` records them from the live app. These tests record them
again on a fresh store and compare the *structure* (keys and JSON types; ids, times and
lengths of lists ignored) with the file, validate every example against the models its
route documents, check that every JSON operation of the OpenAPI document has a recorded
success example, and that :func:`add_examples` puts them where OpenAPI tools look.

When a route's answer changes shape on purpose, regenerate the file:
``python scripts/openapi_examples.py``.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import TypeAdapter

from citewell.client import SSEDecoder
from citewell.client._stream import StreamState
from citewell.web import create_app
from citewell.web.openapi import add_examples
from citewell.web.routes import ROUTERS

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "openapi_examples.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("citewell_openapi_examples", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


examples_script = load_script()


@pytest.fixture(scope="module")
def stored() -> dict[str, Any]:
    return json.loads(examples_script.OUTPUT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def openapi(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return create_app(tmp_path_factory.mktemp("openapi") / "s.sqlite").openapi()


def _differences(old: Any, new: Any, where: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{where}/{k}: only in the file" for k in old if k not in new]
        out += [f"{where}/{k}: only in the new recording" for k in new if k not in old]
        for k in old:
            if k in new:
                out += _differences(old[k], new[k], f"{where}/{k}")
        return out
    return [] if old == new else [f"{where}: {json.dumps(old)[:200]} != {json.dumps(new)[:200]}"]


def test_a_fresh_recording_has_the_structure_of_the_file(stored: dict[str, Any], tmp_path: Path) -> None:
    fresh = examples_script.record(tmp_path)
    problems = _differences(examples_script.structure(stored), examples_script.structure(fresh))
    assert not problems, ("the API's answers changed shape; if on purpose, run python scripts/openapi_examples.py\n"
                          + "\n".join(problems[:40]))
    # normalised: no raw id or run time is left in the file
    text = examples_script.OUTPUT.read_text(encoding="utf-8")
    assert examples_script.dump(stored) == text
    ids = set(examples_script._UUID.findall(text))
    assert ids and all(i.startswith("00000000-0000-4000-8000-") for i in ids)


def _route_models() -> dict[tuple[str, str], Any]:
    return {(route.path, method.lower()): route for router in ROUTERS for route in router.routes
            for method in getattr(route, "methods", ())}


def _check_stream(text: str) -> None:
    """An SSE example: parsed by the client, every event typed, ids ``<message>:1…n``, done last."""
    decoder = SSEDecoder()
    state = StreamState(max_retries=0, backoff=0, backoff_max=0)
    events = [state.accept(sse) for sse in decoder.feed(text.encode()) + decoder.close()]
    assert events and all(e is not None for e in events)
    mid = events[0].chat_message_id
    assert [e.id for e in events] == [f"{mid}:{i}" for i in range(1, len(events) + 1)]
    assert all(e.data["event_name"] == e.event for e in events)
    assert events[0].event == "conversation" and events[-1].event in ("done", "error") and state.text


def test_every_example_validates_against_its_documented_models(stored: dict[str, Any]) -> None:
    routes = _route_models()
    checked = 0
    for path, methods in stored.items():
        for method, statuses in methods.items():
            route = routes.get((path, method))
            assert route is not None, f"{method.upper()} {path}: no such route"
            for status, named in statuses.items():
                code = int(status)
                if 200 <= code < 300:
                    model = route.response_model
                else:
                    assert code in route.responses, f"{method.upper()} {path} does not document {status}"
                    model = route.responses[code].get("model")
                for body in named.values():
                    if isinstance(body, str):
                        _check_stream(body)
                    elif model is not None:
                        TypeAdapter(model).validate_python(body)
                    else:
                        continue
                    checked += 1
    assert checked >= 25


def _json_success(operation: dict[str, Any]) -> str | None:
    for status, response in operation.get("responses", {}).items():
        if status.startswith("2") and "application/json" in response.get("content", {}):
            return status
    return None


#: Operations that cannot succeed yet (none: patterns come from the recorded tracking agent's run).
NEVER_SUCCEED: set[str] = set()


def test_every_json_operation_has_a_recorded_success(stored: dict[str, Any], openapi: dict[str, Any]) -> None:
    missing = []
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            status = _json_success(operation) if isinstance(operation, dict) else None
            if status is None:
                continue
            recorded = stored.get(path, {}).get(method, {})
            if not any(s.startswith("2") for s in recorded) and f"{method.upper()} {path}" not in NEVER_SUCCEED:
                missing.append(f"{method.upper()} {path}")
    assert not missing, f"no recorded example (extend scripts/openapi_examples.py): {missing}"
    # every error envelope has an example: sessions, analytics, chats
    envelopes = {json.dumps(sorted(body), sort_keys=True) for methods in stored.values()
                 for statuses in methods.values() for s, named in statuses.items() if s >= "400"
                 for body in named.values() if isinstance(body, dict)}
    assert {'["error", "status"]', '["error", "payload"]', '["error"]'} <= envelopes


def test_add_examples_puts_them_where_openapi_tools_look(stored: dict[str, Any], openapi: dict[str, Any]) -> None:
    document = add_examples(copy.deepcopy(openapi), stored)
    by_refs = document["paths"]["/v1/mentions"]["post"]["responses"]["200"]["content"]["application/json"]
    assert by_refs["examples"]["by_refs"]["value"] == stored["/v1/mentions"]["post"]["200"]["by_refs"]
    not_found = document["paths"]["/v1/chats/{chat_id}"]["get"]["responses"]["404"]["content"]["application/json"]
    assert not_found["examples"]["example"]["value"]["error"]["code"] == "NOT_FOUND"
    if "/v2/analytics/sse" in stored:
        stream = document["paths"]["/v2/analytics/sse"]["post"]["responses"]["200"]["content"]["text/event-stream"]
        assert stream["examples"]["example"]["value"].startswith("id: ")
    json.dumps(document)  # still a JSON document


def test_normalising_keeps_the_data_times_and_numbers_ids() -> None:
    from datetime import UTC, datetime

    normalise = examples_script.Normaliser(datetime(2026, 5, 1, 12, 0, tzinfo=UTC))
    out = normalise({"id": "6F1B1C0E-5D2A-4C3B-9A8B-7C6D5E4F3A2B", "again": "x/6f1b1c0e-5d2a-4c3b-9a8b-7c6d5e4f3a2b",
                     "other": "0b8d4c2e-1a3f-4e5d-8c7b-9a6f5e4d3c2b", "created_at": "2026-05-01T11:59:58.123Z",
                     "post": "2022-01-18T10:00:00Z",
                     "url": "/v1/presigned_url/d?workspace_id=w&expires=1777777777&signature=AbC-_9"})
    assert out == {"id": "00000000-0000-4000-8000-000000000001", "again": "x/00000000-0000-4000-8000-000000000001",
                   "other": "00000000-0000-4000-8000-000000000002", "created_at": "2025-01-01T00:00:00.000Z",
                   "post": "2022-01-18T10:00:00Z",
                   "url": "/v1/presigned_url/d?workspace_id=w&expires=1735689600&signature=SIGNATURE"}
    assert examples_script.shape({"a": [1, 2.5, {"b": None}], "c": True}) == \
        {"a": ["number", {"b": "null"}], "c": "boolean"}


def test_the_served_document_carries_the_recorded_examples(tmp_path: Path) -> None:
    from citewell.web.openapi import load_examples

    document = create_app(tmp_path / "s.sqlite").openapi()
    stored = load_examples()
    served = document["paths"]["/v1/mentions"]["post"]["responses"]["200"]["content"]["application/json"]
    assert served["examples"]["by_refs"]["value"] == stored["/v1/mentions"]["post"]["200"]["by_refs"]
    assert all("422" not in op.get("responses", {}) for item in document["paths"].values() for op in item.values()
               if isinstance(op, dict))
