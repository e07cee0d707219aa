"""Searches read the rows of ready resources from the cached ranking resources, keep masks
of ``resource_id`` lists per read snapshot and sum BM25 parts store-long: never stale or
wrong against the SQL ranking, whatever another store object writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from citewell.store import open_store
from citewell.store.base import Condition
from citewell.store.searchcache import SEARCH

from .store_conformance import ingest


def _view(passages: list) -> list[tuple]:
    """What a user sees of each passage: chunk, resource title, kind, file name, score, rank."""
    return [(p.chunk.id, p.resource_title, p.resource_kind, p.file_name, p.score, p.rank) for p in passages]


def _check(store: Any, ws: str, terms: list[str], conditions: list[Condition] = (), under: str | None = None) -> list:
    """The cached search's passages and hits, checked against the SQL ranking; the passages."""
    cached = store.search_text(ws, terms, limit=10, conditions=list(conditions), under=under)
    sql = store._ranked_search(ws, terms, 10, list(conditions), under)
    assert _view(cached) == _view(sql)
    hits = store.search_hits(ws, terms, limit=10, conditions=list(conditions), under=under)
    assert [(h.chunk_id, h.score) for h in hits] == [(p.chunk.id, p.score) for p in sql]
    return cached


def test_renames_deletes_supersedes_and_other_store_objects(store_location: str | Path) -> None:
    """A rename (through this store object or another), a moved file, a superseded and a
    deleted resource show at once in searches and in ``chunks()``; another workspace sees none."""
    store, second = open_store(store_location), open_store(store_location)
    try:
        ws, other = store.workspace_id("acme"), store.workspace_id("beta")
        a = ingest(store, ws, "a.txt", "Pumps run at forty bar.", "Quartz pumps.", path="/x/a.txt")
        b = ingest(store, ws, "b.txt", "Valves and pumps close at night.", path="/y/b.txt")
        c = ingest(store, other, "c.txt", "Pumps elsewhere.", path="/x/c.txt")
        first = _check(store, ws, ["pumps"])
        ids = [p.chunk.id for p in first]
        assert {p.resource_title for p in first} == {"a", "b"}
        assert store.chunks(other, ids) == {}  # another workspace's chunks
        # renamed through the API, through another store object on the same database
        store.update_resource_metadata(ws, a.id, title="Alpha report", metadata={}, custom_metadata=None)
        assert {p.resource_title for p in _check(store, ws, ["pumps"])} == {"Alpha report", "b"}
        second.update_resource_metadata(ws, b.id, title="Beta memo", metadata={}, custom_metadata=None)
        assert {p.resource_title for p in _check(store, ws, ["pumps"])} == {"Alpha report", "Beta memo"}
        assert {p.resource_title for p in store.chunks(ws, ids).values()} == {"Alpha report", "Beta memo"}
        # a moved file: the resource takes the new file name
        second.link_path(ws, "/x/a2.txt", second.resource(ws, a.id), size_bytes=1, mtime_ns=2)
        second.mark_missing(ws, "/x", ["/x/a2.txt"])
        assert second.resource(ws, a.id).file_name == "a2.txt"
        assert {p.file_name for p in _check(store, ws, ["pumps"]) if p.chunk.resource_id == a.id} == {"a2.txt"}
        assert {p.file_name for p in store.chunks(ws, ids).values() if p.chunk.resource_id == a.id} == {"a2.txt"}
        # superseded (content changed at its path): chunks() still reads it, from the table
        ingest(second, ws, "b.txt", "Valves replaced.", path="/y/b.txt")
        assert second.resource(ws, b.id).status == "superseded"
        old = store.chunks(ws, ids)
        assert {p.resource_title for p in old.values() if p.chunk.resource_id == b.id} == {"Beta memo"}
        assert {p.chunk.resource_id for p in _check(store, ws, ["pumps"])} == {a.id}
        # deleted
        second.delete_resource(ws, a.id)
        assert _check(store, ws, ["pumps"]) == [] and all(p.chunk.resource_id != a.id
                                                          for p in store.chunks(ws, ids).values())
        assert [p.chunk.resource_id for p in _check(store, other, ["pumps"])] == [c.id]
    finally:
        store.close()
        second.close()


