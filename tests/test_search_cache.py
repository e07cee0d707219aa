"""The store's retrieval caches (citewell.store.searchcache): the cached ranking equals the
SQL ranking, and a write by another store object on the same file (another process, in
production) is seen by the next query: full-text search, document frequencies, the
vector matrix and vector coverage."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from citewell import Engine
from citewell.errors import StoreError
from citewell.store import Store, open_store, searchcache
from citewell.store.base import Condition, TextHit
from citewell.store.searchcache import (Scope, SumMemo, TermScores, _dense_totals, _sparse_totals, rank_rows,
                                        select)
from citewell.store.sqlite import fts_query

from .conftest import is_sqlite, sql_rows

TEXTS = {
    "pumps.txt": "Pumps run at forty bar. Pump pressure rose in March as the pumps aged.",
    "valves.txt": "Valves and pumps were replaced in March; valve pressure fell to thirty bar.",
    "boilers.txt": "Boilers heat the north plant. Boiler pressure is checked every March.",
    "cooling.txt": "Cooling towers cool the condenser water of the north plant pumps.",
    "notes.txt": "Pressure, pressure, pressure: the plant log mentions pressure on every page.",
    "audit.txt": "The audit found no pump or valve faults at the plant in the fiscal year.",
}
MODEL = "test-model"


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text + "\n", encoding="utf-8")
    return folder


def _sql_ranking(store_path: Path, workspace_id: str, terms: list[str], limit: int,
                 title: str | None = None) -> list[tuple[str, float]]:
    """The reference, best first (ids, scores): on SQLite FTS5 bm25 over the whole OR query
    in SQL; on PostgreSQL the store's own SQL ranking (the path chunk-level filters take),
    from a new connection."""
    if not is_sqlite(store_path):
        conditions = [Condition("document_name", "eq", (title,))] if title is not None else []
        with closing(open_store(store_path)) as store:
            return [(p.chunk.id, p.score) for p in store._ranked_search(workspace_id, terms, limit, conditions, None)]
    sql = ("SELECT c.id, bm25(chunk_fts, 0.5, 1.0) AS s FROM chunk_fts "
           "JOIN chunks c ON c.rowid = chunk_fts.rowid JOIN resources r ON r.id = c.resource_id "
           "WHERE chunk_fts MATCH ? AND c.workspace_id = ? AND r.status = 'ready'")
    args: list = [fts_query(terms), workspace_id]
    if title is not None:
        sql += " AND lower(r.title) = ?"
        args.append(title)
    rows = sql_rows(store_path, sql + " ORDER BY s, c.rowid LIMIT ?", *args, limit)
    return [(cid, -s) for cid, s in rows]


def _ranking(store: Store, workspace_id: str, terms: list[str], limit: int,
             **kwargs) -> list[tuple[str, float]]:
    return [(p.chunk.id, p.score) for p in store.search_text(workspace_id, terms, limit=limit, **kwargs)]


def _names(store: Store, workspace_id: str, terms: list[str]) -> list[str]:
    return sorted(p.file_name for p in store.search_text(workspace_id, terms, limit=20))


def test_cached_search_equals_the_sql_ranking_bit_for_bit(tmp_path: Path, store_path: Path) -> None:
    with Engine(store_path) as engine, Engine(store_path, workspace="other") as other:
        engine.ingest([_write(tmp_path / "docs", TEXTS)])
        other.ingest([_write(tmp_path / "elsewhere", {"pumps.txt": "Other pumps, other pressure."})])
        # the other workspace's rows are in the index: the cached search must leave them out
        ws = engine.workspace_id
        for terms in (["pressure"], ["pumps", "pressure", "march"],
                      ["plant", "north", "pump", "valves", "bar"],
                      ["fiscal", "year", "audit", "pressure"], ["pp&e", "pumps"]):
            for limit in (1, 3, 50):
                expected = _sql_ranking(store_path, ws, terms, limit)
                assert _ranking(engine.store, ws, terms, limit) == expected
                assert _ranking(engine.store, ws, terms, limit) == expected  # from the cache this time
            only = [Condition("document_name", "eq", ("pumps",))]
            assert _ranking(engine.store, ws, terms, 50, conditions=only) \
                == _sql_ranking(store_path, ws, terms, 50, title="pumps")
        # document frequencies count this workspace's rows only (the index holds both)
        groups = [("pressure",), ("pumps",), ("north", "plant"), ("other",)]
        assert engine.store.term_counts(ws, groups) == (6, [4, 4, 2, 0])
        assert other.store.term_counts(other.workspace_id, groups) == (1, [1, 1, 0, 1])


def test_a_search_sees_ingest_delete_and_missing_files_of_another_store(tmp_path: Path,
                                                                        store_path: Path) -> None:
    with Engine(store_path) as a, Engine(store_path) as b:
        first = _write(tmp_path / "one", {"pumps.txt": TEXTS["pumps.txt"]})
        a.ingest([first])
        ws = a.workspace_id
        assert _names(a.store, ws, ["pumps"]) == ["pumps.txt"]
        assert a.store.term_counts(ws, [("pumps",), ("valve", "march")]) == (1, [1, 0])

        second = {"valves.txt": TEXTS["valves.txt"], "audit.txt": TEXTS["audit.txt"]}
        b.ingest([_write(tmp_path / "two", second)])
        assert _names(a.store, ws, ["pumps"]) == ["audit.txt", "pumps.txt", "valves.txt"]  # pump matches
        assert a.store.term_counts(ws, [("pumps",), ("valve", "march")]) == (3, [3, 1])

        valves = next(r.id for r in b.resources() if r.file_name == "valves.txt")
        b.delete_resource(valves)
        assert _names(a.store, ws, ["pumps"]) == ["audit.txt", "pumps.txt"]
        assert a.store.term_counts(ws, [("pumps",), ("valve", "march")]) == (2, [2, 0])

        (first / "pumps.txt").unlink()
        b.sync(first)  # the file is gone: its resource is missing, no longer searched
        assert _names(a.store, ws, ["pumps"]) == ["audit.txt"]
        assert a.store.term_counts(ws, [("pumps",)]) == (1, [1])


def test_a_filtered_search_sees_another_stores_title_change(tmp_path: Path, store_path: Path) -> None:
    with Engine(store_path) as a, Engine(store_path) as b:
        a.ingest([_write(tmp_path / "docs", TEXTS)])
        ws = a.workspace_id
        renamed = [Condition("document_name", "eq", ("plant log",))]
        assert a.store.search_text(ws, ["pressure"], limit=5, conditions=renamed) == []
        notes = next(r for r in b.resources() if r.file_name == "notes.txt")
        b.store.update_resource_metadata(ws, notes.id, title="Plant log", metadata={},
                                         custom_metadata=None)
        assert [p.file_name for p in a.store.search_text(ws, ["pressure"], limit=5, conditions=renamed)] \
            == ["notes.txt"]


@pytest.mark.sqlite_only("the workspace matrix cache (scope_matrix) is the SQLite vector index's; PostgreSQL ranks vectors in SQL with pgvector")
def test_the_vector_matrix_and_coverage_see_another_stores_writes(tmp_path: Path, store_path: Path) -> None:
    with Engine(store_path) as a, Engine(store_path) as b:
        three = {k: TEXTS[k] for k in ("pumps.txt", "valves.txt", "audit.txt")}
        a.ingest([_write(tmp_path / "docs", three)])
        ws = a.workspace_id
        assert a.store.vector_coverage(ws, MODEL) == (0, 3)
        ids, matrix = a.store.scope_matrix(ws, MODEL)
        assert (len(ids), matrix.shape) == (0, (0, 0))

        todo = b.store.texts_without_vectors(ws, MODEL)
        vectors = {h: np.array([i, 1.0, 0.5], dtype="<f4") for i, (h, _) in enumerate(todo)}
        b.store.put_vectors(b.workspace_id, MODEL, 3, [(h, v.tobytes()) for h, v in list(vectors.items())[:2]])
        assert a.store.vector_coverage(ws, MODEL) == (2, 3)

        def check(**scope) -> list[str]:
            ids, matrix = a.store.scope_matrix(ws, MODEL, **scope)
            rows = a.store.scope_vectors(ws, MODEL, **scope)
            assert list(ids) == [cid for cid, _ in rows]
            assert matrix.tobytes() == b"".join(blob for _, blob in rows)
            return list(ids)

        assert len(check()) == 2
        b.store.put_vectors(b.workspace_id, MODEL, 3, [(h, v.tobytes()) for h, v in vectors.items()])
        assert a.store.vector_coverage(ws, MODEL) == (3, 3)
        assert len(check()) == 3
        only = [Condition("document_name", "eq", ("audit",))]
        assert len(check(conditions=only)) == 1
        assert a.store.vector_coverage(ws, MODEL, conditions=only) == (1, 1)

        b.delete_resource(next(r.id for r in b.resources() if r.file_name == "audit.txt"))
        assert len(check()) == 2 and check(conditions=only) == []
        assert a.store.vector_coverage(ws, MODEL) == (2, 2)


def test_the_search_generation_moves_with_changes_only(tmp_path: Path, store_path: Path) -> None:
    def generation() -> int:
        rows = sql_rows(store_path, "SELECT value FROM meta WHERE key = 'search_generation'")
        return int(rows[0][0]) if rows else 0

    with Engine(store_path) as engine:
        docs = _write(tmp_path / "docs", {"pumps.txt": TEXTS["pumps.txt"]})
        start = generation()
        engine.sync(docs)
        after_ingest = generation()
        assert after_ingest > start
        shared = engine.store.ranking_resources(engine.workspace_id)
        engine.sync(docs)  # nothing new: the caches stay valid
        assert generation() == after_ingest
        assert engine.store.ranking_resources(engine.workspace_id) is shared
        _write(docs, {"valves.txt": TEXTS["valves.txt"]})
        engine.sync(docs)
        assert generation() > after_ingest


def test_ranking_resources_are_shared_until_another_store_writes(tmp_path: Path, store_path: Path) -> None:
    with Engine(store_path) as a, Engine(store_path) as b:
        a.ingest([_write(tmp_path / "one", {"pumps.txt": TEXTS["pumps.txt"]})])
        ws = a.workspace_id
        first = a.store.ranking_resources(ws)
        assert [r.file_name for r in first] == ["pumps.txt"]
        assert a.store.ranking_resources(ws) is first  # nothing changed: the same objects
        b.ingest([_write(tmp_path / "two", {"valves.txt": TEXTS["valves.txt"]})])
        second = a.store.ranking_resources(ws)
        assert [r.file_name for r in second] == ["pumps.txt", "valves.txt"]
        assert [r.id for r in second] == [r.id for r in a.store.resources(ws, statuses=["ready"])]
        b.delete_resource(second[0].id)
        assert [r.file_name for r in a.store.ranking_resources(ws)] == ["valves.txt"]


@pytest.mark.sqlite_only("the workspace matrix cache (scope_matrix) is the SQLite vector index's; PostgreSQL ranks vectors in SQL with pgvector")
def test_another_workspaces_writes_leave_a_workspaces_caches_alone(tmp_path: Path, store_path: Path) -> None:
    """Issue 14: every upload of one workspace emptied every workspace's caches (one
    store-wide counter), so a workspace flooding uploads made another's every question cold.
    A workspace's own caches follow its own writes; what spans the whole index (term bm25)
    still follows every write, and the answers are those of SQL."""
    with Engine(store_path, workspace="b") as b, Engine(store_path, workspace="a") as a:
        b.ingest([_write(tmp_path / "b", {k: TEXTS[k] for k in ("pumps.txt", "valves.txt", "audit.txt")})])
        a.ingest([_write(tmp_path / "a0", {"boilers.txt": TEXTS["boilers.txt"]})])
        ws = b.workspace_id
        resources = b.store.ranking_resources(ws)
        counts = b.store.term_counts(ws, [["pump"], ["valv"]])
        matrix_ids, _ = b.store.scope_matrix(ws, MODEL)
        b.store.search_text(ws, ["pressure"], limit=5)
        reads: list[str] = []
        traced = is_sqlite(store_path)  # the statements b's connection runs (SQLite's trace hook)
        if traced:
            b.store._conn().set_trace_callback(reads.append)
        for i in range(3):  # workspace a uploads (and embeds) while b asks
            a.ingest([_write(tmp_path / f"a{i + 1}", {f"n{i}.txt": f"Pump pressure note {i} of the boiler room."})])
            a.store.put_vectors(a.workspace_id, MODEL, 3, [(h, np.ones(3, dtype="<f4").tobytes()) for h, _ in
                                                           a.store.texts_without_vectors(a.workspace_id, MODEL)])
            reads.clear()
            assert b.store.ranking_resources(ws) is resources
            assert b.store.term_counts(ws, [["pump"], ["valv"]]) == counts
            assert not [sql for sql in reads if "FROM chunks c JOIN resources r" in sql]  # no scope re-read (SQLite)
            found = [(p.chunk.id, round(p.score, 9)) for p in b.store.search_text(ws, ["pressure", "pump"], limit=5)]
            assert found == [(cid, round(s, 9)) for cid, s in _sql_ranking(store_path, ws, ["pressure", "pump"], 5)]
        if traced:
            b.store._conn().set_trace_callback(None)
        assert b.store.scope_matrix(ws, MODEL)[0] == matrix_ids
        b.ingest([_write(tmp_path / "b2", {"cooling.txt": TEXTS["cooling.txt"]})])  # b's own write: new objects
        assert b.store.ranking_resources(ws) is not resources
        assert b.store.term_counts(ws, [["pump"], ["valv"]]) == (4, [counts[1][0] + 1, counts[1][1]])


def test_none_of_some_resources_searches_the_others(tmp_path: Path, store_path: Path) -> None:
    """``resource_id ne`` (the scope check's "not the labelled ones") finds what listing every
    other resource finds: from the caches, and in SQL (a chunk-level filter takes that path)."""
    with Engine(store_path) as engine, Engine(store_path, workspace="other") as other:
        engine.ingest([_write(tmp_path / "docs", TEXTS)])
        other.ingest([_write(tmp_path / "elsewhere", {"pumps.txt": "Other pumps, other pressure."})])
        ws = engine.workspace_id
        ids = {r.file_name: r.id for r in engine.store.ranking_resources(ws)}
        left_out = tuple(sorted(ids[n] for n in ("pumps.txt", "notes.txt")))
        rest = tuple(sorted(rid for rid in ids.values() if rid not in left_out))
        since = [Condition("created_at", "ge", ("2000-01-01",))]
        for terms in (["pressure"], ["pumps", "pressure", "march"], ["plant", "north"]):
            for extra in ([], since):
                none_of = [*extra, Condition("resource_id", "ne", left_out)]
                any_of = [*extra, Condition("resource_id", "eq", rest)]
                assert engine.store.search_hits(ws, terms, limit=50, conditions=none_of) \
                    == engine.store.search_hits(ws, terms, limit=50, conditions=any_of)
                assert _ranking(engine.store, ws, terms, 50, conditions=none_of) \
                    == _ranking(engine.store, ws, terms, 50, conditions=any_of)
        folder = str(tmp_path / "docs")
        for conditions in ([Condition("resource_id", "ne", left_out)], [Condition("resource_id", "eq", rest)],
                           [Condition("resource_id", "eq", left_out), Condition("kind", "eq", ("text",))],
                           [Condition("resource_id", "eq", left_out), Condition("resource_id", "ne", left_out[:1])],
                           [Condition("resource_id", "eq", ("no-such-id",))]):
            for under in (None, folder, str(tmp_path / "elsewhere")):  # the cached masks against SQL's ranking
                sql = [(p.chunk.id, p.score) for p in engine.store._ranked_search(ws, ["pressure", "pumps"], 50,
                                                                                conditions, under)]
                assert _ranking(engine.store, ws, ["pressure", "pumps"], 50, conditions=conditions, under=under) == sql
        names = sorted({p.file_name for p in engine.store.search_text(
            ws, ["pressure"], limit=50, conditions=[Condition("resource_id", "ne", left_out)])})
        assert names == ["boilers.txt", "valves.txt"]
        assert engine.store.scope_resources(ws, conditions=[Condition("resource_id", "ne", left_out)]) \
            == tuple(r for r in engine.store.ranking_resources(ws) if r.id not in left_out)
        assert engine.store.search_hits(ws, ["pressure"], limit=50, conditions=[Condition("resource_id", "ne", ())]) \
            == engine.store.search_hits(ws, ["pressure"], limit=50)


def _summed_in_order(terms: list[TermScores], mask: np.ndarray, limit: int) -> tuple[list[int], list[float]]:
    """rank_rows by hand: each row's parts added from 0.0 in term order, best (lowest
    negated sum) first, ties by rowid."""
    total: dict[int, float] = {}
    for t in terms:
        for row, part in zip(t.rowids.tolist(), t.parts.tolist()):
            if row < len(mask) and mask[row]:
                total[row] = total.get(row, 0.0) + part
    ranked = sorted(((-1.0 * s, row) for row, s in total.items()))[:limit]
    return [row for _, row in ranked], [key for key, _ in ranked]


@pytest.mark.parametrize("sum_block,top_block", [(1 << 15, 1 << 10), (4, 3), (1, 1), (7, 64)])
def test_rank_rows_sums_sparse_and_dense_terms_alike(monkeypatch: pytest.MonkeyPatch, sum_block: int,
                                                     top_block: int) -> None:
    """Few matched rows are summed over those rows, many over a store-long array: both add
    the parts in term order (values whose sum depends on that order show it), whatever the
    blocks the store-long sums are added and bounded in (small blocks: many of them, ties
    across blocks)."""
    monkeypatch.setattr(searchcache, "SUM_BLOCK", sum_block)
    monkeypatch.setattr(searchcache, "TOP_BLOCK", top_block)
    rng = np.random.default_rng(7)
    for trial in range(200):
        size = int(rng.integers(1, 400))
        terms = []
        for _ in range(int(rng.integers(0, 6))):
            rows = np.sort(rng.choice(size + 20, size=int(rng.integers(0, size + 20)), replace=False)).astype(np.int64)
            # positive, as every term's parts are, and of magnitudes whose sum depends on the order
            parts = rng.choice([1e16, 1.0, 1e-16, 0.1, 0.2, 0.3, 3.5e-7], size=len(rows)) * (rng.random(len(rows)) + 1e-3)
            terms.append(TermScores(rows, parts))
        mask = rng.random(size) < 0.7
        total, sparse = _dense_totals(terms), _sparse_totals(terms, mask)
        assert total.dtype == sparse[1].dtype == np.float64 and sparse[0].dtype == np.int64
        n = min(len(total), len(mask))
        dense_rows = np.flatnonzero(total[:n] * mask[:n])
        assert dense_rows.tolist() == sparse[0].tolist() and total[dense_rows].tolist() == sparse[1].tolist()
        memo = SumMemo()
        for limit in (1, 5, 1000):
            expected = _summed_in_order(terms, mask, limit)
            rows, keys = rank_rows(terms, mask, limit)
            assert (rows.tolist(), keys.tolist()) == expected
            # the memo's sums of one mask serve another mask of the same terms
            rows, keys = rank_rows(terms, mask, limit, memo=memo)
            assert (rows.tolist(), keys.tolist()) == expected
            other = ~mask
            rows, keys = rank_rows(terms, other, limit, memo=memo)
            assert (rows.tolist(), keys.tolist()) == _summed_in_order(terms, other, limit)
        if len(terms) > 1:  # another list of terms is not the one summed
            assert memo.get(terms[::-1]) is None and memo.get(terms[1:]) is None
    one = TermScores(np.array([1, 2, 3], dtype=np.int64), np.array([2.0, 0.5, 0.5]))
    two = TermScores(np.array([2, 9], dtype=np.int64), np.array([1.5, 4.0]))
    rows, keys = rank_rows([one, two], np.array([True, True, True, True, False]), 3)
    assert rows.tolist() == [1, 2, 3] and keys.tolist() == [-2.0, -2.0, -0.5]


def test_term_scores_refuse_rows_out_of_order_or_shares_not_positive() -> None:
    """rank_rows relies on ascending rowids and positive parts (a zero sum reads as no match):
    a term breaking either is a damaged index, STORE_ERROR, not a silently wrong ranking."""
    TermScores(np.zeros(0, dtype=np.int64), np.zeros(0))
    TermScores(np.array([1, 5], dtype=np.int64), np.array([1e-300, 2.0]))
    for rows, parts in (([2, 1], [1.0, 1.0]), ([1, 1], [1.0, 1.0]), ([1, 2], [1.0, 0.0]), ([1, 2], [1.0, -1.0]),
                        ([1, 2], [1.0])):
        with pytest.raises(StoreError) as raised:
            TermScores(np.array(rows, dtype=np.int64), np.array(parts))
        assert raised.value.code == "STORE_ERROR" and "damaged" in raised.value.message


@pytest.mark.sqlite_only("counts the statements a search runs with SQLite's trace hook")
def test_a_search_reads_the_counters_once_and_its_rows_with_their_status(tmp_path: Path, store_path: Path) -> None:
    """Inside one snapshot the generation counters cannot move: a cached search reads them
    in one statement, and its hits with their resources' status in one more (a warm search
    of a workspace is those two, BEGIN and COMMIT); rows read once are not read again
    until a write moves the generation; the next snapshot reads the counters again and
    sees another store's write."""
    with Engine(store_path) as a, Engine(store_path) as b:
        a.ingest([_write(tmp_path / "docs", {k: TEXTS[k] for k in ("pumps.txt", "valves.txt")})])
        ws = a.workspace_id
        a.store.search_hits(ws, ["valves"], limit=5)  # warm: scope
        a.store.search_text(ws, ["pressure"], limit=5)  # warm: terms (passages leave the hit rows unread)

        def traced() -> tuple[list[str], list[TextHit]]:
            reads: list[str] = []
            a.store._conn().set_trace_callback(reads.append)
            hits = a.store.search_hits(ws, ["pressure"], limit=5)
            a.store._conn().set_trace_callback(None)
            return reads, hits

        reads, hits = traced()
        assert [p.text.split()[0] for p in hits] == ["Valves", "Pumps"]
        assert [sql.split()[0] for sql in reads] == ["BEGIN", "SELECT", "SELECT", "COMMIT"]
        assert "FROM meta" in reads[1] and "r.status FROM resources" in reads[2]
        again, cached = traced()
        assert cached == hits and [sql.split()[0] for sql in again] == ["BEGIN", "SELECT", "COMMIT"]
        b.ingest([_write(tmp_path / "more", {"notes.txt": TEXTS["notes.txt"]})])
        reads, hits = traced()
        assert len(hits) == 3 and any("r.status FROM resources" in sql for sql in reads)
        assert a.store.search_hits(ws, ["pressure"], limit=5, conditions=[Condition("kind", "eq", ("pdf",))]) == []
        b.delete_resource(next(r.id for r in b.resources() if r.file_name == "valves.txt"))
        assert [h.text.split()[0] for h in a.store.search_hits(ws, ["pressure"], limit=5)] == ["Pressure,", "Pumps"]


