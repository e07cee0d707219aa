"""citewell's errors: every one carries a stable ``code`` and a human ``message``.

Hierarchy::

    CitewellError                    code, message (base; never raised itself)
    ├── IngestError                  a file could not be ingested (docs/architecture.md "Errors")
    │     codes: UNSUPPORTED_FILE, EMPTY_FILE, PDF_CORRUPT, PDF_ENCRYPTED,
    │            VTT_MALFORMED, SRT_MALFORMED, JSONL_MALFORMED, TEXT_ENCODING
    ├── FilterError                  INVALID_FILTER: unknown key or bad value
    ├── NotFoundError                NOT_FOUND: unknown id (or one of another workspace)
    ├── StoreError                   STORE_ERROR: the store could not be opened, migrated or
    │     │                          written (a PostgreSQL pool whose connections all stayed busy)
    │     └── StoreUnavailable       STORE_UNAVAILABLE: the database cannot be reached right now
    │                                (connection refused or failed, or lost mid-statement); transient:
    │                                HTTP 503 with Retry-After, a job retried with backoff
    ├── UsageError                   INVALID_REQUEST: bad arguments to a public call
    │                                (DUPLICATE_SOURCE: a sources list gives one source two texts)
    └── GenerationError              the answer writer failed: LLM_UNAVAILABLE (endpoint down,
                                     timed out, still 429/5xx after retries), LLM_BAD_RESPONSE
                                     (malformed or empty stream, refused request), LLM_REFUSED
                                     (the model said the sources do not answer where the scope
                                     check found the subject and period: never raised to a
                                     caller, the extractive writer answers with that warning)

The CLI maps these to exit codes and one-line messages; the HTTP profiles map them to
their envelopes in one place.
"""

from __future__ import annotations

from typing import Any


class CitewellError(Exception):
    """Base of all citewell errors: ``code`` (str) and ``message`` (str)."""

    code: str = "SERVER_ERROR"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"code", "message", **details}`` for envelopes and JSON output."""
        return {"code": self.code, "message": self.message, **self.details}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class IngestError(CitewellError):
    """A file could not be turned into a resource; ``code`` names the kind of fault."""

    code = "UNSUPPORTED_FILE"


class FilterError(CitewellError):
    """A filter key is unknown or its value cannot be used (code ``INVALID_FILTER``)."""

    code = "INVALID_FILTER"


class NotFoundError(CitewellError):
    """No such id in this workspace (code ``NOT_FOUND``)."""

    code = "NOT_FOUND"


class StoreError(CitewellError):
    """The store could not be opened, migrated or written (code ``STORE_ERROR``)."""

    code = "STORE_ERROR"


class StoreUnavailable(StoreError):
    """The database cannot be reached right now (code ``STORE_UNAVAILABLE``): a connection
    could not be opened (refused, failed, timed out), or the one a statement ran on was lost
    and the statement cannot safely run again (a write, or anything inside a transaction,
    whose transaction is rolled back). Transient: the same call may work once the database
    is back, so a job is retried and the HTTP API answers 503 with ``Retry-After``.

    ``retry_after_s``: seconds after which asking again is worth it (the ``Retry-After``
    header, rounded up to whole seconds)."""

    code = "STORE_UNAVAILABLE"

    def __init__(self, message: str, *, retry_after_s: float = 5.0, code: str | None = None,
                 **details: Any) -> None:
        super().__init__(message, code=code, **details)
        self.retry_after_s = retry_after_s


class UsageError(CitewellError):
    """A public call got arguments it cannot use (code ``INVALID_REQUEST``)."""

    code = "INVALID_REQUEST"


#: The code of a model's refusal ("The sources do not answer this question.") of a turn whose
#: subject and period the scope check found in the sources: the answering pipeline answers
#: extractively instead, with a warning of this code.
LLM_REFUSED = "LLM_REFUSED"


class GenerationError(CitewellError):
    """The generator could not write the answer (codes ``LLM_UNAVAILABLE``: the endpoint
    is down, timed out or kept answering 429/5xx after the retries; ``LLM_BAD_RESPONSE``:
    it answered something that is not a chat completion stream; :data:`LLM_REFUSED`: the
    model refused a question the scope check found answerable, handled by the pipeline).

    ``retryable``: True when asking again later may work (unavailable), False for a bad
    response."""

    code = "LLM_UNAVAILABLE"

    @property
    def retryable(self) -> bool:
        """True for ``LLM_UNAVAILABLE`` (a later attempt may work)."""
        return self.code == "LLM_UNAVAILABLE"


__all__ = [
    "LLM_REFUSED",
    "CitewellError",
    "GenerationError",
    "FilterError",
    "IngestError",
    "NotFoundError",
    "StoreError",
    "StoreUnavailable",
    "UsageError",
]