def test_snapshot_masks_of_resource_lists(store_location: str | Path) -> None:
    """Lists of resources (``eq``/``ne``) with facets, folders and two workspaces rank as SQL
    does inside one snapshot, asked twice; a deletion committed meanwhile stays unseen until
    the next snapshot."""
    store, second = open_store(store_location), open_store(store_location)
    try:
        ws, other = store.workspace_id("acme"), store.workspace_id("beta")
        made = [ingest(store, ws, f"n{i}.txt", f"Pumps note {i}.", f"More pumps {i} here.", path=f"/{'xy'[i % 2]}/n{i}.txt",
                       metadata={"fiscal_year": 2020 + i % 3}) for i in range(6)]
        ingest(store, other, "n0.txt", "Pumps note 0.", "More pumps 0 here.", path="/x/n0.txt")
        lists = [Condition("resource_id", "eq", (made[0].id, made[1].id)),
                 Condition("resource_id", "ne", (made[0].id,)), Condition("resource_id", "eq", (made[1].id, made[0].id)),
                 Condition("resource_id", "ne", (made[0].id, made[2].id))]
        rest = [[], [Condition("fiscal_year", "eq", ("2020",))], [Condition("fiscal_year", "eq", ("2021",))]]
        expected = {}
        for workspace in (ws, other):
            for i, cond in enumerate(lists):
                for j, more in enumerate(rest):
                    for under in (None, "/x", "/y"):
                        expected[(workspace, i, j, under)] = _view(store._ranked_search(
                            workspace, ["pumps"], 10, [cond, *more], under))
        with store.reading():
            for _ in range(2):
                for (workspace, i, j, under), want in expected.items():
                    got = _view(store.search_text(workspace, ["pumps"], limit=10, conditions=[lists[i], *rest[j]],
                                                  under=under))
                    assert got == want, (workspace, i, j, under)
            second.delete_resource(ws, made[1].id)  # committed meanwhile: this snapshot does not see it
            for (workspace, i, j, under), want in expected.items():
                got = _view(store.search_text(workspace, ["pumps"], limit=10, conditions=[lists[i], *rest[j]],
                                              under=under))
                assert got == want, (workspace, i, j, under)
        # the next snapshot sees the deletion
        with store.reading():
            got = store.search_text(ws, ["pumps"], limit=10, conditions=[lists[0]])
        assert {p.chunk.resource_id for p in got} == {made[0].id}
    finally:
        store.close()
        second.close()


def test_floored_idf_parts_are_positive_and_rank_as_sql(store_location: str | Path) -> None:
    """A term in every row (FTS5 floors its IDF at 1e-6): its parts are tiny but positive, and
    the store-long sums rank as the SQL ranking does."""
    store = open_store(store_location)
    try:
        ws = store.workspace_id("acme")
        for i in range(12):
            ingest(store, ws, f"n{i}.txt", *[f"pumps {'valves ' * (j % 3)}note {i} {j}" + " filler" * (i + j)
                                             for j in range(5)], path=f"/d/n{i}.txt")
        with store._snapshot() as conn:
            generation = store._generation(conn, SEARCH)
            scores = [store._term_scores(conn, generation, t) for t in ("pumps", "valves", "filler")]
        for s in scores:
            assert len(s.rowids) and (s.parts > 0).all() and (s.rowids[1:] > s.rowids[:-1]).all()
        assert scores[0].parts.max() < 1e-5  # the floored IDF
        for terms in (["pumps"], ["pumps", "valves"], ["pumps", "filler", "valves"], ["pumps", "pumps"]):
            for limit in (1, 3, 60, 200):
                _check_limit(store, ws, terms, limit)
    finally:
        store.close()


def _check_limit(store: Any, ws: str, terms: list[str], limit: int) -> None:
    """The cached search of ``terms`` at ``limit`` equals the SQL ranking."""
    cached = store.search_text(ws, terms, limit=limit)
    assert _view(cached) == _view(store._ranked_search(ws, terms, limit, [], None))
