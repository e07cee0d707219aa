"""Patterns: groups of similar mentions (issue 17, "Patterns").

A run's matching mentions are embedded with the workspace's embedder (the vectors stored
for retrieval are reused, missing ones are computed and stored) and grouped by
scikit-learn's :class:`~sklearn.cluster.AgglomerativeClustering` (average linkage on cosine
distance, cut at :data:`MAX_DISTANCE`: every pattern's members are on average at least
``1 - MAX_DISTANCE`` similar to each other). A group of at least :data:`MIN_SIZE` mentions
is a pattern, with:

- ``label``: up to three words most of its members share (a cashtag first), else the
  start of its first member;
- ``datasets``/``sources``: the posts files and sources of its members (a pattern
  "spans datasets" when it has two or more);
- ``first_seen``/``last_seen``: the members' earliest and latest ``created_at``;
- ``trend``: the members per quarter of that window (``buckets``) and its ``direction``:
  ``rising`` when the later half holds more members than the earlier, ``falling`` when
  fewer, else ``steady`` (also for members all at one moment).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from ..embed import Embedder
from ..models import Mention
from ..retrieve.dense import embed_passages
from ..store.base import Store
from ..store.tracking import PatternMember, PatternRecord
from ..text.terms import tokens

#: Smallest group that is a pattern.
MIN_SIZE = 2
#: Average cosine distance at which groups stop merging.
MAX_DISTANCE = 0.55
#: Buckets of a trend.
TREND_BUCKETS = 4


def _time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def trend(created: Sequence[str | None]) -> dict[str, Any]:
    """``{direction, buckets: [{start, end, count}]}`` of members created at ``created``
    (ISO strings; undated members are left out), see the module docstring."""
    times = sorted(t for t in (_time(c) for c in created) if t is not None)
    if len(times) < 2 or times[0] == times[-1]:
        return {"direction": "steady", "buckets": [{"start": c, "end": c, "count": len(times)}
                                                    for c in ([times[0].isoformat()] if times else [])]}
    first, last = times[0], times[-1]
    span = (last - first) / TREND_BUCKETS
    counts = [0] * TREND_BUCKETS
    for t in times:
        counts[min(TREND_BUCKETS - 1, int((t - first) / span))] += 1
    half = TREND_BUCKETS // 2
    early, late = sum(counts[:half]), sum(counts[half:])
    direction = "rising" if late > early else "falling" if late < early else "steady"
    return {"direction": direction,
            "buckets": [{"start": (first + span * i).isoformat(), "end": (first + span * (i + 1)).isoformat(),
                         "count": n} for i, n in enumerate(counts)]}


def label(texts: Sequence[str]) -> str:
    """Up to three words that most of ``texts`` share (cashtags first, then by how many
    texts have them), joined by " / "; the first text's first 60 characters when none is
    shared."""
    df: Counter[str] = Counter()
    for text in texts:
        words = {w for w in text.split() if w.startswith("$") and len(w) > 1 and w[1:2].isalpha()}
        words |= {t.surface for t in tokens(text) if t.content and not t.number and len(t.surface) > 2}
        df.update({w.rstrip(".,;:!?") for w in words})
    shared = [w for w, n in df.items() if n >= max(2, (len(texts) + 1) // 2)]
    shared.sort(key=lambda w: (not w.startswith("$"), -df[w], w))
    if shared:
        return " / ".join(shared[:3])
    first = " ".join(texts[0].split()) if texts else ""
    return first[:60] + ("…" if len(first) > 60 else "")


def vectors(store: Store, workspace_id: str, embedder: Embedder, mentions: Sequence[Mention]) -> np.ndarray:
    """Unit vectors ``(len(mentions), dim)`` of the mentions' first passages (stored ones
    reused; missing ones computed and stored for retrieval too)."""
    passages = [store.post_passage(workspace_id, m.source, m.id, dataset_id=m.dataset_id) for m in mentions]
    present = [p for p in passages if p is not None]
    embed_passages(store, workspace_id, embedder, present)
    stored = store.vectors(workspace_id, embedder.model_id, [p.chunk.id for p in present])
    rows = []
    for mention, passage in zip(mentions, passages):
        raw = stored.get(passage.chunk.id) if passage is not None else None
        rows.append(np.frombuffer(raw, dtype="<f4") if raw is not None
                    else np.asarray(embedder.embed([mention.text])[0], dtype="<f4"))
    return np.vstack(rows) if rows else np.zeros((0, embedder.dim), dtype="<f4")


def find_patterns(store: Store, workspace_id: str, embedder: Embedder | None, mentions: Sequence[Mention], *,
                  agent_id: str | None = None) -> list[PatternRecord]:
    """The patterns among ``mentions`` (see the module docstring), largest first; none
    without an embedder or with fewer than :data:`MIN_SIZE` mentions."""
    if embedder is None or len(mentions) < MIN_SIZE:
        return []
    from sklearn.cluster import AgglomerativeClustering  # imported here: only agent runs need it

    matrix = vectors(store, workspace_id, embedder, mentions)
    groups = AgglomerativeClustering(n_clusters=None, metric="cosine", linkage="average",
                                     distance_threshold=MAX_DISTANCE).fit_predict(matrix)
    now = datetime.now(timezone.utc)
    found = []
    for group in sorted(set(int(g) for g in groups)):
        members = [m for m, g in zip(mentions, groups) if int(g) == group]
        if len(members) < MIN_SIZE:
            continue
        created = sorted(m.created_at for m in members if m.created_at)
        found.append(PatternRecord(
            id=str(uuid.uuid4()), workspace_id=workspace_id, agent_id=agent_id,
            label=label([m.text for m in members]),
            members=tuple(PatternMember(m.source, m.id, m.dataset_id or "", m.created_at) for m in members),
            datasets=tuple(dict.fromkeys(m.dataset_id or "" for m in members)),
            sources=tuple(dict.fromkeys(m.source.lower() for m in members)),
            first_seen=created[0] if created else None, last_seen=created[-1] if created else None,
            trend=trend([m.created_at for m in members]), created_at=now))
    found.sort(key=lambda p: -p.size)
    return found


__all__ = ["MAX_DISTANCE", "MIN_SIZE", "find_patterns", "label", "trend", "vectors"]
