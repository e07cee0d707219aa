"""Posts files for the tracking-agent tests: two datasets (a reddit file and a stocktwits
file) that grow between runs. Stage 1 holds two posts about Activision puts (reddit) and
posts about other things; stage 2 appends one more Activision post to each file (a pattern
across both datasets) and an unrelated one."""

from __future__ import annotations

import json
from pathlib import Path

REDDIT_1 = [
    {"source": "reddit", "id": "t3_a1", "author": "alice", "created_at": "2022-01-18T10:00:00Z",
     "text": "Activision puts are printing after the Microsoft deal rumours."},
    {"source": "reddit", "id": "t3_a2", "author": "bob", "created_at": "2022-01-18T11:00:00Z",
     "text": "Anyone else loading up on Tesla calls this week?"},
    {"source": "reddit", "id": "t3_a3", "author": "carol", "created_at": "2022-01-18T12:00:00Z",
     "text": "My Activision puts expired worthless, the Microsoft deal killed them."},
]
STOCKTWITS_1 = [
    {"source": "stocktwits", "id": "900", "author": "u1", "created_at": "2022-06-25T13:00:00Z",
     "text": "$BTC.X holding the line at 20k.", "cashtags": ["$BTC.X"]},
]
REDDIT_2 = [
    {"source": "reddit", "id": "t3_a4", "author": "dave", "created_at": "2022-01-19T09:00:00Z",
     "text": "Microsoft buying Activision wiped out my Activision puts overnight."},
]
STOCKTWITS_2 = [
    {"source": "stocktwits", "id": "901", "author": "u2", "created_at": "2022-01-19T10:00:00Z",
     "text": "$ATVI Activision puts got crushed by the Microsoft deal.", "cashtags": ["$ATVI"]},
    {"source": "stocktwits", "id": "902", "author": "u3", "created_at": "2022-06-26T10:00:00Z",
     "text": "$ETH.X gas fees are low today.", "cashtags": ["$ETH.X"]},
]


def write_posts(folder: Path, stage: int) -> Path:
    """Write ``reddit.jsonl`` and ``stocktwits.jsonl`` of ``stage`` (1 or 2) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    reddit = REDDIT_1 + (REDDIT_2 if stage >= 2 else [])
    stocktwits = STOCKTWITS_1 + (STOCKTWITS_2 if stage >= 2 else [])
    (folder / "reddit.jsonl").write_text("".join(json.dumps(p) + "\n" for p in reddit))
    (folder / "stocktwits.jsonl").write_text("".join(json.dumps(p) + "\n" for p in stocktwits))
    return folder
