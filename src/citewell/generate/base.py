"""The generator interface: a :class:`GenerationRequest` in, answer text with links out.

A generator writes raw answer text in which every claim drawn from a passage is
followed by a link to it, in the syntax of docs/architecture.md "The citation contract" rule 1:
``[label](chunk:CHUNK_ID)`` for a passage (the cite stage normalises a link to a post's
chunk to the post), ``[label](post:SOURCE:ID)`` for a post, ``[label](TYPE:ID)`` for an
entity. Quoted source text must not change that link structure (rule 5): a bracketed
number that is not a citation is written ``\\[12\\]``. The cite stage turns the links
into ``[N]`` markers; generators never number sources themselves.

A generator that declares ``cites_by_alias = True`` may instead cite the passages by
the short aliases of the request (``[S2]``, ``[label](S2)``) or by their position
(``[2]``, ``[1, 2]``, ``[1-3]``, ``【2】``): the answering pipeline expands those into
rule-1 links while the text streams (:class:`citewell.cite.numbered.NumberedExpander`),
so only offered passages can ever be numbered.

Shapes:

- :class:`GenerationRequest`: question, rewritten query, history, passages with their
  aliases, deadline (``time.monotonic()`` seconds);
- :class:`GenerationResult`: who wrote the answer (generator name, model) and the token
  usage the endpoint reported;
- :class:`Generation`: the pieces of an answer as an iterator, with its ``result``
  (filled in as the pieces come; final once the iterator is exhausted); ``close()``
  stops the work (an HTTP stream is closed, so the model stops);
- :class:`~citewell.errors.GenerationError`: a coded failure (``LLM_UNAVAILABLE``,
  ``LLM_BAD_RESPONSE``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from citewell.errors import GenerationError
from citewell.models import Passage

#: The alias of the i-th offered passage (0-based ``i``): ``S1``, ``S2`` … Short on
#: purpose: small models mangle UUIDs. ``[S2]`` and ``[2]`` name the same passage.
ALIAS_PREFIX = "S"


def alias_for(index: int) -> str:
    """The per-turn alias of the passage at 0-based position ``index`` (``0`` → ``"S1"``)."""
    return f"{ALIAS_PREFIX}{index + 1}"


if TYPE_CHECKING:
    from ..domains.base import FigureAnswer
    from ..question.analysis import QuestionAnalysis


@dataclass(frozen=True)
class ScopeVerdict:
    """What citewell's scope check (:mod:`citewell.answer.scope`) found for a turn that it
    let through to the writer: ``checked`` (the check ran on facts read from the store;
    False when there were none to read, e.g. no analysis), ``subjects`` (the question's
    names the sources in scope hold), ``years`` (the years asked that passages in scope
    name), ``documents`` (titles of the in-scope documents about the question, at most
    a few). A writer is only ever called when the check did not abstain, so a checked
    verdict means the subject and the period asked are in the sources."""

    checked: bool = False
    subjects: tuple[str, ...] = ()
    years: tuple[int, ...] = ()
    documents: tuple[str, ...] = ()


@dataclass(frozen=True)
class HistoryTurn:
    """One earlier message of the conversation, as a generator may show it to a model:
    ``role`` ``user`` or ``assistant``, ``text`` without citation markers."""

    role: str
    text: str


@dataclass(frozen=True)
class GenerationRequest:
    """What a generator answers from.

    - ``question``: the question as the user asked it (may be empty for an image-only
      question whose text became the query);
    - ``query``: what retrieval searched with (a follow-up carries the previous
      subject: "And in 2021?" → "What was Acme revenue? And in 2021?");
    - ``passages``: the retrieved passages, best first; a generator may cite only these;
    - ``aliases``: one short alias per passage, same order (:func:`alias_for`);
    - ``history``: the conversation's earlier turns, oldest first (empty outside a chat);
    - ``deadline``: ``time.monotonic()`` value by which the answer must be finished, or
      None for no limit;
    - ``analysis``: the turn's :class:`~citewell.question.analysis.QuestionAnalysis` of
      ``query`` (what it asks: names, periods, measure, the kind of answer wanted); a
      request built without one is analysed on first use with no domain pack;
    - ``name_aliases``: the names the sources link to the question's names (``{name:
      (ticker or company name, …)}``, the scope check's facts; empty when none), by which a
      passage may speak of a subject (a post tagged ``$NFLX`` about Netflix);
    - ``scope``: the scope check's :class:`ScopeVerdict` for this turn (None: not run).

    :meth:`figure` is the domain pack's structured answer (statement rows, a calculation),
    computed once per request and shared by every writer that reads it (the LLM prompt,
    then the extractive fallback).
    """

    question: str
    query: str
    passages: tuple[Passage, ...] = ()
    aliases: tuple[str, ...] = ()
    history: tuple[HistoryTurn, ...] = ()
    deadline: float | None = None
    analysis: "QuestionAnalysis | None" = None
    name_aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    scope: ScopeVerdict | None = None
    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(cls, question: str, passages: Sequence[Passage], *, query: str | None = None,
              history: Iterable[HistoryTurn] = (), deadline: float | None = None,
              analysis: "QuestionAnalysis | None" = None,
              name_aliases: Mapping[str, Iterable[str]] | None = None,
              scope: ScopeVerdict | None = None) -> "GenerationRequest":
        """A request whose aliases are ``S1`` … ``Sn`` in passage order (``query``
        defaults to the question)."""
        return cls(question=question, query=question if query is None else query, passages=tuple(passages),
                   aliases=tuple(alias_for(i) for i in range(len(passages))), history=tuple(history),
                   deadline=deadline, analysis=analysis,
                   name_aliases={k: tuple(v) for k, v in (name_aliases or {}).items()}, scope=scope)

    def figure(self) -> "FigureAnswer | None":
        """The domain pack's :class:`~citewell.domains.base.FigureAnswer` for this request's
        analysis and passages (statement rows with their structured facts, the calculation
        asked), or None (no analysis, no domain pack, no row answers). Computed on the first
        call and kept: the prompt of an LLM writer and an extractive fallback share it."""
        if "figure" not in self._memo:
            from ..domains.base import Domain

            domain = self.analysis.domain if self.analysis is not None else None
            self._memo["figure"] = (domain.figure_answer(self.analysis, self.passages)
                                    if isinstance(domain, Domain) and self.analysis is not None else None)
        return self._memo["figure"]

    def read(self) -> "QuestionAnalysis":
        """:attr:`analysis`, or the query analysed with no domain pack when the request
        was built without one."""
        if self.analysis is not None:
            return self.analysis
        from ..question.analysis import analyse

        return analyse(self.question, query=self.query)

    def remaining(self) -> float | None:
        """Seconds left before :attr:`deadline` (never below 0), or None without one."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())


