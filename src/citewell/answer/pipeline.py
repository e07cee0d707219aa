"""The answering pipeline: one path from retrieved passages to a stored, cited message.

The library (:meth:`citewell.Engine.ask`, :meth:`~citewell.Engine.ask_stream`), the CLI
and every HTTP profile (sessions, chats ``/v1/ask``, analytics SSE) answer through
:meth:`AnswerPipeline.events`::

    passages ─► scope check ─► generator ─► alias/number expander ─► sentence gate ─► streaming citer ─► finish
                (abstain?)     (pieces)     (aliased generators)    (aliased: auto-cite,  (rule 9 events)   (support, warnings,
                                                                     drop, judge)                            coverage, store)

1. **Scope check** (:mod:`citewell.answer.scope`): right after retrieval and before any
   generator runs, :data:`~citewell.answer.scope.SCOPE_CHECKS` may answer instead with
   an abstention (plain text, no citation).
2. **Generator**: ``generator.write(request)`` with a
   :class:`~citewell.generate.base.GenerationRequest` (question, rewritten query, chat
   history, passages with aliases ``S1``…, deadline). An image-only question's preface
   (rule 11) comes first.
3. **Expander** (generators with ``cites_by_alias``): ``[S2]``, ``[2]``, ``[1-3]``,
   ``【1】``, ``[label](S2)`` become rule-1 links to the offered passages
   (:class:`~citewell.cite.numbered.NumberedExpander`), holding back only an unfinished
   marker.
4. **Sentence gate** (``cites_by_alias``; :mod:`citewell.answer.gate`): each sentence
   is checked as it ends: an uncited one gets the offered passage that supports it best
   when one passes; under policy ``drop`` a sentence is held until checked and its
   unsupported citations never leave.
5. **Streaming citer** (:class:`~citewell.cite.stream.StreamingCiter`): ``citation``,
   ``delta`` and ``support`` events (no partial link, no link target, streamed text =
   stored text).
6. **Finish**: rule-8 support on the message (with the embedder and the optional judge
   for aliased generators), turn warnings (``ANSWER_TRUNCATED`` when the generator's
   answer was cut at a length limit: its unfinished last sentence got no added
   citation), ``generation`` (generator, model, usage), ``grounded_coverage``, offsets
   in the turn's unit, storage.

Failures: a :class:`~citewell.errors.GenerationError` raised before the first
``citation``/``delta`` event was sent may fall back to another generator (``fallback``),
with a warning carrying the error's code; ``LLM_REFUSED`` (the model said the sources do
not answer although the scope check found the question's subject and period) always
falls back, to the extractive generator when no fallback is configured; after that, it propagates (an asynchronous
turn then settles ``failed`` with that code). Closing the event iterator early closes the
generation (an LLM's HTTP stream is closed, so the model stops).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cite import cite as _cite
from ..cite import convert_offsets
from ..cite.numbered import NumberedExpander
from ..cite.resolver import SourceResolver
from ..cite.stream import Event, StreamingCiter
from ..cite.relevance import apply_relevance
from ..cite.support import Judge, apply_support, grounded_coverage, part_support
from ..embed import Embedder
from ..errors import LLM_REFUSED, CitewellError, GenerationError
from ..generate.extractive import ExtractiveGenerator
from ..generate.base import Generation, GenerationRequest, GenerationResult, HistoryTurn, start_generation
from ..models import Message, Notice, Passage, Reference
from ..store.base import Store
from ..text.terms import NO_EXPANSIONS, Expansions
from .gate import SentenceGate
from .scope import ScopeCheck, scope_abstention, scope_verdict
from .turn import NO_IMAGE_TEXT, PendingTurn, Turn
from .warnings import fallback_warning, truncation_warning, turn_warnings

#: Events that show the client a piece of the answer: after one, no fallback.
_SHOWN = ("citation", "delta")


def whole_message_events(message: Message) -> Iterator[Event]:
    """A finished message as events: each citation, then the whole text as one delta."""
    for ref in message.references:
        if ref.citation is not None:
            yield Event("citation", {k: v for k, v in ref.model_dump(mode="json").items()
                                     if k not in ("start_index", "end_index", "occurrences", "offset_unit")})
    yield Event("delta", {"text": message.text})


def with_preview(message: Message, pending: PendingTurn | None) -> Message:
    """``message`` ending its references with ``{type: "research_preview", id}`` when the
    ``pending`` turn began while the chat's previous answer was still pending."""
    preview = pending.research_preview if pending is not None else None
    if preview is not None and not any(r.type == "research_preview" and r.id == preview
                                       for r in message.references):
        message.references.append(Reference(type="research_preview", id=preview))
    return message