def test_select_marks_the_rows_of_the_resources_asked() -> None:
    """select: each row whose resource is one of those asked, from few ids or from many
    (every id, unknown ids too), the same as comparing every row's resource."""
    index = np.array([0, 1, 2, 1, 0, 3, 3], dtype=np.int32)
    ids = ("a", "b", "c", "d")
    for asked in (None, set(), {"a"}, {"b", "d"}, {"x"}, {"a", "b", "c", "d"}, {"a", "b", "c", "d", "x"}):
        expected = [asked is None or ids[i] in asked for i in index]
        assert select(index, ids, asked).tolist() == expected
    assert select(index, ids, {"b", "d"}).tolist() == [False, True, False, True, False, True, True]
    assert select(np.zeros(0, dtype=np.int32), (), {"a"}).tolist() == []


def test_a_scopes_rows_of_some_resources_are_those_its_mask_selects() -> None:
    """Scope.rows_of (one sort of the scope by resource, then the runs of those asked) holds
    the rows Scope.mask marks, grouped by resource in rowid order."""
    scope = Scope(np.array([2, 3, 5, 7, 8, 11], dtype=np.int64), np.array([1, 0, 1, 2, 0, 1], dtype=np.int32),
                  ("a", "b", "c"), False)
    assert scope.rows_of({"b", "c"}).tolist() == [2, 5, 11, 7]
    assert scope.rows_of({"x"}).tolist() == [] and scope.rows_of(set()).dtype == np.int64
    rng = np.random.default_rng(3)
    for _ in range(50):
        n, k = int(rng.integers(0, 60)), int(rng.integers(1, 8))
        rowids = np.sort(rng.choice(200, size=n, replace=False)).astype(np.int64)
        scope = Scope(rowids, rng.integers(0, k, size=n).astype(np.int32), tuple(f"r{i}" for i in range(k)), False)
        asked = {f"r{i}" for i in range(k + 2) if rng.random() < 0.4}
        expected = scope.rowids[scope.mask(asked)[scope.rowids]] if n else np.zeros(0, dtype=np.int64)
        assert sorted(scope.rows_of(asked).tolist()) == expected.tolist()
