"""Support benchmark (issue 28): how often do the verdict rules back true claims and
reject false ones?

From passages of citewell stores (FinanceBench filings: table rows and prose sentences)
and of the shared transcripts and posts (read through citewell's own extractors), it
writes claims as a model would (:func:`claims_for`), each tagged with its *kind*, and
judges every (claim, passage) pair with :func:`citewell.cite.verdict.check_rules`.

- true kinds (:data:`TRUE_KINDS`): ``verbatim_figure``, ``rounded``, ``rescaled``,
  ``paraphrased``, ``computed``;
- false kinds (:data:`FALSE_KINDS`, one change each from a true claim): ``other_row``,
  ``other_period``, ``other_company``, ``other_segment``, ``negation``,
  ``swapped_direction``, ``wrong_computation``.

Table rows are read with :mod:`citewell.text.tables` (rows, labels, value cells, column
periods), their numbers with :func:`citewell.text.quantities.quantities`, their scope with
:mod:`citewell.domains.finance.facts`; prose sentences are matched by a few statement
shapes (``<measure> was <figure> in <year>[, up from <figure> in <year>]``) and their figures
read with :func:`~citewell.text.quantities.read_items`. A passage or row that cannot be
read reliably gives no claim. Reported: per kind, n and the share judged ``supported``
(recall for true kinds, false-support rate for false ones), the overall precision of
``supported``, and the same by source and by passage kind.

Run::

    PYTHONPATH=src nice -n 10 /work/venv/bin/python benchmarks/support_bench.py \\
        --store dev1=/work/bench-fb1/citewell.sqlite --store dev2=/work/bench-fb2/citewell.sqlite \\
        --corpus ../shared/corpus --json /tmp/support_pairs.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from citewell.cite.verdict import check_rules
from citewell.domains.finance import FINANCE
from citewell.domains.finance.rows import table_part
from citewell.domains.finance.facts import member_items, row_scope, segment_named, table_context
from citewell.domains.finance.statements import PARENTHETICAL_RE, items_of_row, measures_of_row
from citewell.text.numbers import Period, column_periods
from citewell.text.quantities import Quantity, declared_scales, normalise, quantities, read_items
from citewell.text.sentences import sentence_spans
from citewell.text.tables import (header_before, is_header_row, paired_columns, row_label, row_spans, table_header,
                                  table_lead, value_cells)

TRUE_KINDS = ("verbatim_figure", "rounded", "rescaled", "paraphrased", "computed")
FALSE_KINDS = ("other_row", "other_period", "other_company", "other_segment", "negation", "swapped_direction",
               "wrong_computation")
KINDS = TRUE_KINDS + FALSE_KINDS
CORPUS_SOURCE = "transcripts/posts"
#: Rows of one table passage claims are made from.
ROWS_PER_TABLE = 3
SCALE_WORD = {3: "thousand", 6: "million", 9: "billion"}
#: How a model names a measure in other words (label, lower case -> synonym).
SYNONYMS = {"net sales": "revenue", "sales": "revenue", "total net sales": "total revenue", "revenues": "sales",
            "revenue": "sales", "net revenues": "net sales", "total revenues": "total sales",
            "total net revenues": "total net sales", "net revenue": "net sales", "net income": "net earnings",
            "net earnings": "net income", "operating income": "operating profit", "operating profit": "operating income",
            "cost of sales": "cost of goods sold", "cost of goods sold": "cost of sales",
            "income taxes": "income tax expense",
            "provision for income taxes": "income tax expense", "research and development": "R&D spending"}
#: Company names as a model writes them, for title prefixes that run words together.
COMPANY_NAMES = {"JOHNSON_JOHNSON": "Johnson & Johnson", "AMERICANWATERWORKS": "American Water Works",
                 "MGMRESORTS": "MGM Resorts", "BESTBUY": "Best Buy", "FOOTLOCKER": "Foot Locker",
                 "ULTABEAUTY": "Ulta Beauty", "ACTIVISIONBLIZZARD": "Activision Blizzard",
                 "GENERALMILLS": "General Mills", "KRAFTHEINZ": "Kraft Heinz", "LOCKHEEDMARTIN": "Lockheed Martin",
                 "CVSHEALTH": "CVS Health", "COCACOLA": "Coca-Cola", "JPMORGAN": "JPMorgan", "AMD": "AMD",
                 "3M": "3M", "PEPSICO": "PepsiCo"}
_TITLE_RE = re.compile(r"^([A-Z0-9_]+?)_(?:19|20)\d\d")
_UNSCALED_LABEL_RE = re.compile(r"per\s+(?:common\s+)?share|ratio|days\b|margin|rate\b|%|percent|number\s+of|"
                                r"employees|shares|headcount|stores|units|\b(?:in|as\s+a)\b|basis", re.IGNORECASE)
_GENERIC_LABELS = frozenset({"total", "other", "net", "subtotal", "consolidated", "corporate", "all other"})
_LABEL_OK_RE = re.compile(r"^[A-Za-z][A-Za-z&,'\- ]{2,60}$")
_REVENUE_RE = re.compile(r"^(?:total\s+)?(?:net\s+)?(?:sales|revenues?|operating\s+revenues)$", re.IGNORECASE)
_PROFIT_RE = re.compile(r"^(gross profit|operating income|operating profit|net income|net earnings)$", re.IGNORECASE)


@dataclass(frozen=True)
class BenchPassage:
    """One cited passage: a store chunk or a corpus chunk.

    ``source``: ``dev1``/``dev2`` (or the label given with ``--store``) or
    :data:`CORPUS_SOURCE`; ``text_type``: the chunk's (``table``, ``paragraph``, ``cue`` …);
    ``title``: the resource title (``3M_2022_10K``); ``company``: the company as a model
    names it, when the title names one; ``metadata``: the chunk's metadata JSON."""

    chunk_id: str
    text: str
    text_type: str
    source: str
    title: str | None = None
    company: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """``table`` or ``prose``: how the benchmark reads the passage."""
        return "table" if self.text_type == "table" else "prose"


