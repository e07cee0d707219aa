"""Recall@k of pgvector's HNSW ranking against exact search, on the FinanceBench dev questions.

Run by hand (not part of the test suite)::

    python benchmarks/pg_copy_store.py /work/eval/lat/citewell.sqlite postgresql://postgres@127.0.0.1:5433/lat
    python benchmarks/pg_vector_recall.py /work/eval/lat/citewell.sqlite postgresql://postgres@127.0.0.1:5433/lat \
        --ef 40,100,200

The two stores hold the same chunks and vectors (the PostgreSQL one copied from the
SQLite one by ``pg_copy_store.py``). For each of the 39 questions of
``eval/financebench_dev.jsonl`` (embedded once with citewell's embedder, the model the
stored vectors came from), over the whole workspace and with the question's
``document_name`` filter, and for each ``k``: the exact top-k (``SQLiteStore.nearest_chunks``:
numpy over the whole scope) and the HNSW top-k (``PostgresStore.nearest_chunks`` at
``hnsw.ef_search`` = max(ef, k)); recall@k = |HNSW ∩ exact| / |exact|, averaged over the
questions, and the minimum. Chunk ids are the same in both stores. Also the p50/p95 of
``nearest_chunks`` on each store (warm: one untimed pass first).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "corpus"


def main() -> None:
    """Parse arguments, rank, print recall and latency per ef_search, k and scope."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sqlite", type=Path)
    parser.add_argument("url")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--ks", default="10,40", help="comma-separated k")
    parser.add_argument("--ef", default="800", help="comma-separated hnsw.ef_search floors (citewell's: 800, EF_SEARCH)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from citewell.embed.endpoint import configured_embedder
    from citewell.store.base import Condition
    from citewell.store.postgres import PostgresStore
    from citewell.store.postgres import vectors as pgvectors
    from citewell.store.sqlite import SQLiteStore

    questions = [json.loads(line) for line in (args.corpus / "eval" / "financebench_dev.jsonl").read_text()
                 .splitlines() if line.strip()]
    embedder = configured_embedder()
    queries = np.asarray(embedder.embed([q["question"] for q in questions]), dtype="<f4")
    lite, pg = SQLiteStore(args.sqlite), PostgresStore(args.url)
    ws = lite.workspace_ids()[0]
    model = embedder.model_id
    print(f"{len(questions)} questions, workspace {ws}: {lite.vector_coverage(ws, model)[0]} embedded chunks "
          f"(SQLite), {pg.vector_coverage(ws, model)[0]} (PostgreSQL)", flush=True)
    ks = [int(k) for k in args.ks.split(",")]
    results = []
    for scoped in (False, True):
        def scope(q: dict) -> list:
            return [Condition("document_name", "eq", (q["doc_name"].lower(),))] if scoped else []

        exact: dict[tuple[int, int], list[str]] = {}
        for i, q in enumerate(questions):  # warm-up
            lite.nearest_chunks(ws, model, queries[i], limit=max(ks), conditions=scope(q))
        times = []
        for k in ks:
            for i, q in enumerate(questions):
                t0 = time.perf_counter()
                exact[(k, i)] = [c for c, _ in lite.nearest_chunks(ws, model, queries[i], limit=k,
                                                                   conditions=scope(q))]
                times.append((time.perf_counter() - t0) * 1000)
        print(f"exact (SQLite, numpy), {'document_name filter' if scoped else 'no filter'}: "
              f"p50 {np.percentile(times, 50):.1f} ms, p95 {np.percentile(times, 95):.1f} ms", flush=True)
        for ef in [int(e) for e in args.ef.split(",")]:
            pgvectors.EF_SEARCH = ef
            for i, q in enumerate(questions):  # warm-up
                pg.nearest_chunks(ws, model, queries[i], limit=max(ks), conditions=scope(q))
            for k in ks:
                recalls, times = [], []
                for i, q in enumerate(questions):
                    t0 = time.perf_counter()
                    got = [c for c, _ in pg.nearest_chunks(ws, model, queries[i], limit=k, conditions=scope(q))]
                    times.append((time.perf_counter() - t0) * 1000)
                    want = exact[(k, i)]
                    recalls.append(len(set(got) & set(want)) / len(want) if want else 1.0)
                row = {"filter": scoped, "ef_search": max(ef, k), "k": k, "recall": float(np.mean(recalls)),
                       "min_recall": float(np.min(recalls)), "p50_ms": float(np.percentile(times, 50)),
                       "p95_ms": float(np.percentile(times, 95))}
                results.append(row)
                print(f"HNSW, {'document_name filter' if scoped else 'no filter'}, ef_search {row['ef_search']}, "
                      f"k={k}: recall@k {row['recall']:.3f} (min {row['min_recall']:.2f}), p50 "
                      f"{row['p50_ms']:.1f} ms, p95 {row['p95_ms']:.1f} ms", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    lite.close()
    pg.close()


if __name__ == "__main__":
    main()
