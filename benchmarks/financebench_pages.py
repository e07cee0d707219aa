"""Evidence-page hit@5 of ``citewell ask --json`` on the FinanceBench dev questions.

For each of the 39 questions of ``eval/financebench_dev.jsonl`` this runs the real CLI
over ``pdf/`` of the shared corpus (with the FinanceBench document manifest), once with
``--filter document_name=<doc>`` and once without, and counts a hit when a reference
numbered 1–5 in the answer lies on a gold evidence page (``page_number_1based``) of the
gold document (:func:`citewell.eval.metrics.score_answer`; questions read by
:func:`citewell.eval.load_questions`, as ``citewell eval`` does). It prints both figures
and, with ``--verbose``, every miss.

Run by hand (not part of the test suite)::

    python benchmarks/financebench_pages.py            # fresh temporary store
    python benchmarks/financebench_pages.py --store /tmp/fb.sqlite --verbose
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from citewell.eval import GoldItem, load_questions, reference_location, score_answer
from citewell.models import Message

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


def ask(question: str, *, store: Path, corpus: Path, manifest: Path, doc: str | None, k: int) -> dict:
    """Run ``citewell ask --json`` and return the Message as a dict."""
    cmd = [sys.executable, "-m", "citewell", "ask", question, "--json", "--corpus", str(corpus),
           "--manifest", str(manifest), "--store", str(store), "-k", str(k)]
    if doc:
        cmd += ["--filter", f"document_name={doc}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"citewell ask failed ({proc.returncode}): {proc.stderr}")
    return json.loads(proc.stdout)


def hit(message: dict, gold: list[GoldItem]) -> bool:
    """True when a reference numbered 1–5 is on a gold page of the gold document (the
    answer-level evidence hit of :mod:`citewell.eval.metrics`)."""
    located = {ref["citation"]: reference_location(ref.get("resource_title"), None, ref.get("metadata"))
               for ref in message["references"] if ref.get("citation")}
    return score_answer(Message.model_validate(message), gold, located).evidence_hit


def main() -> None:
    """Parse arguments, run every question twice, print hit@5 with and without the filter."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--store", type=Path, default=None, help="store file (default: a fresh temporary one)")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    questions = load_questions(args.corpus / "eval" / "financebench_dev.jsonl")
    manifest = args.corpus / "eval" / "financebench_dev_docs.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or Path(tmp) / "citewell.sqlite"
        started = time.perf_counter()
        ask("warm-up: sync the corpus", store=store, corpus=args.corpus / "pdf", manifest=manifest, doc=None, k=args.k)
        print(f"sync of {args.corpus / 'pdf'}: {time.perf_counter() - started:.1f} s")
        for label, use_filter in (("with document_name filter", True), ("without filter", False)):
            hits, started = 0, time.perf_counter()
            for q in questions:
                message = ask(q.text, store=store, corpus=args.corpus / "pdf", manifest=manifest,
                              doc=q.document if use_filter else None, k=args.k)
                ok = hit(message, q.gold)
                hits += ok
                if args.verbose and not ok:
                    cited = [(r.get("resource_title"), (r.get("metadata") or {}).get("page"))
                             for r in message["references"] if r.get("citation")]
                    pages = sorted(g.page for g in q.gold if g.page is not None)
                    print(f"  miss {q.id} gold {q.document} p{pages} cited {cited}")
            elapsed = time.perf_counter() - started
            print(f"evidence-page hit@5 {label}: {hits}/{len(questions)} = {hits / len(questions):.3f} "
                  f"({elapsed / len(questions):.2f} s per question)")


if __name__ == "__main__":
    main()
