"""Page geometry and reading order for the PDF extractor (no pdfium in here).

Everything in this module works in the page's *reading frame*: a top-left-origin frame,
in PDF points, in which the page's dominant text runs left to right. It is one of four
axis-permuting rotations of PDF user space (see :class:`Frame`); the displayed frame
(CropBox and ``/Rotate`` applied) is another one. Because both are axis permutations
of user space, a union of boxes computed in one frame maps exactly to the union in the
other, so layout works in the reading frame and boxes are reported in the displayed one.

Pipeline (all per page):

1. :class:`Seg` – a run of characters on one visual line without a large gap
   (built by the caller from pdfium's character stream).
2. :func:`find_gutters` – vertical whitespace strips between columns of prose.
3. :func:`order_lines` – zones (full-width bands vs. column zones), columns read left to
   right, rows top to bottom inside each column: the page's :class:`Line` list.
4. :func:`make_blocks` – paragraphs/headings/table runs from line gaps and line kinds.
5. :func:`make_chunks` – blocks merged/split into chunks of about 50–250 words, a
   heading kept with what follows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from statistics import median

import numpy as np

from citewell.text.numbers import YEAR_PATTERN

#: Chunk size limits in words (whitespace-separated tokens).
MIN_WORDS = 50
MAX_WORDS = 250

_NUMERIC_TOKEN = re.compile(r"^[\$€£¥(\[]*[-+−]?(?:\d[\d,.]*|[.,]\d+)%?[)\]]*[,;:]?$|^[—–\-−$%()]+$")
_SENTENCE_END = re.compile(r"[.!?:;][\"'’”)\]]*$")


@dataclass(frozen=True)
class Frame:
    """An axis-permuting top-left-origin frame of a page.

    ``rotation`` (0/90/180/270, clockwise) is applied to the page box ``box`` =
    ``(x0, y0, x1, y1)`` in PDF user space (points). ``width``/``height`` are the
    frame's size in points.
    """

    rotation: int
    box: tuple[float, float, float, float]

    @property
    def width(self) -> float:
        """Frame width in points."""
        x0, y0, x1, y1 = self.box
        return (x1 - x0) if self.rotation in (0, 180) else (y1 - y0)

    @property
    def height(self) -> float:
        """Frame height in points."""
        x0, y0, x1, y1 = self.box
        return (y1 - y0) if self.rotation in (0, 180) else (x1 - x0)

    def from_user(self, l: float, b: float, r: float, t: float) -> tuple[float, float, float, float]:
        """Map a user-space box ``(left, bottom, right, top)`` to ``(X0, Y0, X1, Y1)``
        in this frame (points, top-left origin, ``X0 <= X1``, ``Y0 <= Y1``). Also maps
        many boxes at once, elementwise, when given four ``(n,)`` float64 arrays."""
        x0, y0, x1, y1 = self.box
        rot = self.rotation
        if rot == 0:
            return l - x0, y1 - t, r - x0, y1 - b
        if rot == 90:
            return b - y0, l - x0, t - y0, r - x0
        if rot == 180:
            return x1 - r, b - y0, x1 - l, t - y0
        return y1 - t, x1 - r, y1 - b, x1 - l

    def to_user(self, X0: float, Y0: float, X1: float, Y1: float) -> tuple[float, float, float, float]:
        """Inverse of :meth:`from_user`: frame box → user-space ``(left, bottom, right, top)``."""
        x0, y0, x1, y1 = self.box
        rot = self.rotation
        if rot == 0:
            return X0 + x0, y1 - Y1, X1 + x0, y1 - Y0
        if rot == 90:
            return Y0 + x0, X0 + y0, Y1 + x0, X1 + y0
        if rot == 180:
            return x1 - X1, Y0 + y0, x1 - X0, Y1 + y0
        return x1 - Y1, y1 - X1, x1 - Y0, y1 - X0


@dataclass
class Seg:
    """A run of characters on one visual line (reading frame, points).

    ``text`` has no leading/trailing whitespace; ``X0``..``Y1`` is the union of its
    non-space character boxes.
    """

    text: str
    X0: float
    Y0: float
    X1: float
    Y1: float
    index: int = 0  # position in pdfium's character stream (content order)

    @property
    def h(self) -> float:
        """Height in points."""
        return self.Y1 - self.Y0

    @property
    def cy(self) -> float:
        """Vertical centre in points."""
        return (self.Y0 + self.Y1) / 2

    @property
    def cx(self) -> float:
        """Horizontal centre in points."""
        return (self.X0 + self.X1) / 2


#: Stands for pdfium's line-end hyphen marker (U+0002) inside line texts.
SOFT_HYPHEN = "\u00ad"


@dataclass
class Line:
    """One row of segments inside one column of one zone, in reading order.

    ``key`` = ``(zone index, column index)`` identifies the column run for boxes;
    ``text`` is the segments' texts joined by one space.
    """

    segs: list[Seg]
    key: tuple[int, int]
    cells: list[list[Seg]] | None = None
    text: str = ""
    X0: float = 0.0
    Y0: float = 0.0
    X1: float = 0.0
    Y1: float = 0.0
    h: float = 0.0
    words: int = 0
    tabular: bool = False
    running: bool = False  # a running header or footer (set after all pages are laid out)

    def __post_init__(self) -> None:
        segs = self.segs
        if self.cells is None:
            segs.sort(key=lambda s: s.X0)
            self.text = " ".join([s.text for s in segs])
        else:
            self.text = " ".join([" ".join([s.text for s in cell]) for cell in self.cells])
        self.X0 = min([s.X0 for s in segs])
        self.Y0 = min([s.Y0 for s in segs])
        self.X1 = max([s.X1 for s in segs])
        self.Y1 = max([s.Y1 for s in segs])
        self.h = median([s.Y1 - s.Y0 for s in segs])
        tokens = self.text.split()
        self.words = len(tokens)
        numeric = len(list(filter(_NUMERIC_TOKEN.match, tokens)))
        frac = numeric / len(tokens) if tokens else 0.0
        self.tabular = (
            (len(self.segs) >= 3 and numeric >= 1 and frac >= 0.2)
            or (numeric >= 2 and frac >= 0.5)
            or (len(self.segs) >= 2 and numeric >= 2 and frac >= 0.3)
        )


@dataclass
class Block:
    """Consecutive lines of one column that belong together (paragraph, heading, table run)."""

    lines: list[Line]
    words: int = 0
    tabular: bool = False
    heading: bool = False

    def __post_init__(self) -> None:
        self.words = sum(ln.words for ln in self.lines)
        self.tabular = sum(1 for ln in self.lines if ln.tabular) * 2 > len(self.lines)


@dataclass
class ChunkPlan:
    """Lines of one chunk (one page) and its kind: ``text_type`` paragraph or table."""

    lines: list[Line] = field(default_factory=list)
    text_type: str = "paragraph"

    @property
    def words(self) -> int:
        """Word count."""
        return sum(ln.words for ln in self.lines)

    @property
    def text(self) -> str:
        """The chunk text: its lines joined by ``\\n``; a word hyphenated across two lines
        (pdfium's line-end hyphen, :data:`SOFT_HYPHEN`, then a lower-case letter) is joined
        back into one word, any other such hyphen is written ``-``; a running header or
        footer line is set apart by a blank line."""
        parts: list[str] = []
        previous: Line | None = None
        for ln in self.lines:
            if parts and parts[-1].endswith(SOFT_HYPHEN) and ln.text[:1].islower() and not ln.running:
                parts[-1] = parts[-1][:-1] + ln.text
            elif previous is not None and (ln.running or previous.running):
                parts[-1] += "\n\n" + ln.text  # a running header/footer stands apart
            else:
                parts.append(ln.text)
            previous = ln
        return "\n".join(parts).replace(SOFT_HYPHEN, "-")

    def column_runs(self) -> list[tuple[float, float, float, float]]:
        """One reading-frame box ``(X0, Y0, X1, Y1)`` per run of consecutive lines that
        share a column key, in reading order (the union of those lines)."""
        runs: list[tuple[float, float, float, float]] = []
        last_key: tuple[int, int] | None = None
        for ln in self.lines:
            if runs and ln.key == last_key:
                X0, Y0, X1, Y1 = runs[-1]
                runs[-1] = (min(X0, ln.X0), min(Y0, ln.Y0), max(X1, ln.X1), max(Y1, ln.Y1))
            else:
                runs.append((ln.X0, ln.Y0, ln.X1, ln.Y1))
            last_key = ln.key
        return runs


# ----------------------------------------------------------------------------- columns


def _is_prose(seg: Seg, page_width: float) -> bool:
    tokens = seg.text.split()
    if len(tokens) < 3 or seg.X1 - seg.X0 < 0.12 * page_width:
        return False
    letters = sum(map(str.isalpha, seg.text))  # letters are never whitespace
    return letters >= 0.55 * sum(map(len, tokens))  # the non-whitespace characters


def window_max(values: np.ndarray, window: int) -> np.ndarray:
    """``out[j] = max(values[j:j + window])`` for ``j`` in ``0 .. len(values) - window``:
    shape ``(len(values) - window + 1,)``; ``values`` a 1-d array of non-negative
    integers, ``1 <= window <= len(values)``. Linear time and memory whatever the window
    (van Herk 1992, Gil and Werman 1993: block-wise prefix and suffix maxima), so a page
    thousands of points wide costs no more per point than a letter-size one."""
    n = len(values)
    blocks = -(-n // window)
    padded = np.zeros(blocks * window, dtype=values.dtype)  # 0 pads: values are >= 0
    padded[:n] = values
    grid = padded.reshape(blocks, window)
    prefix = np.maximum.accumulate(grid, axis=1).ravel()
    suffix = np.maximum.accumulate(grid[:, ::-1], axis=1)[:, ::-1].ravel()
    count = n - window + 1
    return np.maximum(suffix[:count], prefix[window - 1:window - 1 + count])


def find_gutters(segs: list[Seg], page_width: float) -> list[tuple[float, float]]:
    """Find column gutters: x-intervals ``(g0, g1)`` (reading frame, points) where few
    prose lines cross while both sides hold many prose lines (at least 4 each, and the
    crossing count at most half the smaller side). Tables (numeric cells) are not prose,
    so they never create gutters.

    Works on a coverage array of one-point bins (number of prose segments over each
    bin, ``int(page_width) + 2`` bins); the most covered bin within ``max(20, 0.4 *
    page_width)`` points on each side is a sliding-window maximum (:func:`window_max`,
    linear in the page width)."""
    width = int(page_width) + 2
    if width < 10:
        return []
    prose = [s for s in segs if _is_prose(s, page_width)]
    if len(prose) < 8:
        return []
    diff = [0] * (width + 1)
    for s in prose:
        a = max(0, int(s.X0))
        b = min(width, int(s.X1) + 1)
        if b > a:
            diff[a] += 1
            diff[b] -= 1
    cov = np.cumsum(np.array(diff[:width], dtype=np.int64))  # (width,) ≥ 0
    win = max(20, int(0.4 * page_width))
    pad = np.zeros(win, dtype=np.int64)
    # left_max[i] = max(cov[i - win:i]), right_max[i] = max(cov[i + 1:i + 1 + win]); 0 when empty
    left_max = window_max(np.concatenate([pad, cov]), win)[:width]
    right_max = window_max(np.concatenate([cov, pad]), win)[1:width + 1]
    side = np.minimum(left_max, right_max)
    low = ((side >= 5) & (cov * 2 <= side)).astype(np.int8)
    # runs of low bins: [start, stop) from the edges of the 0/1 signal
    edges = np.flatnonzero(np.diff(np.concatenate([[0], low, [0]]))).tolist()
    gutters: list[tuple[float, float]] = []
    for i, stop in zip(edges[::2], edges[1::2]):
        if stop - i >= 3:
            # narrow to the least-covered part of the run
            run = cov[i:stop]
            least = np.flatnonzero(run == run.min())
            g0, g1 = float(i + int(least[0])), float(i + int(least[-1]) + 1)
            # a real column edge: prose lines end just before it and start right after it
            ends = sum(1 for s in prose if g0 - 0.2 * page_width <= s.X1 <= g0 + 1.5)
            starts = sum(1 for s in prose if g1 - 1.5 <= s.X0 <= g1 + 3.0)
            if ends >= 4 and starts >= 4:
                gutters.append((g0, g1))
    return gutters


def _crosses(seg: Seg, gutter: tuple[float, float]) -> bool:
    g0, g1 = gutter
    return seg.X0 < g0 and seg.X1 > g1


def cluster_rows(segs: list[Seg]) -> list[list[Seg]]:
    """Group segments into rows (top to bottom): a segment joins the row whose anchor
    (first member) it overlaps vertically by at least half the smaller height."""
    rows: list[tuple[Seg, list[Seg]]] = []
    for s in sorted(segs, key=lambda s: ((s.Y0 + s.Y1) / 2, s.X0)):
        placed = False
        y0, y1 = s.Y0, s.Y1
        h = y1 - y0
        for anchor, members in reversed(rows[-4:]):
            a0, a1 = anchor.Y0, anchor.Y1
            ov = min(a1, y1) - max(a0, y0)
            if ov >= 0.5 * max(0.1, min(a1 - a0, h)):
                members.append(s)
                placed = True
                break
        if not placed:
            rows.append((s, [s]))
    rows.sort(key=lambda r: min(m.Y0 for m in r[1]))
    return [members for _, members in rows]


_YEARISH = re.compile(rf"^(?:\(?{YEAR_PATTERN}\)?|%|\(\d\)|\$)$")


def _header_like(cell: list[Seg]) -> bool:
    text = " ".join(s.text for s in cell)
    tokens = text.split()
    if any(c.isalpha() for c in text):
        return len(tokens) <= 6
    return all(_YEARISH.match(t) for t in tokens)


def stream_order_is_sane(segs: list[Seg]) -> bool:
    """True when pdfium's content order mostly runs top-to-bottom/left-to-right in the
    reading frame (it does not on e.g. some /Rotate 90 pages, where it is reversed)."""
    ordered = sorted(segs, key=lambda s: s.index)
    good = 0
    for a, b in zip(ordered, ordered[1:]):
        if b.Y0 >= a.Y0 - 0.5 * max(a.h, b.h) or b.X0 > a.X1:
            good += 1
    return len(ordered) < 2 or good >= 0.7 * (len(ordered) - 1)


def _make_lines(rows: list[list[Seg]], key: tuple[int, int], sane: bool = True) -> list[Line]:
    """Turn rows into lines. A table header (2–8 nearly touching rows of short
    header-like cells — words or years — with at least one row of several cells) becomes
    one line: in content order when that order is sane (headers are written cell by cell:
    "December 2, 2022 December 3, 2021"), else with upper cells stacked on the cells
    below them."""
    out: list[Line] = []
    i = 0
    n = len(rows)
    while i < n:
        j = i
        if _header_row(rows[i]):
            while (
                j + 1 < n
                and j + 1 - i < 8
                and _header_row(rows[j + 1])
                and _touching(rows[j], rows[j + 1])
            ):
                j += 1
        if j > i and any(len(r) >= 2 for r in rows[i:j + 1]):
            block = rows[i:j + 1]
            segs = [s for r in block for s in r]
            if sane:
                cells = [[s] for s in sorted(segs, key=lambda s: s.index)]
            else:
                cells = _stack(block)
            out.append(Line(segs, key, cells=cells))
            i = j + 1
            continue
        if i + 1 < n and _wrapped_label(rows[i], rows[i + 1]):
            first, *rest = sorted(rows[i], key=lambda s: s.X0)
            cont = rows[i + 1][0]
            out.append(Line([first, cont, *rest], key, cells=[[first, cont]] + [[s] for s in rest]))
            i += 2
            continue
        out.append(Line(list(rows[i]), key))
        i += 1
    return out


def _wrapped_label(row: list[Seg], nxt: list[Seg]) -> bool:
    """A table row whose label wraps onto the next line while its values sit between
    the two label lines (vertically centred): the label's second line belongs before
    the values."""
    if len(row) < 2 or len(nxt) != 1:
        return False
    first = min(row, key=lambda s: s.X0)
    cont = nxt[0]
    if abs(cont.X0 - first.X0) > 3 or not any(c.isalpha() for c in cont.text):
        return False
    if not _touching(row, nxt):
        return False
    others = [s for s in row if s is not first]
    return all(first.cy + 0.15 * first.h < s.cy < cont.cy and s.X0 > cont.X1 for s in others)


def _header_row(row: list[Seg]) -> bool:
    return all(_header_like([s]) for s in row)


def _touching(upper: list[Seg], lower: list[Seg]) -> bool:
    uy1 = max(s.Y1 for s in upper)
    ly0 = min(s.Y0 for s in lower)
    h = median(s.h for s in lower)
    return -1.0 * h <= ly0 - uy1 <= 0.9 * h


def _stack(block: list[list[Seg]]) -> list[list[Seg]]:
    """Stack each row's cells onto the cell of the next row they overlap (only when they
    overlap exactly one); return the cells of the result in reading order."""
    cur = [[s] for s in sorted(block[0], key=lambda s: s.X0)]
    done: list[list[Seg]] = []
    for row in block[1:]:
        cells = [[s] for s in sorted(row, key=lambda s: s.X0)]
        hits_ok = True
        targets = []
        for upper in cur:
            u0 = min(s.X0 for s in upper)
            u1 = max(s.X1 for s in upper)
            hits = [lc for lc in cells if min(u1, max(s.X1 for s in lc)) > max(u0, min(s.X0 for s in lc))]
            if len(hits) != 1:
                hits_ok = False
                break
            targets.append(hits[0])
        if hits_ok:
            for upper, lower in zip(cur, targets):
                lower[0:0] = upper
        else:
            done.extend(cur)
        cur = cells
    done.extend(cur)
    return done


def order_lines(segs: list[Seg], page_width: float) -> list[Line]:
    """Return the page's lines in reading order.

    Segments that cross a gutter form full-width bands (read row by row at their
    vertical position); between bands, each column is read top to bottom, columns left
    to right. Without gutters the page is one zone read row by row (tables stay rows).
    """
    if not segs:
        return []
    sane = stream_order_is_sane(segs)
    gutters = find_gutters(segs, page_width)
    if not gutters:
        return _make_lines(cluster_rows(segs), (0, 0), sane)
    spanning = [s for s in segs if any(_crosses(s, g) for g in gutters)]
    bands: list[list[float]] = []
    for s in sorted(spanning, key=lambda s: s.Y0):
        if bands and s.Y0 <= bands[-1][1] + 0.3 * s.h:
            bands[-1][1] = max(bands[-1][1], s.Y1)
        else:
            bands.append([s.Y0, s.Y1])
    # zone index: 2*k for the column zone above band k, 2*k+1 for band k
    zones: dict[int, list[Seg]] = {}
    for s in segs:
        z = 2 * len(bands)
        is_span = any(_crosses(s, g) for g in gutters)
        for k, (b0, b1) in enumerate(bands):
            if is_span and b0 <= s.Y0 <= b1:
                z = 2 * k + 1
                break
            if not is_span and b0 <= s.cy <= b1:
                z = 2 * k + 1
                break
            if s.cy < b0:
                z = 2 * k
                break
        zones.setdefault(z, []).append(s)
    centres = [(g0 + g1) / 2 for g0, g1 in gutters]
    lines: list[Line] = []
    for z in sorted(zones):
        zsegs = zones[z]
        if z % 2 == 1:
            lines.extend(_make_lines(cluster_rows(zsegs), (z, 0), sane))
            continue
        cols: dict[int, list[Seg]] = {}
        for s in zsegs:
            cols.setdefault(sum(1 for c in centres if s.cx > c), []).append(s)
        for c in sorted(cols):
            lines.extend(_make_lines(cluster_rows(cols[c]), (z, c), sane))
    return lines


# ----------------------------------------------------------------------------- blocks


def make_blocks(lines: list[Line]) -> list[Block]:
    """Split the ordered lines into blocks: a new block starts at a new column run, a
    vertical gap clearly larger than the column's usual line gap, a font-size change
    (> 18 %), a switch between table-like and prose lines, or an upward jump."""
    blocks: list[Block] = []
    if not lines:
        return blocks
    gaps: dict[tuple[int, int], list[float]] = {}
    for a, b in zip(lines, lines[1:]):
        if a.key == b.key:
            g = b.Y0 - a.Y1
            if -0.5 * a.h < g < 2.0 * a.h:
                gaps.setdefault(a.key, []).append(g)
    usual = {k: median(v) for k, v in gaps.items()}
    cur: list[Line] = [lines[0]]
    for a, b in zip(lines, lines[1:]):
        hmin = max(0.5, min(a.h, b.h))
        hmax = max(a.h, b.h)
        gap = b.Y0 - a.Y1
        brk = (
            a.key != b.key
            or gap > max(usual.get(a.key, 0.2 * hmin), 0.0) + 0.45 * hmin
            or b.Y0 < a.Y0 - 0.5 * hmin
            or (hmax - hmin) > 0.18 * hmax
            or a.tabular != b.tabular
        )
        if brk:
            blocks.append(Block(cur))
            cur = [b]
        else:
            cur.append(b)
    blocks.append(Block(cur))
    for i, blk in enumerate(blocks[:-1]):
        last = blk.lines[-1].text
        blk.heading = (
            len(blk.lines) <= 2
            and 0 < blk.words <= 15
            and not blk.tabular
            and not _SENTENCE_END.search(last)
        )
    return blocks


def _split_long(block: Block, max_words: int, min_words: int) -> list[Block]:
    """Split a block of more than ``max_words`` words at line boundaries, preferring a
    line that ends a sentence once the piece has ``min_words`` words."""
    pieces: list[Block] = []
    cur: list[Line] = []
    words = 0
    for ln in block.lines:
        if cur and words + ln.words > max_words:
            cut = len(cur)
            acc = 0
            best = None
            for i, c in enumerate(cur):
                acc += c.words
                if acc >= min_words and _SENTENCE_END.search(c.text):
                    best = i + 1
            if best is not None and not block.tabular:
                cut = best
            pieces.append(Block(cur[:cut]))
            cur = cur[cut:]
            words = sum(c.words for c in cur)
        cur.append(ln)
        words += ln.words
    if cur:
        pieces.append(Block(cur))
    for p in pieces:
        p.tabular = block.tabular
    return pieces


def make_chunks(blocks: list[Block], max_words: int = MAX_WORDS, min_words: int = MIN_WORDS) -> list[ChunkPlan]:
    """Group one page's blocks into chunks of about ``min_words``–``max_words`` words.

    Blocks are added while the chunk stays within ``max_words``; a large block of the
    other kind (table vs. prose) starts a new chunk once the current one has
    ``min_words``; a heading block never ends a chunk when something follows it on the
    page; a too-small last chunk is merged into the previous one.
    """
    pieces: list[Block] = []
    for b in blocks:
        if b.words > max_words:
            parts = _split_long(b, max_words, min_words)
            pieces.extend(parts)
        else:
            pieces.append(b)
    groups: list[list[Block]] = []
    cur: list[Block] = []

    def words_of(bs: list[Block]) -> int:
        return sum(b.words for b in bs)

    def kind_of(bs: list[Block]) -> bool:
        lines = [ln for b in bs for ln in b.lines]
        return sum(1 for ln in lines if ln.tabular) * 2 > len(lines)

    for p in pieces:
        if cur and not all(b.heading for b in cur):
            overflow = words_of(cur) + p.words > max_words
            switch = (
                words_of(cur) >= min_words
                and (p.words >= 25 or len(p.lines) >= 3)
                and p.tabular != kind_of(cur)
            )
            if overflow or switch:
                trailing: list[Block] = []
                while len(cur) > 1 and cur[-1].heading:
                    trailing.insert(0, cur.pop())
                groups.append(cur)
                cur = trailing
        cur.append(p)
    if cur:
        groups.append(cur)
    if len(groups) > 1 and words_of(groups[-1]) < min_words:
        if words_of(groups[-2]) + words_of(groups[-1]) <= int(max_words * 1.2):
            last = groups.pop()
            groups[-1].extend(last)
    plans: list[ChunkPlan] = []
    for g in groups:
        lines = [ln for b in g for ln in b.lines]
        if not lines:
            continue
        tab = sum(1 for ln in lines if ln.tabular)
        plans.append(ChunkPlan(lines, "table" if tab * 2 > len(lines) and tab >= 2 else "paragraph"))
    return plans
