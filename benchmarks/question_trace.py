"""Follow one question through ``Engine.ask``: which files of citewell it visits, and how
often it comes back to one already visited; how many times the question is read.

Run by hand (a store with the shared corpus's 3M 10-K is made in a temporary folder)::

    python benchmarks/question_trace.py [--question "..."] [--mode lexical]

Prints the citewell files entered from another file in call order (a call from file A into
file B counts as a visit of B), the number of distinct files, the number of visits that
come back to a file already visited, and the calls of the functions that read the
question text (``analyse``, ``question_names``, ``question_periods``, ``question_concepts``
on the question …). Run it on two trees (``PYTHONPATH=OTHER/src``) to compare them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "pdf" / "3M_2022_10K.pdf"
#: Functions whose calls read the question (the names of this tree and of earlier ones).
READERS = ("analyse", "question_names", "question_periods", "question_years", "asked_years",
           "QuestionNames.of", "_names", "missing_names", "question_needs", "asks_figure", "asks_why",
           "asks_for_figure", "asks_calculation", "topic_concepts")


def main() -> None:
    """Build a small store, ask once to warm it, then trace a second ask."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--question", default="What was 3M's capital expenditure in FY2022?")
    parser.add_argument("--mode", default="lexical")
    args = parser.parse_args()
    from citewell import Engine

    work = Path(tempfile.mkdtemp(prefix="cw-trace-"))
    try:
        docs = work / "docs"
        docs.mkdir()
        shutil.copy(SHARED, docs / SHARED.name)
        engine = Engine(str(work / "store.sqlite"), mode=args.mode)
        engine.sync(docs)
        engine.ask("What was the revenue?")  # warm caches and imports
        root = str(Path(sys.modules["citewell"].__file__).parent) + os.sep
        visits: list[str] = []
        readers: Counter[str] = Counter()

        def tracer(frame, event, arg):  # type: ignore[no-untyped-def]
            if event != "call":
                return None
            code = frame.f_code
            if not code.co_filename.startswith(root):
                return None
            name = code.co_qualname if hasattr(code, "co_qualname") else code.co_name
            if any(name == r or name.endswith("." + r) for r in READERS):
                readers[name] += 1
            caller = frame.f_back
            here = code.co_filename[len(root):]
            there = caller.f_code.co_filename[len(root):] if caller is not None and \
                caller.f_code.co_filename.startswith(root) else None
            if here != there:
                visits.append(here)
            return None

        sys.setprofile(None)
        sys.settrace(tracer)
        try:
            message = engine.ask(args.question)
        finally:
            sys.settrace(None)
        seen: set[str] = set()
        back = 0
        for v in visits:
            if v in seen:
                back += 1
            seen.add(v)
        print(f"answer: {message.text[:120]}")
        print(f"files visited: {len(seen)}; visits that come back to a file already visited: {back}")
        for f, n in Counter(visits).most_common(12):
            print(f"  {n:4d}  {f}")
        print("question readers called:")
        for name, n in sorted(readers.items()):
            print(f"  {n:4d}  {name}")
        engine.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
