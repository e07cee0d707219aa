"""A thread pool that is fair between workspaces.

Every server-side job belongs to a workspace (an upload to extract or embed, a turn to
answer). A plain first-come pool lets one workspace that queues a hundred jobs delay every
other workspace's next job by the whole queue (issue 14: 150 tiny uploads of one
workspace made another's single upload wait 39 s). :class:`FairPool` keeps one queue per
workspace and serves them in turn:

- **least recently served first**: a free thread takes the oldest job of the workspace,
  among those with a job waiting, whose last job started longest ago (never: first), so a
  workspace that submits waits for at most the jobs already running and one job of each
  other workspace waiting (not for their queues);
- **a cap per workspace** (``per_key``): at most that many of a workspace's jobs run at
  once. With ``threads`` threads and ``per_key = threads - 1`` one thread is always left
  for the other workspaces: a workspace flooding the pool never makes another wait for a
  thread at all (it still shares the CPU with the running jobs).

Jobs run in the submitter's :mod:`contextvars` context (its request id reaches the log
lines). :meth:`FairPool.shutdown` lets running jobs finish and cancels queued ones.
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .runner import run_initializer

T = TypeVar("T")


@dataclass
class _Job:
    future: Future[Any]
    run: Callable[[], Any]
    key: str = field(default="")


class FairPool:
    """``threads`` worker threads (named ``name-N``) serving per-key queues in turn, at most
    ``per_key`` jobs of one key at once (default ``threads - 1``, at least 1). ``initializer``
    runs once in each worker thread before its first job (e.g. to lower its priority).
    Raises ``ValueError`` for ``threads < 1`` or ``per_key < 1``."""

    def __init__(self, threads: int, name: str, *, per_key: int | None = None,
                 initializer: Callable[[], None] | None = None) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self.threads = threads
        self.per_key = per_key if per_key is not None else max(1, threads - 1)
        if self.per_key < 1:
            raise ValueError("per_key must be at least 1")
        self.closed = False
        self._cv = threading.Condition()
        self._queues: OrderedDict[str, deque[_Job]] = OrderedDict()  # key -> waiting jobs, in first-wait order
        self._running: dict[str, int] = {}
        self._served: dict[str, int] = {}  # key -> number of the last job it started
        self._started = 0
        self._initializer = initializer
        self._workers = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(threads)]
        for worker in self._workers:
            worker.start()

    def submit(self, key: str, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Queue ``fn(*args)`` for workspace ``key``; its future (result or exception).
        ``RuntimeError`` once the pool is shut down."""
        ctx = contextvars.copy_context()
        job = _Job(Future(), lambda: ctx.run(fn, *args), key)
        with self._cv:
            if self.closed:
                raise RuntimeError("the pool is shut down")
            self._queues.setdefault(key, deque()).append(job)
            self._cv.notify()
        return job.future

    def waiting(self, key: str | None = None) -> int:
        """Jobs queued and not started (of ``key``, or of every key)."""
        with self._cv:
            if key is not None:
                return len(self._queues.get(key, ()))
            return sum(len(q) for q in self._queues.values())

    def wait_idle(self) -> None:
        """Block until no job is queued or running (jobs a running job submits included)."""
        with self._cv:
            while self._queues or self._running:
                self._cv.wait()

    def _next(self) -> _Job | None:
        """The next job by the rules of the module docstring (under the lock), or None."""
        eligible = [key for key in self._queues if self._running.get(key, 0) < self.per_key]
        if not eligible:
            return None
        key = min(eligible, key=lambda k: self._served.get(k, -1))  # ties: the first to wait
        queue = self._queues[key]
        job = queue.popleft()
        if not queue:
            del self._queues[key]
        self._running[key] = self._running.get(key, 0) + 1
        self._started += 1
        self._served[key] = self._started
        return job

    def _work(self) -> None:
        run_initializer(self._initializer)
        while True:
            with self._cv:
                job = self._next()
                while job is None:
                    if self.closed:
                        return
                    self._cv.wait()
                    job = self._next()
            try:
                if job.future.set_running_or_notify_cancel():
                    try:
                        job.future.set_result(job.run())
                    except BaseException as exc:  # noqa: BLE001 - handed to the future
                        job.future.set_exception(exc)
            finally:
                with self._cv:
                    self._running[job.key] -= 1
                    if not self._running[job.key]:
                        del self._running[job.key]
                    self._cv.notify_all()

    def shutdown(self, *, wait: bool = True) -> list[Future[Any]]:
        """Stop: queued jobs are cancelled (their futures returned), running ones finish
        (waited for with ``wait``); no job is accepted afterwards."""
        with self._cv:
            self.closed = True
            cancelled = [job.future for queue in self._queues.values() for job in queue]
            self._queues.clear()
            self._cv.notify_all()
        for future in cancelled:
            future.cancel()
        if wait:
            for worker in self._workers:
                if worker is not threading.current_thread():
                    worker.join()
        return cancelled


__all__ = ["FairPool"]
