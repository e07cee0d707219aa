"""Cite-stage benchmark: non-streamed ``cite()`` and the streaming citer.

    python benchmarks/cite_bench.py [--size 100000] [--repeat 3] [--cpu-time]

``--cpu-time`` times with ``time.process_time`` (this process's CPU time) instead of
the wall clock: steadier figures on a machine other jobs share.

Builds a realistic answer of about ``--size`` characters (prose with unicode: accents,
CJK, RTL, emoji with ZWJ; one citation link every ~200 characters, posts and chunks,
some repeated) and prints:

- link parsing + numbering + offsets: ``cite()`` minus its parts/citations step (the
  scan, resolution, numbering, assembly and references, timed with ``build_parts``
  replaced by a no-op), in MB/s;
- parts (``build_parts`` + ``build_citations`` on the cited text), timed separately;
- support (``apply_support``: every (sentence, cited passage) pair checked, rule 8);
- the whole ``cite()``;
- streaming: ``StreamingCiter`` fed in chunks of 1, 16 and 1024 characters, in chars/s,
  for ``feed()`` alone and for ``feed()`` + ``close()`` (``close()`` runs ``cite()`` on the
  whole text so that the final message equals the non-streamed one exactly);
- the ratio of the 1 MB to the 100 KB time at chunk size 1 (linear scaling: ~10);
- ``scan()`` and ``cite()`` on an answer of the same size full of markup that takes the
  full scanner (ordinary links with parentheses, linked images, escapes, code spans,
  nested and literal pairs) instead of the one-pass route of the realistic answer.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from citewell.cite import InMemoryResolver, apply_support, cite
from citewell.cite import processor as _processor
from citewell.cite.links import format_link, scan
from citewell.cite.parts import build_citations, build_parts
from citewell.cite.stream import StreamingCiter
from citewell.models import Chunk, Passage

WORDS = ["revenue", "grew", "strongly", "in", "the", "quarter", "while", "margins", "über-compressed", "slightly", "as", "costs", "rose", "analysts", "expected", "café", "demand", "to", "recover", "漢字", "データ", "市场", "שלום", "مرحبا", "naïve", "résumé", "guidance", "was", "raised", "twice", "and", "the", "board", "approved", "a", "buyback"]
EMOJI = ["😀", "👩\u200d💻", "🏳\ufe0f\u200d🌈", "🇫🇷", "e\u0301"]


def passages() -> list[Passage]:
    out = []
    for i in range(40):
        out.append(Passage(chunk=Chunk(id=f"chunk-{i:04d}", resource_id=f"res-{i % 7}", chunk_index=i,
                                       text=f"passage {i} text", metadata={"source_type": "pdf", "page": i % 9}),
                           resource_title=f"Report {i % 7}.pdf", resource_kind="pdf"))
    for i in range(40):
        out.append(Passage(chunk=Chunk(id=f"post-{i:04d}", resource_id="posts", chunk_index=i, text_type="post",
                                       text=f"post {i}", metadata={"source_type": "post", "source": "reddit",
                                                                   "id": f"t3_{i:05d}"}),
                           resource_title="posts.jsonl", resource_kind="post"))
    return out


def build_answer(size: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    n = 0
    while n < size:
        words = [rng.choice(WORDS) for _ in range(rng.randint(18, 30))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), rng.choice(EMOJI))
        sentence = " ".join(words).capitalize()
        if rng.random() < 0.5:
            link = format_link(rng.choice(["source", "report", "clip 😀"]), chunk_id=f"chunk-{rng.randrange(40):04d}")
        else:
            link = format_link("thread", post=("reddit", f"t3_{rng.randrange(40):05d}"))
        piece = f"{sentence} {link}. " if rng.random() < 0.9 else f"{sentence}.\n\n"
        out.append(piece)
        n += len(piece)
    return "".join(out)[:size].rsplit(" ", 1)[0] + "."


MARKUP = ["Revenue grew [a](post:reddit:t3_{n:05d}) in the quarter. ", "See [the filing](https://e.com/10-K_(2023)) and ",
          "margins `x[1]` rose \\[12\\] ", "[![badge](b.svg)](https://e.com/ci) ",
          "[w [b](chunk:chunk-{n:04d}) z](https://e.com) ", "a \\[3] b [c](post:reddit:t3_{n:05d}). ", "\n\n",
          "Costs [fell](chunk:chunk-{n:04d}) sharply. "]


def build_markup_answer(size: int, seed: int = 3) -> str:
    """About ``size`` characters of :data:`MARKUP` pieces (the full scanner's route)."""
    rng = random.Random(seed)
    out: list[str] = []
    n = 0
    while n < size:
        piece = rng.choice(MARKUP).format(n=rng.randrange(40))
        out.append(piece)
        n += len(piece)
    return "".join(out)


#: The clock of every measurement (``--cpu-time``: ``time.process_time``).
clock = time.perf_counter


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = clock()
        fn()
        times.append(clock() - t)
    return min(times)


def stream(raw: str, size: int, kwargs: dict, *, close: bool) -> float:
    pieces = [raw[i:i + size] for i in range(0, len(raw), size)]
    t = clock()
    citer = StreamingCiter(**kwargs)
    for piece in pieces:
        citer.feed(piece)
    feed_time = clock() - t
    if close:
        citer.close()
        return clock() - t
    return feed_time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu-time", action="store_true", help="time with process_time (CPU), not the wall clock")
    args = ap.parse_args()
    global clock
    if args.cpu_time:
        clock = time.process_time
    ps = passages()
    kwargs = {"sources": ps, "resolver": InMemoryResolver(ps)}
    raw = build_answer(args.size)
    links = raw.count("](chunk:") + raw.count("](post:")
    message = cite(raw, **kwargs)
    print(f"answer: {len(raw):,} chars, {links} links, {len(message.references)} numbered sources, "
          f"{len(message.parts)} parts")

    real_parts = _processor.build_parts
    _processor.build_parts = lambda *a, **k: []  # type: ignore[assignment]
    try:
        t_core = best(lambda: cite(raw, **kwargs), args.repeat)
    finally:
        _processor.build_parts = real_parts  # type: ignore[assignment]
    mb = len(raw.encode()) / 1e6
    print(f"links + numbering + offsets (cite without parts): {t_core * 1e3:7.1f} ms  {mb / t_core:6.2f} MB/s")
    from citewell.cite.offsets import OffsetMap
    from citewell.cite.parts import Marker
    markers = [Marker(o.start_index, o.end_index, r.citation, None)
               for r in message.references for o in (r.occurrences or [])]
    markers.sort(key=lambda m: m.start)
    t_parts = best(lambda: build_citations(build_parts(message.text, markers, offset_map=OffsetMap(message.text))),
                   args.repeat)
    print(f"parts (build_parts + build_citations):             {t_parts * 1e3:7.1f} ms  {mb / t_parts:6.2f} MB/s")
    t_support = best(lambda: apply_support(message), args.repeat)
    print(f"support (apply_support, policy flag):               {t_support * 1e3:7.1f} ms  {mb / t_support:6.2f} MB/s")
    t_all = best(lambda: cite(raw, **kwargs), args.repeat)
    print(f"whole cite():                                      {t_all * 1e3:7.1f} ms  {mb / t_all:6.2f} MB/s")

    for size in (1, 16, 1024):
        t_feed = best(lambda size=size: stream(raw, size, kwargs, close=False), args.repeat)
        t_total = best(lambda size=size: stream(raw, size, kwargs, close=True), args.repeat)
        print(f"stream chunk {size:>4}: feed {len(raw) / t_feed / 1e6:5.2f} M chars/s ({t_feed * 1e3:6.1f} ms); "
              f"feed+close {len(raw) / t_total / 1e6:5.2f} M chars/s ({t_total * 1e3:6.1f} ms)")

    big = build_answer(args.size * 10, seed=2)
    t_small = best(lambda: stream(raw, 1, kwargs, close=False), args.repeat)
    t_big = best(lambda: stream(big, 1, kwargs, close=False), max(1, args.repeat - 1))
    t_small_c = best(lambda: stream(raw, 1, kwargs, close=True), args.repeat)
    t_big_c = best(lambda: stream(big, 1, kwargs, close=True), max(1, args.repeat - 1))
    print(f"scaling at chunk 1, {len(big):,} vs {len(raw):,} chars: feed {t_big / t_small:4.1f}x "
          f"({t_big * 1e3:.0f} ms vs {t_small * 1e3:.0f} ms); feed+close {t_big_c / t_small_c:4.1f}x")

    markup = build_markup_answer(args.size)
    t_scan = best(lambda: scan(markup), max(args.repeat, 10))
    t_cite = best(lambda: cite(markup, **kwargs), args.repeat)
    print(f"markup-heavy answer ({len(markup):,} chars, {markup.count('](')} links): scan {t_scan * 1e3:.1f} ms; "
          f"whole cite() {t_cite * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
