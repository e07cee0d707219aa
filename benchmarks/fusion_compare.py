"""Retrieval modes and hybrid fusions side by side on FinanceBench dev (``citewell eval`` figures).

For each configuration this runs :func:`citewell.eval.run_eval` in process over the 39
questions of ``eval/financebench_dev.jsonl``, with and without the ``document_name``
filter, on a store whose embeddings are complete (``citewell ingest … --wait``), and prints
retrieval hit@5/@10/@20 and the answer-level evidence-page hit@5 (a reference numbered
1–5 on a gold page). Configurations: lexical, dense, hybrid with the convex fusion at each
``--alphas`` value, hybrid with weighted RRF. Deterministic: the same store and code give
the same figures.

Run by hand (not part of the test suite)::

    citewell ingest ../shared/corpus/pdf --manifest ../shared/corpus/eval/financebench_dev_docs.jsonl \\
        --wait --store /tmp/fb/citewell.sqlite
    python benchmarks/fusion_compare.py --store /tmp/fb/citewell.sqlite [--alphas 0.5,0.7,0.9]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from citewell import Engine
from citewell.eval import load_questions, run_eval
from citewell.retrieve.hybrid import CONVEX_ALPHA, HybridRetriever

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


def figures(engine: Engine, questions: list, filter_doc: bool) -> str:
    """``hit@5/10/20 | answer hits`` of one run."""
    overall = run_eval(engine, questions, filter_doc=filter_doc)["overall"]
    hits = overall["retrieval"]["hits"]
    return (f"{hits['hit@5']:>2} / {hits['hit@10']:>2} / {hits['hit@20']:>2} | "
            f"{overall['answer']['evidence_hits']:>2}/{overall['questions']}")


def main() -> None:
    """Parse arguments, evaluate every configuration, print one row each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a store with the corpus and complete embeddings")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--alphas", default=str(CONVEX_ALPHA), help="convex-fusion lexical weights, comma-separated")
    args = parser.parse_args()
    questions = load_questions(args.corpus / "eval" / "financebench_dev.jsonl")
    configs: list[tuple[str, str, str, float | None]] = [("lexical", "lexical", "convex", None),
                                                          ("dense", "dense", "convex", None)]
    configs += [(f"hybrid convex alpha={a}", "hybrid", "convex", float(a)) for a in args.alphas.split(",")]
    configs.append(("hybrid rrf", "hybrid", "rrf", None))
    print(f"{'configuration':<28} {'filter: hit@5/10/20 | answer':<30} {'no filter: hit@5/10/20 | answer'}")
    for label, mode, fusion, alpha in configs:
        with Engine(args.store, mode=mode, fusion=fusion) as engine:
            embedded, total = engine.embedding_coverage()
            if mode != "lexical" and embedded < total:
                raise SystemExit(f"{total - embedded} passages have no vector: run citewell ingest … --wait first")
            retriever = engine.retriever
            if alpha is not None and isinstance(retriever, HybridRetriever):
                retriever.alpha = alpha
            row = [figures(engine, questions, True), figures(engine, questions, False)]
        print(f"{label:<28} {row[0]:<30} {row[1]}", flush=True)


if __name__ == "__main__":
    main()
