"""PDF ingestion speed: citewell end to end vs raw pypdfium2 vs a pdfplumber-based ingester.

Run by hand (not part of the test suite)::

    python benchmarks/ingest_bench.py                 # all PDFs of ../shared/corpus/pdf, 3 runs
    python benchmarks/ingest_bench.py --runs 5 --skip-pdfplumber

On the same PDFs (every ``*.pdf`` of ``--pdf``, read from disk in each run), each run
times, in this order:

- **raw pypdfium2**: ``PdfDocument(bytes)``, then per page ``get_textpage()`` and
  ``get_text_range()`` (the text only: no boxes, no layout, no chunks, nothing stored);
- **citewell**: ``Engine(<fresh store>).ingest(files)`` in process, i.e. per file: read
  the bytes, SHA-256, the ``pdf-3`` extractor (pdfium text page, character boxes, line
  and column layout, reading order, running headers and footers, hyphen joining,
  chunking, display-frame boxes per chunk), a copy of the original bytes into the blob
  folder, and one SQLite transaction writing the resource, its chunks and their FTS5
  search rows and the file record. Opening the fresh store (schema creation) is timed
  apart and not included;
- **citewell extractor only** (for the split, not a target): ``extract_pdf(bytes)`` per
  file, i.e. the above without hashing, blob copy and store writes;
- **pdfplumber ingester**: in its own virtual environment (made by this script under
  ``/tmp/citewell-bench-pdfplumber``; pdfplumber is never a citewell dependency), a child
  process that per file opens it with ``pdfplumber.open``, per page calls
  ``extract_text()``, chunks the page text into paragraphs (blank-line split, then lines
  packed into chunks of at most 200 words), and writes the chunks into an SQLite FTS5
  table in one transaction per file (the same kind of store write citewell does). The
  child times its own loop, so interpreter start-up and imports are excluded.

Pages/s = total pages / median time over ``--runs`` runs; the ratios compare those
medians (targets from issue 7: citewell ≥ 0.3× raw, ≥ 5× pdfplumber).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
PDFPLUMBER_VENV = Path("/tmp/citewell-bench-pdfplumber")
PDFPLUMBER_VERSION = "0.11.10"

PLUMBER_CHILD = textwrap.dedent('''
    import json, re, sqlite3, sys, time
    import pdfplumber

    MAX_WORDS = 200

    def chunks(text):
        out = []
        for para in re.split(r"\\n\\s*\\n", text):
            words, lines = 0, []
            for line in para.splitlines():
                n = len(line.split())
                if lines and words + n > MAX_WORDS:
                    out.append("\\n".join(lines))
                    words, lines = 0, []
                if n:
                    lines.append(line)
                    words += n
            if lines:
                out.append("\\n".join(lines))
        return out

    files, db = json.loads(sys.argv[1]), sys.argv[2]
    conn = sqlite3.connect(db)
    conn.execute("CREATE VIRTUAL TABLE chunks USING fts5(file, page UNINDEXED, text)")
    pages = n_chunks = 0
    started = time.perf_counter()
    for path in files:
        rows = []
        with pdfplumber.open(path) as pdf:
            for number, page in enumerate(pdf.pages, 1):
                text = page.extract_text() or ""
                rows.extend((path, number, c) for c in chunks(text))
                page.close()  # drop the page's cached objects, as a long-running ingester must
                pages += 1
        with conn:
            conn.executemany("INSERT INTO chunks (file, page, text) VALUES (?, ?, ?)", rows)
        n_chunks += len(rows)
    elapsed = time.perf_counter() - started
    print(json.dumps({"seconds": elapsed, "pages": pages, "chunks": n_chunks}))
''')


def plumber_python() -> Path:
    """The pdfplumber venv's interpreter, made (venv + pip install) when missing."""
    python = PDFPLUMBER_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {PDFPLUMBER_VENV} with pdfplumber {PDFPLUMBER_VERSION} …", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(PDFPLUMBER_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"pdfplumber=={PDFPLUMBER_VERSION}"], check=True)
    return python


def run_raw(files: list[Path]) -> tuple[float, int]:
    """Raw pypdfium2 text extraction; returns (seconds, pages)."""
    import pypdfium2 as pdfium

    pages = 0
    started = time.perf_counter()
    for path in files:
        doc = pdfium.PdfDocument(path.read_bytes())
        try:
            for index in range(len(doc)):
                page = doc[index]
                textpage = page.get_textpage()
                textpage.get_text_range()
                textpage.close()
                page.close()
                pages += 1
        finally:
            doc.close()
    return time.perf_counter() - started, pages


