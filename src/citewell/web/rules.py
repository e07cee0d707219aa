"""JSON Schemas that say exactly what the routes accept (issue 14).

The OpenAPI document is a contract: a request it calls valid must not be refused with a
400 (``tests/test_api_schemathesis.py`` checks this with schemathesis's
``positive_data_acceptance``). Types alone say too little — a question must have a
character that is not whitespace, a filter key must be known and its value readable — so
the rules the routes apply are written here once as schemas, and the request models
(:mod:`citewell.web.schemas`) and route parameters attach them. Where a rule cannot be
stated in a schema (which of two query parameters to give), the schema is the stricter
and the description says the rest.

Patterns are written to mean the same in Python's ``re``, ECMAScript and Rust regexes (no
lookaround, explicit character classes: ``\\s`` alone differs between them).
"""

from __future__ import annotations

from typing import Any

from ..digits import MAX_DIGITS
from ..retrieve.filters import ALIASES, KEYS, KINDS, RANGE_KEYS
from ..validtext import BIDI_CONTROLS, TEXT_FORBIDDEN, TITLE_FORBIDDEN

#: Whitespace by any reading (Python's ``str.strip``, ECMAScript's and Rust's ``\\s``, the
#: invisible zero width space and BOM): a character outside it is text for all of them.
_BLANK = "\\s\\x1c-\\x1f\\x85\\u200b\\ufeff"
#: Whitespace by every reading (ASCII spaces, tabs, line breaks): padding ``strip`` removes.
_SPACE = " \\t\\n\\r\\x0b\\x0c"
#: A string with at least one character that is not whitespace.
NONBLANK = f"[^{_BLANK}]"
#: The longest question, in characters (:data:`citewell.answer.turn.MAX_QUESTION_CHARS`).
MAX_QUESTION_CHARS = 8000
#: The longest title, in characters (:data:`citewell.engine.MAX_TITLE_CHARS`).
MAX_TITLE_CHARS = 1000
#: Custom string format of ``POST /v1/mentions`` cursors: only what ``next_cursor`` gave.
CURSOR_FORMAT = "citewell-cursor"


def alternatives(schema: dict[str, Any], overrides: list[dict[str, Any]],
                 required: list[list[str]] | None = None) -> None:
    """Make an object ``schema`` (a model's, in place) one of several complete shapes: each
    shape is the schema's own properties with ``overrides[i]`` replacing some of them (and
    ``required[i]`` added to its required names). A rule over two fields (``content`` may
    be blank only with an ``image_url``) is stated as such shapes, each complete, which
    every validator and generator reads alike."""
    properties = schema.pop("properties", {})
    base = schema.pop("required", [])
    shapes = []
    for i, override in enumerate(overrides):
        shape: dict[str, Any] = {"type": "object", "properties": {**properties, **override}}
        names = [*base, *(required[i] if required else [])]
        if names:
            shape["required"] = list(dict.fromkeys(names))
        shapes.append(shape)
    schema["anyOf"] = shapes


def nonblank(max_length: int | None = None) -> dict[str, Any]:
    """A string with a character that is not whitespace (at most ``max_length`` characters)."""
    schema: dict[str, Any] = {"type": "string", "pattern": NONBLANK}
    if max_length is not None:
        schema["maxLength"] = max_length
    return schema


def question() -> dict[str, Any]:
    """A question: not blank, at most :data:`MAX_QUESTION_CHARS` characters."""
    return nonblank(MAX_QUESTION_CHARS)


def title() -> dict[str, Any]:
    """A title: one line of text (no control character), at most :data:`MAX_TITLE_CHARS`."""
    return {"type": "string", "pattern": f"^[^{TITLE_FORBIDDEN}]*$", "maxLength": MAX_TITLE_CHARS}


def name(max_length: int = MAX_TITLE_CHARS) -> dict[str, Any]:
    """A name people pick an entity by (a tracking agent's; also its keywords and
    authors): a title (one line) without bidirectional formatting characters, not blank,
    at most ``max_length`` characters (:func:`citewell.validtext.name_problem`)."""
    return {"allOf": [{"type": "string", "pattern": f"^[^{TITLE_FORBIDDEN}{BIDI_CONTROLS}]*$",
                       "maxLength": max_length}, nonblank()]}


def watched_text() -> dict[str, Any]:
    """A tracking agent's query: a question without control characters but tab and line
    breaks (:func:`citewell.validtext.text_problem`)."""
    return {"allOf": [question(), {"type": "string", "pattern": f"^[^{TEXT_FORBIDDEN}]*$"}]}


def citation_number() -> dict[str, Any]:
    """``citation_idx``: the ``[N]`` of an answer, 1 or more, at most 18 digits."""
    return {"type": "string", "pattern": "^0*[1-9][0-9]*$", "maxLength": MAX_DIGITS}


# -- upload metadata ----------------------------------------------------------------------------

