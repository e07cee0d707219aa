"""The default, model-free generator: quotes the passage units that best answer a question.

:class:`ExtractiveGenerator` needs no model and no network. It splits each retrieved
passage into *units*, scores them against the question, picks a few, and quotes each one
followed by a link to its passage::

    Net sales were $34.2 billion [1](chunk:9f1c…). Purchases of PP&E (1,749) [2](chunk:07ab…).

Units (exact code-point spans of ``chunk.text``):

- ``table`` chunks: one unit per row, i.e. per non-blank line (surrounding whitespace
  excluded). A line with no letter at all (``$``, ``34,229``, ``(1,749)`` …) continues
  the row above it, so tables whose extractor wrote one cell per line still give whole
  rows (``Net sales\\n$\\n34,229`` is one unit);
- every other chunk (paragraph, transcript, news, post, image): the sentences of
  :func:`citewell.sentences.sentence_spans` (syntok). A transcript chunk has one cue per
  line and a sentence may run over several cues: syntok does not break on a single line
  break, and scoring treats line breaks as spaces.

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

Scoring (deterministic: no hashing order, no randomness, float sums in a fixed order,
scores rounded to 9 places before comparison):

- text is read by :mod:`citewell.retrieve.terms`, the term analysis the retriever
  uses too: lower-cased; ``1,749`` -> ``1749``; ``FY2022``/``FY22`` -> ``2022``;
  ``3M's`` -> ``3m``; ``PP&E``, ``SG&A`` stay one token; line breaks are spaces. Stop
  words are dropped (and ``long``/``much``/``many``… after ``how``); other words get
  their Porter stem (``purchases``/``purchased`` -> ``purchas``, ``cyclicality``/
  ``cyclical`` -> ``cyclic``);
- each remaining question term is a *concept*; phrases of :data:`EXPANSIONS` (the
  shared table of :mod:`citewell.retrieve.terms`) are one concept with alternatives
  (``capex`` also matches a unit containing ``capital expenditures`` or ``purchases of
  property, plant and equipment``);
- *contextual* concepts are numbers (years included) and words that occur in a given
  passage's resource title or file name (``3M`` for ``3M_2022_10K``): they describe a
  document more than a sentence, so a unit that lacks them still gets half credit when
  its chunk text or its title has them, and a number in a table row counts only at that
  half credit (a table's years label its columns, not one row);
- a concept's weight is a BM25-style IDF over the units of the given passages,
  ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (``df`` counts own matches, or for contextual
  concepts matches through chunk/title), times 1.5 for a number and 1.3 for a proper
  noun or ticker (a capitalised question word other than the first, or an all-caps or
  letter+digit word such as ``MMM`` or ``3M``);
- each pair of consecutive single-word question concepts (``net sales``) is worth the
  smaller of the two weights again when the unit has them in that order within two
  content words (a little phrase matching on top of the bag of words);
- ``coverage`` = credited weight / total weight; it is halved for a unit with no content
  term outside the question's (a heading such as ``Net Sales:``) and multiplied by
  ``min(1, 50 / words)`` (a long unit, often a run-on table or title block, must cover
  proportionally more to beat a crisp sentence);
- ``score = coverage + 0.05 / rank``, ``rank`` the passage's 1-based position in the
  given (retriever) order: a small prior for better-ranked passages;
- a unit is eligible only if its own text matches a non-number concept (content-word
  overlap; a year alone does not count) and its score is at least ``min_relative``
  (default 0.4) times the best unit's score.

Selection walks the eligible units by score (ties: passage rank, then position in the
chunk) in up to three passes, so the strongest passages are all heard before any one
of them speaks twice:

1. the best unit of each passage;
2. further units, up to ``per_passage`` per passage;
3. only if passes 1–2 quote a single passage: the best unit of each other passage
   scoring at least half the floor (``min_relative / 2`` times the best score).

A unit is skipped when it nearly duplicates a chosen unit (token-set Jaccard >= 0.8, or
one's tokens contain the other's and the smaller has at least 3 tokens, or one's
normalised text contains the other's) or when it would exceed the word budget
``max_words`` (a shorter unit later may still fit); selection ends at ``max_sentences``
units. The first unit is always taken, cut to ``max_words`` words if longer.

Output order: the chosen units are grouped by passage in rank order and, within a
passage, in document order. Ranking decides *what* is quoted; document order decides
*how* it reads: sentences from one passage stay in their original sequence (so a
"these increases were offset by …" follows what it refers to), and the cite stage, which
numbers sources in first-appearance order, gives ``[1]`` to the best-ranked cited
passage with no back-and-forth such as ``[2] … [1] … [2]``.

Each unit is followed by ``[label](chunk:CHUNK_ID)`` where ``label`` is the passage's
rank (``Passage.rank``, or its 1-based position when rank is 0). The link goes before
the unit's final run of ``.``/``!``/``?`` (``… $34.2 billion [1](chunk:…).``), else it
is appended after a space and followed by a ``.`` that is not part of the quote
(``… (1,501) [1](chunk:…).``), so each unit is one sentence of the answer: the cite
stage's parts and the stream's pieces then coincide. Units are joined by one space. With no passages, or no unit
that shares a content word with the question, the answer is exactly
:data:`NO_EVIDENCE_TEXT`, with no link.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from citewell.cite.links import format_link
from citewell.models import Passage
from citewell.retrieve.terms import EXPANSIONS, content_terms, near, question_concepts, tokens
from citewell.sentences import cut_at_words, sentence_spans, word_count

NO_EVIDENCE_TEXT = "No passage in the sources answers this question."
#: Said instead when the question names something no retrieved passage mentions.
NO_MENTION_TEXT = "No passage in the sources mentions {names}."
_ALNUM_RE = re.compile(r"[^0-9a-z]+")


def _names(question: str) -> dict[str, str]:
    """Proper nouns and tickers of ``question`` (by casing, ≥ 2 characters): surface → term."""
    names: dict[str, str] = {}
    for tok in tokens(question):
        if tok.name and len(tok.surface) >= 2:
            names.setdefault(tok.surface, tok.term)
    return names


def _abstain_names(question: str, passages: Sequence[Passage]) -> list[str]:
    """The question's names when *none* of them is mentioned in ``passages`` (then the
    generator abstains), else ``[]``."""
    missing = missing_names(question, passages) if passages else []
    return missing if missing and len(missing) == len(_names(question)) else []


def missing_names(question: str, passages: Sequence[Passage]) -> list[str]:
    """Names in ``question`` (proper nouns and tickers by their casing, at least two
    characters, e.g. ``Mongolia``, ``Tesla``, ``MGM``, ``3M``) that none of ``passages``
    mentions, in question order.

    A name counts as mentioned when its stemmed term occurs in a passage's text, or its
    letters and digits occur in a passage's resource title, file name or other names
    (tickers and company names from its metadata; titles such as ``BESTBUY_2024Q2_10Q``
    name ``Best Buy``). An answer quoting passages that never
    mention what the question is about would be confidently off-topic, so the extractive
    generator abstains when *none* of the question's names is mentioned (question
    wording capitalises freely — "Real change", "FY", "AGM" — so one unmatched name
    alone is no reason to abstain).
    """
    names = _names(question)
    if not names:
        return []
    terms: set[str] = set()
    titles: list[str] = []
    for passage in passages:
        terms |= content_terms(passage.chunk.text)
        labels = " ".join([passage.resource_title, passage.file_name or "", *passage.resource_names])
        titles.append(_ALNUM_RE.sub("", labels.lower()))
    title_text = " ".join(titles)
    joined = _ALNUM_RE.sub("", "".join(names))  # "Best Buy" -> "bestbuy" for titles
    missing = [surface for surface, term in names.items()
               if term not in terms and _ALNUM_RE.sub("", surface) not in title_text and joined not in title_text]
    return missing
"""The whole answer when nothing retrieved answers the question (one sentence, no link)."""

_LETTER_RE = re.compile(r"[^\W\d_]")
_BREAK_RUN_RE = re.compile(r"\s*[\n\r\u2028\u2029\x0b\x0c\x1c\x1d\x1e\x85]\s*")
_UNESCAPE_RE = re.compile(r"\\([\\`\[\]()])")
_FINAL_PUNCT_RE = re.compile(r"[.!?]+$")

_RANK_PRIOR = 0.05
_CONTEXT_CREDIT = 0.5
_PAIR_CREDIT = 1.0
_NOTHING_NEW = 0.5
_NO_QUANTITY = 0.6
_QUESTION_UNIT = 0.5
_DIGIT_RE = re.compile(r"\d")
_BULLET_RE = re.compile(r"[-*+\u2022\u25aa\u2013]\s+")
_QUANTITY_RE = re.compile(r"\bhow\s+(?:many|much|long|often|large|big|high|low|far)\b|\bwhat\s+(?:percentage|"
                          r"percent|share|amount|number|ratio|rate)\b", re.I)


def _asks_quantity(question: str) -> bool:
    """True for questions whose answer is a quantity (``how many``, ``what percentage`` …):
    units without any digit then score ×0.6."""
    return bool(_QUANTITY_RE.search(question))
_LENGTH_PIVOT = 50
_LENGTH_EXPONENT = 1.0
_JACCARD_DUP = 0.8
_RELAXED_FLOOR = 0.5


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
    - ``score``: the selection score (coverage + rank prior), rounded to 9 places.
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

    def render(self) -> str:
        """The unit as it appears in the answer (see :func:`render_unit`)."""
        return render_unit(self.quote, self.label, self.chunk_id)


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
    table: bool  # a table row: its numbers label columns, so they count as context
    all_terms: frozenset[str]  # every term (near-duplicate test)
    norm: str  # lower-cased, whitespace-collapsed text (containment test)
    words: int


def _row_spans(text: str) -> list[tuple[int, int]]:
    """Rows of a table chunk: non-blank lines, letterless lines joined to the row above
    (unless a blank line comes between: a page number set apart is not a cell)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    blank = False
    for line in text.splitlines(keepends=True):
        body = line.strip()
        if body:
            start = pos + (len(line) - len(line.lstrip()))
            end = start + len(body)
            if spans and not blank and not _LETTER_RE.search(body):
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        blank = not body  # a blank line sets apart what follows (a page footer): never joined
        pos += len(line)
    return spans


