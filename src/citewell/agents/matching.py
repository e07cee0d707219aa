"""Which new mentions an agent's watch matches (issue 17, "Alerts").

A mention matches when it passes every filter and covers the query:

- **filters**: the resource-level conditions (``resource_id`` — the datasets, and the
  later versions of the files they were read from —,
  ``document_name``, ``tickers`` …) select the posts files through the store's own filter
  code (:meth:`Store.scope_resources`); ``source`` compares lower-cased; ``created_at>=``/
  ``<=`` compare the post's ISO time as text (a date alone as upper bound covers its whole
  day, as the store's filters do); ``authors`` any of them (case-insensitive); ``keywords``
  any of them in the text (case-insensitive) or among the post's ``cashtags``;
- **query coverage**: the query's content words (:func:`citewell.text.terms.tokens`:
  stemmed, stop words dropped) each weigh their inverse document frequency in the
  workspace (:meth:`Store.term_counts`, as BM25 weighs them); a mention matches when the
  words it contains carry at least :data:`MIN_COVERAGE` of the query's weight, so the rare
  words ("Activision") decide and the common ones ("people", "saying") barely count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..models import Mention
from ..store.base import Condition, ResourceStore, SearchStore, Store
from ..text.terms import content_terms, tokens
from .spec import Watch

#: Share of the query's weight a mention must cover.
MIN_COVERAGE = 0.5
#: Condition keys applied per mention (the rest select datasets).
_MENTION_KEYS = ("source", "created_at")


@dataclass(frozen=True)
class QueryWeights:
    """The query's content terms (stemmed) and their IDF weights."""

    weights: dict[str, float]

    @classmethod
    def build(cls, store: SearchStore, workspace_id: str, query: str) -> "QueryWeights":
        """IDF ``log((n + 1) / (df + 0.5))`` of each content word of ``query`` over the
        workspace's searchable chunks (``n`` of them, ``df`` holding the word)."""
        words = [t for t in tokens(query) if t.content]
        unique = list({t.term: t for t in words}.values())
        if not unique:
            return cls({})
        n, counts = store.term_counts(workspace_id, [[t.surface] for t in unique])
        return cls({t.term: math.log((n + 1) / (c + 0.5)) for t, c in zip(unique, counts)})

    def coverage(self, text: str) -> float:
        """Share (0–1) of the query's weight whose words ``text`` contains (1.0 for a query
        without content words)."""
        total = sum(self.weights.values())
        if total <= 0:
            return 1.0
        have = content_terms(text)
        return sum(w for term, w in self.weights.items() if term in have) / total


def _passes(mention: Mention, conditions: Sequence[Condition]) -> bool:
    for c in conditions:
        if c.key == "source" and mention.source.lower() not in c.values:
            return False
        if c.key == "created_at":
            created = mention.created_at or ""
            bound = c.values[0]
            if c.op == "ge" and created < bound:
                return False
            if c.op == "le" and created[:len(bound)] > bound:
                return False
            if c.op == "eq" and not any(created.startswith(v) for v in c.values):
                return False
    return True


def _has_keyword(mention: Mention, keywords: Sequence[str]) -> bool:
    text = mention.text.lower()
    tags = {str(t).lower() for t in (mention.model_extra or {}).get("cashtags") or []}
    return any(k in text or k in tags for k in keywords)


def _following(store: ResourceStore, workspace_id: str, condition: Condition, paths: Sequence[str]) -> Condition:
    """A ``resource_id`` condition that also names the current version of each of
    ``paths`` (the files its datasets were read from: :func:`~citewell.agents.spec.followed_paths`)."""
    current = [record.resource_id for record in (store.file_record(workspace_id, p) for p in paths)
               if record is not None and record.resource_id]
    return Condition(condition.key, condition.op, tuple(dict.fromkeys([*condition.values, *current])))


def allowed_datasets(store: Store, workspace_id: str, watch: Watch) -> set[str]:
    """Ids of the ready posts files the watch's resource-level conditions select; a
    ``resource_id`` condition also selects the newer versions of its datasets' files
    (``watch.paths``: a grown posts file synced again)."""
    conditions = [_following(store, workspace_id, c, watch.paths) if c.key == "resource_id" and watch.paths else c
                  for c in watch.conditions if c.key not in _MENTION_KEYS]
    return {r.id for r in store.scope_resources(workspace_id, conditions=conditions) if r.kind == "post"}


def matching(store: Store, workspace_id: str, watch: Watch, mentions: Sequence[Mention]) -> list[Mention]:
    """Those of ``mentions`` the watch matches (see the module docstring), in order."""
    datasets = allowed_datasets(store, workspace_id, watch)
    weights = QueryWeights.build(store, workspace_id, watch.query)
    per_mention = [c for c in watch.conditions if c.key in _MENTION_KEYS]
    out = []
    for mention in mentions:
        if mention.dataset_id not in datasets or not _passes(mention, per_mention):
            continue
        if watch.authors and (mention.author or "").lower() not in watch.authors:
            continue
        if watch.keywords and not _has_keyword(mention, watch.keywords):
            continue
        if weights.coverage(mention.text) >= MIN_COVERAGE:
            out.append(mention)
    return out


__all__ = ["MIN_COVERAGE", "QueryWeights", "allowed_datasets", "matching"]
