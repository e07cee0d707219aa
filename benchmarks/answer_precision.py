"""Answer precision of ``citewell ask --json``: how much of an answer is padding.

For hand-written questions over ``../shared/corpus`` plus a few small made-up notes files
(written by this script into a temporary copy of the corpus), each with the file(s) that
answer it and marker strings that the answering passage contains, this runs the real CLI
and reports

- **sentence precision**: the share of quoted sentences (answer parts with a source) whose
  passage is *relevant*: from one of the expected files and containing one of the
  question's relevance markers (by default its answer markers);
- **first from expected passage**: the share of answerable questions whose first quoted
  sentence comes from a passage of an expected file that contains an answer marker;
- **first sentence has the answer**: stricter, the first quoted sentence itself contains
  an answer marker;
- **abstained**: the share of the unanswerable questions (nothing in the corpus answers
  them; they share words with passages that do not) answered with "No passage in the
  sources …", no citation;
- sentences per answer (answerable questions).

Markers are compared after collapsing whitespace and straightening curly quotes.

Run by hand (not part of the test suite)::

    python benchmarks/answer_precision.py                 # fresh temporary store
    python benchmarks/answer_precision.py --store /tmp/ap.sqlite --verbose
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"

#: Made-up notes written into the corpus copy (name -> text). Their sentences share
#: single words (head, new, arrive, meet, book, password, rotation …) with many passages
#: of the shared corpus, which is what padding feeds on.
NOTES: dict[str, str] = {
    "notes/cafe_staff.md": """\
# Cafe staff notes

Maria Lopez is the head barista at the Elm Street cafe. She trains every new hire on the espresso machine.
The new oven arrives on Tuesday, March 14. The old oven will be collected the same day.
Opening hours stay 7am to 6pm on weekdays.
Milk is delivered by Greenfield Dairy every Monday and Thursday.
""",
    "notes/it_oncall.txt": """\
On-call and infrastructure notes (ops team)

Priya Nair is on call this week; Tom Becker takes over next Monday.
The VPN certificate expires on 30 June, so it must be renewed before then.
Backups run nightly at 02:00 UTC to the Frankfurt storage bucket.
The staging database password is rotated every 90 days.
""",
    "notes/moving_day.md": """\
# Moving day checklist

The movers arrive at 8am on Saturday with two trucks.
The piano needs a separate crew because it does not fit through the back door.
Internet installation at the new flat is booked for Monday afternoon.
""",
    "notes/book_club.txt": """\
Book club

