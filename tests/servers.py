"""Real server processes for tests: a free port, start, wait until it listens, stop by PID.

:func:`running` starts ``command`` (which must listen on the given port), writes its
output to ``log_path``, waits (bounded) until ``GET ready_path`` answers, yields the base
URL, and stops the process it started - by its own PID, SIGTERM then SIGKILL - however
the test ends.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running(command: Sequence[str], port: int, log_path: Path, env: dict[str, str], *,
            ready_path: str = "/openapi.json", attempts: int = 400) -> Iterator[str]:
    """Run ``command`` (serving on ``port``) for the ``with`` block; yields
    ``http://127.0.0.1:<port>``. Raises ``AssertionError`` with the log when it dies or
    does not answer after ``attempts`` × 50 ms."""
    with log_path.open("w") as log:
        process = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(attempts):
            try:
                httpx.get(base + ready_path, timeout=1.0)
                break
            except httpx.TransportError:
                assert process.poll() is None, log_path.read_text()
                time.sleep(0.05)
        else:
            raise AssertionError("the server did not start:\n" + log_path.read_text())
        yield base
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
