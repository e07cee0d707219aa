"""Peak memory of ``citewell serve`` while it extracts and embeds a 50 MB posts file (issue 14).

Run by hand (not part of the test suite)::

    python benchmarks/embed_memory.py                     # until every passage is embedded
    python benchmarks/embed_memory.py --minutes 10        # stop measuring after 10 minutes
    python benchmarks/embed_memory.py --megabytes 50 --shape one   # one 50 MB post (issue 14's attack)
    python benchmarks/embed_memory.py --shape many        # 50 MB of ordinary posts (about 100k)

A fresh store and ``citewell serve --mode hybrid`` (uploads are embedded in the background
once extracted); the posts file is uploaded over HTTP. Every 0.2 s the server process's
resident memory (``VmRSS``) is sampled; at the end its peak (``VmHWM``, the kernel's high
water mark of the whole run: start, upload, extraction bookkeeping, commit, embedding) is
printed with the number of passages embedded. Extraction itself runs in a child process
capped at ``CITEWELL_EXTRACT_MEMORY_MB`` (its own memory is not the server's, and is
printed apart from ``/proc/<child>/status`` while it runs). Target: the server under 1.5 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fairness import WORDS, free_port  # noqa: E402 - the same posts generator and helpers


def status_kb(pid: int, field: str) -> int:
    """A ``/proc/<pid>/status`` memory field in kB (0 when the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (an extraction child is started by a worker thread,
    so it is not in the main thread's ``children`` list)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def posts_file(path: Path, megabytes: int, shape: str) -> None:
    rng = random.Random(50)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))).capitalize() + ". "

    with path.open("w", encoding="utf-8") as fh:
        if shape == "one":
            text = []
            size = 0
            while size < megabytes * 1_000_000:
                s = sentence()
                text.append(s)
                size += len(s)
            fh.write(json.dumps({"source": "reddit", "id": "t3_huge", "text": "".join(text)}) + "\n")
            return
        written, n = 0, 0
        while written < megabytes * 1_000_000:
            line = json.dumps({"source": "reddit", "id": f"t3_{n}", "text": "".join(sentence()
                                                                                 for _ in range(rng.randint(1, 6)))})
            fh.write(line + "\n")
            written += len(line) + 1
            n += 1


def coverage(store: Path) -> tuple[int, int]:
    """(passages with a vector, passages) of the store's one workspace, read without the model."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=30) as conn:
        total = conn.execute("SELECT count(*) FROM chunks c JOIN resources r ON r.id = c.resource_id "
                             "WHERE r.status = 'ready' AND c.version IS r.extractor_version").fetchone()[0]
        done = conn.execute("SELECT count(*) FROM chunks c JOIN resources r ON r.id = c.resource_id JOIN "
                            "chunk_vectors v ON v.workspace_id = c.workspace_id AND v.text_hash = c.text_hash "
                            "WHERE r.status = 'ready' AND c.version IS r.extractor_version").fetchone()[0]
    return done, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--shape", choices=["one", "many"], default="one")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long (default: until done)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="citewell-embed-memory-"))
    store = work / "citewell.sqlite"
    env = {**os.environ, "CITEWELL_RETRIEVAL_MODE": "hybrid"}
    key = subprocess.run([sys.executable, "-m", "citewell", "keys", "create", "--workspace", "m", "--store",
                          str(store)], capture_output=True, text=True, env=env, check=True).stdout.split()[-1]
    data = work / "posts.jsonl"
    posts_file(data, args.megabytes, args.shape)
    port = free_port()
    log = open(work / "server.log", "wb")  # noqa: SIM115
    server = subprocess.Popen([sys.executable, "-m", "citewell", "serve", "--store", str(store), "--port",
                               str(port), "--mode", "hybrid"], stdout=log, stderr=log, env=env)
    base = f"http://127.0.0.1:{port}"
    samples: list[int] = []
    child_peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(status_kb(server.pid, "VmRSS"))
            for child in children(server.pid):
                child_peak[0] = max(child_peak[0], status_kb(child, "VmHWM"))
            time.sleep(0.2)

    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        threading.Thread(target=sample, daemon=True).start()
        print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; server up, "
              f"RSS {status_kb(server.pid, 'VmRSS') / 1024:.0f} MB", flush=True)
        t0 = time.monotonic()
        with httpx.Client(base_url=base, headers={"X-API-KEY": key}, timeout=600) as client:
            with data.open("rb") as fh:
                r = client.post("/v1/resources", files={"file": ("posts.jsonl", fh, "application/jsonl")})
            r.raise_for_status()
            rid = r.json()["data"]["resource"]["id"]
            while (res := client.get(f"/v1/resources/{rid}").json()["data"]["resource"])["status"] == "processing":
                time.sleep(0.5)
        print(f"{data.stat().st_size / 1e6:.1f} MB uploaded and {res['status']} ({res['chunk_count']} passages) "
              f"in {time.monotonic() - t0:.0f} s; server peak so far {status_kb(server.pid, 'VmHWM') / 1024:.0f} MB, "
              f"extraction child peak {child_peak[0] / 1024:.0f} MB", flush=True)
        deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
        last = time.monotonic()
        while True:
            done, total = coverage(store)
            if done >= total or (deadline is not None and time.monotonic() > deadline):
                break
            if time.monotonic() - last > 60:
                print(f"  {done}/{total} embedded, server RSS {status_kb(server.pid, 'VmRSS') / 1024:.0f} MB "
                      f"(peak {status_kb(server.pid, 'VmHWM') / 1024:.0f} MB)", flush=True)
                last = time.monotonic()
            time.sleep(2)
        peak = status_kb(server.pid, "VmHWM")
        print(f"embedded {done}/{total} passages in {time.monotonic() - t0:.0f} s since the upload; "
              f"server peak RSS {peak / 1024:.0f} MB (sampled max {max(samples) / 1024:.0f} MB); "
              f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    finally:
        stop.set()
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