def run_citewell(files: list[Path], tmp: Path) -> tuple[float, int, int, float]:
    """citewell's ``Engine.ingest`` into a fresh store; returns (seconds, pages, chunks, open seconds)."""
    from citewell import Engine

    opened = time.perf_counter()
    engine = Engine(tmp / "citewell.sqlite")
    open_s = time.perf_counter() - opened
    try:
        started = time.perf_counter()
        report = engine.ingest(files)
        elapsed = time.perf_counter() - started
        if report.failed:
            raise SystemExit(f"citewell failed on {[o.path for o in report.failed]}")
        resources = engine.resources()
        pages = sum(int(r.metadata.get("page_count", 0)) for r in resources)
        chunks = sum(r.chunk_count or 0 for r in resources)
    finally:
        engine.close()
    return elapsed, pages, chunks, open_s


def run_extractor(files: list[Path]) -> tuple[float, int, int]:
    """citewell's PDF extractor alone (no store); returns (seconds, pages, chunks)."""
    from citewell.ingest.pdf import extract_pdf

    pages = chunks = 0
    started = time.perf_counter()
    for path in files:
        extraction = extract_pdf(path.read_bytes(), name=path.name)
        pages += int(extraction.metadata["page_count"])
        chunks += len(extraction.chunks)
    return time.perf_counter() - started, pages, chunks


def run_plumber(python: Path, files: list[Path], tmp: Path) -> tuple[float, int, int]:
    """The pdfplumber ingester in its venv; returns (seconds, pages, chunks)."""
    proc = subprocess.run([str(python), "-c", PLUMBER_CHILD, json.dumps([str(f) for f in files]),
                           str(tmp / "plumber.sqlite")], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"pdfplumber ingester failed: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["seconds"], out["pages"], out["chunks"]


def main() -> None:
    """Parse arguments, time the three ingesters ``--runs`` times, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", type=Path, default=CORPUS / "pdf", help="folder of PDFs (default: shared corpus)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-pdfplumber", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args()
    files = sorted(args.pdf.glob("*.pdf"))
    if not files:
        raise SystemExit(f"no PDFs in {args.pdf}")
    python = None if args.skip_pdfplumber else plumber_python()
    times: dict[str, list[float]] = {"raw": [], "citewell": [], "extractor": [], "pdfplumber": []}
    pages: dict[str, int] = {}
    chunks: dict[str, int] = {}
    opens: list[float] = []
    size = sum(f.stat().st_size for f in files)
    print(f"{len(files)} PDFs, {size / 2**20:.1f} MiB, {args.runs} runs, {os.cpu_count()} CPUs")
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="citewell-ingest-bench-") as tmp_name:
            tmp = Path(tmp_name)
            seconds, pages["raw"] = run_raw(files)
            times["raw"].append(seconds)
            seconds, pages["citewell"], chunks["citewell"], open_s = run_citewell(files, tmp)
            times["citewell"].append(seconds)
            opens.append(open_s)
            seconds, pages["extractor"], chunks["extractor"] = run_extractor(files)
            times["extractor"].append(seconds)
            if python is not None:
                seconds, pages["pdfplumber"], chunks["pdfplumber"] = run_plumber(python, files, tmp)
                times["pdfplumber"].append(seconds)
        print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items() if v), flush=True)
    rate = {k: pages[k] / statistics.median(v) for k, v in times.items() if v}
    print()
    print(f"{'ingester':<12} {'pages':>6} {'chunks':>7} {'median s':>9} {'runs (s)':<26} {'pages/s':>8}")
    for k, v in times.items():
        if not v:
            continue
        print(f"{k:<12} {pages[k]:>6} {chunks.get(k, '-'):>7} {statistics.median(v):>9.2f} "
              f"{' '.join(f'{x:.2f}' for x in v):<26} {rate[k]:>8.1f}")
    print(f"(citewell store open, not included: median {statistics.median(opens) * 1000:.0f} ms)")
    print()
    print(f"citewell / raw pypdfium2: {rate['citewell'] / rate['raw']:.3f}x  (target >= 0.3x)")
    if "pdfplumber" in rate:
        print(f"citewell / pdfplumber:    {rate['citewell'] / rate['pdfplumber']:.2f}x  (target >= 5x)")
    if args.json:
        args.json.write_text(json.dumps({"times": times, "pages": pages, "chunks": chunks, "pages_per_s": rate,
                                         "store_open_s": opens}, indent=1))


if __name__ == "__main__":
    main()
