"""LLM answers on FinanceBench (both dev sets) next to the extractive generator's.

Runs every question of ``../shared/corpus/eval/financebench_dev.jsonl`` (over
``../shared/corpus/pdf``) and ``../shared/financebench-dev2/financebench_dev2.jsonl``
(over its ``pdf/``) twice on the same store and retrieval — once with the extractive
generator, once with the LLM generator at ``--base-url``/``--model`` — and prints, per
set and overall:

- evidence-page hit@5, figure-in-answer, citation recall: :mod:`citewell.eval` (the
  same definitions as ``citewell eval``; grounded coverage is its citation recall, the
  mean share of an answer's sentences with a supported citation);
- unsupported-citation rate: share of all ``[N]`` markers whose support verdict is not
  ``supported`` (unsupported, uncertain or unchecked);
- failed: answers that raised (``LLM_UNAVAILABLE`` …), counted as misses;
- seconds per answer (mean and median; the answer only, retrieval for scoring apart).

Run by hand (not in CI); the endpoint is any OpenAI-compatible server::

    python benchmarks/llm_answers.py --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b \\
        [--store /tmp/llm_bench/citewell.sqlite] [--k 5] [--mode lexical] [--limit N] [--json out.json]

Results and the exact commands are in benchmarks/RESULTS.md ("LLM answers").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SETS = (
    ("dev", SHARED / "corpus" / "eval" / "financebench_dev.jsonl", SHARED / "corpus" / "pdf"),
    ("dev2", SHARED / "financebench-dev2" / "financebench_dev2.jsonl", SHARED / "financebench-dev2" / "pdf"),
)


class _Timed:
    """The engine as :func:`citewell.eval.runner.evaluate_question` uses it, timing each
    ``ask`` and keeping its message (or its failure, answered as an empty message)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.seconds: list[float] = []
        self.messages: list[Any] = []
        self.failures: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def ask(self, *args: Any, **kwargs: Any) -> Any:
        from citewell.errors import CitewellError
        from citewell.models import Message

        started = time.perf_counter()
        try:
            message = self._engine.ask(*args, **kwargs)
        except CitewellError as exc:
            self.failures.append(exc.code)
            message = Message(text="", grounded=False)
        self.seconds.append(time.perf_counter() - started)
        self.messages.append(message)
        return message


def _unsupported_rate(messages: list[Any]) -> tuple[float | None, int]:
    """Share of ``[N]`` markers whose verdict is not ``supported``, and the marker count."""
    verdicts = [(occ.support or {}).get("verdict") for m in messages for r in m.references
                if r.citation is not None for occ in r.occurrences or []]
    if not verdicts:
        return None, 0
    return sum(v != "supported" for v in verdicts) / len(verdicts), len(verdicts)


def _row(name: str, report: dict[str, Any], timed: _Timed, lo: int, hi: int) -> dict[str, Any]:
    answer = report["answer"]
    rate, markers = _unsupported_rate(timed.messages[lo:hi])
    seconds = timed.seconds[lo:hi]
    return {"generator": name, "questions": report["questions"], "evidence_hit@5": answer["evidence_hit@5"],
            "figure_in_answer": answer["figure_in_answer"], "figure_in_answer_n": answer["figure_in_answer_n"],
            "grounded_coverage": answer["citation_recall"], "unsupported_citation_rate": rate, "markers": markers,
            "seconds_mean": statistics.fmean(seconds) if seconds else None,
            "seconds_median": statistics.median(seconds) if seconds else None}


