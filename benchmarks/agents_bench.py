"""Tracking agents: how long runs take, and whether the lease holds under contention (run by hand).

    python benchmarks/agents_bench.py [--posts ../shared/corpus/posts] [--agents 10] [--runners 4]

On a fresh store in a temporary folder: ingests the posts files, then

1. one agent ("Activision puts"): the first run (every post is new: numbering the posts,
   matching, embedding the matches for patterns — with the model load — and the alert),
   then a run with nothing new;
2. ``--agents`` agents with different queries, all due, and ``--runners`` runners (each with
   its own store connection, as separate processes would have) ticking at the same moment
   from threads: how many runs happened (must equal the number of agents: each once) and
   the wall time of the tick.

Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path

from citewell import Engine
from citewell.agents import AgentRunner, Agents

QUERIES = ["Activision puts", "Tesla calls", "bitcoin price", "ethereum gas fees", "Microsoft deal", "inflation",
           "Fed rate hike", "GME short squeeze", "options expiry", "earnings week", "crypto crash", "Apple stock"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=Path, default=Path("../shared/corpus/posts"))
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--runners", type=int, default=4)
    args = parser.parse_args()
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "citewell.sqlite"
        with Engine(store) as engine:
            engine.ingest([args.posts])
            agents = Agents(engine)
            agent = agents.create(query=QUERIES[0])
            t = time.perf_counter()
            first = agents.run(agent.id)
            out["first_run_s"] = round(time.perf_counter() - t, 3)
            out["first_run"] = {"new_mentions": first.new_mentions, "matched": first.matched,
                                "patterns": [p.size for p in first.patterns]}
            t = time.perf_counter()
            second = agents.run(agent.id)
            out["run_with_nothing_new_s"] = round(time.perf_counter() - t, 3)
            out["second_run"] = {"new_mentions": second.new_mentions, "matched": second.matched}
            made = [agents.create(query=QUERIES[i % len(QUERIES)]) for i in range(args.agents)]
        engines = [Engine(store) for _ in range(args.runners)]
        runners = [AgentRunner(e.store, lambda _, e=e: e, owner=f"runner-{i}") for i, e in enumerate(engines)]
        barrier = threading.Barrier(len(runners))
        results: list[object] = []

        def tick(runner: AgentRunner) -> None:
            barrier.wait()
            results.extend(r for r in runner.run_due() if r.ran)

        t = time.perf_counter()
        threads = [threading.Thread(target=tick, args=(r,)) for r in runners]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        out["contended_tick"] = {"agents": len(made), "runners": len(runners), "runs": len(results),
                                 "wall_s": round(time.perf_counter() - t, 3)}
        for e in engines:
            e.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
