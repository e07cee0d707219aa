"""The request id that follows a request into its log lines and its jobs.

A leaf module (standard library only), so that both the HTTP API (:mod:`citewell.web`)
and the workers (:mod:`citewell.jobs`) use it without one importing the other:

- :data:`REQUEST_ID` is a context variable holding the id of the request being served
  (``"-"`` outside a request). :class:`~citewell.web.requestid.RequestIdMiddleware` sets
  it per request; it follows the request into the threadpool that runs sync endpoints,
  into the in-process fair pool (which copies the context), and into the jobs the request
  queues (the payload's ``request_id``, :func:`citewell.jobs.traced.traced`).
- :class:`RequestIdFilter` puts it on every log record as ``record.request_id``;
  :data:`LOG_CONFIG` is a ``logging.config.dictConfig`` (for uvicorn in ``citewell
  serve``, and for ``citewell worker``) that prints it on every line.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

#: The id of the request being served ("-" outside a request).
REQUEST_ID: ContextVar[str] = ContextVar("citewell_request_id", default="-")


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id`` (the current request's id, "-" outside one); never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Set ``record.request_id`` unless the record already has one; return True."""
        if not hasattr(record, "request_id"):
            record.request_id = REQUEST_ID.get()
        return True


#: dictConfig for uvicorn (``citewell serve``) and ``citewell worker``: every line carries the request id.
LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "citewell.logcontext.RequestIdFilter"}},
    "formatters": {
        "default": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "default": {"class": "logging.StreamHandler", "formatter": "default", "filters": ["request_id"],
                    "stream": "ext://sys.stderr"},
    },
    "loggers": {
        "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "uvicorn.error": {"level": "INFO"},
        "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        "citewell": {"handlers": ["default"], "level": "INFO", "propagate": False},
    },
}

__all__ = ["LOG_CONFIG", "REQUEST_ID", "RequestIdFilter"]