@dataclass
class GenerationResult:
    """Metadata of one generated answer (recorded on the message as ``generation``).

    ``generator``: its name (``extractive``, ``llm`` …); ``model``: the model that wrote
    it (None for a model-free generator); ``usage``: ``{prompt_tokens,
    completion_tokens, total_tokens}`` when the endpoint reported it; ``finish_reason``:
    the endpoint's (``stop``, ``length`` …); ``served_model``: the model the endpoint
    said it used, when that differs from ``model`` (a gateway's alias); ``truncated``:
    why the answer was cut short (a length limit), None when it is whole — not stored in
    ``generation``: the pipeline turns it into an ``ANSWER_TRUNCATED`` warning.
    """

    generator: str
    model: str | None = None
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    served_model: str | None = None
    truncated: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored on the message (None fields left out)."""
        return {k: v for k, v in (("generator", self.generator), ("model", self.model), ("usage", self.usage),
                                  ("finish_reason", self.finish_reason), ("served_model", self.served_model))
                if v is not None}


@dataclass
class Generation:
    """An answer being generated: iterate it for the raw pieces; ``result`` holds the
    metadata (final once the iteration ends); :meth:`close` stops the work early."""

    pieces: Iterator[str]
    result: GenerationResult = field(default_factory=lambda: GenerationResult("unknown"))

    def __iter__(self) -> Iterator[str]:
        return self.pieces

    def __next__(self) -> str:
        return next(self.pieces)

    def close(self) -> None:
        """Stop generating (closes the underlying generator, hence its HTTP stream)."""
        close = getattr(self.pieces, "close", None)
        if close is not None:
            close()


@runtime_checkable
class Generator(Protocol):
    """Anything that answers a :class:`GenerationRequest` with linked text.

    - ``name``: short name recorded on the message (``extractive``, ``llm``);
    - ``cites_by_alias``: True when the generator may cite by alias or position (the
      pipeline then expands ``[S2]``/``[2]`` forms and checks each sentence as it
      streams: an uncited sentence gets the offered passage that supports it best);
    - ``write(request)`` returns the raw answer in pieces: a plain iterator of ``str``
      or a :class:`Generation` (with metadata). It may raise
      :class:`~citewell.errors.GenerationError` before or while yielding.
    - When nothing in the passages answers the question, the answer says so in plain
      text, with no link.
    """

    name: str

    def write(self, request: GenerationRequest) -> Iterator[str] | Generation:
        """Yield the raw answer text (with rule-1 links or, with ``cites_by_alias``, aliases)."""
        ...


def start_generation(generator: Any, request: GenerationRequest) -> Generation:
    """Call ``generator.write(request)`` and wrap the result in a :class:`Generation`
    (a plain iterator gets ``GenerationResult(generator=<its name>)``)."""
    out = generator.write(request)
    if isinstance(out, Generation):
        return out
    name = getattr(generator, "name", None) or type(generator).__name__
    return Generation(iter(out), GenerationResult(str(name)))


__all__ = ["ALIAS_PREFIX", "Generation", "GenerationError", "GenerationRequest", "GenerationResult", "Generator",
           "HistoryTurn", "ScopeVerdict", "alias_for", "start_generation"]