@dataclass(frozen=True)
class Claim:
    """A generated claim: its ``kind`` (:data:`KINDS`), its ``text`` (one sentence) and
    whether it is ``true`` of the passage by construction."""

    kind: str
    text: str
    true: bool


@dataclass(frozen=True)
class Pair:
    """One judged pair: the claim, its passage (id, source, ``table``/``prose``), and the
    verdict and reasons :func:`~citewell.cite.verdict.check_rules` gave."""

    kind: str
    true: bool
    claim: str
    chunk_id: str
    source: str
    passage_kind: str
    verdict: str
    reasons: tuple[str, ...]


def company_of(title: str | None) -> str | None:
    """The company a FinanceBench title names, as a model writes it (``BESTBUY_2019_10K`` ->
    ``Best Buy``; ``ADOBE_2016_10K`` -> ``Adobe``), or None for other titles."""
    m = _TITLE_RE.match(title or "")
    if not m:
        return None
    key = m.group(1)
    return COMPANY_NAMES.get(key) or key.replace("_", " ").title()


# --------------------------------------------------------------------------- loading


def load_store(path: str, source: str) -> list[BenchPassage]:
    """Every chunk of the citewell SQLite store at ``path`` (opened read-only), tagged
    ``source``, in (resource title, chunk index) order."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT c.id, c.text, c.text_type, c.metadata, r.title FROM chunks c "
                           "JOIN resources r ON r.id = c.resource_id ORDER BY r.title, c.chunk_index").fetchall()
    finally:
        con.close()
    return [BenchPassage(cid, text, ttype, source, title, company_of(title), json.loads(meta or "{}"))
            for cid, text, ttype, meta, title in rows]


def load_corpus(root: Path) -> list[BenchPassage]:
    """The chunks of the transcripts and posts under ``root`` (``transcripts/``,
    ``posts/``), extracted by citewell's own extractors
    (:func:`citewell.ingest.pipeline.extract_path`)."""
    from citewell.ingest.pipeline import extract_path, file_format

    out: list[BenchPassage] = []
    for sub in ("transcripts", "posts"):
        for path in sorted((root / sub).glob("*")):
            fmt = file_format(path)
            if fmt is None:
                continue
            ex = extract_path(str(path), path.name, fmt)
            out.extend(BenchPassage(f"{path.name}#{i}", c.text, c.text_type, CORPUS_SOURCE, path.stem, None,
                                    c.metadata) for i, c in enumerate(ex.chunks))
    return out


# --------------------------------------------------------------------------- formatting


def _dec(x: Decimal) -> str:
    """``x`` in plain notation with thousands separators and no trailing zeros after a
    decimal point (``14694`` -> ``14,694``; ``14.6940`` -> ``14.694``)."""
    s = format(x, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    whole, _, frac = s.partition(".")
    return f"{int(whole):,}" + (f".{frac}" if frac else "")


def _round(x: Decimal, places: int) -> Decimal:
    """``x`` rounded half-up to ``places`` decimals."""
    return x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _be(label: str) -> str:
    """``were`` for a plural caption (``Net sales``), else ``was``."""
    last = label.split()[-1].lower() if label.split() else ""
    return "were" if last.endswith("s") and not last.endswith(("ss", "us", "is")) else "was"


def _when(p: Period, fiscal: bool = True) -> str | None:
    """How a claim names a column's period (``in fiscal 2023``, ``as of December 31, 2022``,
    ``for the year ended January 28, 2023``, ``for the three months ended July 29, 2023``),
    or None for a partial-year column without a date."""
    if p.months in (None, 12) and not p.date:
        return f"in fiscal {p.year}" if fiscal else f"in {p.year}"
    if p.date and p.months is None:
        return f"as of {p.date}"
    if p.date and p.months == 12:
        return f"for the year ended {p.date}"
    words = {3: "three", 6: "six", 9: "nine"}
    return f"for the {words[p.months]} months ended {p.date}" if p.date and p.months in words else None


def _lower(label: str) -> str:
    """``label`` as it reads mid-sentence: each capitalised word lower-cased, acronyms
    (``AWS``, ``R&D``) kept (``Total Operating Expenses`` -> ``total operating expenses``)."""
    if label.isupper():
        return label.lower()  # "TOTAL LIABILITIES AND EQUITY": a shout, no acronym
    words = label.split()
    if words and words[0].lower() in ("our", "the", "its"):
        words = words[1:]  # "Our expected dividend yield" -> "expected dividend yield" after a possessive
    return " ".join(w if w[:2].isupper() else w.lower() for w in words)


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class _Row:
    """A readable table row: ``label`` (no parenthetical), ``cells`` by period (value
    Quantity as written), ``scale`` (power of ten of its amounts, 0 for percents),
    ``currency`` (``$`` or ``""``), ``percent``; ``segment``: the segment it reports
    (:func:`~citewell.domains.finance.facts.row_scope`, or the section caption it stands
    under), else None; ``member``: a breakdown's member row; ``trusted``: a true claim may
    be made from it (its label states a line item or measure, once in the table, and nothing
    suggests it reports a part of the company)."""

    label: str
    cells: tuple[tuple[Period, Quantity], ...]
    scale: int
    currency: str
    percent: bool
    segment: str | None
    member: bool
    trusted: bool


_SEGMENT_HINT_RE = re.compile(r"\b(?:segments?|business|division|regions?|geographic)\b", re.IGNORECASE)
_SECTION_RE = re.compile(r"^(?:[A-Z][\w&.'-]*\s?){1,4}$")


def _table_rows(p: BenchPassage) -> list[_Row]:
    """The rows of a table passage whose value cells pair with distinct years and read as
    one non-negative number each (:func:`~citewell.text.tables.paired_columns`); amount
    rows need a declared scale, percentage rows are kept as such; other rows are skipped.
    A row under a section caption (a value-less row such as ``North America``) reports
    that section."""
    text = p.text
    table = p.metadata.get("table") if isinstance(p.metadata.get("table"), dict) else {}
    rows_meta = table.get("rows")
    spans = [(int(a), int(b)) for a, b in rows_meta] if isinstance(rows_meta, list) else row_spans(text)
    carried = table_header(p.metadata)
    title = table.get("title") if isinstance(table.get("title"), str) else None
    hint_of_page = bool(_SEGMENT_HINT_RE.search(f"{title or ''} {p.metadata.get('page_heading') or ''}"))
    out: list[_Row] = []
    section: str | None = None
    for i, (a, b) in enumerate(spans):
        row = " ".join(text[a:b].split())
        if is_header_row(row):
            section = None  # captions above a column header title the table, not a section of it
            continue
        raw_label = row_label(row)
        if raw_label == row:  # no value: a section caption ("North America", "Revenues:") or a note
            if _SECTION_RE.match(row):
                section = None if re.match(r"(?i)(?:consolidated|total)\b", row) else row
            continue
        hspan = header_before(text, spans, i)
        header = " ".join(text[hspan[0]:hspan[1]].split()) if hspan else carried
        if not header:
            continue
        tail = re.split(r"(?:19|20)\d\d", header)[-1].strip(" :")
        if any(c.isalpha() for c in tail) and hspan and not section:
            section = tail  # "2023 2022 Deferred tax assets": the header names the section its rows belong to
        label = " ".join(PARENTHETICAL_RE.sub(" ", raw_label).split()).strip(" :,-")
        columns = paired_columns(value_cells(row, raw_label), column_periods(header), header)
        if (not columns or not _LABEL_OK_RE.match(label) or len(label.split()) > 9
                or label.lower() in _GENERIC_LABELS):
            continue
        if len({q.year for q, _ in columns}) != len(columns) or any(_when(q) is None for q, _ in columns):
            continue
        cells: list[tuple[Period, Quantity]] = []
        for period, cell in columns:
            read = quantities(cell)
            if len(read) != 1 or read[0][1] or read[0][0].raw == 0:
                break  # a nil, a negative or an unreadable cell: the row is left out
            cells.append((period, read[0][0]))
        else:
            kinds = {q.kind for _, q in cells}
            if kinds == {"percent"}:
                scale, percent = 0, True
            elif kinds == {"amount"} and not _UNSCALED_LABEL_RE.search(raw_label):
                found = (declared_scales(raw_label) or declared_scales(header) or declared_scales(text[:a])
                         or declared_scales(title or ""))
                if not found or found[0] not in SCALE_WORD:
                    continue
                scale, percent = found[0], False
            else:
                continue
            context = table_context(title, row_label(header) if header else None)
            items, _part = member_items(raw_label, context)
            scope = row_scope(raw_label, context, member=bool(items))
            # a segment: the one the table's title names, or a section caption naming one
            # ("Rigid Packaging segment") or under a title about segments; another caption
            # ("Cash flows from investing activities:", "Denominator") is a part of a
            # statement, not a segment
            segment = scope.name if scope.kind == "segment" else section if section and (
                segment_named(section) or _SEGMENT_HINT_RE.search(title or "") or _SEGMENT_HINT_RE.search(text[:a])) \
                else None
            trusted = (bool(items_of_row(label) or measures_of_row(label)) and segment is None and not items
                       and scope.kind != "noncontrolling" and not hint_of_page
                       and not _SEGMENT_HINT_RE.search(text[:a]))
            currency = "$" if "$" in row or "$" in header else ""
            out.append(_Row(label, tuple(cells), scale, currency, percent, segment, bool(items), trusted))
    labels = [r.label.lower() for r in out]
    return [r if labels.count(r.label.lower()) == 1 else _replace_trust(r) for r in out]


def _replace_trust(row: _Row) -> _Row:
    """``row`` not trusted (its label stands twice in the table: which is meant is unclear)."""
    return _Row(row.label, row.cells, row.scale, row.currency, row.percent, row.segment, row.member, False)


def _fig(row: _Row, q: Quantity) -> str:
    """A cell's figure as a claim writes it: as the table writes it, with the currency
    and the table's scale (``$14,694 million``, ``21.6%``)."""
    if row.percent:
        return f"{_dec(q.raw)}%"
    return f"{row.currency}{_dec(q.raw)} {SCALE_WORD[row.scale]}"


