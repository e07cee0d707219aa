"""Query latency p50/p95 of ``Engine.ask`` (retrieve + answer + cite), warm, in process,
at about 10k and 100k chunks.

Run by hand (not part of the test suite)::

    python benchmarks/latency_bench.py                          # 10k and 100k, lexical
    python benchmarks/latency_bench.py --sizes 10000 --passes 5
    python benchmarks/latency_bench.py --work /tmp/lat --keep   # keep the stores for a rerun
    python benchmarks/latency_bench.py --work /tmp/lat --keep --sizes 100000 --modes dense,hybrid \
        --questions 10 --passes 1                               # the same 100k store, other modes
    python benchmarks/pg_copy_store.py /tmp/lat/citewell.sqlite postgresql://postgres@127.0.0.1:5433/lat
    python benchmarks/latency_bench.py --pg postgresql://postgres@127.0.0.1:5433/lat --modes lexical,dense,hybrid
                                                                # the same chunks on PostgreSQL

``--pg URL`` measures a PostgreSQL store instead, which ``benchmarks/pg_copy_store.py``
copied from a store this script grew (chunks and vectors complete: nothing is synced,
grown or embedded; the workspace is the store's first).

How the chunk sets are built (one store, grown in place):

1. ``Engine.sync`` of ``pdf/`` (with the FinanceBench manifest), ``posts/`` and
   ``transcripts/`` of the shared corpus: the real corpus (4,293 chunks on 2026-11-30).
2. Replicas: the texts of the PDF chunks are read back from the store, and for replica
   ``r`` each PDF's passages are written, in order and blank-line separated, to
   ``replica-r/<PDF stem>.txt`` in a temporary folder with small variations, so that no
   file or passage is byte-identical to another (citewell skips identical content): per
   passage, one number has its last digit changed, two adjacent words are swapped, and
   ``(copy r)`` is appended. These files are ingested with ``Engine.ingest`` (the text
   extractor merges short paragraphs and splits long ones: a full replica gave 3,488
   chunks for 3,389 passages; the last replica is partial) until the workspace holds at least the target number of chunks. The
   replicas share the corpus's vocabulary, so every question matches about as many
   near-duplicate passages per copy as in the real corpus: a hard case for BM25 pools.
3. Queries: the 39 FinanceBench dev questions (``eval/financebench_dev.jsonl``), asked
   over the whole workspace (no filter) and with ``--filter document_name=<doc>``.
   One warm-up pass (timed as "first asks": on SQLite only the first mode's are a
   process's first, on PostgreSQL every mode's, see :func:`measure_store`; with
   ``--warm-with FILE`` the questions of FILE are asked first, untimed, so that the first
   asks are new questions to a process that has answered others), then
   ``--passes`` timed passes of every question;
   ``Engine.ask(question, k=5, sync=False)`` per call (no chat, nothing stored), and
   ``Engine.retrieve`` alone timed the same way for the split.

Modes (``Engine.mode``): lexical (BM25 + reranker) always; dense and hybrid (BM25 and
dense fused by RRF) when the engine has a ``mode`` and an embedder is installed, else
reported as pending. For them every chunk needs a vector first: the real corpus chunks
are embedded with the engine's MiniLM embedder (batches of 64; minutes on 2 cores), and
each replica chunk gets the stored vector of the corpus passage its first paragraph was
made from, plus Gaussian noise (sigma 0.01 per dimension), re-normalised (a random real
corpus vector when its source is not found, e.g. a piece of a long paragraph that the
text extractor split): embedding 100k chunks would take half an hour or more.
So no timed question waits for embeddings.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from citewell import Engine

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
_NUMBER = re.compile(r"\d+")
#: varied replica paragraph -> the corpus passage it was made from (for the noisy vectors)
SOURCES: dict[str, str] = {}


def chunk_count(engine: Engine) -> int:
    """Chunks of ready resources in the workspace."""
    return sum(r.chunk_count or 0 for r in engine.resources(statuses=["ready"]))


def pdf_passages(store_path: Path) -> dict[str, list[str]]:
    """The PDF chunk texts of the store, per resource title, in chunk order."""
    conn = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT r.title, c.text FROM chunks c JOIN resources r ON r.id = c.resource_id "
                            "WHERE r.kind = 'pdf' AND r.status = 'ready' ORDER BY r.title, c.chunk_index").fetchall()
    finally:
        conn.close()
    out: dict[str, list[str]] = {}
    for title, text in rows:
        out.setdefault(title, []).append(text)
    return out


def vary(text: str, r: int, rng: random.Random) -> str:
    """A passage with small variations: one number's last digit changed, two adjacent
    words swapped, and ``(copy r)`` appended."""
    numbers = list(_NUMBER.finditer(text))
    if numbers:
        m = rng.choice(numbers)
        digit = str((int(m.group()[-1]) + 1 + rng.randrange(8)) % 10)
        text = text[:m.end() - 1] + digit + text[m.end():]
    words = text.split(" ")
    if len(words) > 3:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
        text = " ".join(words)
    return f"{text} (copy {r})"


def grow(engine: Engine, target: int, passages: dict[str, list[str]], folder: Path, start: int) -> int:
    """Ingest replicas until the workspace has ``target`` chunks; returns the next replica number."""
    r = start
    while (have := chunk_count(engine)) < target:
        rng = random.Random(r)
        replica = folder / f"replica-{r:03d}"
        replica.mkdir(parents=True)
        # a partial replica at the end limits the overshoot (assuming 0.7 chunks per passage; it is
        # about 1.03, so the 10k target lands at 11,098 chunks: kept so that reruns match RESULTS.md)
        budget = max(1, int((target - have) / 0.7)) + 50
        for title, texts in passages.items():
            if budget <= 0:
                break
            texts = texts[:budget]
            budget -= len(texts)
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", title)[:80] or "doc"
            varied = [vary(t, r, rng) for t in texts]
            SOURCES.update(zip(varied, texts))
            (replica / f"{name}.txt").write_text("\n\n".join(varied) + "\n", encoding="utf-8")
        started = time.perf_counter()
        report = engine.ingest([replica])
        print(f"  replica {r}: {len(report.outcomes)} files, {chunk_count(engine)} chunks "
              f"({time.perf_counter() - started:.1f} s)", flush=True)
        r += 1
    return r


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of values, linear interpolation (numpy's default)."""
    return float(np.percentile(values, 100 * q))


