"""The default, model-free generator: quotes the passage units that best answer a question.

:class:`ExtractiveGenerator` needs no model and no network. It splits each retrieved
passage into *units*, keeps those that answer enough of the question by themselves,
scores them, picks a few, and quotes each one followed by a link to its passage::

    (Millions) 2022 2021 Purchases of PP&E $ (1,749) $ (1,603) [1](chunk:07ab…). …

Units (exact code-point spans of ``chunk.text``):

- ``table`` chunks: one unit per row, i.e. per non-blank line (surrounding whitespace
  excluded). A line with no letter at all (``$``, ``34,229``, ``(1,749)`` …) continues
  the row above it, so tables whose extractor wrote one cell per line still give whole
  rows (``Net sales\\n$\\n34,229`` is one unit); a line starting with a lower-case letter
  continues a label row above it that has no value (``… net cash provided by operating``
  / ``activities``). Lines of running text (a note under a table) are joined and split
  into sentences, and a line that finishes such an unfinished sentence joins it even when
  it looks like a row (``… open approximately`` / ``5 Outlet Centers in fiscal 2024.``);
- every other chunk (paragraph, transcript, news, post, image): the sentences of
  :func:`citewell.text.sentences.sentence_spans` (syntok). A transcript chunk has one cue per
  line and a sentence may run over several cues: syntok does not break on a single line
  break, and scoring treats line breaks as spaces. Two repairs: a line starting with a
  list bullet starts a unit (a bullet list is not one run-on sentence), and a sentence
  ending in ``,`` or ``;`` runs on into the next one when the joined quote is still one
  sentence to syntok (each unit must be one sentence of the answer).

Never quoted:

- a unit that is itself a question (it ends in ``?``: an interviewer's question, a post
  title) — it answers nothing; likewise a lead-in ending in ``:`` (``Fourth Quarter 2022
  Financial Highlights:``, ``… obligations are as follows:``), which announces what
  follows and states nothing;
- a *fragment* cut by the chunk's edge, in punctuated text: the chunk's last unit when it
  has 6 words or more, no final punctuation and ends in a lower-case word or ``,;:(-``
  (``… 3M reflected a pre-tax charge of``), or its first unit when it starts with a
  lower-case letter and the chunk does not start its resource. A passage holds nothing
  beyond its chunk, so a fragment cannot be completed;
- a column header row (two or more years and no other value: ``(Millions) 2022 2021``)
  on its own — it is quoted only with a row it labels (below);
- code or markup (``#include <asm/io.h>``), and a unit with no content word outside the
  question's (a heading such as ``Net Sales:`` restating the question).

Quoting (what support checks must undo, see :func:`unescape_quote`):

1. a whitespace run that contains a line break is written as one space
   (:func:`collapse_breaks`): a line break inside an answer sentence could start a
   markdown list, heading or block quote (caption lines often begin with ``- ``), and
   the answer must read as one paragraph. Every other character is kept verbatim, so a
   unit without line breaks is quoted as the exact substring ``chunk.text[start:end]``;
2. a unit longer than ``max_words`` words (only possible for the first unit chosen) is
   cut after ``max_words`` words and ``…`` (U+2026) is appended;
3. markdown escaping (:func:`escape_quote`): every backslash is doubled, and every
   backtick and every square bracket gets a backslash (``[12]`` -> ``\\[12\\]``,
   ``[a](x)`` -> ``\\[a\\](x)``). Escaping *every* bracket, not only those already
   forming a link or a bracketed number, is deliberate: an unmatched bracket in a quote
   could pair with the link the generator appends or with a bracket of the next unit.
   All other text is left alone. Support checks undo this step with
   :func:`unescape_quote` (its exact inverse) before comparing a quote with its passage.

A table row with figures but no year of its own is quoted with its *column header*: the
nearest row above it in its chunk naming two or more years. When that header is the row
right above, the unit becomes the one exact span from the header to the row
(``($ in millions …) 2023 2022 Net sales $ 14,694 $ 14,544``); otherwise the header is
quoted as a unit of its own just before the row (document order), with the same link.
A header is quoted once per chunk, never with a cut row, never when longer than 25
words, never when the cite stage would split the quote into two sentences (syntok ends
a sentence at ``(Millions, except per share amounts)`` before ``2022``: every quoted unit
must stay one cited sentence), and does not count against ``max_sentences``,
``per_passage`` or ``max_words`` (:attr:`QuotedUnit.header_words` says how many of a
unit's words are header).

Scoring (deterministic: no hashing order, no randomness, float sums in a fixed order,
scores rounded to 9 places before comparison):

- text is read by :mod:`citewell.text.terms`, the term analysis the retriever
  uses too: lower-cased; ``1,749`` -> ``1749``; ``FY2022``/``FY22`` -> ``2022``;
  ``3M's`` -> ``3m``; ``PP&E``, ``SG&A`` stay one token; line breaks are spaces. Stop
  words are dropped (and ``long``/``much``/``many``… after ``how``); other words get
  their Porter stem (``purchases``/``purchased`` -> ``purchas``);
- each remaining question term is a *concept*; phrases of :data:`EXPANSIONS` (the
  shared table of :mod:`citewell.text.terms`) are one concept with alternatives
  (``capex`` also matches a unit containing ``capital expenditures`` or ``purchases of
  property, plant and equipment``). A one-word alternative that is only part of a
  longer one (``PP&E`` of *capex*, inside ``purchases of PP&E``; ``sales`` of *revenue*,
  inside ``net sales``) earns half the concept's credit unless the unit also has the
  rest of the longer one: net PP&E is not capex;
- *contextual* concepts are numbers (years included), quarters (``Q2``) and words or
  names found in a passage's resource title or file name (``3M`` for ``3M_2022_10K``,
  ``MGM`` for ``MGMRESORTS_…``, ``Alpha Vertex`` for ``…_alphavertex-…``): they describe
  a document more than a sentence, so a unit that lacks them still gets half credit when
  its chunk text or its title has them, and a number in a table row counts only at that
  half credit (a table's years label its columns, not one row);
- a concept's weight is a BM25-style IDF over the units of the given passages,
  ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (``df`` counts own matches, or for contextual
  concepts matches through chunk/title), times 1.5 for a number and 1.3 for a proper
  noun or ticker; a concept only in a later sentence of the question (after its first
  ``?``: an instruction, a definition, the words a follow-up carries over) weighs half,
  and a word for the answer's form (``amount``, ``USD``, ``millions``, ``percent`` …)
  nothing;
- each pair of consecutive single-word question concepts (``net sales``) is worth the
  smaller of the two weights again when the unit has them in that order within two
  content words;
- ``coverage`` = credited weight / total weight, multiplied by ``min(1, 50 / words)``
  (a long unit must cover proportionally more to beat a crisp sentence) and, for a
  question asking for a figure (``how many/much``, ``what percentage``, or ``what
  was/is`` about a statement line item such as *capex* or *net sales*, not ``why``/``what
  drove``), by 0.6 for a unit that states no value (no number other than years, the day
  of a date, or a note/item/page number: ``… capital expenditures … in 2022`` gives no
  amount);
- ``score = coverage + 0.05 / rank``, ``rank`` the passage's 1-based position in the
  given (retriever) order: a small prior for better-ranked passages.

Answering enough of the question (a unit failing any test is not quoted):

- *key concepts* are the concepts of the question's first sentence (up to its first
  ``?``) other than numbers, contextual words, words for the answer's form, and words
  that frame a question rather than name its subject (``what drove``, ``improving``,
  ``profile``, ``worst``, ``people say`` …: :data:`_FRAME_TERMS`); a name no passage
  mentions (``JnJ``) is dropped. A key word that no unit matches weighs as much as the
  heaviest key word some unit matches (a word no passage uses is no rarer for that);
- the unit must match a non-number concept in its own text;
- a *short* question (at most 4 key concepts): the unit must cover at least half the
  key weight — a key concept counts in full in the unit's own text (half for the part
  alternatives above) and half when matched by what the unit is read with (the label
  rows above a table row — table title, section label, column header —, or the heading
  above a sentence, such as ``Regional Operations`` over its bullets) — *and* at least
  two of the question's concepts when it has two or more, where a title word counts
  when the unit's passage has it (``The next book is …`` in ``book_club.txt`` answers
  "What is the book club reading next?"; ``… the head-snarlers …`` does not answer "Who
  is the head barista?"). It must also cover at least 0.75 times the share of key and
  title-word weight that the best-scoring unit covers;
- a *long* question (more than 4 key concepts, such as FinanceBench's): key words that
  no unit matches are phrasing and are dropped, and the unit must match one key concept
  in its own text or cover half the key weight;
- for a figure question, when some eligible unit states a value, units without one go;
  when some eligible unit names a year the question asks about (for a figure question, a
  table row through its column header too), prose units naming only other years go;
- the unit must score at least ``min_relative`` (default 0.4) times the best score.

With nothing left, the answer is :data:`NO_EVIDENCE_TEXT` (no citation).

Selection walks the eligible units by score (ties: passage rank, then fewer words, then
position in the chunk) in up to three passes, so the strongest passages are all heard
before any one of them speaks twice:

1. the best unit of each passage;
2. further units, up to ``per_passage`` per passage;
3. only if passes 1–2 quote a single passage: the best eligible unit of each other
   passage scoring at least half the floor (``min_relative / 2`` times the best score).

A unit is skipped when it nearly duplicates a chosen unit (token-set Jaccard >= 0.8, or
one's text or token set — of at least 3 tokens — contains the other's, unless the
containing unit comes from another passage and is more than twice as long) or when it
would exceed the word budget ``max_words`` (a shorter unit later may still fit);
selection ends at ``max_sentences`` units. The first unit is always taken, cut to
``max_words`` words if longer.

Output order: the chosen units are grouped by passage, passages in the order of their
best quoted unit's score (ties: rank), and within a passage in document order. The best
unit's passage therefore comes first — it is the one the cite stage numbers ``[1]``
(sources are numbered in first-appearance order, with no back-and-forth such as
``[2] … [1] … [2]``) — while sentences from one passage keep their original sequence (so
a "these increases were offset by …" follows what it refers to, and a column header
precedes its row).

Each unit is followed by ``[label](chunk:CHUNK_ID)`` where ``label`` is the passage's
rank (``Passage.rank``, or its 1-based position when rank is 0). The link goes before
the unit's final run of ``.``/``!``/``?`` (``… $34.2 billion [1](chunk:…).``), else it
is appended after a space and followed by a ``.`` that is not part of the quote
(``… (1,501) [1](chunk:…).``), so each unit is one sentence of the answer: the cite
stage's parts and the stream's pieces then coincide. Units are joined by one space.
With no passages, or no unit that answers enough of the question, the answer is exactly
:data:`NO_EVIDENCE_TEXT`, with no link.
"""

