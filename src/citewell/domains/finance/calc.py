"""Calculations from statement rows: a ratio, a margin, a change between years, an average.

When a question asks for a figure that the sources do not state but that is computed from
line items they do state — a turnover ratio, a margin, a growth rate, working capital — the
extractive answer quotes the rows (:mod:`citewell.domains.finance.rows`) and, when it can
read how the figure is computed, computes it and shows the working: ``net sales / total
assets = 1.50 (1,500 / 1,000)``. The working sentence cites nothing (its inputs are the cited rows that follow
it); it states the formula in words, the numbers put into it and the result.

How the formula is found, first that applies:

1. the question defines it (``… defined as net sales / total assets``; ``with working
   capital = current assets - current liabilities``);
2. an average over years (``the 2020 to 2022 three year average of R&D as a % of net sales``): the
   inner measure for each year, averaged;
3. a change between two years (``change in net sales from 2021 to 2022``, ``2021 - 2022
   net sales growth rate``): as a percentage of the earlier year when the question asks
   for a rate, percent or %, else the difference;
4. a textbook ratio the question names (:data:`FORMULAS`);
5. ``A as a % of B``, ``A % margin`` (over revenue), ``A + B``.

Formulas are read by :func:`parse`: line-item phrases (:func:`citewell.domains.finance.statements.item_mentions`)
with an optional fiscal year (``FY2019 revenue``), numbers, ``+ - * /`` and their words
(``plus``, ``minus``, ``less``, ``times``, ``divided by``), parentheses, ``average X
between Y1 and Y2`` (``average X`` alone: the year and the one before) and ``change in X
between Y1 and Y2``. A value is read from the row that states its item
(:func:`citewell.domains.finance.rows.find_rows`) in the column whose year it names; expenses
and outflows (:attr:`citewell.domains.finance.vocabulary.LineItem.spent`: cost of sales, interest
expense, capital expenditures …, which statements may show in parentheses) count by
their size. Anything that cannot be read — an item no row states, a
year no column reports, a division by zero — means no calculation: the answer then quotes
the rows and says the reader must compute.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, DivisionByZero, InvalidOperation

from .rows import FoundRow
from .statements import item_mentions, mentions
from citewell.question.periods import question_periods
from citewell.text.numbers import is_year
from citewell.question.kinds import lead
from citewell.text.terms import tokens
from .vocabulary import LINE_ITEMS

__all__ = ["FORMULAS", "Calculation", "RowsFor", "calculate", "parse"]

#: Textbook formulas (CFA Institute, "Financial Analysis Techniques") of the ratios of
#: :data:`citewell.domains.finance.vocabulary.RATIOS`, by first name, in the words :func:`parse`
#: reads; ``%`` results are percentages.
FORMULAS: dict[str, tuple[str, ...]] = {
    "current ratio": ("total current assets / total current liabilities",),
    "quick ratio": ("(cash and cash equivalents + short-term investments + accounts receivable) / "
                    "total current liabilities",
                    "(cash and cash equivalents + accounts receivable) / total current liabilities"),
    "cash ratio": ("cash and cash equivalents / total current liabilities",),
    "working capital": ("total current assets - total current liabilities",),
    "gross margin": ("gross profit / revenue * 100 %", "(revenue - cost of revenue) / revenue * 100 %"),
    "operating margin": ("operating income / revenue * 100 %",),
    "net margin": ("net income / revenue * 100 %",),
    "ebitda": ("operating income + depreciation and amortization",),
    "return on assets": ("net income / average total assets",),
    "return on equity": ("net income / average total stockholders equity",),
    "asset turnover": ("revenue / average total assets",),
    "fixed asset turnover": ("revenue / average property and equipment net",),
    "inventory turnover": ("cost of revenue / average inventories",),
    "days inventory outstanding": ("365 * average inventories / cost of revenue",),
    "receivables turnover": ("revenue / average accounts receivable",),
    "days sales outstanding": ("365 * average accounts receivable / revenue",),
    "payables turnover": ("cost of revenue / average accounts payable",),
    "days payable outstanding": ("365 * average accounts payable / cost of revenue",),
    "interest coverage": ("operating income / interest expense",),
    "effective tax rate": ("income tax expense / income before income taxes * 100 %",),
    "free cash flow": ("net cash provided by operating activities - capital expenditures",),
    "dividend payout ratio": ("dividends paid / net income * 100 %",),
}

_YEAR = r"(?:FY\s*'?\d{2,4}|(?:19|20)\d{2})"
_DEFINITION_RE = re.compile(r"\b(?:is\s+|are\s+)?defined\s+as\s*:?\s*(?P<f>.+?)(?:\.(?:\s|$)|$)|"
                            r"\bdefine\s+.+?\s+as\s+(?P<g>.+?)(?:\.(?:\s|$)|$)", re.IGNORECASE)
_AVERAGE_OVER_RE = re.compile(rf"(?P<y1>{_YEAR})\s*(?:-|–|to|through)\s*(?P<y2>{_YEAR})\s+(?:\w+\s+)?year\s+average\s+"
                              rf"(?:of\s+)?(?P<what>.+?)(?:\s+for\b|\?|$)|"
                              rf"\b(?:\w+\s+)year\s+average\s+(?:of\s+)?(?P<what2>.+?)\s+from\s+(?P<y3>{_YEAR})\s+"
                              rf"to\s+(?P<y4>{_YEAR})", re.IGNORECASE)
_CHANGE_RE = re.compile(r"\b(?:change|growth|increase|decrease|decline|drop|rise|fall)\b", re.IGNORECASE)
_RATE_RE = re.compile(r"\b(?:rate|percent|percents|percentage)\b|%", re.IGNORECASE)
_SHARE_RE = re.compile(r"(?P<a>[\w&' ,-]+?)\s+as\s+a\s+%\s+of\s+(?P<b>[\w&' ,-]+)", re.IGNORECASE)
_MARGIN_RE = re.compile(r"(?P<a>[\w&' ,()-]+?)\s*%\s*margin\b", re.IGNORECASE)
_DECIMALS_RE = re.compile(r"\bround\w*\b.*?\b(?P<n>one|two|three|four|\d)\s+decimal", re.IGNORECASE)
_WORD_DECIMALS = {"one": 1, "two": 2, "three": 3, "four": 4}
_OPERATOR_WORDS = [(r"\bdivided\s+by\b", " / "), (r"\bmultiplied\s+by\b|\btimes\b|×", " * "), (r"\bplus\b", " + "),
                   (r"\bminus\b|\bless\b|\s[–−]\s", " - "), (r"÷", " / ")]


# --------------------------------------------------------------------------- formulas


@dataclass(frozen=True)
class Node:
    """A formula node: ``op`` one of ``num`` (``value``), ``item`` (``key``, ``year``:
    None for the target year, ``label``: the words naming it), ``avg`` / ``chg`` (``key``,
    ``years``: the two years, or None for the target year and the one before), or
    ``+ - * /`` with ``left``/``right``."""

    op: str
    value: Decimal | None = None
    key: str | None = None
    year: int | None = None
    years: tuple[int, int] | None = None
    label: str = ""
    left: "Node | None" = None
    right: "Node | None" = None


def _year(text: str) -> int | None:
    """The first fiscal year written in ``text`` (``FY2019``, ``FY 19``, ``2019``)."""
    for t in tokens(text):
        if t.number and is_year(t.term):
            return int(t.term)
    return None


_TOKEN_RE = re.compile(
    rf"(?P<avg>\baverage\s+(?:of\s+)?(?:the\s+)?(?P<avg_item>[^()+*/]+?)(?:\s+between\s+(?P<a1>{_YEAR})\s+and\s+"
    rf"(?P<a2>{_YEAR}))?(?=\s*[()+*/]|\s+-\s|$))|"
    rf"(?P<chg>\bchange\s+in\s+(?P<chg_item>[^()+*/]+?)\s+between\s+(?P<c1>{_YEAR})\s+and\s+(?P<c2>{_YEAR}))|"
    r"(?P<paren>[()])|(?P<op>[+*/]|(?<=\s)-(?=\s))|(?P<num>(?<![\w.])\d+(?:\.\d+)?(?![\w.]))|"
    r"(?P<words>[^()+*/\s][^()+*/]*?(?=\s*[()+*/]|\s+-\s|$))", re.IGNORECASE)


def _item(phrase: str) -> tuple[str | None, str]:
    """The line item a phrase names (its first), and the phrase without its year."""
    keys = item_mentions(phrase)
    label = re.sub(rf"\b{_YEAR}\b", "", phrase, flags=re.IGNORECASE)
    return (keys[0] if keys else None), " ".join(label.split()).strip(" ,")


def parse(formula: str) -> Node | None:
    """The :class:`Node` tree of a formula in words (module docstring), or None when it
    cannot be read (an operand that names no line item, unbalanced parentheses)."""
    text = formula
    for pattern, repl in _OPERATOR_WORDS:
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    text = text.replace("%", " ").strip()
    items: list[Node | str] = []
    pos = 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            return None
        pos = m.end()
        if m["avg"]:
            key, label = _item(m["avg_item"])
            if key is None:
                return None
            years = (_year(m["a1"]), _year(m["a2"])) if m["a1"] else None
            items.append(Node("avg", key=key, years=years, label=f"average {label}"))  # type: ignore[arg-type]
        elif m["chg"]:
            key, label = _item(m["chg_item"])
            if key is None:
                return None
            items.append(Node("chg", key=key, years=(_year(m["c1"]), _year(m["c2"])),  # type: ignore[arg-type]
                              label=f"change in {label}"))
        elif m["paren"] or m["op"]:
            items.append((m["paren"] or m["op"]).strip())
        elif m["num"]:
            items.append(Node("num", value=Decimal(m["num"]), label=m["num"]))
        else:
            phrase = m["words"].strip()
            key, label = _item(phrase)
            if key is None:
                return None
            items.append(Node("item", key=key, year=_year(phrase), label=label))
    tree, rest = _expr(items)
    return tree if tree is not None and not rest else None


def _binary(items: list[Node | str], ops: tuple[str, str], operand: Callable) -> tuple[Node | None, list[Node | str]]:
    """``operand (op operand)*`` for the two operators ``ops`` of one precedence level,
    left-associative; ``(None, rest)`` when an operand is missing."""
    left, items = operand(items)
    while left is not None and items and items[0] in ops:
        op = items[0]
        right, items = operand(items[1:])
        if right is None:
            return None, items
        left = Node(str(op), left=left, right=right)
    return left, items


def _expr(items: list[Node | str]) -> tuple[Node | None, list[Node | str]]:
    return _binary(items, ("+", "-"), _term)


def _term(items: list[Node | str]) -> tuple[Node | None, list[Node | str]]:
    return _binary(items, ("*", "/"), _factor)


def _factor(items: list[Node | str]) -> tuple[Node | None, list[Node | str]]:
    if not items:
        return None, items
    head = items[0]
    if head == "(":
        inner, rest = _expr(items[1:])
        if inner is None or not rest or rest[0] != ")":
            return None, rest
        return inner, rest[1:]
    if isinstance(head, Node):
        return head, items[1:]
    return None, items


# --------------------------------------------------------------------------- values


def _number(cell: str) -> Decimal | None:
    """A value cell as a number: ``$6,489`` 6489, ``(1,749)`` -1749, ``12%`` 12, a dash 0."""
    raw = cell.replace("$", "").replace(",", "").strip()
    if raw in ("\u2014", "\u2013", "-"):
        return Decimal(0)
    negative = raw.startswith("(") and raw.endswith(")")
    raw = raw.strip("()%")
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return None
    return -value if negative else value


_SPENT = frozenset(item.key for item in LINE_ITEMS if item.spent)


class _Values:
    """Values of line items by year, read from the rows found for them."""

    def __init__(self, rows: Mapping[str, FoundRow], *, partial: bool = False) -> None:
        self.rows = rows
        self.partial = partial
        self.used: dict[tuple[str, int], Decimal] = {}

    def get(self, key: str, year: int) -> Decimal | None:
        row = self.rows.get(key)
        if row is None or not row.columns:
            return None
        # a fiscal-year column (no span, or twelve months); a quarter or year-to-date column
        # only for a question that asks for such a period (never a year's ratio of a quarter)
        fiscal_year = (lambda p: p.months in (None, 12))
        for want_year in ((fiscal_year, lambda p: True) if self.partial else (fiscal_year,)):
            for period, cell in row.columns:
                if period.year == year and want_year(period):
                    value = _number(cell)
                    if value is None:
                        return None
                    if key in _SPENT:
                        value = abs(value)  # an expense or outflow, shown in parentheses, counts by its size
                    self.used[(key, year)] = value
                    return value
        return None


def _evaluate(node: Node, values: _Values, year: int) -> Decimal | None:
    if node.op == "num":
        return node.value
    if node.op == "item":
        return values.get(node.key or "", node.year or year)
    if node.op in ("avg", "chg"):
        y1, y2 = node.years or (year - 1, year)
        a, b = values.get(node.key or "", y1), values.get(node.key or "", y2)
        if a is None or b is None:
            return None
        return (a + b) / 2 if node.op == "avg" else b - a
    left = _evaluate(node.left, values, year) if node.left else None
    right = _evaluate(node.right, values, year) if node.right else None
    if left is None or right is None:
        return None
    try:
        return {"+": left + right, "-": left - right, "*": left * right, "/": left / right}[node.op]
    except (DivisionByZero, InvalidOperation):
        return None


def _show(value: Decimal) -> str:
    """A number as a statement writes it: thousands separators, its own decimals."""
    text = f"{value:,f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _render(node: Node, leaf: Callable[[Node], str]) -> str:
    """The formula as text, each operand written by ``leaf``, parenthesised as needed."""
    if node.left is None or node.right is None:
        return leaf(node)
    left, right = _render(node.left, leaf), _render(node.right, leaf)
    if node.right.op in ("+", "-", "*", "/") and node.op in ("-", "*", "/"):
        right = f"({right})"
    if node.left.op in ("+", "-") and node.op in ("*", "/"):
        left = f"({left})"
    return f"{left} {node.op} {right}"


def _working(node: Node, values: _Values, year: int) -> str:
    """The formula with the values put in: ``6,489 / ((282 + 253) / 2)``."""
    def leaf(n: Node) -> str:
        if n.op == "num":
            return _show(n.value or Decimal(0))
        if n.op == "item":
            return _show(values.used.get((n.key or "", n.year or year), Decimal(0)))
        y1, y2 = n.years or (year - 1, year)
        a, b = values.used.get((n.key or "", y1), Decimal(0)), values.used.get((n.key or "", y2), Decimal(0))
        return f"(({_show(a)} + {_show(b)}) / 2)" if n.op == "avg" else f"({_show(b)} - {_show(a)})"
    text = _render(node, leaf)
    # an operand's own brackets are not needed when it is the whole formula (the working is
    # written in brackets after the result: "= 41,879 (177,866 - 135,987)")
    return text[1:-1] if node.op in ("avg", "chg") else text


def _words(node: Node) -> str:
    """The formula in words, as the question or the textbook names its parts."""
    return _render(node, lambda n: n.label)


def _leaves(node: Node) -> list[str]:
    if node.op in ("item", "avg", "chg"):
        return [node.key or ""]
    return [k for child in (node.left, node.right) if child is not None for k in _leaves(child)]


# --------------------------------------------------------------------------- questions


@dataclass(frozen=True)
class Calculation:
    """A computed answer: ``text`` (the working sentence, uncited), ``value`` (the
    result, rounded), ``items`` (the line items it read, for the rows to quote)."""

    text: str
    value: Decimal
    items: tuple[str, ...]


@dataclass(frozen=True)
class _Plan:
    """What to compute: the ``formulas`` to try in order, for ``years`` (averaged, or each
    shown when ``each``), as a percentage or not."""

    formulas: tuple[str, ...]
    years: tuple[int, ...]
    percent: bool
    name: str
    each: bool = False


def _plan(question: str) -> _Plan | None:
    """What to compute for ``question`` (module docstring, steps 1-5), or None."""
    ask = lead(question)
    asked = sorted(question_periods(question).years)
    target = asked[-1] if asked else None
    definition = _DEFINITION_RE.search(question)
    if definition:
        formula = (definition["f"] or definition["g"]).strip()
        percent = bool(re.search(r"\bpercent|%", ask, re.IGNORECASE))
        return _Plan((formula,), (target,) if target else (), percent, "")
    over = _AVERAGE_OVER_RE.search(ask)
    if over:
        y1 = _year(over["y1"] or over["y3"])
        y2 = _year(over["y2"] or over["y4"])
        inner = _plan_measure(over["what"] or over["what2"])
        if y1 and y2 and y2 > y1 and inner is not None:
            return _Plan(inner.formulas, tuple(range(y1, y2 + 1)), inner.percent, inner.name)
    if _CHANGE_RE.search(ask) and len(asked) == 2:
        keys = item_mentions(ask)
        ratios = [m for m in mentions(ask) if m.kind == "ratio"]
        if len(keys) == 1 and not ratios:
            phrase = keys[0]
            change = f"change in {phrase} between {asked[0]} and {asked[1]}"
            if _RATE_RE.search(question):
                return _Plan((f"({change}) / {phrase} {asked[0]} * 100",), (asked[1],), True, "change")
            return _Plan((change,), (asked[1],), False, "change")
    measure = _plan_measure(ask)
    if measure is not None and target:
        if len(asked) == 2:  # "has the quick ratio improved between FY2023 and FY2022": both years
            return _Plan(measure.formulas, (asked[1], asked[0]), measure.percent, measure.name, each=True)
        return _Plan(measure.formulas, (target,), measure.percent, measure.name)
    return None


def _plan_measure(text: str) -> _Plan | None:
    """The formula of a measure named in ``text``: a textbook ratio, ``A as a % of B``,
    ``A % margin``, or ``A + B``."""
    for m in mentions(text):
        if m.kind == "ratio" and m.key in FORMULAS:
            formulas = FORMULAS[m.key]
            return _Plan(tuple(f.replace("%", "").strip() for f in formulas), (), formulas[0].endswith("%"), m.key)
    share = _SHARE_RE.search(text)
    if share and item_mentions(share["a"]) and item_mentions(share["b"]):
        return _Plan((f"{share['a']} / {share['b']} * 100",), (), True, "")
    margin = _MARGIN_RE.search(text)
    if margin and item_mentions(margin["a"]):
        return _Plan((f"{item_mentions(margin['a'])[0]} / revenue * 100",), (), True, "")
    if "+" in text:
        parts = [p for p in re.split(r"\s\+\s", text)]
        if len(parts) == 2 and all(item_mentions(p) for p in parts):
            return _Plan((f"{item_mentions(parts[0])[-1]} + {item_mentions(parts[1])[0]}",), (), False, "")
    return None


def _decimals(question: str, percent: bool, tree: Node, values: _Values) -> int:
    """Decimal places of the result: as the question asks (``round … to two decimal
    places``); else one for a percentage, the inputs' own for a sum or difference of
    amounts (``5,591 - 1,749 = 3,842``), two for any other ratio."""
    found = _DECIMALS_RE.search(question)
    if found:
        n = found["n"].lower()
        return _WORD_DECIMALS.get(n, int(n) if n.isdigit() else 2)
    if percent:
        return 1
    if _additive(tree):
        return max((max(0, -v.as_tuple().exponent) for v in values.used.values()), default=0)  # type: ignore[operator]
    return 2


def _additive(node: Node) -> bool:
    """The formula only adds and subtracts amounts (no ratio, no constant)."""
    if node.op in ("*", "/", "num"):
        return False
    return all(_additive(c) for c in (node.left, node.right) if c is not None)


#: ``rows_for(keys)``: the rows stating those line items, by item.
RowsFor = Callable[[tuple[str, ...]], Mapping[str, FoundRow]]


def calculate(question: str, rows_for: RowsFor) -> Calculation | None:
    """The calculation ``question`` asks for, or None (module docstring). ``rows_for(keys)``
    returns the rows stating those line items, by item (the generator's row search over
    its passages)."""
    plan = _plan(question)
    if plan is None or not plan.years:
        return None
    for formula in plan.formulas:
        tree = parse(_as_keys(formula))
        if tree is None:
            continue
        keys = tuple(dict.fromkeys(_leaves(tree)))
        rows = rows_for(keys)
        if len({r.scale for r in rows.values() if r.scale is not None}) > 1:
            continue  # rows in thousands and in millions: never combined as written
        values = _Values(rows, partial=question_periods(question).partial)
        results = [_evaluate(tree, values, year) for year in plan.years]
        if any(r is None for r in results):
            continue
        places = _decimals(question, plan.percent, tree, values)
        unit = "%" if plan.percent else ""

        def rounded(x: Decimal) -> Decimal:
            return x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)

        def fixed(x: Decimal) -> str:  # the result with the decimals asked (1.9%, 34.0%, 6.25)
            return f"{x:,.{places}f}"

        works = [_working(tree, values, year) for year in plan.years]
        # each sentence ends in ")." so that sentence splitters end it there ("6.25. Next" is one sentence to syntok)
        if plan.each:
            each = ", ".join(f"{fixed(rounded(r))}{unit} in {year} ({w})"  # type: ignore[arg-type]
                             for year, w, r in zip(plan.years, works, results))
            return Calculation(f"Computed from the figures below, {_words(tree)} is {each}.",
                               rounded(results[0]), keys)  # type: ignore[arg-type]
        total = sum(results, Decimal(0)) / len(results)  # type: ignore[arg-type]
        value = rounded(total)
        shown = f"{fixed(value)}{unit}"
        if len(plan.years) > 1:
            each = "; ".join(f"{year}: {w}" for year, w in zip(plan.years, works))
            text = (f"Computed from the figures below, the average over {plan.years[0]}\u2013{plan.years[-1]} of "
                    f"{_words(tree)} is {shown} ({each}).")
        else:
            text = f"Computed from the figures below: {_words(tree)} = {shown} ({works[0]})."
        return Calculation(text, value, keys)
    return None


def _as_keys(formula: str) -> str:
    """A formula whose operands may name line items by their key (as :func:`_plan_measure`
    writes them) with each key as its first caption, so :func:`parse` reads one language."""
    captions = {item.key: item.labels[0].text for item in LINE_ITEMS}
    return re.sub(r"\b[A-Z][A-Za-z]+\b", lambda m: captions.get(m.group(), m.group()), formula)