def _fmt(value: Any, pct: bool = True) -> str:
    if value is None:
        return "-"
    return f"{100 * value:5.1f}%" if pct else f"{value:6.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--store", default="/tmp/llm_bench/citewell.sqlite")
    parser.add_argument("--k", type=int, default=5, help="passages the answer is written from")
    parser.add_argument("--mode", default="lexical", help="retrieval mode (lexical: no embedding of the corpora)")
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each set")
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument("--timeout", type=float, default=300.0, help="longest silence (s)")
    parser.add_argument("--answer-timeout", type=float, default=None,
                        help="whole answer (s); default: derived from the prompt's size and the measured speed")
    parser.add_argument("--json", dest="json_out", default=None, help="write every figure and answer here")
    args = parser.parse_args(argv)

    from citewell import Engine
    from citewell.eval import load_questions
    from citewell.eval.runner import EvalSet, run_sets
    from citewell.settings import LLMSettings

    llm = LLMSettings(base_url=args.base_url, model=args.model, api_key=args.api_key, max_tokens=args.max_tokens,
                      timeout=args.timeout, answer_timeout=args.answer_timeout, retries=1)
    Path(args.store).parent.mkdir(parents=True, exist_ok=True)
    sets: list[EvalSet] = []
    with Engine(args.store, llm=llm, mode=args.mode) as engine:
        for name, file, corpus in SETS:
            questions = load_questions(file)[:args.limit]
            manifest = file.with_name(f"{file.stem}_docs.jsonl")
            report = engine.sync(corpus, manifests=[manifest] if manifest.is_file() else [])
            print(f"{name}: {len(questions)} questions; corpus synced ({report.count('ingested')} new)",
                  file=sys.stderr)
            sets.append(EvalSet(name, questions, corpus, str(file)))
        rows: list[dict[str, Any]] = []
        answers: dict[str, list[dict[str, Any]]] = {}
        for writer in ("extractive", "llm"):
            engine.generator = engine.generator_for(writer)
            timed = _Timed(engine)

            def progress(done: int, total: int, record: dict[str, Any]) -> None:
                message = timed.messages[-1]
                generation = (message.model_extra or {}).get("generation") or {}
                print(f"[{writer} {done}/{total}] {record['id']}: {timed.seconds[-1]:.1f} s, evidence "
                      f"{'hit' if record['answer']['evidence_hit@5'] else 'miss'}, figure "
                      f"{record['answer']['figure_in_answer']}, written by {generation.get('generator')}, "
                      f"warnings {[w.code for w in message.warnings]}, usage {generation.get('usage')}: "
                      f"{' '.join(message.text.split())[:300]!r}", file=sys.stderr)

            result = run_sets(timed, sets, k=args.k, progress=progress)  # type: ignore[arg-type]
            lo = 0
            for summary in result["sets"]:
                hi = lo + summary["overall"]["questions"]
                rows.append({"set": summary["name"], **_row(writer, summary["overall"], timed, lo, hi)})
                lo = hi
            rows.append({"set": "all", **_row(writer, result["overall"], timed, 0, len(timed.messages)),
                         "failed": len(timed.failures), "failures": sorted(set(timed.failures))})
            answers[writer] = [{"id": r["id"], "set": r["set"], "seconds": s, "text": m.text,
                                "generation": (m.model_extra or {}).get("generation"),
                                "grounded_coverage": (m.model_extra or {}).get("grounded_coverage"),
                                "answer": r["answer"]}
                               for r, s, m in zip(result["questions"], timed.seconds, timed.messages)]
    header = (f"{'set':<5} {'generator':<10} {'n':>3}  {'hit@5':>6}  {'figure':>6}  {'grounded':>8}  "
              f"{'unsupp.':>7}  {'s/answer':>8}  {'median':>6}")
    print(f"model {args.model} at {args.base_url}; k={args.k}, retrieval {args.mode}")
    print(header)
    for r in rows:
        print(f"{r['set']:<5} {r['generator']:<10} {r['questions']:>3}  {_fmt(r['evidence_hit@5'])}  "
              f"{_fmt(r['figure_in_answer'])}  {_fmt(r['grounded_coverage']):>8}  "
              f"{_fmt(r['unsupported_citation_rate']):>7}  {_fmt(r['seconds_mean'], False):>8}  "
              f"{_fmt(r['seconds_median'], False)}" + (f"  failed {r['failed']} {r['failures']}"
                                                        if r.get("failed") else ""))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"rows": rows, "answers": answers}, indent=1, default=str),
                                       encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
