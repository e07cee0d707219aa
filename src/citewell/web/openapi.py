"""The OpenAPI document the app serves: FastAPI's, without its 422 answers (validation
failures are 400 here), with examples recorded from real responses.

The examples live in ``openapi_examples.json`` beside this module; ``scripts/openapi_examples.py``
records them from a live app (ids and times normalised) and ``tests/test_openapi_examples.py``
re-records them and fails when an answer's structure changed without the file.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

#: ``{path: {method: {status: {example name: body}}}}``; a body that is a string is an
#: event stream's text.
Examples = dict[str, dict[str, dict[str, dict[str, Any]]]]


def load_examples() -> Examples:
    """The recorded examples shipped with the package (``{}`` when the file is absent)."""
    resource = files("citewell.web").joinpath("openapi_examples.json")
    return json.loads(resource.read_text("utf-8")) if resource.is_file() else {}


def add_examples(openapi: dict[str, Any], examples: Examples) -> dict[str, Any]:
    """Put ``examples`` into an OpenAPI document, in place: for each recorded answer,
    ``responses[status].content[media type].examples[name] = {"value": body}`` (the media
    type the route documents: ``application/json``, or ``text/event-stream`` for a stream).
    Answers of operations or statuses the document lacks are skipped. Returns ``openapi``."""
    for path, methods in examples.items():
        for method, statuses in methods.items():
            operation = openapi.get("paths", {}).get(path, {}).get(method)
            if not isinstance(operation, dict):
                continue
            for status, named in statuses.items():
                response = operation.get("responses", {}).get(status)
                if not isinstance(response, dict):
                    continue
                content = response.setdefault("content", {})
                stream = any(isinstance(body, str) for body in named.values())
                media = "text/event-stream" if stream else "application/json"
                target = content.setdefault(media, {})
                target.setdefault("examples", {}).update(
                    {name: {"summary": f"a recorded {status} answer", "value": body} for name, body in named.items()})
    return openapi


def apply_parameter_rules(parameter: dict[str, Any]) -> None:
    """A parameter's rules that FastAPI cannot declare, in place: ``x-schema`` in its schema
    replaces the schema (:mod:`citewell.web.rules`), ``x-required`` makes it required (the
    route itself may still take it absent, e.g. when another parameter replaces it, as its
    description says)."""
    schema = parameter.get("schema")
    if not isinstance(schema, dict):
        return
    if schema.pop("x-required", False):
        parameter["required"] = True
    override = schema.pop("x-schema", None)
    if isinstance(override, dict):
        for key in ("description", "title", "default"):
            if key in schema and key not in override:
                override[key] = schema[key]
        parameter["schema"] = override


def _drop_choice(schema: Any, value: str) -> None:
    """Remove ``value`` from the ``enum`` of ``schema`` (or of its ``anyOf`` alternatives), in place."""
    if not isinstance(schema, dict):
        return
    if isinstance(schema.get("enum"), list) and value in schema["enum"]:
        schema["enum"] = [v for v in schema["enum"] if v != value]
    for option in schema.get("anyOf", []):
        _drop_choice(option, value)


def _required_body(operation: dict[str, Any]) -> None:
    """A request body a route documents as required (``openapi_extra``) while its function
    takes it optional (another parameter may replace it) is not null: its ``null``
    alternative goes, in place."""
    body = operation.get("requestBody")
    if not isinstance(body, dict) or not body.get("required"):
        return
    for media in body.get("content", {}).values():
        schema = media.get("schema", {})
        options = schema.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options:
            kept = [o for o in options if o != {"type": "null"}]
            media["schema"] = {k: v for k, v in schema.items() if k != "anyOf"} | (
                {"anyOf": kept} if len(kept) > 1 else kept[0])


def build_openapi(app: FastAPI, *, examples: bool = True) -> dict[str, Any]:
    """The app's OpenAPI document (cached on the app): no 422 answers nor their schemas,
    and the recorded examples when ``examples``."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict):
                operation.get("responses", {}).pop("422", None)
                for parameter in operation.get("parameters", []):
                    apply_parameter_rules(parameter)
                _required_body(operation)
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    llm = getattr(app.state, "llm", None)
    if llm is not None and not getattr(llm, "configured", True):  # this server cannot answer with an LLM
        for component in components.values():
            for shape in [component, *component.get("anyOf", [])]:  # a model of several shapes has its fields in each
                _drop_choice(shape.get("properties", {}).get("generator"), "llm")
    if examples:
        add_examples(schema, load_examples())
    app.openapi_schema = schema
    return schema


__all__ = ["Examples", "add_examples", "apply_parameter_rules", "build_openapi", "load_examples"]