def _units(value: Decimal) -> tuple[Decimal, str] | None:
    """The unit a model states ``value`` (in currency units) in: ``(10**9, 'billion')`` from
    a billion, ``(10**6, 'million')`` from a million; None below."""
    if value >= Decimal(10) ** 9:
        return Decimal(10) ** 9, "billion"
    if value >= Decimal(10) ** 6:
        return Decimal(10) ** 6, "million"
    return None


def _rounded(row: _Row, q: Quantity) -> str | None:
    """The cell rounded as a model rounds it (``$14.7 billion`` for ``14,694`` millions;
    ``22%`` for ``21.6%``), or None when rounding changes nothing."""
    if row.percent:
        shown = _round(q.raw, 0)
        return f"{_dec(shown)}%" if shown != q.raw and q.raw >= 10 else None
    value = q.raw * Decimal(10) ** row.scale
    unit = _units(value)
    if unit is None:
        return None
    shown = _round(value / unit[0], 1)
    return f"{row.currency}{_dec(shown)} {unit[1]}" if shown * unit[0] != value and shown >= 1 else None


def _rescaled(row: _Row, q: Quantity) -> str | None:
    """The cell exactly, in the next larger unit (``$14.694 billion`` for ``14,694``
    millions), or None when that unit is the table's own."""
    if row.percent:
        return None
    value = q.raw * Decimal(10) ** row.scale
    unit = _units(value)
    if unit is None or unit[0] == Decimal(10) ** row.scale:
        return None
    return f"{row.currency}{_dec(value / unit[0])} {unit[1]}"