def failure(exc: Exception) -> tuple[str, str]:
    """The ``(code, message)`` a turn that raised ``exc`` settles failed with: the library
    error's own, else ``SERVER_ERROR`` naming only the exception type."""
    if isinstance(exc, CitewellError):
        return exc.code, exc.message
    return "SERVER_ERROR", f"the answer could not be produced ({type(exc).__name__})"


def _fixed(text: str, name: str) -> Generation:
    """A generation that writes ``text`` (an abstention, an empty answer)."""
    return Generation(iter([text] if text else []), GenerationResult(name))


@dataclass
class _Progress:
    """What one answer has shown the client so far."""

    shown: bool = False


@dataclass
class AnswerPipeline:
    """Answers one turn from its retrieved passages (see the module docstring).

    ``store``/``workspace_id``/``resolver``: where the answer is stored and its links
    resolved; ``generator``: the answer writer; ``fallback``: the generator to answer with
    when ``generator`` fails before anything was shown (None: no fallback);
    ``embedder``/``judge``: support checks of aliased generators' sentences (similarity;
    second opinion on ``uncertain`` pairs); ``history``: the conversation's earlier turns;
    ``deadline_s``: seconds the generator may take (None: its own limits);
    ``scope_checks``: None for :data:`~citewell.answer.scope.SCOPE_CHECKS`.
    After :meth:`events` has run to its end, :attr:`message` is the finished message.
    """

    store: Store
    workspace_id: str
    resolver: SourceResolver
    generator: Any
    fallback: Any | None = None
    embedder: Embedder | None = None
    judge: Judge | None = None
    history: Sequence[HistoryTurn] = ()
    deadline_s: float | None = None
    scope_checks: Sequence[ScopeCheck] | None = None
    message: Message | None = field(default=None, init=False)

    def request(self, turn: Turn, passages: Sequence[Passage]) -> GenerationRequest:
        """The generation request of ``turn``: its question, query, the history and the
        passages with their aliases, the scope check's verdict
        (:func:`~citewell.answer.scope.scope_verdict`); the deadline ``deadline_s`` from
        now. One request serves every writer of the turn (the model, then a fallback), so
        what it computes once (:meth:`~citewell.generate.base.GenerationRequest.figure`) is
        shared."""
        deadline = time.monotonic() + self.deadline_s if self.deadline_s is not None else None
        facts = turn.reading.facts
        links = {f.name.text: f.aliases for f in facts.names if f.aliases} if facts is not None else None
        verdict = scope_verdict(turn.reading.analysis, facts, passages) if turn.query else None
        return GenerationRequest.build(turn.question, passages, query=turn.query, history=self.history,
                                       deadline=deadline, analysis=turn.reading.analysis, name_aliases=links,
                                       scope=verdict)

    def answer(self, turn: Turn, passages: Sequence[Passage], *, pending: PendingTurn | None = None) -> Message:
        """Run :meth:`events` to its end and return the finished (stored) message."""
        for _ in self.events(turn, passages, pending=pending):
            pass
        assert self.message is not None
        return self.message

    def events(self, turn: Turn, passages: Sequence[Passage], *,
               pending: PendingTurn | None = None) -> Iterator[Event]:
        """The answer as client events: ``citation``/``delta``/``support`` as they become
        safe to send (docs/architecture.md rule 9), then ``done`` ``{"message": Message dict}`` with
        the message as stored (or, for a ``pending`` turn, settled). Under policy ``drop``
        a generator that cites full links is checked whole and sent as one delta; an
        aliased generator's sentences are each held until checked. Raises what the
        generator raised (after a fallback, when allowed) and store errors."""
        passages = list(passages)
        notes: list[Notice] = []
        abstention = None
        if turn.preface != NO_IMAGE_TEXT and turn.query and turn.reading.analysis is not None:
            abstention = scope_abstention(turn.reading.analysis, passages, self.scope_checks,
                                          facts=turn.reading.facts)
            if abstention is not None:
                passages = []  # nothing is cited
            if abstention is not None and abstention.notice() is not None:
                notes.append(abstention.notice())  # type: ignore[arg-type]
        writers: list[Any] = [self.generator]
        if self.fallback is not None and self.fallback is not self.generator:
            writers.append(self.fallback)
        progress = _Progress()
        request = self.request(turn, passages) if abstention is None and turn.preface != NO_IMAGE_TEXT else None
        attempt = 0
        while True:
            writer = writers[attempt]
            if abstention is not None:
                generation = _fixed(abstention.text, "abstention")
            elif turn.preface == NO_IMAGE_TEXT:
                generation = _fixed("", "none")
            else:
                generation = None
            try:
                yield from self._attempt(turn, passages, writer, generation, notes, progress, pending, request)
                return
            except GenerationError as exc:
                if progress.shown:
                    raise
                if exc.code == LLM_REFUSED and attempt + 1 >= len(writers):
                    # a refusal where the scope check found the subject and the period is never
                    # passed off as the answer: the extractive writer answers, whatever the fallback setting
                    writers.append(ExtractiveGenerator())
                if attempt + 1 >= len(writers):
                    raise
                notes.append(fallback_warning(exc, getattr(writers[attempt + 1], "name", "fallback")))
                attempt += 1

    def _attempt(self, turn: Turn, passages: list[Passage], writer: Any, generation: Generation | None,
                 notes: list[Notice], progress: _Progress, pending: PendingTurn | None,
                 request: GenerationRequest | None = None) -> Iterator[Event]:
        """One answer by ``writer`` (or by the fixed ``generation``) to ``request`` (the
        turn's, built by :meth:`request` when None): events, then ``done``."""
        aliased = generation is None and bool(getattr(writer, "cites_by_alias", False))
        if generation is None:
            generation = start_generation(writer, request if request is not None else self.request(turn, passages))
        extra: list[Notice] = []
        try:
            preface = [turn.preface] if turn.preface is not None and turn.preface != NO_IMAGE_TEXT else []
            if turn.preface == NO_IMAGE_TEXT:
                preface = [NO_IMAGE_TEXT]

            def pieces() -> Iterator[str]:
                yield from preface
                yield from generation

            if turn.policy == "drop" and not aliased:
                message = with_preview(_cite("".join(pieces()), sources=passages, resolver=self.resolver), pending)
                message = self._finish(turn, message, passages, generation.result, [*notes, *extra],
                                       policy=turn.policy, aliased=False, pending=pending, settle=False)
                for event in whole_message_events(message):
                    progress.shown = True
                    yield event
                if pending is not None:  # settled only once its events are out (and recorded by a server)
                    message = self.store.settle_message(self.workspace_id, message)
            else:
                support = self._support_fn(aliased, turn)
                citer = StreamingCiter(sources=passages, resolver=self.resolver, support=support)
                expander = NumberedExpander(passages) if aliased else None
                gate = SentenceGate(passages, policy=turn.policy, support=support) if aliased else None
                for piece in pieces():
                    text = expander.feed(piece) if expander is not None else piece
                    if gate is not None and text:
                        text = gate.feed(text)
                    if text:
                        yield from self._shown(citer.feed(text), progress)
                tail = expander.close() if expander is not None else ""
                if gate is not None:  # a truncated answer's unfinished last sentence gets no added citation
                    tail = (gate.feed(tail) if tail else "") + gate.close(finished=generation.result.truncated is None)
                if tail:
                    yield from self._shown(citer.feed(tail), progress)
                events, message = citer.close()
                yield from self._shown(events, progress)
                if expander is not None:
                    extra.extend(Notice(**w) for w in expander.warnings)
                if gate is not None:
                    extra.extend(gate.warnings)
                # an aliased answer's citations were checked (and, under drop, removed) sentence by
                # sentence as they streamed: the final check flags, it never changes the sent text
                message = self._finish(turn, with_preview(message, pending), passages, generation.result,
                                       [*notes, *extra], policy="flag" if aliased else turn.policy,
                                       aliased=aliased, pending=pending)
        finally:
            generation.close()
        self.message = message
        yield Event("done", {"message": message.model_dump(mode="json")})

    @staticmethod
    def _shown(events: Sequence[Event], progress: _Progress) -> Iterator[Event]:
        for event in events:
            if event.kind in _SHOWN:
                progress.shown = True
            yield event

    def _support_fn(self, aliased: bool, turn: Turn) -> Any:
        """The streaming citer's check of one (part, passage) pair: with the turn's domain
        expansions, and with the embedder and the judge for an aliased generator's own
        sentences."""
        expansions = _expansions(turn)
        embedder, judge = (self.embedder, self.judge) if aliased else (None, None)
        return lambda text, passage: part_support(text, passage, embedder=embedder, judge=judge,
                                                  expansions=expansions)

    def _finish(self, turn: Turn, message: Message, passages: Sequence[Passage], result: GenerationResult,
                notes: Sequence[Notice], *, policy: str, aliased: bool, pending: PendingTurn | None = None,
                settle: bool = True) -> Message:
        """Support (rule 8), warnings, ids, metadata, offsets and storage of a cited answer:
        stored with its user message when the turn has a chat, or settling the ``pending``
        message of an asynchronous turn (``settle=False``: the caller settles it)."""
        message = apply_support(message, policy=policy, embedder=self.embedder if aliased else None,
                                judge=self.judge if aliased else None, expansions=_expansions(turn))
        if turn.query and turn.reading.analysis is not None:
            facts = turn.reading.facts
            aliases = {f.name.text: f.aliases for f in facts.names if f.aliases} if facts is not None else None
            message = apply_relevance(message, turn.reading.analysis, aliases=aliases)
        message.warnings.extend(n.model_copy() for n in turn.notes)
        message.warnings.extend(n.model_copy() for n in notes)
        if result.truncated is not None:
            message.warnings.append(truncation_warning(result.truncated))
        message.warnings.extend(turn_warnings(self.store, self.workspace_id, turn, passages, message))
        message.id = str(uuid.uuid4()) if pending is None else pending.message.id
        message.grounded = bool(message.references)
        message.image_url = turn.image_url
        message.generation = result.to_dict()  # type: ignore[attr-defined] - additive: who wrote it
        message.grounded_coverage = grounded_coverage(message)  # type: ignore[attr-defined] - additive
        message = convert_offsets(message, turn.offsets) if turn.offsets != "codepoint" else message
        if pending is not None:
            message.created_at = pending.message.created_at
            return self.store.settle_message(self.workspace_id, message) if settle else message
        if turn.chat_id is None:
            return message
        _, stored = self.store.add_messages(self.workspace_id, turn.chat_id,
                                            [user_message(turn, message.offset_unit), message])
        return stored


def _expansions(turn: Turn) -> Expansions:
    """The expansions of the turn's domain pack (none before retrieval read the question)."""
    analysis = turn.reading.analysis
    return analysis.expansions if analysis is not None else NO_EXPANSIONS


def user_message(turn: Turn, offset_unit: str) -> Message:
    """The stored user message of a turn (``resource_ids``: the resources the question
    was restricted to; additive ``filters`` as given, and ``query`` when a follow-up carried
    the previous subject, for the follow-ups after it)."""
    restricted = [v for c in turn.conditions if c.key == "resource_id" and c.op == "eq" for v in c.values]
    user = Message(role="user", text=turn.question if turn.preface is None else "",
                   resource_ids=list(dict.fromkeys(restricted)), image_url=turn.image_url,
                   offset_unit=offset_unit, created_at=turn.asked_at)
    if turn.filters:
        user.filters = turn.filters  # type: ignore[attr-defined] - an additive field
    if turn.query and turn.query != turn.question:
        user.query = turn.query  # type: ignore[attr-defined] - additive: what a follow-up carried
    return user


__all__ = ["AnswerPipeline", "failure", "user_message", "whole_message_events", "with_preview"]
