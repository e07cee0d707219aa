"""Which process owns a turn in progress, and whether it is still alive.

A pending assistant message records its ``owner``: ``host:pid:token`` of the process that
answers it (``token`` is random per process, so it tells this process from an earlier
one that had the same pid). A server that starts fails the pending turns a stopped
server left behind (``TURN_INTERRUPTED``), but must not fail the turns another live
server on the same store is answering. :func:`owner_alive` decides: this process, or a
process on this host whose pid still runs, is alive; on another host (which cannot be
checked from here) a turn counts as alive until it is :data:`STALE_AFTER_S` old; a turn
with no owner (stored before owners were recorded) is not.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime, timezone

HOST = socket.gethostname()
_TOKEN = uuid.uuid4().hex[:12]
#: A turn older than this (seconds) is not waited for, whoever owns it (no answer takes an
#: hour, and a pid may have been reused by an unrelated process since).
STALE_AFTER_S = 3600.0


def process_owner() -> str:
    """``host:pid:token`` of this process."""
    return f"{HOST}:{os.getpid()}:{_TOKEN}"


def owner_alive(owner: str | None, created_at: datetime) -> bool:
    """Whether the process ``owner`` (see :func:`process_owner`) may still answer a turn
    created at ``created_at`` (rules in the module docstring)."""
    if not owner or owner.count(":") < 2:
        return False
    age = (datetime.now(timezone.utc) - created_at).total_seconds()
    if age > STALE_AFTER_S:
        return False
    host, pid_text, token = owner.rsplit(":", 2)
    if host != HOST:
        return True
    if token == _TOKEN:
        return True
    try:
        os.kill(int(pid_text), 0)  # signal 0: only asks whether the pid exists
    except PermissionError:
        return True  # it exists, run by another user
    except (ProcessLookupError, ValueError, OverflowError):
        return False
    return True