def _name(p: BenchPassage, company: str | None = None) -> str:
    """``3M's `` (the passage's company, or ``company``), or ``""`` without one."""
    who = company or p.company
    return f"{who}'s " if who else ""


def _paraphrase(p: BenchPassage, row: _Row, period: Period, fig: str, company: str | None = None) -> str:
    """``In fiscal 2023, Acme's revenue came to $14,694 million.``: the measure by a synonym
    (:data:`SYNONYMS`) when it has one, the company named, the sentence reordered."""
    measure = SYNONYMS.get(row.label.lower(), _lower(row.label))
    when = _when(period)
    assert when is not None
    return f"{when[0].upper()}{when[1:]}, {_name(p, company)}{measure} came to {fig}."


def _change(row: _Row, a: Quantity, b: Quantity) -> tuple[str, Decimal]:
    """The change from ``b`` to ``a`` written as a model writes it (``$2,694 million``,
    ``3.5 percentage points``…: here only amounts) and its signed value (as written)."""
    diff = a.raw - b.raw
    return (f"{row.currency}{_dec(abs(diff))} {SCALE_WORD[row.scale]}", diff)


def _table_claims(p: BenchPassage, rng: random.Random, companies: Sequence[str],
                  segments: Sequence[str]) -> list[Claim]:
    """The claims of a table passage: one of each kind it allows, each from a row picked
    at random (module docstring)."""
    rows = _table_rows(p)
    out = _segment_claims(p, rows, rng, segments)
    trusted = [r for r in rows if r.trusted]
    if not trusted:
        return out
    for row in rng.sample(trusted, min(ROWS_PER_TABLE, len(trusted))):
        out.extend(_row_claims(p, row, rows, rng, companies))
    out.extend(_computed_claims(p, trusted, rng))
    return out


