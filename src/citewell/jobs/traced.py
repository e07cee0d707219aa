"""A job's log lines carry the id of the request that queued it, whichever process runs it.

:func:`traced` puts the current request id (:data:`citewell.logcontext.REQUEST_ID`) in a
job's payload when the job is queued; :class:`TracedHandler` sets it again around the
job's run, so that :class:`~citewell.logcontext.RequestIdFilter` prints it.
"""

from __future__ import annotations

from typing import Any

from ..logcontext import REQUEST_ID
from ..store.jobs import JobRecord
from .runner import Handler, Lease


def traced(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with the current request's id (``request_id``), so that the job's log
    lines carry it whichever process runs it; ``payload`` itself outside a request."""
    request_id = REQUEST_ID.get()
    return {**payload, "request_id": request_id} if request_id != "-" else payload


class TracedHandler(Handler):
    """A handler whose job runs under the request id it was queued with (:func:`traced`)."""

    def run_in_context(self, job: JobRecord, lease: Lease) -> Any:
        """:meth:`run` with ``REQUEST_ID`` set to the payload's ``request_id`` (when it has one)."""
        request_id = job.payload.get("request_id")
        if isinstance(request_id, str):
            REQUEST_ID.set(request_id)
        return self.run(job, lease)


__all__ = ["TracedHandler", "traced"]
