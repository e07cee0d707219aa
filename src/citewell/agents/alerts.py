"""An alert: the canonical assistant :class:`~citewell.models.Message` a run writes when new
mentions match (issue 17, "Alerts"; seed 000's shape once rendered by
:func:`citewell.profiles.chats.render_message`).

Without a model the alert is written from a template and goes through the cite stage
(:func:`citewell.cite.cite`, then rule-8 support): one paragraph per cited mention (at most
:data:`MAX_CITED`, newest last) quoting its start verbatim, each followed by a
``[post](post:SOURCE:ID)`` link that the cite stage numbers ``[N]`` with post references
obeying the slice rule (the quote is ``supported`` by its post), and a paragraph saying
where, by whom and when it was posted; then, for each new pattern spanning two or more datasets, a
sentence with a ``[label](pattern:ID)`` link, which becomes its plain label in the text and
a ``{type: "pattern", id}`` entity reference. With an LLM writer (``cites_by_alias``) the
text is the model's answer to a question about the new mentions, through the answering
pipeline (:meth:`citewell.Engine.answer_over`: the same citation contract), and the
cross-dataset patterns are added as entity references; when the model fails the template
answers instead, with a warning carrying the failure's code.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..cite import apply_support, cite, format_link
from ..cite.resolver import SourceResolver
from ..errors import GenerationError
from ..generate.extractive import escape_quote
from ..models import Mention, Message, Notice, Passage, Reference, utcnow
from ..store.tracking import PatternRecord

if TYPE_CHECKING:
    from ..engine import Engine

#: Mentions cited in one alert (the rest are counted).
MAX_CITED = 10
#: Characters of a mention quoted in a template alert.
QUOTE_CHARS = 200


class _WithPatterns:
    """The engine's resolver, also knowing the patterns this run is about to store."""

    def __init__(self, base: SourceResolver, patterns: Sequence[PatternRecord]) -> None:
        self.base = base
        self.ids = {p.id for p in patterns}

    def chunk(self, chunk_id: str) -> Passage | None:
        return self.base.chunk(chunk_id)

    def post(self, source: str, id: str, *, dataset_id: str | None = None) -> Passage | None:  # noqa: A002
        return self.base.post(source, id, dataset_id=dataset_id)

    def entity_exists(self, type: str, id: str) -> bool:  # noqa: A002
        return (type == "pattern" and id in self.ids) or self.base.entity_exists(type, id)


def _quote(text: str) -> tuple[str, bool]:
    """The start of a mention's text on one line, cut at a word, escaped (never a link),
    and whether it was cut. No ``…`` marks the cut inside the quote: the quote stays
    verbatim, which rule-8 support recognises (``verbatim``)."""
    flat = " ".join(text.split())
    if len(flat) <= QUOTE_CHARS:
        return escape_quote(flat), False
    return escape_quote(flat[:QUOTE_CHARS].rsplit(" ", 1)[0] or flat[:QUOTE_CHARS]), True


def cross_dataset(patterns: Sequence[PatternRecord]) -> list[PatternRecord]:
    """The patterns that span two or more datasets."""
    return [p for p in patterns if len(p.datasets) >= 2]


def template_text(query: str, mentions: Sequence[Mention], patterns: Sequence[PatternRecord]) -> str:
    """The raw alert text with rule-1 links (see the module docstring).

    Every block is its own paragraph (a blank line before it), so the cite stage's
    sentence splitter (:func:`citewell.text.sentences.sentence_spans`: syntok, which
    never joins paragraphs) cuts there whatever a quote ends with (an emoji, a cashtag, no
    punctuation at all), and each ``[N]`` stays in the part of the quote it follows. A
    cited mention is two paragraphs: a markdown quote (``> ``) of the post's start, word
    for word, with the link; then where, by whom and when it was posted (and whether the
    post goes on) — not in the cited sentence, since those are the post's metadata, not
    its text, and rule-8 support checks the sentence against the text: a verbatim quote is
    ``supported``."""
    cited = list(mentions[-MAX_CITED:])
    noun = "mention matches" if len(mentions) == 1 else "mentions match"
    blocks = [f"{len(mentions)} new {noun} \u201c{escape_quote(' '.join(query.split()))}\u201d."]
    for m in cited:
        quote, cut = _quote(m.text)
        who = f" by {escape_quote(m.author)}" if m.author else ""
        when = f" on {m.created_at[:10]}" if m.created_at else ""
        blocks.append(f"> {quote} {format_link('post', post=(m.source, m.id))}")
        blocks.append(f"({escape_quote(m.source)}{who}{when}{'; the post goes on' if cut else ''})")
    if len(mentions) > len(cited):
        blocks.append(f"- and {len(mentions) - len(cited)} more.")
    for p in cross_dataset(patterns):
        blocks.append(f"{p.size} of them form a pattern across {len(p.datasets)} datasets "
                      f"({', '.join(escape_quote(s) for s in p.sources)}): "
                      f"{format_link(p.label, entity=('pattern', p.id))}.")
    return "\n\n".join(blocks)


def alert_message(engine: "Engine", query: str, mentions: Sequence[Mention], passages: Sequence[Passage],
                  patterns: Sequence[PatternRecord], *, agent_id: str) -> Message:
    """The alert of a run that found ``mentions`` (with their ``passages``, the copies
    matched) and ``patterns`` (see the module docstring): a settled assistant message with
    a new id, additive ``tracking_agent_id`` and ``mention_count``."""
    resolver = _WithPatterns(engine.resolver, patterns)
    notes: list[Notice] = []
    message: Message | None = None
    if getattr(engine.generator, "cites_by_alias", False):
        question = f"What do these new posts say about: {query}"
        try:
            message = engine.answer_over(question, passages)
        except GenerationError as exc:
            notes.append(Notice(code=exc.code, message=f"the model could not write this alert ({exc.message}); "
                                                         "it was written from the template"))
        if message is not None:
            message.references.extend(Reference(type="pattern", id=p.id) for p in cross_dataset(patterns))
    if message is None:
        message = cite(template_text(query, mentions, patterns), sources=list(passages), resolver=resolver)
        message = apply_support(message, policy="flag")
    message.id = str(uuid.uuid4())
    message.chat_id = None
    message.status = "settled"
    message.created_at = utcnow()
    message.warnings.extend(notes)
    message.tracking_agent_id = agent_id  # type: ignore[attr-defined] - additive: the agent that wrote it
    message.mention_count = len(mentions)  # type: ignore[attr-defined] - additive: how many matched
    return message


__all__ = ["MAX_CITED", "alert_message", "cross_dataset", "template_text"]
