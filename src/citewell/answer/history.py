"""A chat's earlier turns, as follow-up rewriting and generators read them.

- :func:`previous_question`: the chat's last user message (a follow-up that refers back
  carries its subject and filters, :mod:`citewell.answer.turn`);
- :func:`conversation`: the chat's earlier messages as :class:`HistoryTurn`\\ s for a
  generator's prompt, oldest first, at most ``limit`` of them, each cut to
  ``max_chars`` characters, ``[N]`` markers and rule-5 escapes removed (the numbers of an
  earlier answer mean nothing in this turn, whose passages get their own aliases), failed
  and pending answers left out.
"""

from __future__ import annotations

import re

from ..cite.links import unescape_numbers
from ..cite.resolver import SourceResolver
from ..generate.base import HistoryTurn
from ..models import Message
from ..store.base import Store
from .messages import stored_messages

#: Earlier messages a generator sees (user and assistant messages both count).
HISTORY_MESSAGES = 6
#: Longest text of one earlier message shown to a generator (code points).
HISTORY_CHARS = 1500
_MARKER_RE = re.compile(r"[ \t]*(?<!\\)\[\d+\]")


def previous_question(store: Store, workspace_id: str, chat_id: str, resolver: SourceResolver) -> Message | None:
    """The last user message with text of a chat, or None."""
    users = [m for m in stored_messages(store, workspace_id, chat_id, resolver=resolver) if m.role == "user" and m.text]
    return users[-1] if users else None


def plain_text(message: Message) -> str:
    """A message's text without ``[N]`` markers (and the spaces before them) and without
    the rule-5 escapes of bracketed numbers."""
    return unescape_numbers(_MARKER_RE.sub("", message.text)).strip()


def conversation(store: Store, workspace_id: str, chat_id: str | None, resolver: SourceResolver, *,
                 limit: int = HISTORY_MESSAGES, max_chars: int = HISTORY_CHARS) -> tuple[HistoryTurn, ...]:
    """The last ``limit`` settled messages of chat ``chat_id`` (none when None) as
    :class:`HistoryTurn`\\ s, oldest first (see the module docstring)."""
    if chat_id is None or limit <= 0:
        return ()
    turns: list[HistoryTurn] = []
    for message in stored_messages(store, workspace_id, chat_id, resolver=resolver):
        if message.role not in ("user", "assistant") or message.status != "settled":
            continue
        text = plain_text(message)
        if not text:
            continue
        if len(text) > max_chars:
            text = text[:max_chars - 1].rstrip() + "…"
        turns.append(HistoryTurn(message.role, text))
    return tuple(turns[-limit:])


__all__ = ["HISTORY_CHARS", "HISTORY_MESSAGES", "conversation", "plain_text", "previous_question"]
