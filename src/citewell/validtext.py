"""Text that can be stored and sent: lone surrogates replaced.

Python strings may hold lone surrogates (U+D800–U+DFFF): undecodable command-line bytes
come in that way, and so does a JSON string escape such as ``"\\ud800"``. No UTF-8
encoder accepts them, so one such character reaching the store or a response breaks
every later read of it. Every text that crosses an edge (a question, upload metadata, a
title, an error message) goes through :func:`valid_text` or :func:`valid_json`, which
replace each lone surrogate with U+FFFD (the replacement character).
"""

from __future__ import annotations

import re
from typing import Any


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (unchanged when it has none);
    a high-low surrogate pair becomes the character it encodes."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def valid_json(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings, scalars) with :func:`valid_text`
    applied to every string, keys included; other values are returned as they are."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(k) if isinstance(k, str) else k: valid_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_json(v) for v in value]
    if isinstance(value, tuple):
        return tuple(valid_json(v) for v in value)
    return value


#: Characters a title may not hold: C0 control characters (NUL, line breaks, escape …) and DEL.
TITLE_FORBIDDEN = "\x00-\x1f\x7f"
_TITLE_FORBIDDEN = re.compile(f"[{TITLE_FORBIDDEN}]")


def title_problem(title: str) -> str | None:
    """Why ``title`` cannot be a title (a title is one line of text: no NUL, line break or
    other control character, issue 14), or None when it can."""
    match = _TITLE_FORBIDDEN.search(title)
    if match is None:
        return None
    return (f"a title may not contain control characters such as NUL or line breaks (found U+{ord(match.group()):04X} "
            f"at position {match.start()})")


#: Bidirectional formatting characters (embeddings, overrides, isolates, marks: Unicode
#: UAX #9), which make a name display as other text than it is ("Trojan Source",
#: CVE-2021-42574): refused in names people pick an entity by (:func:`name_problem`).
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
#: Characters a watched text (a tracking agent's query, keyword or author) may not hold:
#: C0 control characters other than tab and line breaks, and DEL.
TEXT_FORBIDDEN = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f"
_TEXT_FORBIDDEN = re.compile(f"[{TEXT_FORBIDDEN}]")


def _found(what: str, match: re.Match[str]) -> str:
    return f"{what} (found U+{ord(match.group()):04X} at position {match.start()})"


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an entity (a tracking agent): a title's problem
    (:func:`title_problem`), or a bidirectional formatting character
    (:data:`BIDI_CONTROLS`); None when it can."""
    problem = title_problem(name)
    if problem is not None:
        return problem
    match = _BIDI.search(name)
    return None if match is None else _found("a name may not contain bidirectional formatting characters", match)


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be watched for (:data:`TEXT_FORBIDDEN`: NUL and the other
    control characters but tab and line breaks), or None."""
    match = _TEXT_FORBIDDEN.search(text)
    return None if match is None else _found("control characters such as NUL are not allowed", match)


def one_line(text: str) -> str:
    """``text`` made a title: each run of control characters (line breaks, NUL …) becomes
    one space, and the ends are stripped (a chat titled by its question)."""
    return re.sub(f"[{TITLE_FORBIDDEN}]+", " ", text).strip()