def fill_vectors(engine: Engine, store_path: Path, rng: np.random.Generator) -> tuple[int, int, float]:
    """Give every chunk a vector: real embeddings for corpus chunks, noisy copies for replicas.
    Returns (embedded for real, noisy copies, seconds spent embedding)."""
    embedder = engine.embedder
    conn = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
    try:  # the corpus has no .txt files: every .txt resource is a replica
        corpus_hashes = {h for (h,) in conn.execute(
            "SELECT c.text_hash FROM chunks c JOIN resources r ON r.id = c.resource_id "
            "WHERE r.file_name NOT LIKE '%.txt'")}
    finally:
        conn.close()
    todo = engine.store.texts_without_vectors(engine.workspace_id, embedder.model_id)
    real = [(h, t) for h, t in todo if h in corpus_hashes]
    started = time.perf_counter()
    for i in range(0, len(real), 64):
        part = real[i:i + 64]
        vecs = np.ascontiguousarray(embedder.embed([t for _, t in part]), dtype="<f4")
        engine.store.put_vectors(engine.workspace_id, embedder.model_id, embedder.dim,
                                 [(h, vecs[j].tobytes()) for j, (h, _) in enumerate(part)])
    embed_s = time.perf_counter() - started
    conn = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
    try:
        by_text = {text: np.frombuffer(blob, dtype="<f4") for text, blob in conn.execute(
            "SELECT c.text, v.vector FROM chunks c JOIN chunk_vectors v ON v.workspace_id = c.workspace_id "
            "AND v.text_hash = c.text_hash WHERE v.model = ?", (embedder.model_id,))}
    finally:
        conn.close()
    pool = list(by_text.values())
    todo = engine.store.texts_without_vectors(engine.workspace_id, embedder.model_id)
    rows = []
    for h, text in todo:
        first = text.split("\n\n")[0]
        base = by_text.get(SOURCES.get(first, ""))
        if base is None:
            base = pool[int(rng.integers(len(pool)))]
        v = base + rng.normal(0.0, 0.01, base.shape).astype("<f4")
        v /= np.linalg.norm(v)
        rows.append((h, v.astype("<f4").tobytes()))
        if len(rows) >= 5000:
            engine.store.put_vectors(engine.workspace_id, embedder.model_id, embedder.dim, rows)
            rows = []
    engine.store.put_vectors(engine.workspace_id, embedder.model_id, embedder.dim, rows)
    return len(real), len(todo), embed_s