from __future__ import annotations

import math
from functools import lru_cache
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any
from dataclasses import dataclass, replace
from itertools import pairwise

from citewell.cite.links import format_link
from citewell.domains import Domain, FigureAnswer, domain_of_passages
from citewell.models import Passage
from citewell.generate.base import GenerationRequest
from citewell.generate.kindfit import KindFit, kind_fit
from citewell.generate.subjects import ABOUT, MENTIONS, names_of, names_subject, post_standing, spelled_terms
from citewell.question.names import mentions
from citewell.question.analysis import QuestionAnalysis, analyse
from citewell.text.numbers import is_year, states_value, years as _years
from citewell.text.sentences import cut_at_words, sentence_spans, word_count
from citewell.text.tables import ends_in_value as _ends_in_value
from citewell.text.tables import is_header_row as _is_header
from citewell.text.tables import is_prose_row as _is_prose_row
from citewell.text.tables import row_spans as _row_spans
from citewell.text.tables import restate_row
from citewell.text.terms import (
    NAME_BOOST,
    Concept,
    Expansions,
    Token,
    content_terms,
    near,
    question_concepts,
    tokens,
)

#: The whole answer when nothing retrieved answers the question (one sentence, no link).
NO_EVIDENCE_TEXT = "No passage in the sources answers this question."
#: :meth:`ExtractiveGenerator.stream`'s ``figure`` when not given: computed there.
_COMPUTE = object()
_ALNUM_RE = re.compile(r"[^0-9a-z]+")


_LETTER_RE = re.compile(r"[^\W\d_]")
_BREAK_RUN_RE = re.compile(r"\s*[\n\r\u2028\u2029\x0b\x0c\x1c\x1d\x1e\x85]\s*")
_UNESCAPE_RE = re.compile(r"\\([\\`\[\]()])")
_FINAL_PUNCT_RE = re.compile(r"[.!?]+$")

_RANK_PRIOR = 0.05
_CONTEXT_CREDIT = 0.5
_PART_CREDIT = 0.5
_PAIR_CREDIT = 1.0
_NO_FIGURE = 0.6
_LENGTH_PIVOT = 50
_LENGTH_EXPONENT = 1.0
_JACCARD_DUP = 0.8
_KEY_SHARE = 0.5
_SHORT_KEY = 4
_QUARTER_RE = re.compile(r"(?:q[1-4]|[1-4]q|h[12])$")
_CORE_RELATIVE = 0.75
_FRAGMENT_WORDS = 6
_HEADER_WORDS = 25
_HEADING_WORDS = 8
_LABEL_ROWS = 3
_JUNK_CHARS = frozenset("<>{}#=\\|^~")
_CODE_RE = re.compile(r"[A-Za-z0-9]\(|[A-Za-z0-9]_[A-Za-z0-9]")
_RELAXED_FLOOR = 0.5
_LATER_WEIGHT = 0.5
_DIGIT_RE = re.compile(r"\d")
_BULLET_RE = re.compile(r"[-*+\u2022\u25aa\u25cf\u25e6\u2023\u2043\u2219\u2013]\s+")
_BULLET_LINE_RE = re.compile(r"\n[ \t]*(?=[-*+\u2022\u25aa\u25cf\u25e6\u2023\u2043\u2219\u2013]\s)")
_CLOSERS = "\"'\u201d\u2019)]"
_TERMINAL_RE = re.compile(rf"[.!?\u2026][{re.escape(_CLOSERS)}]*$")
_QUESTION_END_RE = re.compile(rf"\?[{re.escape(_CLOSERS)}]*$")
#: A unit ending in a colon introduces what follows (a list, a table): it states nothing itself.
_LEAD_IN_RE = re.compile(r":\s*$")
_OPEN_END_RE = re.compile(r"[,;]$")
_CUT_END_RE = re.compile(r"(?:\s[a-z][a-z'\u2019-]*|[,;:(\u2013\u2014-])$")
#: Stems of words that say what form an answer takes, not what it is about ("the amount
#: in USD millions"): never a key concept.
_FORM_TERMS = content_terms("amount amounts usd dollars million millions billion billions thousand thousands "
                            "figure figures number round rounded decimal decimals places calculate compute "
                            "answer units value values percent percents percentage percentages one two three")