def upload_metadata() -> dict[str, Any]:
    """The ``metadata`` part of an upload: a JSON object read like a manifest row
    (:func:`citewell.ingest.manifest.entry_from_row`): ``title``, ``custom_metadata``, the
    typed fields (also inside a ``metadata`` object, and under their FinanceBench names);
    any other key is custom metadata. The typed fields that are checked are checked here."""
    space = f"[{_SPACE}]*"
    year = {"anyOf": [{"type": "integer", "minimum": 1000, "maximum": 9999},
                      {"type": "string", "pattern": f"^{space}(?:[Ff][Yy])?{space}[0-9]{{4}}{space}$"}, {"type": "null"}]}
    quarter = {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 4},
                         {"type": "string", "pattern": f"^(?:{space}[Qq]?[1-4]{space})?$"}, {"type": "null"}]}
    day = {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}, {"type": "null"}]}
    name = {"anyOf": [title(), {"type": "integer"}, {"type": "number"}, {"type": "null"}]}
    typed = {"fiscal_year": year, "fiscal_quarter": quarter, "calendar_date": day}
    return {"type": "object", "additionalProperties": True, "properties": {
        "title": name, "doc_name": name, "doc_period": year, **typed,
        "custom_metadata": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        "metadata": {"anyOf": [{"type": "object", "additionalProperties": True, "properties": typed},
                               {"type": "null"}]}}}


# -- filters ----------------------------------------------------------------------------------

_YEAR = "(?:[Ff][Yy])?[0-9]{4}"
_DATE = "[1-9][0-9]{3}(?:-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|1[0-9]|2[0-8]))?)?"
#: A plain value of a text key as a string: not blank, and not ``>=``/``<=`` (a bound).
_TEXT = f"^(?:[{_SPACE}]+[^{_BLANK}]|[^{_BLANK}<>]|[<>](?:[^=]|$))"
_SCALAR = [{"type": "integer"}, {"type": "number"}, {"type": "boolean"}]


def _value(key: str, *, bound: bool) -> dict[str, Any]:
    """The schema of one value of filter ``key`` in the object form (``bound``: may be a
    ``>=``/``<=`` string, for a range key)."""
    op = "(?:>=|<=)" if bound and key in RANGE_KEYS else None
    if key == "kind":
        return {"type": "string", "enum": list(KINDS)}
    if key == "fiscal_quarter":
        return {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 4},
                          {"type": "string", "pattern": f"^[{_SPACE}]*[Qq]?[1-4][{_SPACE}]*$"}]}
    if key == "fiscal_year":
        lead = f"(?:{op}[{_SPACE}]*|[{_SPACE}]*)" if op else f"[{_SPACE}]*"
        return {"anyOf": [{"type": "integer", "minimum": 1000, "maximum": 9999},
                          {"type": "string", "pattern": f"^{lead}{_YEAR}[{_SPACE}]*$"}]}
    if key in ("calendar_date", "created_at"):
        lead = f"(?:{op}[{_SPACE}]*|[{_SPACE}]*)" if op else f"[{_SPACE}]*"
        return {"anyOf": [{"type": "integer", "minimum": 1000, "maximum": 9999},
                          {"type": "string", "pattern": f"^{lead}{_DATE}[{_SPACE}]*$"}]}
    return {"anyOf": [{"type": "string", "pattern": _TEXT}, *_SCALAR]}


def _expression(key: str) -> str:
    """The ``key=value`` (``key>=value``, ``key<=value`` for a range key) strings of ``key``."""
    names = "|".join([key, *[alias for alias, target in ALIASES.items() if target == key]])
    lead = f"^[{_SPACE}]*(?:{names})[{_SPACE}]*"
    ops = "="
    tail = f"[{_SPACE}]*"
    if key == "kind":
        return f"{lead}={tail}(?:{'|'.join(KINDS)}){tail}$"
    if key == "fiscal_quarter":
        return f"{lead}={tail}[Qq]?[1-4]{tail}$"
    if key == "fiscal_year":
        return f"{lead}{ops}{tail}{_YEAR}{tail}$"
    if key in ("calendar_date", "created_at"):
        return f"{lead}{ops}{tail}{_DATE}{tail}$"
    return f"{lead}=[^=]*[^{_BLANK}]"


def filters() -> dict[str, Any]:
    """The ``filters`` of a question: an object of known keys (or their aliases), each a
    value or a list of values of its kind (a range key's value may be one ``>=``/``<=``
    bound), or a list of ``key=value`` strings, or null. What the server refuses
    (``INVALID_FILTER``) is outside it. The list form also takes ``key>=value`` and
    ``key<=value`` for a range key, one of each at most: a count no schema that every
    generator reads can state, so the schema leaves bounds to the object form."""
    names = [*KEYS, *ALIASES]
    properties = {}
    for name in names:
        key = ALIASES.get(name, name)
        properties[name] = {"anyOf": [_value(key, bound=True),
                                      {"type": "array", "items": _value(key, bound=False)}]}
    expression = {"type": "string", "anyOf": [{"pattern": _expression(key)} for key in KEYS]}
    return {"anyOf": [
        {"type": "object", "properties": properties, "additionalProperties": False},
        {"type": "array", "items": expression},
        {"type": "null"}]}


__all__ = ["CURSOR_FORMAT", "MAX_QUESTION_CHARS", "MAX_TITLE_CHARS", "NONBLANK", "citation_number",
           "filters", "nonblank", "question", "title", "upload_metadata"]