def _row_claims(p: BenchPassage, row: _Row, rows: Sequence[_Row], rng: random.Random,
                companies: Sequence[str]) -> list[Claim]:
    """The claims of one trusted row (a cell picked at random) of a table of ``rows``:
    every kind but ``computed``/``wrong_computation``/``other_segment``."""
    out: list[Claim] = []
    period, q = rng.choice(row.cells)
    fig, be, when = _fig(row, q), _be(row.label), _when(period)
    out.append(Claim("verbatim_figure", f"{row.label} {be} {fig} {when}.", True))
    out.append(Claim("negation", f"{row.label} {be} not {fig} {when}.", False))
    for kind, made in (("rounded", _rounded(row, q)), ("rescaled", _rescaled(row, q))):
        if made:
            out.append(Claim(kind, f"{row.label} {be} {made} {_when(period, fiscal=False)}.", True))
    if not row.percent:
        out.append(Claim("paraphrased", _paraphrase(p, row, period, fig), True))
        others = [c for c in companies if c != p.company]
        if p.company and others:
            out.append(Claim("other_company", _paraphrase(p, row, period, fig, rng.choice(others)), False))
    values = {c.raw for _, c in row.cells}
    elsewhere = [c for _, c in row.cells if c.raw != q.raw]
    if elsewhere:
        other = rng.choice(elsewhere)
        out.append(Claim("other_period", f"{row.label} {be} {_fig(row, other)} {when}.", False))
    same_col = [(r, c) for r in rows if r.label != row.label and r.percent == row.percent
                for pp, c in r.cells if pp == period and c.raw not in values]
    if same_col:
        _r, c = rng.choice(same_col)
        out.append(Claim("other_row", f"{row.label} {be} {_fig(row, c)} {when}.", False))
    return out


def _computed_claims(p: BenchPassage, rows: Sequence[_Row], rng: random.Random) -> list[Claim]:
    """A change or growth rate of one row between two annual columns, or a margin of two
    rows of one column, stated right (``computed``) and wrong (``wrong_computation``: the
    other row's earlier cell as an operand, or the result off by a tenth)."""
    out: list[Claim] = []
    annual = [r for r in rows if not r.percent and len(r.cells) >= 2
              and all(pp.months in (None, 12) and not pp.date for pp, _ in r.cells)]
    if annual:
        row = rng.choice(annual)
        (p1, a), (p0, b) = sorted(row.cells[:2], key=lambda c: -c[0].year)
        if abs(a.raw - b.raw) >= 10 * a.raw_step:  # two significant digits: a figure the rules compute
            up = a.raw > b.raw
            if rng.random() < 0.5:
                text, diff = _change(row, a, b)
                verb = "increased" if up else "decreased"
                out.append(Claim("computed", f"{row.label} {verb} by {text} from {p0.year} to {p1.year}.", True))
                wrong = _change(row, a, b)[1] * Decimal("1.1")
                wrong = wrong.quantize(a.raw_step, rounding=ROUND_HALF_UP)
                if wrong != diff:
                    shown = f"{row.currency}{_dec(abs(wrong))} {SCALE_WORD[row.scale]}"
                    out.append(Claim("wrong_computation",
                                     f"{row.label} {verb} by {shown} from {p0.year} to {p1.year}.", False))
            else:
                growth = _round((a.raw - b.raw) / b.raw * 100, 1)
                verb = "grew" if up else "declined"
                if abs(growth) >= 1:
                    out.append(Claim("computed", f"{row.label} {verb} {_dec(abs(growth))}% in {p1.year} "
                                                 f"compared with {p0.year}.", True))
                    off = _round(abs(growth) * Decimal("1.25") + 1, 1)
                    out.append(Claim("wrong_computation", f"{row.label} {verb} {_dec(off)}% in {p1.year} "
                                                          f"compared with {p0.year}.", False))
    revenue = [r for r in rows if _REVENUE_RE.match(r.label) and not r.percent]
    profit = [r for r in rows if _PROFIT_RE.match(r.label) and not r.percent]
    if revenue and profit:
        rev, prof = revenue[0], rng.choice(profit)
        cols = [(pp, c, dict(prof.cells)[pp]) for pp, c in rev.cells if pp in dict(prof.cells)]
        if cols:
            period, r, m = rng.choice(cols)
            margin = _round(m.raw / r.raw * 100, 1)
            caption = re.sub(r"\s+(income|profit|earnings)$", "", prof.label, flags=re.IGNORECASE).lower()
            when = _when(period, fiscal=False)
            if Decimal(1) <= margin < 100:
                out.append(Claim("computed", f"{_name(p)}{caption} margin was {_dec(margin)}% {when}.", True))
                off = _round(margin + Decimal("2.5"), 1)
                out.append(Claim("wrong_computation", f"{_name(p)}{caption} margin was {_dec(off)}% {when}.", False))
    return out


