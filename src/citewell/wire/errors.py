"""Error envelopes of the three profiles and the coded error they carry."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from .. import models
from .base import ClosedModel


class ErrorInfo(models.ErrorInfo):
    """A coded error of the sessions profile."""

    model_config = ConfigDict(extra="forbid")


class Notice(models.Notice):
    """A coded warning or error (``{code, message, …}``)."""


class SessionsError(ClosedModel):
    """Sessions-profile error envelope: ``{"status": "error", "error": {code, message}}``."""

    status: Literal["error"]
    error: ErrorInfo


class AnalyticsErrorInfo(ClosedModel):
    """A coded error of the analytics profile (seed 004): ``msg`` repeats ``message``."""

    code: str
    msg: str = Field(description="Error message (deprecated, use `message` instead).")
    message: str


class AnalyticsError(ClosedModel):
    """Analytics-profile error envelope: ``{"error": {code, msg, message}, "payload": null}``."""

    error: AnalyticsErrorInfo
    payload: None = Field(description="Always null for error responses.")


class ChatsError(ClosedModel):
    """Chats-profile error envelope (seed 000 routes): ``{"error": {code, message}}``."""

    error: ErrorInfo


__all__ = ["AnalyticsError", "AnalyticsErrorInfo", "ChatsError", "ErrorInfo", "Notice", "SessionsError"]
