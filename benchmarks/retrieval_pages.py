"""Retrieval-only evidence-page hit@5/10/20 on the FinanceBench dev questions.

For each of the 39 questions of ``eval/financebench_dev.jsonl`` this asks the library's
retriever (no generator) for the top 20 passages over ``pdf/`` of the shared corpus,
once with ``document_name=<doc>`` and once without, and counts a hit at k when a passage
ranked 1..k lies on a gold evidence page (``page_number_1based``) of the gold document
(matching as :mod:`citewell.eval.metrics`: ``citewell eval`` reports the same hit@k).
``--no-rerank`` gives the plain BM25 (FTS5) order for comparison.

Run by hand (not part of the test suite)::

    python benchmarks/retrieval_pages.py --store /tmp/fb.sqlite
    python benchmarks/retrieval_pages.py --store /tmp/fb.sqlite --no-rerank
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from citewell import Engine
from citewell.eval import KS, first_gold_rank, load_questions, passage_location
from citewell.retrieve import BM25Retriever

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


def main() -> None:
    """Parse arguments, sync the corpus, print hit@5/10/20 with and without the filter."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--store", type=Path, default=None, help="store file (default: a fresh temporary one)")
    parser.add_argument("--no-rerank", action="store_true", help="plain BM25 order")
    parser.add_argument("--verbose", action="store_true", help="print the gold rank of every question")
    args = parser.parse_args()
    questions = load_questions(args.corpus / "eval" / "financebench_dev.jsonl")
    manifest = args.corpus / "eval" / "financebench_dev_docs.jsonl"
    pdf = args.corpus / "pdf"
    with tempfile.TemporaryDirectory() as tmp, Engine(args.store or Path(tmp) / "citewell.sqlite") as engine:
        engine.sync(pdf, manifests=[manifest])
        if args.no_rerank:
            engine.retriever = BM25Retriever(engine.store, engine.workspace_id, rerank=False)
        for label, use_filter in (("with document_name filter", True), ("without filter", False)):
            ranks: list[int | None] = []
            started = time.perf_counter()
            for q in questions:
                passages = engine.retrieve(q.text, k=max(KS), filters=q.query_filters(use_filter), corpus=pdf)
                ranks.append(first_gold_rank([passage_location(p) for p in passages], q.gold))
            elapsed = (time.perf_counter() - started) / len(questions)
            hits = "  ".join(f"hit@{k} {sum(1 for r in ranks if r and r <= k)}/{len(questions)}" for k in KS)
            print(f"{label}: {hits}  ({elapsed * 1000:.0f} ms per question)")
            if args.verbose:
                print("  gold ranks:", ranks)


if __name__ == "__main__":
    main()