def _segment_claims(p: BenchPassage, rows: Sequence[_Row], rng: random.Random,
                    segments: Sequence[str]) -> list[Claim]:
    """``other_segment``: a segment row's figure (its label stating a line item) stated for
    another segment (another section or member of the table, or another segment the
    company's tables name), or stated as the consolidated total."""
    seg_rows = [r for r in rows if r.segment and not r.percent and (r.member or items_of_row(r.label))
                and not re.match(r"(?i)(?:consolidated|total)\b", r.label)]
    if not seg_rows:
        return []
    row = rng.choice(seg_rows)
    period, q = rng.choice(row.cells)
    fig, when, be = _fig(row, q), _when(period), _be(row.label)
    if row.member:
        members = [r for r in seg_rows if r.member and r.label != row.label]
        if members:
            other = rng.choice(members).label
            return [Claim("other_segment", f"{_name(p)}{other} segment reported {fig} {when}.", False)]
        return []
    here = sorted({r.segment for r in rows if r.segment and r.segment != row.segment and not r.member})
    known = [s for s in segments if s.lower() != (row.segment or "").lower() and s.lower() not in p.text.lower()]
    others = here or known
    if others and rng.random() < 0.6:
        return [Claim("other_segment", f"{_lower(row.label)[:1].upper()}{_lower(row.label)[1:]} of the "
                                       f"{rng.choice(others)} segment {be} {fig} {when}.", False)]
    return [Claim("other_segment", f"{_name(p)}consolidated {_lower(row.label)} {be} {fig} {when}, "
                                   f"for the company as a whole.", False)]


# --------------------------------------------------------------------------- prose

_FIG = r"(?:\$\s?)?\d[\d,]*(?:\.\d+)?(?:\s?(?:million|billion|thousand))?(?:\s(?:dollars))?(?:\s?%|\spercent)?"
_UP = {"increased": "decreased", "rose": "fell", "grew": "declined"}
_DOWN = {v: k for k, v in _UP.items()}
_NEGATED = {"was": "was not", "were": "were not", "totaled": "did not total", "amounted to": "did not amount to",
            "reached": "did not reach", "increased": "did not increase", "decreased": "did not decrease",
            "rose": "did not rise", "fell": "did not fall", "grew": "did not grow", "declined": "did not decline"}
_PROSE_RE = re.compile(
    rf"^(?:In (?P<lead>(?:fiscal (?:year )?)?(?:19|20)\d\d), )?(?P<subj>(?:[Oo]ur |[Tt]he |[Tt]otal )?[A-Za-z][A-Za-z&'\- ]{{2,60}}?) "
    rf"(?P<verb>was|were|totaled|amounted to|reached|increased|decreased|rose|fell|grew|declined)"
    rf"(?P<prep> to| by)? (?P<fig>{_FIG})"
    rf"(?: (?:in|for|during) (?P<when>(?:fiscal (?:year )?)?(?:19|20)\d\d))?"
    rf"(?P<cmp>,? (?:(?:up|down) from|compared (?:to|with)|from) (?P<fig2>{_FIG}) (?:in|for) "
    rf"(?P<when2>(?:fiscal (?:year )?)?(?:19|20)\d\d))?(?=[ ,.;])")


@dataclass(frozen=True)
class _Statement:
    """A prose sentence read as ``subj verb[ prep] fig[ in when][, up from fig2 in when2]``."""

    subj: str
    verb: str
    prep: str
    fig: Quantity
    fig_text: str
    when: str
    fig2: Quantity | None
    when2: str


def _one_number(text: str) -> Quantity | None:
    """The single quantity ``text`` (a figure) reads as, or None."""
    items = read_items(normalise(text))
    return items.numbers[0] if len(items.numbers) == 1 and not items.years else None


