"""Speed of dense retrieval's parts on this machine: MiniLM embedding throughput on real
chunks, and exact (numpy) cosine search time as the number of vectors grows.

Run by hand (not part of the test suite)::

    python benchmarks/dense_speed.py --store /tmp/fb.sqlite      # a store with ingested chunks

Prints passages/s (median of 3 runs over the same ``--n`` chunks, batches of 32 in chunk
order and shortest first as ``embed_missing`` does, the process's onnxruntime threads =
cores) and, for 10k/100k/1M random unit vectors of 384
floats, the median time of one query's matrix-vector product + top-k (numpy only: what
:class:`citewell.retrieve.dense.DenseRetriever` does after reading the vectors), and of
reading the workspace's stored vectors from SQLite (``Store.scope_vectors``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from citewell import Engine
from citewell.embed.minilm import MODEL_ID, MiniLMEmbedder


def main() -> None:
    """Parse arguments, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--n", type=int, default=256, help="chunks to embed per run")
    args = parser.parse_args()
    with Engine(args.store) as engine:
        rows = engine.store._conn().execute("SELECT text FROM chunks WHERE workspace_id = ? ORDER BY rowid LIMIT ?",
                                            (engine.workspace_id, args.n)).fetchall()
        texts = [r[0] for r in rows]
        embedder = MiniLMEmbedder()
        embedder.embed(texts[:8])  # warm-up
        for label, order in (("batches of 32 in chunk order", texts),
                             ("batches of 32, shortest first (embed_missing)", sorted(texts, key=len))):
            runs = []
            for _ in range(3):
                start = time.perf_counter()
                for i in range(0, len(order), 32):
                    embedder.embed(order[i:i + 32])
                runs.append(time.perf_counter() - start)
            med = statistics.median(runs)
            print(f"embedding, {label}: {len(texts)} chunks, median {med:.2f} s -> {len(texts) / med:.1f} "
                  f"passages/s (runs {', '.join(f'{r:.2f}' for r in runs)})")
        reads = []
        for _ in range(3):
            start = time.perf_counter()
            stored = engine.store.scope_vectors(engine.workspace_id, MODEL_ID)
            reads.append(time.perf_counter() - start)
        print(f"reading {len(stored)} stored vectors from SQLite: median {statistics.median(reads) * 1000:.1f} ms")
    rng = np.random.default_rng(0)
    query = rng.standard_normal(384).astype(np.float32)
    query /= np.linalg.norm(query)
    for n in (10_000, 100_000, 1_000_000):
        matrix = rng.standard_normal((n, 384), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        times = []
        for _ in range(5):
            start = time.perf_counter()
            scores = matrix @ query
            top = np.argpartition(-scores, 50)[:50]
            top[np.argsort(-scores[top])]
            times.append(time.perf_counter() - start)
        print(f"exact search over {n:>9,} vectors: median {statistics.median(times) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
