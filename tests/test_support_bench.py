"""The support benchmark's fixed sample (benchmarks/support_bench.py, issue 28).

Synthetic passages shaped like filings (an income statement with a header row of years
and ``(in millions)``, a segment table, prose with a comparison) run through the
benchmark's own claim generator; each true kind must be judged ``supported``, each false
kind not (``period_mismatch``, ``measure_mismatch``, ``scope_mismatch`` and the older
reasons of :func:`~citewell.cite.verdict.check_rules`).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import support_bench as sb  # noqa: E402

INCOME = """Acme Corporation
Consolidated Statements of Income
(in millions) 2023 2022 2021
Net sales $ 14,694 $ 12,000 $ 11,500
Cost of sales 9,000 7,800 7,000
Gross profit 5,694 4,200 4,500
Operating income 2,100 1,900 1,700
Net income 1,500 1,300 1,150"""

SEGMENTS = """Net Sales by Reportable Segment
($ in millions) 2023 2022
Flexibles
Net sales $ 10,200 $ 8,900
Rigid Packaging
Net sales $ 3,100 $ 2,800
Consolidated
Net sales $ 13,300 $ 11,700"""

PROSE = ("Revenue was 5,000 million dollars in 2023, up from 4,000 million dollars in 2022. "
         "Operating expenses increased to $1,250 million in 2023 as the company expanded. "
         "The company had 3,100 employees at year end, compared with 2,900 a year earlier.")

PASSAGES = {
    "income": sb.BenchPassage("t-income", INCOME, "table", "synthetic", "ACME_2023_10K", "Acme"),
    "segments": sb.BenchPassage("t-segments", SEGMENTS, "table", "synthetic", "ACME_2023_10K", "Acme"),
    "prose": sb.BenchPassage("t-prose", PROSE, "paragraph", "synthetic", "ACME_2023_10K", "Acme"),
}
COMPANIES = ("Acme", "Globex")


def _pairs() -> dict[tuple[str, str, str], sb.Pair]:
    """Every claim the generator makes of the synthetic passages, judged, keyed by
    (passage, kind, claim); several seeds so that each row and form comes up."""
    out: dict[tuple[str, str, str], sb.Pair] = {}
    for name, passage in PASSAGES.items():
        for seed in range(6):
            for claim in sb.claims_for(passage, random.Random(seed), COMPANIES, ("Flexibles", "Rigid Packaging")):
                out.setdefault((name, claim.kind, claim.text), sb.judge(passage, claim))
    return out


PAIRS = _pairs()

def _cases(truth: bool) -> list[object]:
    kinds = sb.TRUE_KINDS if truth else sb.FALSE_KINDS
    out: list[object] = []
    for name in PASSAGES:
        for kind in kinds:
            if any(k[:2] == (name, kind) for k in PAIRS):
                out.append(pytest.param(name, kind, id=f"{name}-{kind}"))
    return out


def test_sample_has_every_kind() -> None:
    """The synthetic sample makes a claim of every kind (swapped direction from prose only)."""
    assert {k[1] for k in PAIRS} == set(sb.KINDS)


def test_true_claims_are_true_by_construction() -> None:
    """Spot checks of the generator: figures, rounding, rescaling, computations."""
    rows = {r.label: r for r in sb._table_rows(PASSAGES["income"])}
    net_sales = rows["Net sales"]
    period, cell = net_sales.cells[0]
    assert (period.year, net_sales.scale, net_sales.trusted) == (2023, 6, True)
    assert sb._fig(net_sales, cell) == "$14,694 million"
    assert sb._rounded(net_sales, cell) == "$14.7 billion"
    assert sb._rescaled(net_sales, cell) == "$14.694 billion"
    assert sb._paraphrase(PASSAGES["income"], net_sales, period, "$14,694 million") == (
        "In fiscal 2023, Acme's revenue came to $14,694 million.")
    computed = {k[2] for k in PAIRS if k[1] == "computed"}
    assert {"Revenue increased by $1,000 million from 2022 to 2023.", "Acme's operating margin was 14.3% in 2023.",
            "Net income grew 15.4% in 2023 compared with 2022."} <= computed
    assert not {k[2] for k in PAIRS if k[0] == "segments" and k[1] in sb.TRUE_KINDS}  # segment rows: no true claim


@pytest.mark.parametrize(("name", "kind"), _cases(True))
def test_true_kind_supported(name: str, kind: str) -> None:
    bad = [(c, p.verdict, p.reasons) for (n, k, c), p in PAIRS.items() if (n, k) == (name, kind)
           and p.verdict != "supported"]
    assert not bad, bad


@pytest.mark.parametrize(("name", "kind"), _cases(False))
def test_false_kind_not_supported(name: str, kind: str) -> None:
    bad = [(c, p.reasons) for (n, k, c), p in PAIRS.items() if (n, k) == (name, kind) and p.verdict == "supported"]
    assert not bad, bad


def test_table_md_reports_every_kind() -> None:
    """The report has a row per kind and the overall precision."""
    md = sb.table_md(list(PAIRS.values()))
    assert all(f"| {kind} |" in md for kind in sb.KINDS) and "precision of supported" in md


def test_corpus_transcripts_and_posts_read() -> None:
    """The shared transcripts and posts are read through citewell's extractors."""
    root = Path(__file__).resolve().parents[2] / "shared" / "corpus"
    if not (root / "transcripts").is_dir():
        pytest.skip("../shared/corpus is not there")
    passages = sb.load_corpus(root)
    assert passages and all(p.source == sb.CORPUS_SOURCE for p in passages)