#: Stems of words that frame a question rather than name its subject ("what *drove* …",
#: "is X *improving*", "the *worst* quarter"): they
#: count in a unit's score but are never key concepts (a unit need not repeat them).
_FRAME_TERMS = content_terms(
    "drive drives drove driven driver drivers cause causes caused reason reasons explain change changes "
    "changed improve improves improving improved decline declines declined increase increases increased "
    "decrease decreases decreased trend trends company companies like state major primarily nature "
    "purpose report reports reported ongoing material materially important subject compare compared "
    "comparison represent represents perform performs performed performance happen happened overall "
    "exclude excluding include including impact impacts impacted affect affected data information "
    "business best worst highest lowest largest smallest biggest most least good bad better worse main "
    "key new current year years fiscal period fy drop drops dropped rise rises rose fall falls fell grow "
    "grows grew end begin beginning start time contribution contributions contribute contributed growth "
    "people say says said think thinks occur occurs occurred place total totals totaled"
)


# --------------------------------------------------------------------------- escaping


def escape_quote(text: str) -> str:
    """Escape quoted source text so it cannot form links, markers or code spans.

    Every ``\\`` is doubled, then every `````` ` ``````, ``[`` and ``]`` gets a
    backslash, and so does a ``(`` right after a ``]``: ``see [12]`` -> ``see \\[12\\]``,
    ``[a](post:x:1)`` -> ``\\[a\\]\\(post:x:1)`` (quoted source text can never become a
    citation, not even an orphan ``](target)``). Nothing else changes.
    :func:`unescape_quote` is the exact inverse (support checks apply it before comparing
    a quote with its passage).
    """
    text = text.replace("\\", "\\\\")
    text = text.replace("`", "\\`").replace("[", "\\[").replace("]", "\\]")
    return text.replace("\\](", "\\]\\(")


def unescape_quote(text: str) -> str:
    """Undo :func:`escape_quote`: drop the backslash before ``\\``, `````` ` ``````,
    ``[``, ``]`` and ``(``. ``unescape_quote(escape_quote(s)) == s`` for every ``s``."""
    return _UNESCAPE_RE.sub(r"\1", text)


def collapse_breaks(text: str) -> str:
    """Replace each whitespace run that contains a line break with one space.

    This is the only change (besides escaping and the ``…`` of a cut unit) between a
    unit's exact text and its quote; support checks normalise whitespace the same way.
    """
    return _BREAK_RUN_RE.sub(" ", text)


def render_unit(quote: str, label: str, chunk_id: str) -> str:
    """Return ``escape_quote(quote)`` with its link ``[label](chunk:CHUNK_ID)``.

    - quote ending in a run of ``.``/``!``/``?``: the link goes before that run, after
      a space: ``Net sales were $34.2 billion [1](chunk:…).``;
    - otherwise (a table row, a cut unit ending in ``…``, a caption without final
      punctuation): the link is appended after a space and followed by ``.``, so that
      every quoted unit is one sentence of the answer (the cite stage ends parts at
      sentence ends, rule 6): ``Purchases of PP&E (1,749) [1](chunk:…).`` The ``.``
      stands outside the quote: the quoted text itself is never changed.
    """
    body = escape_quote(quote)
    link = format_link(label, chunk_id=chunk_id)
    final = _FINAL_PUNCT_RE.search(body)
    if final and final.start() > 0 and not body[final.start() - 1].isspace():
        return f"{body[: final.start()]} {link}{body[final.start():]}"
    return f"{body} {link}."


# --------------------------------------------------------------------------- units


@dataclass(frozen=True)
class QuotedUnit:
    """One chosen unit and how it is quoted.

    - ``chunk_id``: the passage's chunk id (the link target);
    - ``label``: the link label (the passage's rank as a string);
    - ``passage_index``: 0-based position of the passage in the ``passages`` given;
    - ``start``/``end``: half-open code-point span in ``chunk.text``;
      ``text == chunk.text[start:end]`` exactly;
    - ``quote``: the text written into the answer *before* escaping:
      ``collapse_breaks(text)``, cut after ``max_words`` words plus ``…`` when
      ``truncated``;
    - ``score``: the selection score (coverage + rank prior), rounded to 9 places (a
      column header quoted for a row has the row's score);
    - ``header_words``: how many words of ``quote`` are a table's column header quoted
      for a row (the whole quote for a header quoted on its own, the header's words for
      a header merged with the row right below it, else 0); they are outside the
      ``max_words`` budget;
    - ``restated``: a statement row answering a figure question, written as ``Label: v1
      (period 1), …`` (:func:`~citewell.domains.finance.rows.render_row`) rather than quoted:
      ``text`` is still the row's exact text, ``quote`` its restatement.
    """

    chunk_id: str
    label: str
    passage_index: int
    start: int
    end: int
    text: str
    quote: str
    score: float
    truncated: bool = False
    header_words: int = 0
    restated: bool = False

    def render(self) -> str:
        """The unit as it appears in the answer (see :func:`render_unit`)."""
        return render_unit(self.quote, self.label, self.chunk_id)



@dataclass(frozen=True)
class _Span:
    """One unit of a chunk: ``start``/``end`` in ``chunk.text``; ``row``: a table row;
    ``fragment``: cut by the chunk's edge (never quoted)."""

    start: int
    end: int
    row: bool = False
    fragment: bool = False


@dataclass(frozen=True)
class _Candidate:
    passage_index: int
    label: str
    chunk_id: str
    start: int
    end: int
    text: str
    terms: frozenset[str]  # content terms (scoring)
    seq: tuple[str, ...]  # content terms in text order (adjacent-pair bonus)
    context: frozenset[str]  # content terms of the whole chunk and the resource title
    title_terms: frozenset[str]
    title_key: str  # letters and digits of the resource title and file name (joined names)
    row: bool  # a table row: its numbers label columns, so they count as context
    all_terms: frozenset[str]  # every term (near-duplicate test)
    norm: str  # lower-cased, whitespace-collapsed text (containment test)
    words: int
    question: bool  # the unit is itself a question, or a lead-in ending in ":": never quoted
    fragment: bool  # cut mid-sentence by the chunk's edge: never quoted
    digits: bool  # states a value: a number other than a year, a date's day or a note/item/page number
    years: frozenset[str]  # the years the unit names
    header: tuple[int, int] | None = None  # the row's column header (years), a row above it
    header_adjacent: bool = False  # the header is the row right above
    header_words: int = 0
    header_years: frozenset[str] = frozenset()  # the years of the row's column header
    read: frozenset[str] = frozenset()  # what the unit is read with: a row's labels, a sentence's heading


