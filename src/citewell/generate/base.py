"""The generator interface: question + ranked passages -> answer text with inline links.

A generator writes raw answer text in which every claim drawn from a passage is
followed by a link to it, in the syntax of DESIGN.md "The citation contract" rule 1:
``[label](chunk:CHUNK_ID)`` for a passage (the cite stage normalises a link to a post's
chunk to the post), ``[label](post:SOURCE:ID)`` for a post, ``[label](TYPE:ID)`` for an
entity. Quoted source text must not change that link structure (rule 5): a bracketed
number that is not a citation is written ``\\[12\\]``. The cite stage turns the links
into ``[N]`` markers; generators never number sources themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

from citewell.models import Passage


@runtime_checkable
class Generator(Protocol):
    """Anything that answers a question from ranked passages with inline links.

    - ``passages`` are ordered best first (as the retriever ranked them); a generator
      may cite only these passages.
    - ``stream`` yields the raw answer text in pieces (the pieces carry whole links:
      an implementation should not split a link across pieces, although the cite
      stage's streamer copes if it does); ``"".join(stream(q, ps)) == generate(q, ps)``.
    - When nothing in ``passages`` answers the question, the answer says so in plain
      text, with no link.
    """

    def stream(self, question: str, passages: Sequence[Passage]) -> Iterator[str]:
        """Yield the raw answer text (with ``[label](chunk:ID)`` links) in pieces."""
        ...

    def generate(self, question: str, passages: Sequence[Passage]) -> str:
        """Return the whole raw answer text: ``"".join(self.stream(question, passages))``."""
        ...


__all__ = ["Generator"]