def _statements(p: BenchPassage) -> list[_Statement]:
    """The sentences of a prose passage that state a figure in one of the shapes of
    :data:`_PROSE_RE`; filings' sentences must name the figure's year."""
    out: list[_Statement] = []
    for a, b in sentence_spans(p.text):
        m = _PROSE_RE.match(" ".join(p.text[a:b].split()))
        when = m.group("when") or m.group("lead") if m else None
        if not m or (p.source != CORPUS_SOURCE and not when) or (m.group("when") and m.group("lead")):
            continue
        subj = m.group("subj").strip()
        subj = subj[:1].upper() + subj[1:]
        if len(subj.split()) > 8 or subj.split()[0].lower() in {"it", "this", "that", "which", "there", "he", "she",
                                                                  "we", "they", "i", "you", "these", "those"}:
            continue
        fig = _one_number(m.group("fig"))
        fig2 = _one_number(m.group("fig2")) if m.group("fig2") else None
        if fig is None or fig.raw == 0 or (m.group("fig2") and fig2 is None):
            continue
        out.append(_Statement(subj, m.group("verb"), m.group("prep") or "", fig, m.group("fig").strip(),
                              when or "", fig2, m.group("when2") or ""))
    return out


def _prose_claims(p: BenchPassage, rng: random.Random, companies: Sequence[str]) -> list[Claim]:
    """The claims of a prose passage: from one statement picked at random (module
    docstring); its other figures serve ``other_row``/``other_period``."""
    found = _statements(p)
    if not found:
        return []
    s = rng.choice(found)
    when = f" in {s.when}" if s.when else ""
    head = f"{s.subj} {s.verb}{s.prep}"
    level = s.verb not in _UP and s.verb not in _DOWN or s.prep == " to"
    out = [Claim("verbatim_figure", f"{head} {s.fig_text}{when}.", True),
           Claim("negation", f"{s.subj} {_NEGATED[s.verb]}{s.prep} {s.fig_text}{when}.", False)]
    swap = _UP.get(s.verb) or _DOWN.get(s.verb)
    if swap:
        out.append(Claim("swapped_direction", f"{s.subj} {swap}{s.prep} {s.fig_text}{when}.", False))
    cur = "$" if s.fig.currency == "USD" else ""
    if s.fig.kind == "amount" and s.fig.scaled and cur:
        unit = _units(s.fig.value)
        if unit and unit[0] != s.fig.value / s.fig.raw:
            out.append(Claim("rescaled", f"{head} {cur}{_dec(s.fig.value / unit[0])} {unit[1]}{when}.", True))
        if unit:
            shown = _round(s.fig.value / unit[0], 1)
            if shown * unit[0] != s.fig.value and shown >= 1:
                out.append(Claim("rounded", f"{head} about {cur}{_dec(shown)} {unit[1]}{when}.", True))
    if s.when:
        measure = SYNONYMS.get(s.subj.lower(), _lower(s.subj))
        verb = {"was": "stood at", "were": "stood at", "totaled": "came to", "amounted to": "came to"}.get(s.verb)
        if verb:
            out.append(Claim("paraphrased", f"In {s.when}, {_name(p)}{measure} {verb} {s.fig_text}.", True))
            others = [c for c in companies if c != p.company]
            if p.company and others:
                out.append(Claim("other_company", f"In {s.when}, {_name(p, rng.choice(others))}{measure} {verb} "
                                                  f"{s.fig_text}.", False))
    if s.fig2 is not None and level and s.when and s.fig2.kind == s.fig.kind and s.fig2.value != s.fig.value:
        out.append(Claim("other_period", f"{head} {s.fig2.text}{when}.", False))
        if s.fig.kind == "amount" and s.fig.step == s.fig2.step:
            diff = s.fig.value - s.fig2.value
            unit_word = next((w for w in ("billion", "million", "thousand") if w in s.fig_text), "")
            div = s.fig.value / s.fig.raw
            shown = f"{cur}{_dec(abs(diff) / div)}{' ' + unit_word if unit_word else ''}"
            verb = "increased" if diff > 0 else "decreased"
            out.append(Claim("computed", f"{s.subj} {verb} by {shown} from {s.when2} to {s.when}.", True))
            wrong = f"{cur}{_dec(abs(diff) * Decimal('1.1') / div)}{' ' + unit_word if unit_word else ''}"
            out.append(Claim("wrong_computation", f"{s.subj} {verb} by {wrong} from {s.when2} to {s.when}.", False))
    pool = [q for t in found if t is not s for q in (t.fig, t.fig2) if q is not None
            and q.kind == s.fig.kind and q.scaled == s.fig.scaled and q.value not in (s.fig.value, getattr(s.fig2, "value", None))]
    if pool and level:
        out.append(Claim("other_row", f"{head} {rng.choice(pool).text}{when}.", False))
    return out


# --------------------------------------------------------------------------- running


def claims_for(p: BenchPassage, rng: random.Random, companies: Sequence[str] = (),
               segments: Sequence[str] = ()) -> list[Claim]:
    """The claims the benchmark makes from passage ``p`` (at most one of each kind, but
    ``computed``/``wrong_computation`` may come twice: a change and a margin), drawing its
    random choices from ``rng``; ``companies``: names for ``other_company``;
    ``segments``: segment names of ``p``'s company for ``other_segment``. ``[]`` for a
    passage it cannot read reliably."""
    if p.kind == "table":
        return _table_claims(p, rng, companies, segments)
    return _prose_claims(p, rng, companies)


