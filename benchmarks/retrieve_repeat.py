"""Per-question ``Engine.retrieve`` time with every cache warm: best of several passes.

Run by hand (not part of the test suite)::

    python benchmarks/retrieve_repeat.py --store postgresql://postgres@127.0.0.1:5433/pg742k \
        --modes lexical,hybrid --questions 6 --passes 3

Opens the store (a SQLite path or a PostgreSQL URL; its first workspace), asks the first
``--questions`` FinanceBench dev questions (``../shared/corpus/eval/financebench_dev.jsonl``)
once untimed per mode (term scores, masks and vectors cached), then ``--passes`` timed
passes, and prints per mode each question's best wall time, their mean and the mean of
the same passes' CPU time (the process's), in ms: a comparison of two versions of the
code on one store that the load of a shared machine disturbs less than a p50 does.
``--ask`` times the whole ``Engine.ask`` (retrieve, answer, cite) instead, and
``--filter-doc`` asks each question with its document filter (``document_name=``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
QUESTIONS = ROOT.parent / "shared" / "corpus" / "eval" / "financebench_dev.jsonl"


def dev_questions(limit: int) -> list[tuple[str, str]]:
    """The first ``limit`` questions of the FinanceBench dev set (:data:`QUESTIONS`), each
    with its document's name: ``(question, doc_name)``."""
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    return [(r["question"], r.get("doc_name", "")) for r in rows][:limit]


def main() -> None:
    """Parse arguments, time the questions, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="a SQLite store path or a postgresql:// URL")
    parser.add_argument("--modes", default="lexical,hybrid")
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--ask", action="store_true", help="time Engine.ask (retrieve, answer, cite)")
    parser.add_argument("--filter-doc", action="store_true", help="ask with each question's document filter")
    args = parser.parse_args()
    from citewell import Engine
    from citewell.store import open_store

    questions = dev_questions(args.questions)
    store = open_store(args.store)
    name = store.workspace_name(store.workspace_ids()[0])
    with Engine(store, workspace=name) as engine:
        for mode in (m.strip() for m in args.modes.split(",") if m.strip()):
            engine.mode = mode
            def run(q: str, doc: str) -> None:
                filters = [f"document_name={doc}"] if args.filter_doc and doc else None
                if args.ask:
                    engine.ask(q, k=5, sync=False, filters=filters)
                else:
                    engine.retrieve(q, k=5, filters=filters)

            for q, doc in questions:  # warm: every cache filled
                run(q, doc)
            best = [float("inf")] * len(questions)
            cpu = [float("inf")] * len(questions)
            for _ in range(args.passes):
                for i, (q, doc) in enumerate(questions):
                    wall, used = time.perf_counter(), time.process_time()
                    run(q, doc)
                    best[i] = min(best[i], (time.perf_counter() - wall) * 1000)
                    cpu[i] = min(cpu[i], (time.process_time() - used) * 1000)
            print(f"{mode}: mean {sum(best) / len(best):.0f} ms (CPU {sum(cpu) / len(cpu):.0f} ms); per question "
                  f"{[round(b) for b in best]}", flush=True)


if __name__ == "__main__":
    main()