_NUMERIC_CELL_RE = re.compile(r"^[($\u2014\u2013-]*\d[\d,.]*%?\)?$")


def _is_prose_row(row: str) -> bool:
    """A line of running text inside a table chunk (a note under a table, a caption):
    at least 6 words, fewer than a third of them numeric cells, and not ending in a
    value cell (a table row ends in its last column's value)."""
    cells = row.split()
    last = cells[-1] if cells else ""
    ends_in_value = (_NUMERIC_CELL_RE.match(last) and not last.endswith((".", ","))) or last in ("$", "\u2014", "-", "%")
    if len(cells) < 6 or ends_in_value:
        return False
    numeric = sum(1 for c in cells if _NUMERIC_CELL_RE.match(c))
    return numeric * 3 < len(cells)


def _table_spans(text: str) -> list[tuple[int, int]]:
    """Units of a table chunk: each table row, but consecutive prose lines are joined and
    split into sentences, so a note that wraps over lines is quoted whole."""
    out: list[tuple[int, int]] = []
    prose: list[tuple[int, int]] = []

    def flush() -> None:
        if prose:
            lo, hi = prose[0][0], prose[-1][1]
            out.extend((lo + a, lo + b) for a, b in sentence_spans(text[lo:hi]))
            prose.clear()

    for start, end in _row_spans(text):
        if _is_prose_row(text[start:end]):
            prose.append((start, end))
        else:
            flush()
            out.append((start, end))
    flush()
    return out