def dense_ready(engine: Engine) -> bool:
    """Whether this citewell has retrieval modes and an installed embedder."""
    return hasattr(engine, "mode") and getattr(engine, "embedder", None) is not None


def measure(engine: Engine, questions: list[dict], *, use_filter: bool, passes: int, mode: str,
            warm: list[dict] = ()) -> dict:
    """Warm-up pass, then ``passes`` timed passes of ask and of retrieve; latencies in ms.
    ``warm``: other questions asked first, untimed and without a filter, so that the
    warm-up pass ("first asks") times questions new to a process that has answered others."""
    if hasattr(engine, "mode"):
        engine.mode = mode
    extra: dict = {}

    def args(q: dict) -> dict:
        return {"filters": [f"document_name={q['doc_name']}"]} if use_filter else {}

    for q in warm:
        engine.ask(q["question"], k=5, sync=False)

    first_ms: list[float] = []
    for q in questions:  # warm-up (caches, page cache, first-call imports), timed as the first asks
        started = time.perf_counter()
        engine.ask(q["question"], k=5, sync=False, **args(q), **extra)
        first_ms.append((time.perf_counter() - started) * 1000)
    ask_ms: list[float] = []
    retrieve_ms: list[float] = []
    for _ in range(passes):
        for q in questions:
            started = time.perf_counter()
            engine.ask(q["question"], k=5, sync=False, **args(q), **extra)
            ask_ms.append((time.perf_counter() - started) * 1000)
    retrieve_extra: dict = {}
    for _ in range(passes):
        for q in questions:
            started = time.perf_counter()
            engine.retrieve(q["question"], k=5, **args(q), **retrieve_extra)
            retrieve_ms.append((time.perf_counter() - started) * 1000)
    return {"n": len(ask_ms), "ask_p50": pct(ask_ms, 0.5), "ask_p95": pct(ask_ms, 0.95),
            "ask_max": max(ask_ms), "retrieve_p50": pct(retrieve_ms, 0.5), "retrieve_p95": pct(retrieve_ms, 0.95),
            "first_p50": pct(first_ms, 0.5), "first_p95": pct(first_ms, 0.95)}


def report(n: int, mode: str, rows: list[dict], results: list[dict]) -> None:
    """Print and keep the figures of ``rows`` (no filter, document filter)."""
    for use_filter, row in zip((False, True), rows):
        row.update(chunks=n, mode=mode, filter=use_filter)
        results.append(row)
        print(f"{n} chunks, {mode}, {'document_name filter' if use_filter else 'no filter'}: "
              f"ask p50 {row['ask_p50']:.0f} ms, p95 {row['ask_p95']:.0f} ms, "
              f"max {row['ask_max']:.0f} ms (n={row['n']}); retrieve alone p50 "
              f"{row['retrieve_p50']:.0f} ms, p95 {row['retrieve_p95']:.0f} ms; first asks p50 "
              f"{row['first_p50']:.0f} ms, p95 {row['first_p95']:.0f} ms", flush=True)


def measure_store(url: str, modes: list[str], questions: list[dict], *, passes: int, results: list[dict],
                  warm: list[dict] = ()) -> None:
    """Measure every mode on the PostgreSQL store at ``url`` (its first workspace), each
    mode and filter with a new store object, whose caches start empty: its warm-up asks
    are the first asks of a process (the database's own buffers are as earlier runs left them)."""
    from citewell.store.postgres import PostgresStore

    for mode in modes:
        rows = []
        for use_filter in (False, True):
            store = PostgresStore(url)  # a new store object per run: its caches start empty
            name = store.workspace_name(store.workspace_ids()[0])
            with Engine(store, workspace=name) as engine:
                n = chunk_count(engine)
                if not results and not rows:
                    print(f"PostgreSQL store {store.location}: {n} chunks", flush=True)
                rows.append(measure(engine, questions, use_filter=use_filter, passes=passes, mode=mode, warm=warm))
        report(n, mode, rows, results)


