"""API keys: made once, shown once, stored only as a hash.

A key is ``cw_`` followed by 43 URL-safe characters (32 random bytes from
:mod:`secrets`). Such a key has 256 bits of entropy, so a plain SHA-256 is enough to
store it: there is nothing to brute-force, and a salted slow hash would only slow
every request down. The store keeps the hash (:meth:`citewell.store.base.Store.api_key`
looks keys up by it) and the first 8 characters as a ``prefix`` to tell keys apart.
"""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "cw_"
#: characters of a key kept in clear in the store, to tell keys apart in listings
SHOWN_PREFIX = 8


def new_key() -> str:
    """A new random API key: ``"cw_"`` + 43 URL-safe characters."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """The stored form of ``key``: SHA-256 of its UTF-8 bytes, 64 lower-case hex digits."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
