"""Which process owns a turn in progress, and whether it is still alive.

A pending assistant message records its ``owner``: ``host:pid:token`` of the process that
answers it (``token`` is random per process). A server that starts fails the pending
turns a stopped server left behind (``TURN_INTERRUPTED``), but must not fail the turns
another live server on the same store is answering. :func:`owner_alive` decides, exactly
on this host:

- this process (same token) is alive;
- another process of this host is alive exactly while it holds the lock of its token: the
  first :func:`process_owner` call takes an exclusive ``flock`` on
  ``<owners folder>/<token>.lock`` and keeps it for the process's life. The kernel
  releases it when the process ends (also while it is still a zombie), so a token whose
  lock can be taken, or that has no lock file, is a dead owner — whatever its pid: a
  restarted server that got the dead one's pid (PID 1 in a container) or a zombie that
  still has its pid no longer counts as alive (issue 14). The pid is only informative;
- on another host (which cannot be checked from here) a turn counts as alive until it is
  :data:`STALE_AFTER_S` old; a turn with no owner (stored before owners were recorded)
  is not.

The owners folder is ``CITEWELL_OWNERS_DIR``, else ``citewell-owners`` in the system's
temporary folder (shared by every user, sticky like ``/tmp``): every server of a host
that shares a store must see the same folder.
"""

from __future__ import annotations

import atexit
import errno
import os
import socket
import tempfile
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: only this process can be told alive
    fcntl = None  # type: ignore[assignment]

HOST = socket.gethostname()
_TOKEN = uuid.uuid4().hex[:12]
#: A turn older than this (seconds) is not waited for, whoever owns it (no answer takes an
#: hour, and a pid may have been reused by an unrelated process since).
STALE_AFTER_S = 3600.0

_lock = threading.Lock()
_held: IO[bytes] | None = None
_held_pid: int | None = None


def owners_dir() -> Path:
    """The folder of the owner locks of this host (see the module docstring)."""
    configured = os.environ.get("CITEWELL_OWNERS_DIR")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "citewell-owners"


def _lock_file(token: str) -> Path:
    return owners_dir() / f"{token}.lock"


def _register() -> None:
    """Take this process's owner lock (once per process; again in a forked child, which
    has a pid and a token of its own)."""
    global _held, _held_pid, _TOKEN
    if fcntl is None or (_held is not None and _held_pid == os.getpid()):
        return
    if _held_pid is not None and _held_pid != os.getpid():  # a fork: never answer for the parent
        _TOKEN = uuid.uuid4().hex[:12]
    folder = owners_dir()
    try:
        folder.mkdir(mode=0o1777, parents=True, exist_ok=True)
        fh = open(_lock_file(_TOKEN), "a+b")  # noqa: SIM115 - held for the process's life
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # no lock: other servers will treat this one's turns as interrupted at their start
    _held, _held_pid = fh, os.getpid()
    atexit.register(_unregister, _TOKEN)


def _unregister(token: str) -> None:
    if _held_pid == os.getpid():
        _lock_file(token).unlink(missing_ok=True)


def process_owner() -> str:
    """``host:pid:token`` of this process; the first call takes the process's owner lock."""
    with _lock:
        _register()
        return f"{HOST}:{os.getpid()}:{_TOKEN}"


def _lock_held(token: str) -> bool:
    """Whether a live process holds the owner lock of ``token`` (False: none, or no file)."""
    if fcntl is None or not token or "/" in token or token.startswith("."):
        return False
    try:
        fh = open(_lock_file(token), "rb")  # noqa: SIM115
    except OSError:
        return False
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
        _lock_file(token).unlink(missing_ok=True)  # its owner has ended: tidy up
        return False


def owner_alive(owner: str | None, created_at: datetime) -> bool:
    """Whether the process ``owner`` (see :func:`process_owner`) may still answer a turn
    created at ``created_at`` (rules in the module docstring)."""
    if not owner or owner.count(":") < 2:
        return False
    age = (datetime.now(timezone.utc) - created_at).total_seconds()
    if age > STALE_AFTER_S:
        return False
    host, _pid, token = owner.rsplit(":", 2)
    if host != HOST:
        return True
    if token == _TOKEN:
        return True
    return _lock_held(token)


__all__ = ["HOST", "STALE_AFTER_S", "owner_alive", "owners_dir", "process_owner"]