def main() -> None:
    """Parse arguments, build the chunk sets, print p50/p95 per size, mode and filter."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts, ascending")
    parser.add_argument("--passes", type=int, default=3, help="timed passes over the 39 questions")
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions (slow modes)")
    parser.add_argument("--modes", default="lexical", help="comma-separated: lexical,dense,hybrid")
    parser.add_argument("--work", type=Path, default=None, help="folder for the store and replicas (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep --work afterwards")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    parser.add_argument("--pg", default=None, help="measure this PostgreSQL store (copied by pg_copy_store.py)")
    parser.add_argument("--warm-with", type=Path, default=None,
                        help="a JSONL of other questions asked first (untimed): first asks are then new questions "
                             "to a warm process (e.g. ../shared/financebench-dev2/financebench_dev2.jsonl)")
    args = parser.parse_args()
    warm = [json.loads(line) for line in args.warm_with.read_text().splitlines() if line.strip()] \
        if args.warm_with else []
    sizes = [int(s) for s in args.sizes.split(",")]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    questions = [json.loads(line) for line in (args.corpus / "eval" / "financebench_dev.jsonl").read_text().splitlines()
                 if line.strip()][:args.questions]
    work = args.work or Path(tempfile.mkdtemp(prefix="citewell-latency-"))
    work.mkdir(parents=True, exist_ok=True)
    store = work / "citewell.sqlite"
    results: list[dict] = []
    rng = np.random.default_rng(7)
    if args.pg:
        measure_store(args.pg, modes, questions, passes=args.passes, results=results, warm=warm)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        return
    try:
        with Engine(store) as engine:
            started = time.perf_counter()
            engine.sync(args.corpus / "pdf", manifests=[args.corpus / "eval" / "financebench_dev_docs.jsonl"])
            for sub in ("posts", "transcripts"):
                if (args.corpus / sub).is_dir():
                    engine.sync(args.corpus / sub)
            print(f"corpus: {chunk_count(engine)} chunks ({time.perf_counter() - started:.1f} s)", flush=True)
            passages = pdf_passages(store)
            if args.work is not None and (work / "replicas").is_dir():  # a rerun: rebuild the source map
                for r_dir in (work / "replicas").glob("replica-*"):
                    r = int(r_dir.name.split("-")[1])
                    rng_r = random.Random(r)
                    for title, texts in passages.items():
                        if not (r_dir / (re.sub(r"[^A-Za-z0-9_.-]+", "_", title)[:80] or "doc")).with_suffix(
                                ".txt").exists():
                            break
                        SOURCES.update((vary(t, r, rng_r), t) for t in texts)
            next_replica = 1 + max((int(p.name.split("-")[1]) for p in (work / "replicas").glob("replica-*")),
                                   default=0)
            for size in sizes:
                next_replica = grow(engine, size, passages, work / "replicas", next_replica)
                n = chunk_count(engine)
                filled = False
                for mode in modes:
                    if mode != "lexical" and not dense_ready(engine):
                        print(f"{n} chunks, {mode}: pending (no Engine.mode or no embedder installed)")
                        results.append({"chunks": n, "mode": mode, "pending": True})
                        continue
                    try:
                        if mode != "lexical" and not filled:
                            real, noisy, embed_s = fill_vectors(engine, store, rng)
                            print(f"  vectors: {real} corpus texts embedded ({embed_s:.0f} s), {noisy} noisy "
                                  "copies", flush=True)
                            filled = True
                        rows = [measure(engine, questions, use_filter=use_filter, passes=args.passes, mode=mode,
                                        warm=warm) for use_filter in (False, True)]
                    except Exception as exc:  # noqa: BLE001 - work in progress elsewhere must not lose the rest
                        print(f"{n} chunks, {mode}: failed ({type(exc).__name__}: {exc})", flush=True)
                        results.append({"chunks": n, "mode": mode, "error": str(exc)})
                        continue
                    report(n, mode, rows, results)
    finally:
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
