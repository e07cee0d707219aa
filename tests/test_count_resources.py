"""``count_resources`` (resource by resource, through the chunk index) counts what its
definition says, a join of every chunk to its ready resource: every filter kind, alone and
in pairs, folders and workspaces, on both stores."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path
from typing import Any

import pytest

from citewell.store import open_store
from citewell.store.base import Condition
from citewell.store.filters import filter_sql
from citewell.models import Resource

from .store_conformance import _extraction
from citewell.store.ids import resource_id_for


def _by_join(store: Any, workspace_id: str, conditions: list[Condition], under: str | None) -> int:
    """The definition, slow and plain: distinct ready resources joined to their chunks, every
    chunk tested against the conditions."""
    where, args = filter_sql(conditions)
    sql = ("SELECT count(DISTINCT r.id) FROM chunks c JOIN resources r ON r.id = c.resource_id "
           "WHERE c.workspace_id = ? AND r.status = 'ready'")
    params: list[Any] = [workspace_id]
    if under is not None:
        prefix = under.rstrip("/") + "/"
        sql += (" AND EXISTS (SELECT 1 FROM files f WHERE f.present = 1 AND f.resource_id = r.id "
                "AND substr(f.path, 1, ?) = ?)")
        params += [len(prefix), prefix]
    return int(store._conn().execute(sql + where, params + args).fetchone()[0])


def _add(store: Any, ws: str, name: str, pieces: list[str], *, kind: str = "text", path: str,
         metadata: dict[str, Any] | None = None) -> Resource:
    """Commit a ready text resource of ``pieces`` (one chunk each) at ``path`` in ``ws``."""
    content = "\n".join(pieces)
    sha = hashlib.sha256((ws + content).encode()).hexdigest()
    resource = Resource(id=resource_id_for(ws, sha), workspace_id=ws, title=name.rsplit(".", 1)[0], file_name=name,
                        kind=kind, media_type="text/plain", sha256=sha, size_bytes=len(content), blob_key=sha,
                        status="ready", extractor_version="v1", metadata=metadata or {})
    return store.commit_resource(ws, resource, _extraction(*pieces, kind=kind), path=path,
                                 size_bytes=len(content), mtime_ns=1)


def test_count_resources_counts_as_a_join_of_every_chunk(store_location: str | Path) -> None:
    """Over 3,000 filter, folder and workspace combinations, with superseded, missing and
    other-workspace resources and chunks carrying post sources and creation times: the same
    counts (0 to 4 and more) as the join."""
    store = open_store(store_location)
    try:
        ws, other = store.workspace_id("acme"), store.workspace_id("beta")
        a = _add(store, ws, "alpha.txt", ["Alpha one.", "Alpha two.", "Alpha three."], path="/x/alpha.txt",
                 metadata={"company_names": ["Acme"], "fiscal_year": 2022, "calendar_date": "2022-12-31",
                           "source": "Filings"})
        b = _add(store, ws, "beta.txt", ["Beta one.", "Beta two."], kind="post", path="/y/sub/beta.txt",
                 metadata={"company_names": ["Globex"], "fiscal_year": 2021, "source": "Twitter"})
        c = _add(store, ws, "gamma.txt", ["Gamma only."], path="/x/gamma.txt",
                 metadata={"company_names": ["Acme", "Globex"], "fiscal_year": 2023})
        d = _add(store, ws, "delta.txt", ["Delta first.", "Delta second."], path="/z/delta.txt")
        # superseded (same path, new content) and missing resources, and another workspace's
        _add(store, ws, "delta.txt", ["Delta changed."], path="/z/delta.txt")
        gone = _add(store, ws, "eps.txt", ["Epsilon."], path="/w/eps.txt", metadata={"fiscal_year": 2022})
        store.mark_missing(ws, "/w", [])
        _add(store, other, "alpha.txt", ["Alpha one.", "Other side."], path="/x/alpha.txt",
             metadata={"company_names": ["Acme"], "fiscal_year": 2022, "source": "Twitter"})
        # chunk-level columns: post sources and creation times on some chunks
        conn = store._conn()
        rows = [(r[0], r[1]) for r in conn.execute("SELECT rowid, resource_id FROM chunks ORDER BY rowid").fetchall()]
        for i, (rowid, rid) in enumerate(rows):
            created = ["2022-06-30T12:00:00Z", "2023-01-15T08:00:00Z", None, "2021-03-01T00:00:00Z"][i % 4]
            source = ["twitter", None, "reddit"][i % 3]
            conn.execute("UPDATE chunks SET created_at = ?, post_source = ? WHERE rowid = ?", (created, source, rowid))
        ids = [a.id, b.id, c.id, d.id, gone.id]
        conditions = [
            Condition("document_name", "eq", ("alpha.txt",)), Condition("document_name", "eq", ("beta", "gamma")),
            Condition("document_name", "eq", ("delta.txt",)), Condition("kind", "eq", ("text",)),
            Condition("kind", "eq", ("post", "pdf")),
            Condition("resource_id", "eq", (a.id,)), Condition("resource_id", "eq", (a.id, gone.id, "nope")),
            Condition("resource_id", "ne", (a.id,)), Condition("resource_id", "ne", ()),
            Condition("resource_id", "ne", tuple(ids)),
            Condition("company_names", "eq", ("acme",)), Condition("company_names", "eq", ("globex",)),
            Condition("fiscal_year", "eq", ("2022",)), Condition("fiscal_year", "ge", ("2022",)),
            Condition("fiscal_year", "le", ("2022",)), Condition("calendar_date", "eq", ("2022",)),
            Condition("created_at", "ge", ("2022-07-01",)), Condition("created_at", "le", ("2022-06-30",)),
            Condition("created_at", "eq", ("2023-01", "2021")), Condition("created_at", "eq", ("1999",)),
            Condition("source", "eq", ("twitter",)), Condition("source", "eq", ("filings",)),
            Condition("source", "eq", ("reddit", "filings")),
        ]
        combos = [[]] + [[x] for x in conditions] + [list(p) for p in itertools.combinations(conditions, 2)]
        checked = 0
        seen: set[int] = set()
        for combo, under in itertools.product(combos, [None, "/x", "/y", "/y/sub/", "/z", "/w", "/nope"]):
            for workspace in (ws, other):
                new = store.count_resources(workspace, conditions=combo, under=under)
                old = _by_join(store, workspace, combo, under)
                assert new == old, (workspace == ws, combo, under, new, old)
                checked += 1
                seen.add(new)
        assert checked > 3000 and seen >= {0, 1, 2, 3}, seen
        assert store.count_resources(ws, conditions=[Condition("source", "eq", ("reddit",))]) == 3
    finally:
        store.close()
