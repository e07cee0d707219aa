"""Fairness between workspaces on one server (issue 14): does a workspace that floods the
server delay another workspace's answers?

Run by hand (not part of the test suite)::

    python benchmarks/fairness.py                       # hybrid (the default mode), ~15 min the first time
    python benchmarks/fairness.py --mode lexical        # BM25 only
    python benchmarks/fairness.py --work /tmp/fair      # keep the stores: a rerun skips the set-up

Set-up (kept in ``--work``, reused by a rerun):

- workspace ``bench-b``: the shared corpus (``../shared/corpus``: PDFs with the FinanceBench
  manifest, transcripts, posts), ingested with ``citewell ingest`` (``--wait`` in hybrid
  mode: every passage embedded before the timing, as on a server that has been running);
- workspace ``bench-a``: the attack of issue 14 — a posts file with one 52 MB post (random
  sentences of a small vocabulary, so that every question of A matches thousands of its
  passages) and a short one, ingested with ``citewell ingest`` (not embedded: the server
  embeds them in the background, and A's hybrid questions spend their embedding budget).

Then ``citewell serve`` runs on the store (``--mode``) and two phases are measured:

1. **idle**: B alone asks ``--questions`` ordinary questions (FinanceBench dev questions,
   ``POST /v1/sessions/{id}/messages``, which answers when done: the latency a user sees),
   one after another, then uploads one small file and waits until it is ``ready``;
2. **loaded**: A runs ``--heavy`` clients that ask questions about its big post without a
   pause, and at the same time uploads ``--flood`` small text files as fast as it can;
   B does exactly what it did in phase 1.

Printed: the load average before each phase, B's ask latency p50/p95/max and its upload
time in both phases, and the ratios (target: loaded within 2x of idle, and an ask under
1 s at this scale). The box is shared: run it when the load average is low, and record
the load with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
WORDS = ("activision puts calls earnings revenue guidance squeeze options expiry shares market tendies "
         "hold bought sold rally dip merger microsoft deal price target analysts volume").split()
HEAVY_QUESTIONS = ["What are people saying about Activision puts?", "Why did the options squeeze the market?",
                   "What price target do analysts give for the Microsoft deal?",
                   "Who bought calls before earnings?"]


def load() -> str:
    """The load averages (1, 5, 15 min) as text."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def cli(*args: str, env: dict[str, str]) -> str:
    """Run ``citewell`` and return its stdout; raise on a failure other than exit 1 (a failed file)."""
    done = subprocess.run([sys.executable, "-m", "citewell", *args], capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1):
        raise SystemExit(f"citewell {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def big_posts_file(path: Path, megabytes: int) -> None:
    """A posts file with one post of ``megabytes`` MB of random sentences, and a short one."""
    rng = random.Random(14)
    parts: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))).capitalize() + ". "
        parts.append(sentence)
        size += len(sentence)
    rows = [{"source": "reddit", "id": "t3_huge", "text": "".join(parts), "created_at": "2022-01-20T00:00:00Z"},
            {"source": "reddit", "id": "t3_small", "text": "Activision puts printed today.",
             "created_at": "2022-01-21T00:00:00Z"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def setup(work: Path, mode: str, env: dict[str, str], megabytes: int) -> tuple[str, str]:
    """Build (or reuse) the store; the keys of workspaces a and b."""
    store = work / "citewell.sqlite"
    keys = work / "keys.json"
    if keys.is_file() and store.is_file():
        saved = json.loads(keys.read_text())
        if saved.get("mode") == mode or saved.get("mode") != "lexical":  # embedded stores serve every mode
            return saved["a"], saved["b"]
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    wait = ["--wait"] if mode != "lexical" else []
    for sub in ("pdf", "transcripts", "posts"):
        manifest = ["--manifest", str(CORPUS / "eval" / "financebench_dev_docs.jsonl")] if sub == "pdf" else []
        cli("ingest", str(CORPUS / sub), *manifest, "--store", str(store), "--workspace", "bench-b", env=env)
    if wait:
        cli("ingest", str(CORPUS / "posts"), "--store", str(store), "--workspace", "bench-b", *wait, env=env)
    print(f"workspace b: the shared corpus ingested{' and embedded' if wait else ''} in "
          f"{time.monotonic() - t0:.0f} s", flush=True)
    posts = work / "a" / "big-post.jsonl"
    posts.parent.mkdir(exist_ok=True)
    if not posts.is_file():
        big_posts_file(posts, megabytes)
    t0 = time.monotonic()
    cli("ingest", str(posts), "--store", str(store), "--workspace", "bench-a", env=env)
    print(f"workspace a: a {posts.stat().st_size / 1e6:.0f} MB posts file (one post) ingested in "
          f"{time.monotonic() - t0:.0f} s", flush=True)
    a = cli("keys", "create", "--workspace", "bench-a", "--store", str(store), env=env).strip().splitlines()[-1]
    b = cli("keys", "create", "--workspace", "bench-b", "--store", str(store), env=env).strip().splitlines()[-1]
    keys.write_text(json.dumps({"a": a, "b": b, "mode": mode}))
    return a, b


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(work: Path, mode: str, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = open(work / "server.log", "ab")  # noqa: SIM115 - the server's lifetime
    proc = subprocess.Popen([sys.executable, "-m", "citewell", "serve", "--store", str(work / "citewell.sqlite"),
                             "--port", str(port), "--mode", mode], stdout=log, stderr=log, env=env)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{base}/openapi.json", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("the server did not start (see server.log)")


def ask(client: httpx.Client, session: str, question: str) -> float:
    """Seconds for one session question (the answer is complete when it returns)."""
    t0 = time.monotonic()
    r = client.post(f"/v1/sessions/{session}/messages", json={"content": question}, timeout=600)
    r.raise_for_status()
    return time.monotonic() - t0


def upload_until_ready(client: httpx.Client, name: str, data: bytes) -> float:
    """Seconds from sending an upload to its resource being ``ready`` (polled every 50 ms)."""
    t0 = time.monotonic()
    r = client.post("/v1/resources", files={"file": (name, data, "text/plain")}, timeout=600)
    r.raise_for_status()
    rid = r.json()["data"]["resource"]["id"]
    while True:
        status = client.get(f"/v1/resources/{rid}", timeout=600).json()["data"]["resource"]["status"]
        if status != "processing":
            return time.monotonic() - t0
        time.sleep(0.05)


def phase_b(base: str, key: str, questions: list[str], tag: str) -> tuple[list[float], float]:
    """B's questions (one after another) and one upload: (ask latencies, upload seconds)."""
    with httpx.Client(base_url=base, headers={"X-API-KEY": key}) as client:
        session = client.post("/v1/sessions", json={"title": f"b {tag}"}).json()["data"]["session"]["id"]
        latencies = [ask(client, session, q) for q in questions]
        upload = upload_until_ready(client, f"b-{tag}-{time.time_ns()}.txt",
                                    f"Workspace b note {tag} {time.time_ns()}: the valve opens at ten bar.\n".encode())
    return latencies, upload


def attack(base: str, key: str, heavy: int, flood: int, stop: threading.Event, counts: dict[str, Any]) -> list:
    """Start workspace a's heavy askers and its upload flood; returns the threads."""
    def asker(n: int) -> None:
        with httpx.Client(base_url=base, headers={"X-API-KEY": key}) as client:
            session = client.post("/v1/sessions", json={"title": f"a {n}"}).json()["data"]["session"]["id"]
            i = n
            while not stop.is_set():
                counts["latencies"].append(ask(client, session, HEAVY_QUESTIONS[i % len(HEAVY_QUESTIONS)]))
                i += 1

    def flooder() -> None:
        with httpx.Client(base_url=base, headers={"X-API-KEY": key}) as client:
            for i in range(flood):
                if stop.is_set():
                    return
                data = f"Flood note {i} {time.time_ns()}: pumps run at {i} bar.\n".encode()
                client.post("/v1/resources", files={"file": (f"flood-{i}.txt", data, "text/plain")}, timeout=600)
                counts["uploads"] += 1

    threads = [threading.Thread(target=asker, args=(n,), daemon=True) for n in range(heavy)]
    threads.append(threading.Thread(target=flooder, daemon=True))
    for t in threads:
        t.start()
    return threads


def quantiles(values: list[float]) -> str:
    p50, p95 = np.percentile(values, [50, 95])
    return f"p50 {p50:.2f} s  p95 {p95:.2f} s  max {max(values):.2f} s  (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/citewell-fairness"))
    parser.add_argument("--mode", default="hybrid", choices=["lexical", "dense", "hybrid"])
    parser.add_argument("--questions", type=int, default=20, help="B's questions per phase")
    parser.add_argument("--heavy", type=int, default=4, help="A's concurrent askers")
    parser.add_argument("--flood", type=int, default=150, help="A's uploads")
    parser.add_argument("--megabytes", type=int, default=52, help="size of A's one big post")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of A's attack before B starts")
    args = parser.parse_args()
    env = {**os.environ, "CITEWELL_RETRIEVAL_MODE": args.mode}
    key_a, key_b = setup(args.work, args.mode, env, args.megabytes)
    rows = [json.loads(line) for line in (CORPUS / "eval" / "financebench_dev.jsonl").read_text().splitlines()]
    questions = [r["question"] for r in rows][:args.questions]
    proc, base = serve(args.work, args.mode, env)
    try:
        with httpx.Client(base_url=base, headers={"X-API-KEY": key_b}) as client:  # warm: model, caches
            session = client.post("/v1/sessions", json={"title": "warm"}).json()["data"]["session"]["id"]
            for q in questions[:3]:
                ask(client, session, q)
        print(f"\nmode {args.mode}; B: {len(questions)} FinanceBench dev questions and one upload per phase; "
              f"A: {args.heavy} heavy askers and {args.flood} uploads", flush=True)
        with httpx.Client(base_url=base, headers={"X-API-KEY": key_a}) as client:  # the big post, alone
            session = client.post("/v1/sessions", json={"title": "a alone"}).json()["data"]["session"]["id"]
            alone = [ask(client, session, q) for q in HEAVY_QUESTIONS]
        print(f"A alone: a question about the {args.megabytes} MB post: {quantiles(alone)}", flush=True)
        print(f"idle    load average {load()}", flush=True)
        idle, idle_upload = phase_b(base, key_b, questions, "idle")
        print(f"  B ask     {quantiles(idle)}\n  B upload  {idle_upload:.2f} s until ready", flush=True)
        stop, counts = threading.Event(), {"latencies": [], "uploads": 0}
        threads = attack(base, key_a, args.heavy, args.flood, stop, counts)
        time.sleep(args.warmup)
        print(f"loaded  load average {load()}", flush=True)
        loaded, loaded_upload = phase_b(base, key_b, questions, "loaded")
        stop.set()
        print(f"  B ask     {quantiles(loaded)}\n  B upload  {loaded_upload:.2f} s until ready", flush=True)
        heavy = counts["latencies"]
        print(f"  meanwhile A: {counts['uploads']} uploads sent; its questions about the big post "
              f"({len(heavy)} answered, each waiting its turn): {quantiles(heavy) if heavy else '-'}", flush=True)
        i50, i95 = np.percentile(idle, [50, 95])
        l50, l95 = np.percentile(loaded, [50, 95])
        print(f"ratio loaded/idle: ask p50 {l50 / i50:.2f}x, p95 {l95 / i95:.2f}x, upload "
              f"{loaded_upload / idle_upload:.2f}x", flush=True)
        for t in threads:
            t.join(timeout=120)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