def _unit_spans(text: str, text_type: str) -> list[tuple[int, int]]:
    """Unit spans of a chunk, trimmed of surrounding whitespace and of a leading list
    bullet (``- ``, ``* ``, ``• ``: quoted mid-answer it would start a markdown list),
    empty ones dropped."""
    spans = _table_spans(text) if text_type == "table" else sentence_spans(text)
    out: list[tuple[int, int]] = []
    for start, end in spans:
        piece = text[start:end]
        start, end = start + (len(piece) - len(piece.lstrip())), start + len(piece.rstrip())
        bullet = _BULLET_RE.match(text, start, end)
        if bullet:
            start = bullet.end()
        if end > start:
            out.append((start, end))
    return out


def _cut(quote: str, max_words: int) -> tuple[str, bool]:
    """Cut ``quote`` after ``max_words`` words (keeping its exact characters)."""
    end = cut_at_words(quote, max_words)
    if end >= len(quote):
        return quote, False
    cut = quote[:end].rstrip().rstrip(",;:-\u2013\u2014")
    return cut + "\u2026", True


# --------------------------------------------------------------------------- generator


class ExtractiveGenerator:
    """Model-free :class:`~citewell.generate.base.Generator`: quotes the best passage units.

    ``max_sentences`` caps the number of quoted units, ``max_words`` the words quoted
    (whitespace-separated words of the quotes, links excluded), ``per_passage`` the units
    taken from one passage; ``min_relative`` drops units scoring below that fraction of
    the best unit. See the module docstring for units, scoring, quoting and order.
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

    # ------------------------------------------------------------------ public

    def stream(self, question: str, passages: Sequence[Passage]) -> Iterator[str]:
        """Yield the answer one sentence at a time.

        The first piece is the first quoted unit with its link (or
        :data:`NO_EVIDENCE_TEXT`); each further piece is ``" " + unit + link``, so the
        whitespace between sentences starts the next piece (as parts do, rule 6).
        """
        missing = _abstain_names(question, passages)
        if missing:
            shown = []
            for name in missing:  # as the question wrote it
                found = re.search(re.escape(name).replace("'", "['\u2019]?"), question, re.I)
                shown.append(escape_quote(found.group() if found else name))
            if len(shown) > 5:
                shown = [*shown[:5], "…"]
            yield NO_MENTION_TEXT.format(names=", ".join(shown))
            return
        units = self.select(question, passages)
        if not units:
            yield NO_EVIDENCE_TEXT
            return
        for i, unit in enumerate(units):
            yield unit.render() if i == 0 else " " + unit.render()

    def generate(self, question: str, passages: Sequence[Passage]) -> str:
        """Return the whole answer: ``"".join(self.stream(question, passages))``."""
        return "".join(self.stream(question, passages))

    def select(self, question: str, passages: Sequence[Passage]) -> list[QuotedUnit]:
        """Choose the units to quote, in output order (empty: no evidence).

        ``passages`` are best first; a repeated chunk id counts once (first place).
        """
        concepts = question_concepts(question)
        quantity = _asks_quantity(question)
        candidates = self._candidates(passages)
        if not concepts or not candidates or _abstain_names(question, passages):
            return []

        # Numbers and words of a resource title describe documents: they match a unit
        # through its chunk or title too (half credit), and their rarity is counted there.
        titles = frozenset().union(*(c.title_terms for c in candidates))
        contextual = [c.number or c.matches(titles) for c in concepts]
        n = len(candidates)
        weights: list[float] = []
        for concept, ctx in zip(concepts, contextual):
            df = sum(1 for c in candidates if concept.matches(c.context if ctx else c.terms))
            weights.append(math.log(1.0 + (n - df + 0.5) / (df + 0.5)) * concept.boost)
        pairs = [
            (a.head, b.head, _PAIR_CREDIT * min(wa, wb))
            for (a, wa), (b, wb) in zip(zip(concepts, weights), zip(concepts[1:], weights[1:]))
            if a.head is not None and b.head is not None and not a.number and not b.number
        ]
        total = math.fsum(weights) + math.fsum(w for _, _, w in pairs)
        question_terms = frozenset().union(*(alt for c in concepts for alt in c.alternatives))

        scored: list[tuple[float, _Candidate]] = []
        for cand in candidates:
            credits: list[float] = []
            anchored = False  # matches a word (not only a number) in its own text
            for weight, concept, ctx in zip(weights, concepts, contextual):
                if concept.matches(cand.terms) and not (concept.number and cand.table):
                    credits.append(weight)
                    anchored = anchored or not concept.number
                elif ctx and concept.matches(cand.context):
                    credits.append(weight * _CONTEXT_CREDIT)
            if not anchored:
                continue
            credits.extend(w for first, second, w in pairs if near(cand.seq, first, second))
            coverage = math.fsum(credits) / total
            if cand.terms <= question_terms:  # a heading or restatement: adds nothing
                coverage *= _NOTHING_NEW
            if quantity and not _DIGIT_RE.search(cand.text):  # "how many …?" wants a number
                coverage *= _NO_QUANTITY
            if cand.text.rstrip().endswith("?"):  # a question (an interviewer's, a heading) answers nothing
                coverage *= _QUESTION_UNIT
            if cand.words > _LENGTH_PIVOT:
                coverage *= (_LENGTH_PIVOT / cand.words) ** _LENGTH_EXPONENT
            score = round(coverage + _RANK_PRIOR / (cand.passage_index + 1), 9)
            scored.append((score, cand))
        if not scored:
            return []
        scored.sort(key=lambda sc: (-sc[0], sc[1].passage_index, sc[1].start))
        chosen = self._choose(scored)
        chosen.sort(key=lambda item: (item[1].passage_index, item[1].start))
        return [
            QuotedUnit(
                chunk_id=cand.chunk_id,
                label=cand.label,
                passage_index=cand.passage_index,
                start=cand.start,
                end=cand.end,
                text=cand.text,
                quote=quote,
                score=score,
                truncated=truncated,
            )
            for score, cand, quote, truncated in chosen
        ]

    # ------------------------------------------------------------------ helpers

    def _choose(self, scored: list[tuple[float, _Candidate]]) -> list[tuple[float, _Candidate, str, bool]]:
        """Pick units from ``scored`` (sorted best first); see the module docstring.

        Pass 1 takes the best eligible unit of each passage, pass 2 second units
        (``per_passage``); if both leave a single passage cited, pass 3 lets the best unit
        of other passages in down to half the relative floor.
        """
        floor = scored[0][0] * self.min_relative
        chosen: list[tuple[float, _Candidate, str, bool]] = []
        per: dict[int, int] = {}
        used = [0]

        def take(score: float, cand: _Candidate, cap: int) -> None:
            if len(chosen) >= self.max_sentences or per.get(cand.passage_index, 0) >= cap:
                return
            if any(other is cand or _near_duplicate(cand, other) for _, other, _, _ in chosen):
                return
            quote, truncated = _cut(collapse_breaks(cand.text), self.max_words)
            words = word_count(quote)
            if chosen and used[0] + words > self.max_words:
                return
            chosen.append((score, cand, quote, truncated))
            per[cand.passage_index] = per.get(cand.passage_index, 0) + 1
            used[0] += words

        passes = [(floor, 1), (floor, self.per_passage)]
        for threshold, cap in passes:
            for score, cand in scored:
                if score < threshold:
                    break
                take(score, cand, cap)
        if len(per) == 1:
            for score, cand in scored:
                if score < floor * _RELAXED_FLOOR:
                    break
                take(score, cand, 1)
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
            title_terms = content_terms(
                " ".join(x for x in (passage.resource_title, passage.file_name or "") if x)
            )
            context = content_terms(chunk.text) | title_terms
            for start, end in _unit_spans(chunk.text, chunk.text_type):
                text = chunk.text[start:end]
                toks = tokens(text)
                seq = tuple(t.term for t in toks if t.content)
                terms = frozenset(seq)
                if not terms:
                    continue
                out.append(
                    _Candidate(
                        passage_index=index,
                        label=label,
                        chunk_id=chunk.id,
                        start=start,
                        end=end,
                        text=text,
                        terms=terms,
                        seq=seq,
                        context=context,
                        title_terms=title_terms,
                        table=chunk.text_type == "table",
                        all_terms=frozenset(t.term for t in toks),
                        norm=" ".join(text.lower().split()),
                        words=word_count(text),
                    )
                )
        return out


def _near_duplicate(a: _Candidate, b: _Candidate) -> bool:
    """Token-set Jaccard >= 0.8, token containment (smaller side >= 3 tokens), or text
    containment of the normalised texts."""
    if a.norm in b.norm or b.norm in a.norm:
        return True
    inter = len(a.all_terms & b.all_terms)
    union = len(a.all_terms | b.all_terms)
    if union and inter / union >= _JACCARD_DUP:
        return True
    small = min(len(a.all_terms), len(b.all_terms))
    return small >= 3 and inter == small


__all__ = [
    "EXPANSIONS",
    "NO_EVIDENCE_TEXT",
    "ExtractiveGenerator",
    "QuotedUnit",
    "collapse_breaks",
    "escape_quote",
    "render_unit",
    "unescape_quote",
]
