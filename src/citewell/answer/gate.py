"""The sentence gate: a model's sentences checked as they stream, before they are numbered.

A generator that writes its own prose (``cites_by_alias``) may leave a claim uncited or
cite a passage that does not back it. Between the alias expander and the streaming citer
(rule-1 links in, rule-1 links out), :class:`SentenceGate` finds each sentence as it ends
and checks it against the offered passages with the rule-8 support checks:

- **uncited sentence** (no link to an offered passage, some letter or digit, not a
  refusal such as "I don't know"): every offered passage is checked; the one that
  supports it best (verdict ``supported``, highest score, the earlier passage on a tie)
  is linked right before the sentence's final punctuation, with a
  ``citation_added`` warning ``{chunk_id, score}``; when none passes it stays uncited
  (the message's ``grounded_coverage`` then reports it);
- **policy drop**: each link of the sentence is checked; an ``unsupported`` or
  ``uncertain`` one is removed (with the spaces before it) and a ``citation_dropped``
  warning ``{chunk_id, verdict, score, reasons}`` recorded, so it is never numbered nor
  sent; the sentence is held until checked.

What is released: under policy ``flag`` everything up to a possible sentence end (a
``.``/``!``/``?``/``…`` run at the end of the input so far, with any spaces and links
after it), so prose streams word by word and only the final punctuation waits for the
decision; under ``drop`` whole checked sentences. A sentence ends at a terminal
punctuation run followed by whitespace and then neither a citation link nor a lowercase
word (``U.S. economy``, ``Inc. reported``), including the links right after it; or at a
line break. Input holding code (a backtick or ``~~~``) is passed through unchecked from
there on (the final message's support checks still flag its citations).

The input must come in pieces that end at settled points (as
:class:`~citewell.cite.numbered.NumberedExpander` releases them): a piece never ends
inside a link. Offsets: none here; the citer numbers what the gate releases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..cite.links import Token, format_link, scan
from ..cite.resolver import post_key
from ..models import Notice, Passage

#: A terminal punctuation run (and the closers after it).
_TERMINAL = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*")
#: A sentence that ends with its terminal punctuation (and closers).
_ENDED = re.compile(r"[.!?\u2026][\"'\u201d\u2019)\]]*$")
_CODE = re.compile(r"`|~~~")
_CONTENT = re.compile(r"[^\W_]")
#: Sentences that say the answer is not known: never auto-cited.
REFUSAL = re.compile(
    r"\b(?:i\s+(?:do\s+not|don'?t|cannot|can'?t)\s+know|(?:not|no)\s+(?:enough|sufficient)\s+information"
    r"|(?:do(?:es)?\s+not|don'?t|doesn'?t)\s+(?:contain|provide|include|mention|say|state|specify|answer|give)"
    r"|no\s+(?:passage|source|information|data|mention)|cannot\s+(?:be\s+)?(?:determined?|answered|answer|found|find|tell)"
    r"|unable\s+to\s+(?:determine|answer|find))",
    re.IGNORECASE)
DROPPED = ("unsupported", "uncertain")

#: ``support(sentence, passage) -> {"verdict", "score", "reasons"}`` (as part_support).
SupportFn = Callable[[str, Passage], dict[str, Any]]


class SentenceGate:
    """Checks an aliased generator's sentences as they stream (see the module docstring).

    ``passages``: the offered passages; ``policy``: ``flag`` or ``drop``; ``support``:
    the check of one (sentence, passage) pair for the links the model wrote (may include
    a judge); ``probe``: the check used to find a passage for an uncited sentence
    (default ``support``). :meth:`feed` returns the text that may go on now;
    :meth:`close` the rest; :attr:`warnings` the ``citation_added`` /
    ``citation_dropped`` notices.
    """

    def __init__(self, passages: Sequence[Passage], *, policy: str, support: SupportFn,
                 probe: SupportFn | None = None) -> None:
        self.passages = list(passages)
        self.policy = policy
        self.support = support
        self.probe = probe or support
        self.warnings: list[Notice] = []
        self._by_chunk = {p.chunk.id: p for p in self.passages}
        self._by_post = {key: p for p in self.passages if (key := post_key(p)) is not None}
        self._sent = ""  # the current sentence's text already released (flag)
        self._held = ""  # input not released yet
        self._code = False

    # ---------------------------------------------------------------- public

    def feed(self, text: str) -> str:
        """Add ``text`` (ending at a settled point); return what may be released now."""
        if self._code:
            return text
        self._held += text
        if _CODE.search(self._held):  # code: from here on, pass through
            self._code = True
            out, self._held, self._sent = self._held, "", ""
            return out
        out: list[str] = []
        while True:
            whole = self._sent + self._held
            end = self._sentence_end(whole)
            if end is None:
                break
            sentence, rest = whole[:end], whole[end:]
            out.append(self._process(sentence, len(self._sent))[len(self._sent):])
            self._sent, self._held = "", rest
        if self.policy == "flag" and self._held:
            keep = self._pending_end(self._sent + self._held)
            cut = max(0, keep - len(self._sent))
            out.append(self._held[:cut])
            self._sent += self._held[:cut]
            self._held = self._held[cut:]
        return "".join(out)

    def close(self, *, finished: bool = True) -> str:
        """The rest: the last sentence, checked. ``finished=False``: the answer was cut
        short (a length limit), so a last sentence that does not end with terminal
        punctuation is unfinished and gets no added citation (its own links are still
        checked under policy drop)."""
        if self._code:
            return ""
        whole, released = self._sent + self._held, len(self._sent)
        self._sent = self._held = ""
        if not _CONTENT.search(whole):
            return whole[released:]
        complete = finished or _ENDED.search(_plain(scan(whole))) is not None
        return self._process(whole, released, add=complete)[released:]

    # ---------------------------------------------------------------- sentences

    @staticmethod
    def _sentence_end(text: str) -> int | None:
        """End of the first complete sentence of ``text`` (after its punctuation and the
        links right after it), or None when no sentence end is decided yet."""
        tokens = scan(text)
        starts = {t.start: t for t in tokens}
        content = False
        for token in tokens:
            if token.kind in ("link", "tail", "open", "bracket"):
                continue
            if token.kind != "text":
                content = True
                continue
            body = token.text
            for i, ch in enumerate(body):
                pos = token.start + i
                if ch in "\r\n":
                    if content:
                        return pos
                    continue
                if not ch.isspace():
                    content = True
                if ch not in ".!?\u2026" or (i and body[i - 1] in ".!?\u2026"):
                    continue
                m = _TERMINAL.match(text, pos)
                assert m is not None
                end = _after_links(text, m.end(), starts)
                if end is None:
                    return None  # undecided: what follows is not known yet
                if end == -1:
                    continue  # not a sentence end ("U.S. economy", "1.5")
                return end
        return None

    @staticmethod
    def _pending_end(text: str) -> int:
        """Length of ``text`` that may be released under policy flag: all but a trailing
        possible sentence end (a terminal punctuation run and whatever follows it)."""
        m = None
        for m in _TERMINAL.finditer(text):
            pass
        if m is None:
            return len(text)
        tail = text[m.end():]
        if tail.strip() == "" or scan(tail.lstrip())[0].kind in ("link", "tail"):
            return m.start()
        return len(text)

    def _offered(self, token: Token) -> Passage | None:
        target = token.target
        if token.kind != "link" or target is None:
            return None
        if target.kind == "chunk":
            return self._by_chunk.get(target.id)
        if target.kind == "post" and target.source is not None:
            return self._by_post.get((target.source, target.id))
        return None

    def _process(self, sentence: str, released: int, *, add: bool = True) -> str:
        """The sentence with its unsupported links dropped (policy drop) and, when it cites
        no offered passage (and ``add``), the best supporting one added; ``released``: how
        much of it the client has (never changed)."""
        tokens = scan(sentence)
        if any(t.kind == "code" for t in tokens):
            return sentence
        plain = _plain(tokens)
        if not _CONTENT.search(plain):
            return sentence
        cited = [(t, p) for t in tokens if (p := self._offered(t)) is not None]
        drop: list[Token] = []
        if self.policy == "drop":
            for token, passage in cited:
                verdict = self.support(plain, passage)
                if verdict.get("verdict") in DROPPED and token.start >= released:
                    drop.append(token)
                    self.warnings.append(Notice(
                        code="citation_dropped", chunk_id=passage.chunk.id, verdict=verdict.get("verdict"),
                        score=verdict.get("score"), reasons=list(verdict.get("reasons") or []),
                        message=f"a citation of {passage.resource_title or 'a passage'} was removed from a sentence "
                                f"it does not support ({verdict.get('verdict')})"))
        if drop:
            sentence = _without(sentence, drop)
        if not add or len(cited) > len(drop) or REFUSAL.search(plain):
            return sentence
        best: tuple[float, int, Passage] | None = None
        for index, passage in enumerate(self.passages):
            verdict = self.probe(plain, passage)
            if verdict.get("verdict") == "supported":
                score = float(verdict.get("score") or 0.0)
                if best is None or score > best[0]:
                    best = (score, index, passage)
        if best is None:
            return sentence
        score, index, passage = best
        key = post_key(passage)
        label = str(index + 1)
        link = format_link(label, post=key) if key else format_link(label, chunk_id=passage.chunk.id)
        self.warnings.append(Notice(code="citation_added", chunk_id=passage.chunk.id, score=score,
                                    message=f"an uncited sentence was linked to the offered passage that supports "
                                            f"it best ({passage.resource_title or 'a passage'})"))
        return _insert(sentence, link, released)


def _insert(sentence: str, link: str, released: int) -> str:
    """``sentence`` with ``link`` before its final punctuation run (after its last word
    when it has none), never inside its first ``released`` characters."""
    body_end = len(sentence.rstrip())
    m = None
    for m in _TERMINAL.finditer(sentence, 0, body_end):
        pass
    at = m.start() if m is not None and m.end() == body_end else body_end
    if at < released:
        at = max(released, body_end) if released <= body_end else released
    before = sentence[:at]
    if at > released:
        trimmed = before.rstrip(" \t")
        before = trimmed if len(trimmed) >= released else before
    sep = "" if before.endswith((" ", "\t", "\n")) or not before else " "
    return before + sep + link + sentence[at:]


def _after_links(text: str, pos: int, starts: dict[int, Token]) -> int | None:
    """After a terminal punctuation run ending at ``pos``: the sentence end (after any
    links that follow it), ``-1`` when this is no sentence end, None when undecided."""
    end = pos
    while True:
        k = pos
        while k < len(text) and text[k] in " \t":
            k += 1
        if k == len(text):
            return None
        token = starts.get(k)
        if token is not None and token.kind in ("link", "tail"):
            pos = end = token.end
            continue
        if k == end:  # no space after the punctuation: "1.5", "e.g.x"
            return -1 if not text[k] in "\r\n" else end
        if text[k].islower():
            return -1
        return end


def _plain(tokens: Sequence[Token]) -> str:
    """The sentence as support checks read it: citation links (and the spaces before
    them) removed, entity links as their labels."""
    out: list[str] = []
    for token in tokens:
        if token.kind in ("link", "tail"):
            target = token.target
            if target is not None and target.kind == "entity":
                out.append(token.label or "")
            elif out:
                out[-1] = out[-1].rstrip(" \t")
            continue
        if token.kind == "open":
            continue
        out.append(token.text)
    return "".join(out).strip()


def _without(sentence: str, drop: Sequence[Token]) -> str:
    """``sentence`` without the ``drop`` link tokens and the spaces right before them."""
    out: list[str] = []
    pos = 0
    for token in sorted(drop, key=lambda t: t.start):
        piece = sentence[pos:token.start]
        out.append(piece.rstrip(" \t"))
        pos = token.end
    out.append(sentence[pos:])
    return "".join(out)


__all__ = ["REFUSAL", "SentenceGate"]