The next book is The Overstory by Richard Powers.
We meet on the first Thursday of each month at Dana's house.
Bring snacks if it is your turn on the rota.
""",
}


@dataclass(frozen=True)
class Case:
    """One question: ``files`` are file-name prefixes of the answering files; ``answer``
    markers are in the passage that answers it (the expected passage); ``relevant``
    markers (default: ``answer``) make any passage of those files relevant. No files:
    nothing answers it (the answer should be the no-evidence text)."""

    question: str
    files: tuple[str, ...] = ()
    answer: tuple[str, ...] = ()
    relevant: tuple[str, ...] = ()

    @property
    def markers(self) -> tuple[str, ...]:
        return self.relevant or self.answer


CASES: tuple[Case, ...] = (
    # made-up notes
    Case("Who is the head barista?", ("cafe_staff",), ("Maria Lopez is the head barista",)),
    Case("When does the new oven arrive?", ("cafe_staff",), ("new oven arrives on Tuesday",)),
    Case("Who delivers the milk?", ("cafe_staff",), ("Greenfield Dairy",)),
    Case("Who is on call this week?", ("it_oncall",), ("Priya Nair is on call",)),
    Case("When does the VPN certificate expire?", ("it_oncall",), ("VPN certificate expires on 30 June",)),
    Case("How often is the staging database password rotated?", ("it_oncall",), ("rotated every 90 days",)),
    Case("What time do the movers arrive?", ("moving_day",), ("movers arrive at 8am",)),
    Case("What is the book club reading next?", ("book_club",), ("next book is The Overstory",)),
    Case("Where does the book club meet?", ("book_club",), ("meet on the first Thursday",)),
    # shared corpus: filings
    Case("What was 3M's capital expenditure in FY2022?", ("3M_2022_10K",),
         ("Purchases of property, plant and equipment (PP&E) $ (1,749)",
          "Purchases of property, plant and equipment (PP&E) (1,749)"),
         ("Purchases of property, plant and equipment", "capital expenditures")),
    Case("What was 3M's net cash provided by operating activities in 2022?", ("3M_2022_10K",),
         ("operating activities $ 5,591", "operating activities 5,591")),
    Case("What pre-tax gain did 3M record on the Food Safety split-off?", ("3M_2022_10K",),
         ("pre-tax gain of $2.7 billion",), ("Food Safety",)),
    Case("How large was 3M's pre-tax charge for the Combat Arms Earplugs litigation?", ("3M_2022_10K",),
         ("charge of approximately $1.2 billion",), ("Combat Arms",)),
    Case("What were Amcor's net sales in fiscal 2023?", ("AMCOR_2023",), ("Net sales $ 14,694", "14,694")),
    Case("What quarterly dividend did the Amcor board declare?", ("AMCOR_2023",),
         ("quarterly cash dividend of 12.25 cents per share", "quarterly cash dividend of $0.1225 per share"),
         ("dividend",)),
    Case("What quarterly dividend does Johnson & Johnson maintain?", ("JOHNSON_JOHNSON",),
         ("quarterly dividend of $1.19 per share",)),
    Case("By how much did Verizon increase its quarterly dividend in 2022?", ("VERIZON_2022_10K",),
         ("increased the quarterly dividend by 2.0%", "increased our quarterly dividend payment by 2.0% to $0.6525")),
    Case("How many employees did Verizon have at the end of 2022?", ("VERIZON_2022_10K",),
         ("approximately 117,100 employees",)),
    Case("How many Outlet Centers does Best Buy expect to open in fiscal 2024?", ("BESTBUY_2024Q2_10Q",),
         ("open approximately 5 Outlet Centers",)),
    Case("How much did MGM Resorts spend on share buybacks in 2022?", ("MGMRESORTS_2022Q4_EARNINGS",),
         ("Share buybacks of $2.8 billion",), ("buyback", "repurchase")),
    Case("For how much did MGM sell the operations of The Mirage?", ("MGMRESORTS_2022Q4_EARNINGS",),
         ("The Mirage for $1.1 billion",)),
    Case("How many new stores did Ulta Beauty open in fiscal 2022?", ("ULTABEAUTY_2023Q4_EARNINGS",),
         ("New store openings, net",), ("store openings", "new stores")),
    # shared corpus: papers, government documents, transcripts, posts
    Case("What is ALCE?", ("ALCE",), ("first benchmark for Automatic LLMs' Citation Evaluation",
                                      "We propose ALCE, the first", "We present ALCE, the first")),
    Case("How does the creativity paper define creativity?", ("arxiv-1601.03642",),
         ("the ability to use your",)),
    Case("By what date must the FAA receive comments on the proposed AD?", ("federal-register-2020-17221",),
         ("comments on this proposed AD by September 21", "on this proposed AD by September 21",
          "AD action by September 21")),
    Case("How has deep learning changed OCR?", ("twiml-409",), ("the advent of deep learning",),
         ("deep learning",)),
    Case("How many stocks does Alpha Vertex cover?", ("twiml-22",), ("we cover 30,000 stocks",), ("30,000 stocks",)),
    Case("What is the customer engineering team at San Bonova Systems responsible for?", ("twiml-492",),
         ("responsible for the technical customer journey",)),
    Case("Why did the Starbucks stock take a hit?", ("reddit_wallstreetbets",),
         ("the stock has taken a massive hit",), ("Starbucks",)),
    # nothing answers these (each shares words with passages that do not)
    Case("Who is the head chef?"),
    Case("When does the new dishwasher arrive?"),
    Case("What is the guest wifi password?"),
    Case("Where does the chess club meet?"),
)


def _norm(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(text.split())


def ask(question: str, *, store: Path, corpus: Path, manifest: Path | None) -> dict:
    """Run ``citewell ask --json`` and return the Message as a dict."""
    cmd = [sys.executable, "-m", "citewell", "ask", question, "--json", "--corpus", str(corpus), "--store", str(store)]
    if manifest is not None:
        cmd += ["--manifest", str(manifest)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"citewell ask failed ({proc.returncode}): {proc.stderr}")
    return json.loads(proc.stdout)


def _sentences(message: dict) -> list[tuple[str, dict]]:
    """(sentence text, reference of its passage) for each answer part with a source."""
    refs = {r["chunk_id"]: r for r in message["references"] if r.get("chunk_id")}
    out = []
    for part in message["parts"]:
        source = part.get("source") or next(iter(part.get("sources") or []), None)
        if source and source.get("chunk_id") in refs:
            out.append((part["text"], refs[source["chunk_id"]]))
    return out


def _from(ref: dict, case: Case, markers: tuple[str, ...]) -> bool:
    name = ref.get("file_name") or ref.get("resource_title") or ""
    text = _norm(ref.get("text") or "")
    return name.startswith(case.files) and any(_norm(m) in text for m in markers)


def make_corpus(shared: Path, dest: Path) -> Path:
    """Copy ``pdf/``, ``posts/`` and ``transcripts/`` of the shared corpus and write NOTES."""
    for sub in ("pdf", "posts", "transcripts"):
        shutil.copytree(shared / sub, dest / sub)
    for name, text in NOTES.items():
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return dest


def main() -> None:
    """Parse arguments, ask every question once, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the shared corpus (default ../shared/corpus)")
    parser.add_argument("--store", type=Path, default=None, help="store file (default: a fresh temporary one)")
    parser.add_argument("--verbose", action="store_true", help="print every answer and its verdicts")
    args = parser.parse_args()
    manifest = args.corpus / "eval" / "financebench_dev_docs.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        corpus = make_corpus(args.corpus, Path(tmp) / "corpus")
        store = args.store or Path(tmp) / "citewell.sqlite"
        started = time.perf_counter()
        ask("warm-up: sync the corpus", store=store, corpus=corpus, manifest=manifest if manifest.is_file() else None)
        print(f"sync of the corpus copy ({len(NOTES)} notes files added): {time.perf_counter() - started:.1f} s")
        n_sent = n_rel = n_first = n_first_has = n_answerable = n_abstain = n_unanswerable = 0
        started = time.perf_counter()
        for case in CASES:
            message = ask(case.question, store=store, corpus=corpus, manifest=None)
            sentences = _sentences(message)
            if not case.files:
                n_unanswerable += 1
                abstained = not sentences
                n_abstain += abstained
                if args.verbose:
                    print(f"\n[{'abstain' if abstained else 'ANSWERED'}] {case.question}\n  {message['text']}")
                continue
            n_answerable += 1
            rel = [_from(ref, case, case.markers) for _, ref in sentences]
            first = bool(sentences) and _from(sentences[0][1], case, case.answer)
            first_has = bool(sentences) and any(_norm(m) in _norm(sentences[0][0]) for m in case.answer)
            n_sent += len(sentences)
            n_rel += sum(rel)
            n_first += first
            n_first_has += first_has
            if args.verbose:
                print(f"\n[{sum(rel)}/{len(sentences)} relevant, first {'ok' if first else 'MISS'}"
                      f"{' (has answer)' if first_has else ''}] {case.question}")
                for (text, ref), ok in zip(sentences, rel):
                    print(f"  {'+' if ok else '-'} {text}  <{ref.get('file_name')}>")
                if not sentences:
                    print(f"  (no sentence) {message['text']}")
        elapsed = time.perf_counter() - started
        print(f"answerable questions: {n_answerable}, unanswerable: {n_unanswerable} "
              f"({elapsed / len(CASES):.2f} s per question)")
        print(f"sentence precision (quoted sentences from a relevant passage): {n_rel}/{n_sent} = "
              f"{n_rel / max(n_sent, 1):.3f}")
        print(f"first sentence from the expected passage: {n_first}/{n_answerable} = {n_first / n_answerable:.3f}")
        print(f"first sentence contains the answer: {n_first_has}/{n_answerable} = {n_first_has / n_answerable:.3f}")
        print(f"sentences per answer: {n_sent / n_answerable:.2f}")
        print(f"unanswerable questions abstained: {n_abstain}/{n_unanswerable}")


if __name__ == "__main__":
    main()
