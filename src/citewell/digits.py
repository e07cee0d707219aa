"""Whole numbers read from untrusted text, bounded in length.

``int(text)`` raises ``ValueError`` ("Exceeds the limit (4300 digits) for integer string
conversion") for a digit string of 4,301 characters or more, and ``str.isdigit`` accepts
digits of every script (``"٣"``, ``"²"``). A citation number, an expiry or a header that
arrives as thousands of digits must be refused with the caller's own coded error, never
with a 500 or a Python message: :func:`whole_number` is the one reader for such values.
"""

from __future__ import annotations

#: Digits of the longest whole number read (below 2**63; no id, time or size needs more).
MAX_DIGITS = 18


def whole_number(text: str, *, max_digits: int = MAX_DIGITS) -> int | None:
    """The value of ``text`` when it is 1 to ``max_digits`` ASCII digits (no sign, no
    space), else None. Never raises for any ``str``."""
    if not 0 < len(text) <= max_digits or not text.isascii() or not text.isdigit():
        return None
    return int(text)


__all__ = ["MAX_DIGITS", "whole_number"]