def judge(p: BenchPassage, claim: Claim) -> Pair:
    """Judge one claim against its passage as the cite stage does (the chunk's
    ``text_type``, resource title and carried column header; the finance expansions)."""
    s = check_rules(claim.text, p.text, text_type=p.text_type, title=p.title, header=table_lead(p.metadata),
                    expansions=FINANCE.expansions, part=table_part(p.metadata))
    return Pair(claim.kind, claim.true, claim.text, p.chunk_id, p.source, p.kind, s.verdict, s.reasons)


def run(passages: Sequence[BenchPassage], *, seed: int = 28, limit: int | None = None) -> list[Pair]:
    """Generate and judge the claims of ``passages`` (shuffled with ``seed``) until
    ``limit`` pairs (None: all). Deterministic for a seed."""
    rng = random.Random(seed)
    companies = sorted({p.company for p in passages if p.company})
    segments: dict[str | None, set[str]] = defaultdict(set)
    for p in passages:
        if p.kind == "table" and p.company:
            title = (p.metadata.get("table") or {}).get("title") if isinstance(p.metadata.get("table"), dict) else None
            named = segment_named(table_context(title, None)) if title else None
            if named:
                segments[p.company].add(named)
    order = list(passages)
    rng.shuffle(order)
    pairs: list[Pair] = []
    for p in order:
        for claim in claims_for(p, rng, companies, sorted(segments.get(p.company, ()))):
            pairs.append(judge(p, claim))
            if limit is not None and len(pairs) >= limit:
                return pairs
    return pairs


def _rate(pairs: Sequence[Pair]) -> str:
    return f"{sum(x.verdict == 'supported' for x in pairs) / len(pairs):.3f}" if pairs else "–"


def precision(pairs: Iterable[Pair]) -> float | None:
    """Share of the pairs judged ``supported`` whose claim is true (None without any)."""
    sup = [x for x in pairs if x.verdict == "supported"]
    return sum(x.true for x in sup) / len(sup) if sup else None


def table_md(pairs: Sequence[Pair]) -> str:
    """The markdown report: per kind n, share ``supported`` (recall / false-support rate)
    against its goal, in total and by source and passage kind; then overall precision."""
    groups = sorted({x.source for x in pairs}) + ["table", "prose"]
    head = "| kind | truth | metric | goal | n | supported | " + " | ".join(f"{g} (n)" for g in groups) + " |"
    lines = [head, "|" + "---|" * (6 + len(groups))]
    for kind in KINDS:
        these = [x for x in pairs if x.kind == kind]
        true = kind in TRUE_KINDS
        by = []
        for g in groups:
            sub = [x for x in these if (x.passage_kind if g in ("table", "prose") else x.source) == g]
            by.append(f"{_rate(sub)} ({len(sub)})")
        lines.append(f"| {kind} | {'true' if true else 'false'} | {'recall' if true else 'false-support rate'} | "
                     f"{'≥ 0.9' if true else '≤ 0.01'} | {len(these)} | {_rate(these)} | " + " | ".join(by) + " |")
    prec = [precision(x for x in pairs if g in (x.source, x.passage_kind)) for g in groups]
    total = precision(pairs)
    lines.append(f"| **precision of supported** | | | ≥ 0.99 | {len(pairs)} | "
                 f"{'–' if total is None else f'{total:.3f}'} | "
                 + " | ".join("–" if v is None else f"{v:.3f}" for v in prec) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``--store [LABEL=]PATH`` (repeatable), ``--corpus DIR`` (its transcripts and
    posts), ``--limit``, ``--seed``, ``--json OUT``; prints the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", action="append", default=[], help="[LABEL=]PATH of a citewell SQLite store")
    ap.add_argument("--corpus", type=Path, help="folder with transcripts/ and posts/ (../shared/corpus)")
    ap.add_argument("--limit", type=int, default=None, help="stop after this many pairs")
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--json", type=Path, help="write every pair here")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    passages: list[BenchPassage] = []
    for i, spec in enumerate(args.store):
        label, _, path = spec.rpartition("=")
        passages += load_store(path, label or f"store{i + 1}")
    if args.corpus:
        passages += load_corpus(args.corpus)
    if not passages:
        ap.error("give at least one --store or --corpus")
    pairs = run(passages, seed=args.seed, limit=args.limit)
    print(table_md(pairs))
    print(f"\n{len(pairs)} pairs from {len({x.chunk_id for x in pairs})} passages "
          f"({len(passages)} read) in {time.perf_counter() - started:.0f} s, seed {args.seed}")
    if args.json:
        args.json.write_text(json.dumps([asdict(x) for x in pairs], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