def _prose_spans(text: str, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    """Sentences of ``text[lo:hi]`` (syntok), with two repairs: a line that starts with a
    list bullet starts a unit of its own (syntok does not break at a single line break, so
    a bullet list would be one run-on unit), and a sentence ending in ``,`` or ``;`` is
    joined to the next one (it did not end there) — unless syntok would split the joined
    quote again (``…this week; Tom Becker …``): each quoted unit must stay one sentence
    of the answer, as the cite stage splits it."""
    hi = len(text) if hi is None else hi
    pieces: list[tuple[int, int]] = []
    for a, b in sentence_spans(text[lo:hi]):
        a, b = a + lo, b + lo
        cuts = [a, *(m.start() + 1 for m in _BULLET_LINE_RE.finditer(text, a, b)), b]
        for s, e in pairwise(cuts):
            piece = text[s:e]
            s, e = s + (len(piece) - len(piece.lstrip())), s + len(piece.rstrip())
            if e > s:
                pieces.append((s, e))
    out: list[tuple[int, int]] = []
    for s, e in pieces:
        if (out and _OPEN_END_RE.search(text[out[-1][0]:out[-1][1]]) and not _BULLET_RE.match(text, s, e)
                and len(sentence_spans(collapse_breaks(text[out[-1][0]:e]))) == 1):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _table_spans(text: str) -> list[_Span]:
    """Units of a table chunk: each table row, but consecutive prose lines are joined and
    split into sentences, so a note that wraps over lines is quoted whole; a line that
    finishes an unfinished prose sentence (``… open approximately`` / ``5 Outlet Centers
    in fiscal 2024.``) joins it even when it looks like a row."""
    out: list[_Span] = []
    prose: list[tuple[int, int]] = []

    def flush() -> None:
        if prose:
            out.extend(_Span(a, b) for a, b in _prose_spans(text, prose[0][0], prose[-1][1]))
            prose.clear()

    for start, end in _row_spans(text):
        row = text[start:end]
        unfinished = bool(prose) and not _TERMINAL_RE.search(text[prose[-1][0]:prose[-1][1]]) \
            and text[prose[-1][1] - 1] != ":"
        if _is_prose_row(row) or (unfinished and not _ends_in_value(row)):
            prose.append((start, end))
        else:
            flush()
            out.append(_Span(start, end, row=True))
    flush()
    return out


def _trim(text: str, span: _Span) -> _Span | None:
    """``span`` without surrounding whitespace and a leading list bullet (``- ``, ``* ``,
    ``• ``: quoted mid-answer it would start a markdown list); None when empty."""
    piece = text[span.start:span.end]
    start, end = span.start + (len(piece) - len(piece.lstrip())), span.start + len(piece.rstrip())
    bullet = _BULLET_RE.match(text, start, end)
    if bullet:
        start = bullet.end()
    return _Span(start, end, span.row, span.fragment) if end > start else None


def _spans(text: str, text_type: str, *, starts_resource: bool = True) -> list[_Span]:
    """Units of a chunk (see :func:`_unit_spans`), with fragments marked.

    In punctuated prose (a paragraph, transcript or a table's notes where some sentence
    ends in ``.``/``!``/``?``) a unit is a *fragment*, cut by the chunk's edge, when it is
    the chunk's last unit, has at least 6 words, no final punctuation and ends in a
    lower-case word or ``,;:(-`` (``… 3M reflected a pre-tax charge of``); or when it is
    the chunk's first unit, starts with a lower-case letter and the chunk does not start
    its resource (``manufacturing by the end of 2025.``). A passage holds no more text
    than its chunk, so such a unit cannot be completed and is never quoted.
    """
    raw = _table_spans(text) if text_type == "table" else [_Span(a, b) for a, b in _prose_spans(text)]
    spans = [s for s in (_trim(text, s) for s in raw) if s is not None]
    if text_type not in ("paragraph", "transcript", "table") or not spans:
        return spans
    prose = [s for s in spans if not s.row]
    if not any(_TERMINAL_RE.search(text[s.start:s.end]) for s in prose):
        return spans
    out = list(spans)
    last = out[-1]
    body = text[last.start:last.end]
    if (not last.row and not _TERMINAL_RE.search(body) and word_count(body) >= _FRAGMENT_WORDS
            and _CUT_END_RE.search(body)):
        out[-1] = _Span(last.start, last.end, last.row, True)
    first = out[0]
    if (not first.row and not starts_resource and text_type != "table"
            and text[first.start:first.end][:1].islower()):
        out[0] = _Span(first.start, first.end, first.row, True)
    return out


def _unit_spans(text: str, text_type: str) -> list[tuple[int, int]]:
    """Unit spans of a chunk, trimmed of surrounding whitespace and of a leading list
    bullet, empty ones dropped: table rows and the sentences of notes for ``table``
    chunks (:func:`_table_spans`), sentences for every other chunk (a bullet line starts
    a sentence, one ending in ``,``/``;`` runs on; :func:`_prose_spans`)."""
    return [(s.start, s.end) for s in _spans(text, text_type)]


def _is_junk(text: str) -> bool:
    """Code or markup rather than text (``#include <asm/io.h>``, ``SWAP_ALLOCATE(nr)``):
    at least three marks of code (a character of ``<>{}#=\\|^~``, a name followed by
    ``(``, an ``_`` inside a name) and more of them than one per ten letters."""
    marks = sum(1 for ch in text if ch in _JUNK_CHARS) + len(_CODE_RE.findall(text))
    return marks >= 3 and marks * 10 > len(_LETTER_RE.findall(text))


def _headers(text: str, spans: Sequence[_Span]) -> list[tuple[tuple[int, int] | None, bool]]:
    """For each unit: the column header of a table row that has digits but names no year
    (the nearest row above it naming two or more years), and whether that header is the
    row right above it."""
    out: list[tuple[tuple[int, int] | None, bool]] = []
    header: tuple[int, int] | None = None
    header_at = -1
    for i, span in enumerate(spans):
        body = text[span.start:span.end]
        years = _years(body)
        if span.row and _is_header(body):
            out.append((None, False))
            header, header_at = (span.start, span.end), i
            continue
        if span.row and header is not None and not years and _DIGIT_RE.search(body):
            out.append((header, header_at == i - 1))
        else:
            out.append((None, False))
    return out


def _described(meta: Mapping[str, Any]) -> str:
    """What a chunk's metadata says of it the way a title does: for a post, its source
    (``stocktwits``) and the month and year it was written (``June 2022``), so "What did
    StockTwits users say about Bitcoin in June 2022?" matches a post of that month whose text
    names neither."""
    if meta.get("source_type") != "post":
        return ""
    words = [str(meta.get("source") or "")]
    created = str(meta.get("created_at") or "")
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return " ".join(words)
    return " ".join([*words, when.strftime("%B"), str(when.year)])


def _one_sentence(quote: str) -> bool:
    """True when the cite stage will read ``quote`` as one sentence (syntok, with the
    ``.`` :func:`render_unit` adds after a quote without final punctuation)."""
    return len(sentence_spans(quote if _FINAL_PUNCT_RE.search(quote) else quote + ".")) <= 1


def _cut(quote: str, max_words: int) -> tuple[str, bool]:
    """Cut ``quote`` after ``max_words`` words (keeping its exact characters)."""
    end = cut_at_words(quote, max_words)
    if end >= len(quote):
        return quote, False
    cut = quote[:end].rstrip().rstrip(",;:-\u2013\u2014")
    return cut + "\u2026", True


def _weak_alternatives(concept: Concept, expansions: Expansions) -> dict[int, tuple[frozenset[str], ...]]:
    """The alternatives of an expanded concept that name only a part of it, each with
    what completes it: a one-word alternative (not the question's own words) contained,
    directly or through its own expansion, in a longer alternative (``PP&E`` in
    ``purchases of property, plant and equipment`` for *capex*; ``sales`` in ``net
    sales`` for *revenue*). A unit with the part and the rest of a longer alternative
    (``Purchases of PP&E``) matches in full."""
    if not concept.expanded:
        return {}
    weak: dict[int, tuple[frozenset[str], ...]] = {}
    for i, (alt, words) in enumerate(zip(concept.alternatives, concept.words)):
        if i == 0 or len(alt) != 1:
            continue
        own = question_concepts(" ".join(words), expansions)
        forms = [alt, *(a for c in own if len(own) == 1 for a in c.alternatives)]
        rests = tuple(other - form for other in concept.alternatives for form in forms
                      if len(other) > len(alt) and form <= other)
        if rests:
            weak[i] = rests
    return weak


@lru_cache(maxsize=4096)
def _title_names(question: str, title_keys: tuple[str, ...]) -> frozenset[str]:
    """Terms of the name words of ``question`` (a run of them, or one of three letters or
    more) whose letters, run together, are in a resource title or file name even where no
    title word is the name (``MGM`` in ``MGMRESORTS_2022Q4_EARNINGS``, ``Alpha Vertex`` in
    ``twiml-22_alphavertex-…``): they name the document, like a title word."""
    out: set[str] = set()
    run: list[Token] = []
    blob = " ".join(title_keys)
    for tok in [*tokens(question), None]:
        if tok is not None and tok.name:
            run.append(tok)
            continue
        if run and _ALNUM_RE.sub("", "".join(t.surface for t in run)) in blob:
            out.update(t.term for t in run)
        for t in run:
            if len(t.surface) >= 3 and _ALNUM_RE.sub("", t.surface) in blob:
                out.add(t.term)
        run = []
    return frozenset(out)


def _is_form(concept: Concept) -> bool:
    """The concept only says what form the answer takes (:data:`_FORM_TERMS`)."""
    return not concept.number and all(alt <= _FORM_TERMS for alt in concept.alternatives)


def _lead_ids(question: str, expansions: Expansions) -> set[tuple[frozenset[str], ...]]:
    """The concepts (by alternatives) of the question's first sentence: up to its first
    ``?`` (what follows is an instruction, a definition, or the words a follow-up question
    carries over from the previous one), else its first sentence."""
    mark = question.find("?")
    if 0 < mark < len(question.rstrip()) - 1:
        lead = question[: mark + 1]
    else:
        first = sentence_spans(question)
        lead = question[first[0][0]:first[0][1]] if first else question
    return {c.alternatives for c in question_concepts(lead, expansions)}


def _key_concepts(concepts: Sequence[Concept], lead_ids: set[tuple[frozenset[str], ...]],
                  contextual: Sequence[bool], matched: Sequence[bool]) -> tuple[list[int], list[int], bool]:
    """``(key, titled, long)``: indexes of the question's key concepts, of its title words,
    and whether it is a long question.

    Key concepts are the concepts of the question's first sentence (a second one is
    usually an instruction: "If operating margin is not a useful metric …") that are not
    numbers, title words or names of the documents (contextual), words for the answer's
    form (:data:`_FORM_TERMS`: amount, USD, millions …) or the question's frame
    (:data:`_FRAME_TERMS`: drove, improving, profile …), and not a name that no passage
    mentions (``JnJ`` where the text says Johnson & Johnson). ``titled``: the contextual
    word concepts of that sentence (``book club`` for a ``book_club.txt`` passage). A
    question with more than :data:`_SHORT_KEY` key concepts is *long*: a word of it that
    no passage uses is phrasing, not a key concept. ``lead_ids``: the concepts of the
    first sentence (:func:`_lead_ids`); ``matched``: the concepts some unit's text matches.
    """
    words = [i for i in range(len(concepts)) if not concepts[i].number and not _is_form(concepts[i])]
    lead_words = [i for i in words if concepts[i].alternatives in lead_ids] or words
    framed = [i for i in lead_words if not all(a <= _FRAME_TERMS for a in concepts[i].alternatives)] or lead_words
    key = [i for i in framed if not contextual[i]]
    titled = [i for i in framed if contextual[i]]
    long_question = len(key) > _SHORT_KEY
    if long_question:
        key = [i for i in key if matched[i]]
    key = [i for i in key if matched[i] or concepts[i].boost != NAME_BOOST]
    return key, titled, long_question


# --------------------------------------------------------------------------- generator


@dataclass(frozen=True)
class _Scored:
    score: float
    cand: _Candidate
    core: float  # share of the question's key and title-word weight the unit covers
    fit: int = 0  # how well it holds the kind of answer wanted (generate/kindfit.py KindFit.level)
    standing: int = ABOUT  # a post's standing towards the question's subjects (generate/subjects.py)


class ExtractiveGenerator:
    """Model-free :class:`~citewell.generate.base.Generator`: quotes the best passage units.

    ``max_sentences`` caps the number of quoted units (a column header quoted with its
    row is not counted), ``max_words`` the words quoted (whitespace-separated words of
    the quotes, links excluded), ``per_passage`` the units taken from one passage;
    ``min_relative`` drops units scoring below that fraction of the best unit. See the
    module docstring for units, scoring, quoting and order.
    Output is a pure function of (question, passage contents and order, settings).
    """

    def __init__(
        self,
        *,
        max_sentences: int = 5,
        max_words: int = 120,
        per_passage: int = 2,
        min_relative: float = 0.4,
    ) -> None:
        if max_sentences < 1 or max_words < 1 or per_passage < 1:
            raise ValueError("max_sentences, max_words and per_passage must be >= 1")
        self.max_sentences = max_sentences
        self.max_words = max_words
        self.per_passage = per_passage
        self.min_relative = min_relative

    #: recorded on the message as the generator that wrote the answer
    name = "extractive"
    #: cites with full ``chunk:`` links, never by alias
    cites_by_alias = False

    # ------------------------------------------------------------------ public

    def write(self, request: GenerationRequest) -> Iterator[str]:
        """The :class:`~citewell.generate.base.Generator` entry point: :meth:`stream` of the
        request's question analysis (of ``request.query``, the question as retrieval read
        it) over ``request.passages``."""
        previous = next((t.text for t in reversed(request.history) if t.role == "assistant"), None)
        if request.analysis is not None:  # the request's figure answer: computed once per turn, shared
            return self.stream(request.analysis, request.passages, previous_answer=previous,
                               name_aliases=request.name_aliases, figure=request.figure())
        return self.stream(request.query, request.passages, previous_answer=previous,
                           name_aliases=request.name_aliases)

    def stream(self, question: QuestionAnalysis | str, passages: Sequence[Passage], *,
               previous_answer: str | None = None,
               name_aliases: Mapping[str, Sequence[str]] | None = None,
               figure: FigureAnswer | None | object = _COMPUTE) -> Iterator[str]:
        """Yield the answer one sentence at a time.

        ``question``: the turn's :class:`~citewell.question.analysis.QuestionAnalysis`, or a
        question's text (then analysed here with the domain pack its passages call for,
        :func:`citewell.domains.domain_of_passages`). A figure question that the domain
        pack answers from structured evidence (:meth:`~citewell.domains.base.Domain.
        figure_answer`: statement rows, a calculation) gets its rows restated, each cited,
        after the pack's uncited preface; any other question the best quoted units. The
        first piece is the first sentence with its link (or :data:`NO_EVIDENCE_TEXT`);
        each further piece is ``" " + unit + link``, so the whitespace between sentences
        starts the next piece (as parts do, rule 6). ``previous_answer``: the chat's previous
        answer (markers removed), whose sentences a follow-up does not quote again.
        ``name_aliases``: the names the sources link to the question's names (``{name:
        aliases}``, the scope check's), by which a post may be about a subject. ``figure``:
        the domain pack's answer already computed for this analysis and these passages
        (:meth:`~citewell.generate.base.GenerationRequest.figure`), computed here when not given.
        """
        analysis = self._analysis(question, passages)
        if figure is _COMPUTE:
            figure = self._figure(analysis, passages)
        assert figure is None or isinstance(figure, FigureAnswer)
        units = (self._row_units(figure, passages) if figure is not None
                 else self._quoted_units(analysis, passages, previous_answer, name_aliases))
        if not units:
            yield NO_EVIDENCE_TEXT
            return
        pieces = [unit.render() for unit in units]
        if figure is not None and figure.preface:  # uncited: its inputs are the rows that follow
            pieces.insert(0, escape_quote(figure.preface))
        for i, piece in enumerate(pieces):
            yield piece if i == 0 else " " + piece

    def generate(self, question: QuestionAnalysis | str, passages: Sequence[Passage]) -> str:
        """Return the whole answer: ``"".join(self.stream(question, passages))``."""
        return "".join(self.stream(question, passages))

    @staticmethod
    def _analysis(question: QuestionAnalysis | str, passages: Sequence[Passage]) -> QuestionAnalysis:
        """``question`` as an analysis (a text is analysed with its passages' domain pack)."""
        if isinstance(question, QuestionAnalysis):
            return question
        return analyse(question, domain=domain_of_passages(passages))

    @staticmethod
    def _figure(analysis: QuestionAnalysis, passages: Sequence[Passage]) -> FigureAnswer | None:
        """The domain pack's structured answer to the question, or None."""
        domain = analysis.domain
        return domain.figure_answer(analysis, passages) if isinstance(domain, Domain) else None

    @staticmethod
    def _row_units(figure: FigureAnswer, passages: Sequence[Passage]) -> list[QuotedUnit]:
        """The :class:`QuotedUnit` restating each row of ``figure`` (its passage's rank as the label)."""
        units: list[QuotedUnit] = []
        for row in figure.rows:
            passage = passages[row.passage_index]
            units.append(QuotedUnit(chunk_id=passage.chunk.id,
                                    label=str(passage.rank if passage.rank > 0 else row.passage_index + 1),
                                    passage_index=row.passage_index, start=row.start, end=row.end,
                                    text=passage.chunk.text[row.start:row.end], quote=row.quote, score=1.0,
                                    restated=True))
        return units

    def select(self, question: QuestionAnalysis | str, passages: Sequence[Passage], *,
               previous_answer: str | None = None,
               name_aliases: Mapping[str, Sequence[str]] | None = None) -> list[QuotedUnit]:
        """Choose the units to quote, in output order (empty: no evidence).

        ``passages`` are best first; a repeated chunk id counts once (first place). A
        figure or calculation question that the domain pack answers from statement rows
        gets those rows, restated, one per line item (in question order, or in the order
        the calculation reads them). A unit the ``previous_answer`` quoted already is not
        quoted again (a follow-up asks for something more). ``name_aliases`` as :meth:`stream`.
        """
        analysis = self._analysis(question, passages)
        figure = self._figure(analysis, passages)
        if figure is not None:
            return self._row_units(figure, passages)
        return self._quoted_units(analysis, passages, previous_answer, name_aliases)

    def _quoted_units(self, analysis: QuestionAnalysis, passages: Sequence[Passage],
                      previous_answer: str | None,
                      name_aliases: Mapping[str, Sequence[str]] | None = None) -> list[QuotedUnit]:
        """:meth:`select` when no statement row answers: the best units, quoted."""
        scored = self._score(analysis, passages, name_aliases)
        if previous_answer:
            said = " ".join(collapse_breaks(previous_answer).lower().split())
            scored = [s for s in scored if s.cand.norm not in said]
            if analysis.followup.refers_back and analysis.kind.reason:  # "And why?": the reason for that claim
                scored = _near_claim(scored, self._candidates(passages), said, kind_fit(analysis))
        if not scored:
            return []
        chosen = self._choose(scored)
        texts = {p.chunk.id: p.chunk.text for p in passages}
        units: list[QuotedUnit] = []
        shown: set[str] = set()  # chunks whose column header is already quoted
        for score, cand, quote, truncated, header in chosen:
            start, text, extra = cand.start, cand.text, 0
            if header is not None and cand.chunk_id not in shown:
                h_start, h_end = header
                chunk_text = texts[cand.chunk_id]
                h_text = chunk_text[h_start:h_end]
                merged = chunk_text[h_start:cand.end]
                # each quoted unit must stay one sentence of the answer (as the cite stage splits it)
                if cand.header_adjacent and _one_sentence(collapse_breaks(merged)):
                    shown.add(cand.chunk_id)  # one unit: the header row and the row below it
                    start, text = h_start, merged
                    quote, extra = collapse_breaks(text), word_count(h_text)
                elif _one_sentence(collapse_breaks(h_text)):
                    shown.add(cand.chunk_id)
                    units.append(QuotedUnit(chunk_id=cand.chunk_id, label=cand.label,
                                            passage_index=cand.passage_index, start=h_start, end=h_end,
                                            text=h_text, quote=collapse_breaks(h_text), score=score,
                                            header_words=word_count(h_text)))
                else:  # a header that cannot stand as a sentence: the row restated with its periods
                    restated = restate_row(cand.text, h_text)
                    if restated is not None:
                        units.append(QuotedUnit(chunk_id=cand.chunk_id, label=cand.label,
                                                passage_index=cand.passage_index, start=cand.start, end=cand.end,
                                                text=cand.text, quote=restated, score=score, restated=True))
                    continue  # never a row without the periods of its columns
            units.append(QuotedUnit(chunk_id=cand.chunk_id, label=cand.label, passage_index=cand.passage_index,
                                    start=start, end=cand.end, text=text, quote=quote, score=score,
                                    truncated=truncated, header_words=extra))
        # passages in the order of their best quoted unit, each in document order
        best: dict[int, float] = {}
        for u in units:
            best[u.passage_index] = max(best.get(u.passage_index, u.score), u.score)
        units.sort(key=lambda u: (-best[u.passage_index], u.passage_index, u.start))
        return units

    def explain(self, question: QuestionAnalysis | str, passages: Sequence[Passage]) -> list[tuple[float, float, str, str]]:
        """``(score, key coverage, label, text)`` of every eligible unit, best first: what
        :meth:`select` chooses from (for debugging and benchmarks)."""
        analysis = self._analysis(question, passages)
        return [(s.score, round(s.core, 3), s.cand.label, s.cand.text) for s in self._score(analysis, passages)]

    # ------------------------------------------------------------------ helpers

    def _score(self, analysis: QuestionAnalysis, passages: Sequence[Passage],
               name_aliases: Mapping[str, Sequence[str]] | None = None) -> list[_Scored]:
        """Eligible units with their scores, best first (see the module docstring)."""
        question = analysis.query
        expansions = analysis.expansions
        concepts = list(analysis.concepts)
        candidates = _read_spellings(self._candidates(passages), analysis, passages)
        if not concepts or not candidates:
            return []
        figure = analysis.kind.figure
        fit_test = kind_fit(analysis)
        subjects = names_of(analysis, name_aliases)
        standing = [post_standing(p, subjects) for p in passages]
        # posts must be about a subject when some retrieved post names one (else the scope check decides)
        posts_named = any(s >= MENTIONS and p.chunk.metadata.get("source_type") == "post"
                          for p, s in zip(passages, standing))

        # Numbers and words of a resource title describe documents: they match a unit
        # through its chunk or title too (half credit), and their rarity is counted there.
        titles = frozenset().union(*(c.title_terms for c in candidates))
        joined = _title_names(question, tuple(sorted({c.title_key for c in candidates})))
        contextual = [c.number or c.matches(titles) or (c.head is not None and (c.head in joined or bool(
            _QUARTER_RE.match(c.head)))) for c in concepts]
        n = len(candidates)
        weights: list[float] = []
        for concept, ctx in zip(concepts, contextual):
            df = sum(1 for c in candidates if concept.matches(c.context if ctx else c.terms))
            weights.append(math.log(1.0 + (n - df + 0.5) / (df + 0.5)) * concept.boost)
        lead_ids = _lead_ids(question, expansions)  # a later sentence (an instruction) weighs half
        weights = [w if c.alternatives in lead_ids else w * _LATER_WEIGHT for c, w in zip(concepts, weights)]
        # words for the answer's form (amount, USD, millions, percent …) are no evidence
        weights = [0.0 if _is_form(c) else w for c, w in zip(concepts, weights)]
        pairs = [
            (a.head, b.head, _PAIR_CREDIT * min(wa, wb))
            for (a, wa), (b, wb) in zip(zip(concepts, weights), zip(concepts[1:], weights[1:]))
            if a.head is not None and b.head is not None and not a.number and not b.number
        ]
        total = math.fsum(weights) + math.fsum(w for _, _, w in pairs)
        if total <= 0:  # only words for the answer's form ("How much?")
            return []
        question_terms = frozenset().union(*(alt for c in concepts for alt in c.alternatives))
        weak = [_weak_alternatives(c, expansions) for c in concepts]

        # key concepts: what the question's first sentence is about (see _key_concepts)
        matched = [any(c.matches(cand.terms) for cand in candidates) for c in concepts]
        key, titled, long_question = _key_concepts(concepts, lead_ids, contextual, matched)
        # a key word no passage uses weighs no more than the rarest one some passage uses
        cap = max((weights[i] for i in key if matched[i]), default=0.0)
        key_weight = {i: weights[i] if matched[i] else cap for i in key}
        key_total = math.fsum(key_weight.values())
        need = min(2, len(key) + len(titled))
        asked_years = frozenset(t for c in concepts if c.number for alt in c.alternatives for t in alt if is_year(t))
        titled_total = math.fsum(weights[i] for i in titled)

        scored: list[_Scored] = []
        for cand in candidates:
            if cand.question or cand.fragment:
                continue
            place = standing[cand.passage_index] if posts_named else ABOUT
            fit = fit_test.level(cand.text) if fit_test.wanted else 0
            if place < MENTIONS or (place == MENTIONS and not (names_subject(cand.text, subjects)
                                                               and (fit or not fit_test.wanted))):
                continue  # a post about another subject: only its sentence naming this one and holding the answer
            credits: list[float] = []
            own: dict[int, float] = {}  # concept -> credit factor, matched in the unit's own text
            read: set[int] = set()  # concepts matched by what the unit is read with (table, heading)
            anchored = False  # matches a word (not only a number) in its own text
            for i, (weight, concept, ctx) in enumerate(zip(weights, concepts, contextual)):
                factor = 0.0
                if not (concept.number and cand.row):
                    for j, alt in enumerate(concept.alternatives):
                        if alt <= cand.terms:
                            part = j in weak[i] and not any(rest <= cand.terms for rest in weak[i][j])
                            factor = max(factor, _PART_CREDIT if part else 1.0)
                if factor:
                    credits.append(weight * factor)
                    own[i] = factor
                    anchored = anchored or not concept.number
                elif ctx and concept.matches(cand.context):
                    credits.append(weight * _CONTEXT_CREDIT)
                elif concept.matches(cand.read):  # a row read with its table, a sentence with its heading
                    read.add(i)
            if not anchored:
                continue
            key_own = math.fsum(key_weight[i] * own.get(i, _CONTEXT_CREDIT if i in read else 0.0) for i in key)
            if long_question:  # any key concept will do (the relative floor does the rest)
                enough = any(i in own for i in key) or key_own >= _KEY_SHARE * key_total
            else:  # half the key weight, and two concepts (a title word counts) when it has two
                named = _title_names(question, (cand.title_key,))  # names run together in its title
                covered = sum(1 for i in key if i in own or i in read) + sum(
                    1 for i in titled if concepts[i].matches(cand.context) or concepts[i].head in named)
                # the answer asked for (a date, a count, a reason) about every name asked counts as one of them
                named_keys = [i for i in key if concepts[i].boost == NAME_BOOST]
                covered += 1 if fit and named_keys and all(i in own for i in named_keys) else 0
                enough = (key_total <= 0 or key_own >= _KEY_SHARE * key_total) and covered >= need
            if not enough:
                continue  # does not answer enough of the question by itself
            credits.extend(w for first_term, second, w in pairs if near(cand.seq, first_term, second))
            coverage = math.fsum(credits) / total
            if cand.terms <= question_terms:  # a heading or restatement: adds nothing
                continue
            # "how many …?", "what was the capex?" want a figure; "why …?" a reason, "when …?" a date
            if (figure and not (cand.digits or fit)) or (fit_test.wanted and not fit):
                coverage *= _NO_FIGURE
            if cand.words > _LENGTH_PIVOT:
                coverage *= (_LENGTH_PIVOT / cand.words) ** _LENGTH_EXPONENT
            # how much of what the question is about the unit covers, title words included
            titled_own = math.fsum(weights[i] for i in titled if concepts[i].matches(cand.context))
            core_cov = (key_own + titled_own) / (key_total + titled_total) if key_total + titled_total > 0 else 1.0
            score = round(coverage + _RANK_PRIOR / (cand.passage_index + 1), 9)
            scored.append(_Scored(score, cand, round(core_cov, 9), fit, place))
        if not scored:
            return []
        scored.sort(key=lambda s: (-s.score, s.cand.passage_index, s.cand.words, s.cand.start))
        if not long_question:  # cover about as much of the question as the best unit does
            bar = _CORE_RELATIVE * scored[0].core
            scored = [s for s in scored if s.core >= bar]
        if figure and any(s.cand.digits or s.fit for s in scored):  # the figure asked for is there: only figures
            scored = [s for s in scored if s.cand.digits or s.fit]
        if analysis.kind.reason and any(not s.cand.row for s in scored):
            scored = [s for s in scored if not s.cand.row]  # a reason is stated in sentences, not table rows
        best_fit = max(s.fit for s in scored)
        if best_fit and fit_test.wanted == "reason":
            # a post that states no reason does not answer "why"; a document's discussion states the change
            # and what drove it in sentences of their own, so its units that state a figure (the change)
            # stay without a reason word (their score is lowered above)
            scored = [s for s in scored if s.fit or (s.cand.digits and passages[s.cand.passage_index].chunk.metadata.get(
                "source_type") != "post")]
        elif best_fit:  # the count or date asked for is there: only units that hold it (the best of them)
            scored = [s for s in scored if s.fit == best_fit]
        if any(s.standing == MENTIONS for s in scored) and any(
                s.standing == ABOUT and passages[s.cand.passage_index].chunk.metadata.get("source_type") == "post"
                for s in scored):
            scored = [s for s in scored if s.standing != MENTIONS]  # posts about the subject before passing mentions
        # the year asked is there (for a figure question, a table row names its header's years)
        named = [s.cand.years | (s.cand.header_years if figure else frozenset()) for s in scored]
        if any(years & asked_years for years in named):
            scored = [s for s in scored if s.cand.row or not s.cand.years or s.cand.years & asked_years]
        scored.sort(key=lambda s: (-s.score, s.cand.passage_index, s.cand.words, s.cand.start))
        return scored

    def _choose(self, scored: list[_Scored]) -> list[tuple[float, _Candidate, str, bool, tuple[int, int] | None]]:
        """Pick units from ``scored`` (eligible, best first); see the module docstring.

        Pass 1 takes the best unit of each passage, pass 2 further units up to
        ``per_passage``, both down to the ``min_relative`` floor; if they quote a single
        passage, pass 3 takes the best unit of each other one down to half the floor. A
        table row brings its column header along (outside the word budget) unless the
        row is cut or the header is longer than 25 words.
        """
        chosen: list[tuple[float, _Candidate, str, bool, tuple[int, int] | None]] = []
        per: dict[int, int] = {}
        headed: set[str] = set()
        used = [0]

        def take(score: float, cand: _Candidate, cap: int) -> None:
            if len(chosen) >= self.max_sentences or per.get(cand.passage_index, 0) >= cap:
                return
            if any(other is cand or _near_duplicate(cand, other) for _, other, _, _, _ in chosen):
                return
            quote, truncated = _cut(collapse_breaks(cand.text), self.max_words)
            words = word_count(quote)
            if chosen and used[0] + words > self.max_words:
                return
            header = cand.header if cand.chunk_id not in headed else None
            if header is not None:  # outside the word budget, but never with a cut row or a long one
                if truncated or cand.header_words > _HEADER_WORDS:
                    header = None
                else:
                    headed.add(cand.chunk_id)
            chosen.append((score, cand, quote, truncated, header))
            per[cand.passage_index] = per.get(cand.passage_index, 0) + 1
            used[0] += words

        floor = scored[0].score * self.min_relative
        for cap in (1, self.per_passage):
            for s in scored:
                if s.score >= floor:
                    take(s.score, s.cand, cap)
        if len(per) == 1:  # one passage heard: the best unit of each other one, down to half the floor
            for s in scored:
                if s.score >= floor * _RELAXED_FLOOR:
                    take(s.score, s.cand, 1)
        return chosen

    def _candidates(self, passages: Sequence[Passage]) -> list[_Candidate]:
        out: list[_Candidate] = []
        seen: set[str] = set()
        for index, passage in enumerate(passages):
            chunk = passage.chunk
            if chunk.id in seen:
                continue
            seen.add(chunk.id)
            label = str(passage.rank if passage.rank > 0 else index + 1)
            title = " ".join(x for x in (passage.resource_title, passage.file_name or "") if x)
            title_terms = content_terms(f"{title} {_described(chunk.metadata)}")
            title_key = _ALNUM_RE.sub("", title.lower())
            context = content_terms(chunk.text) | title_terms
            spans = _spans(chunk.text, chunk.text_type,
                           starts_resource=chunk.char_start == 0 and chunk.chunk_index == 0)
            heading: frozenset[str] = frozenset()  # the last heading above a sentence
            labels: list[frozenset[str]] = []  # the label rows above a row (titles, headers)
            for span, (header, adjacent) in zip(spans, _headers(chunk.text, spans)):
                text = chunk.text[span.start:span.end]
                toks = tokens(text)
                seq = tuple(t.term for t in toks if t.content)
                terms = frozenset(seq)
                numbers = any(t.number for t in toks)
                values = numbers and states_value(text)
                read = frozenset().union(*labels[-_LABEL_ROWS:]) if span.row else heading
                if span.row and (not numbers or _is_header(text)):
                    labels.append(terms)  # a table title, section label or column header
                if not span.row and word_count(text) <= _HEADING_WORDS and (
                        not _TERMINAL_RE.search(text) or text.endswith("?")):
                    heading = terms  # a heading (``Regional Operations``) over the sentences below it
                if not terms:
                    continue
                out.append(
                    _Candidate(
                        passage_index=index,
                        label=label,
                        chunk_id=chunk.id,
                        start=span.start,
                        end=span.end,
                        text=text,
                        terms=terms,
                        seq=seq,
                        context=context,
                        title_terms=title_terms,
                        title_key=title_key,
                        row=span.row,
                        all_terms=frozenset(t.term for t in toks),
                        norm=" ".join(text.lower().split()),
                        words=word_count(text),
                        question=bool(_QUESTION_END_RE.search(text) or _LEAD_IN_RE.search(text)),
                        fragment=span.fragment or _is_junk(text) or (span.row and _is_header(text)),
                        digits=values,
                        years=_years(text),
                        header=header,
                        header_adjacent=adjacent,
                        header_words=word_count(chunk.text[header[0]:header[1]]) if header else 0,
                        header_years=_years(chunk.text[header[0]:header[1]]) if header else frozenset(),
                        read=read,
                    )
                )
        return out


def _near_claim(scored: list[_Scored], candidates: Sequence[_Candidate], said: str, fit: KindFit) -> list[_Scored]:
    """For "And why?" after an answer (``said``: its text, lower-cased, whitespace as single
    spaces): in each passage that answer quoted, the unit stating a reason (``fit``) nearest
    to a quoted unit, nearest first (a reason after its claim before one as near before it),
    whether or not they repeat the question's words (the reason for a claim is told beside
    it, in words of its own); ``scored`` as it is when no such unit is there. Never a unit
    the answer quoted, a question, a fragment or a table row."""
    quoted: dict[str, list[int]] = {}
    for cand in candidates:
        if len(cand.norm) >= 12 and cand.norm in said:
            quoted.setdefault(cand.chunk_id, []).append(cand.start)
    best = scored[0].score if scored else 1.0
    near: list[tuple[int, int, _Scored]] = []
    for cand in candidates:
        starts = quoted.get(cand.chunk_id)
        if not starts or cand.norm in said or cand.question or cand.fragment or cand.row:
            continue
        level = fit.level(cand.text)
        if level:
            gap = min(starts, key=lambda q: abs(cand.start - q))
            near.append((abs(cand.start - gap), int(cand.start < gap), _Scored(best, cand, 1.0, level)))
    if not near:
        return scored
    near.sort(key=lambda x: (x[0], x[1], x[2].cand.passage_index))
    nearest: dict[str, _Scored] = {}
    for _, _, unit in near:  # the nearest reason of each quoted passage
        nearest.setdefault(unit.cand.chunk_id, unit)
    return list(nearest.values())


def _read_spellings(candidates: list[_Candidate], analysis: QuestionAnalysis,
                    passages: Sequence[Passage]) -> list[_Candidate]:
    """``candidates`` with the question's terms of each name they write with other word
    breaks (``Samba Nova`` for a question's ``Sambanova``: :func:`~citewell.generate.subjects.
    spelled_terms`) added to their terms (a unit that mentions it) and context (its chunk
    mentions it), so that they match the question's concept for the name."""
    spellings = spelled_terms(analysis)
    if not spellings:
        return candidates
    texts = {p.chunk.id: p.chunk.text for p in passages}
    in_chunk: dict[str, frozenset[str]] = {}
    out: list[_Candidate] = []
    for cand in candidates:
        if cand.chunk_id not in in_chunk:
            chunk = texts[cand.chunk_id]
            in_chunk[cand.chunk_id] = frozenset().union(
                *(terms for name, terms in spellings if not terms <= cand.context and mentions(chunk, name)))
        extra = frozenset().union(*(terms for name, terms in spellings
                                    if not terms <= cand.terms and mentions(cand.text, name)))
        if extra or in_chunk[cand.chunk_id]:
            cand = replace(cand, terms=cand.terms | extra, context=cand.context | extra | in_chunk[cand.chunk_id])
        out.append(cand)
    return out


def _near_duplicate(a: _Candidate, b: _Candidate) -> bool:
    """Token-set Jaccard >= 0.8, or containment (of the normalised texts, or of the token
    sets with at least 3 tokens on the smaller side) unless the containing unit comes from
    another passage and is more than twice as long (it says more than the one it holds)."""
    inter = len(a.all_terms & b.all_terms)
    union = len(a.all_terms | b.all_terms)
    if union and inter / union >= _JACCARD_DUP:
        return True
    small, large = (a, b) if a.words <= b.words else (b, a)
    if small.chunk_id != large.chunk_id and large.words > 2 * small.words:
        return False
    if small.norm in large.norm:
        return True
    return len(small.all_terms) >= 3 and inter == len(small.all_terms)


__all__ = [
    "NO_EVIDENCE_TEXT",
    "ExtractiveGenerator",
    "QuotedUnit",
    "collapse_breaks",
    "escape_quote",
    "render_unit",
    "unescape_quote",
]
