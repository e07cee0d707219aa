"""The PostgreSQL store so far (citewell.store.postgres): its schema is the SQLite store's
(the same SQLAlchemy Core tables and Alembic revisions), and the concerns it has pass the
conformance suite (tests/store_conformance.py) on a server the session starts itself."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import numpy as np
import psycopg
import pytest

from citewell.errors import StoreError, StoreUnavailable
from citewell.store.migrate import HEAD, SCHEMA_VERSION
from citewell.store.ids import text_hash
from citewell.store.postgres import PostgresStore, safe_location
from citewell.store.postgres.vectors import index_name
from citewell.store.tables import metadata

from .conftest import sql_rows
from .pgserver import PostgresServer
from citewell.store.base import Condition
from citewell.store.sqlite import SQLiteStore

from .store_conformance import (ChatsContract, EventsContract, IsolationContract, JobsContract, KeysContract,
                                MentionsContract,
                                ResourcesContract, SearchContract, TrackingContract, UploadsContract,
                                VectorsContract, ingest)


@pytest.fixture
def store(postgres_server: PostgresServer) -> Iterator[PostgresStore]:
    """A PostgreSQL store in a new database."""
    opened = PostgresStore(postgres_server.new_database())
    yield opened
    opened.close()


class TestPostgresKeys(KeysContract):
    pass


class TestPostgresJobs(JobsContract):
    pass


class TestPostgresEvents(EventsContract):
    pass


class TestPostgresChats(ChatsContract):
    pass


class TestPostgresResources(ResourcesContract):
    pass


class TestPostgresUploads(UploadsContract):
    pass


class TestPostgresSearch(SearchContract):
    pass


class TestPostgresMentions(MentionsContract):
    pass


class TestPostgresVectors(VectorsContract):
    pass


class TestPostgresTracking(TrackingContract):
    pass


class TestPostgresIsolation(IsolationContract):
    pass


DOCUMENTS = {
    "capex.txt": ["3M's capital expenditure in FY2022 was $1,749 million, up from $1,603 million.",
                  "Purchases of property, plant and equipment (PP&E) rose; the U.S. segment led.",
                  "Café revenue, net of returns: see the 10-K filing for FY2022 and FY2021."],
    "pumps.txt": ["Pumps run at forty bar; pumping stations pump water to the plant.",
                  "The U.S. pumps segment's capital expenditure fell in FY2021.",
                  "Revenue from pumps grew 12% year over year, pumps pumps."],
    "notes.txt": ["Notes to the financial statements: property and equipment, depreciation.",
                  "Expenditure on research and development, 10-K item 7."],
}


def test_lexical_rankings_are_the_same_on_both_stores(postgres_server: PostgresServer, tmp_path) -> None:
    """BM25 on PostgreSQL ranks exactly as FTS5's bm25(): the same passages, order and scores,
    from the cached ranking (resource-level filters) and the SQL one (chunk-level filters)."""
    lite = SQLiteStore(tmp_path / "s.sqlite")
    pg = PostgresStore(postgres_server.new_database())
    for store in (lite, pg):
        for name in ("other", "acme"):  # two workspaces: the statistics are store-wide on both
            ws = store.workspace_id(name)
            for file_name, pieces in DOCUMENTS.items():
                ingest(store, ws, file_name, *pieces, path=f"/{name}/{file_name}",
                       metadata={"fiscal_year": 2022} if file_name == "capex.txt" else None)
    queries = [["capital", "expenditure"], ["pumps"], ["u.s.", "segment"], ["10-k", "fy2022"], ["café"],
               ["property", "plant", "equipment"], ["nothing", "matches", "zzz"], ["pump", "pumps", "pumping"]]
    filters = [(), [Condition("fiscal_year", "eq", ("2022",))], [Condition("created_at", "ge", ("2000-01-01",))],
               [Condition("document_name", "eq", ("pumps.txt",))]]
    for store_pair in [(lite, pg)]:
        a, b = (s.workspace_id("acme") for s in store_pair)
        for terms in queries:
            for conditions in filters:
                got = [[(p.file_name, p.chunk.chunk_index, p.score, p.rank)  # ids differ: workspace ids are random
                        for p in s.search_text(ws, terms, limit=4, conditions=conditions)]
                       for s, ws in ((lite, a), (pg, b))]
                assert got[0] == got[1], (terms, conditions)
        groups = [["capital"], ["capital", "expenditure"], ["u.s."], ["pumps"], ["zzz"]]
        assert lite.term_counts(a, groups) == pg.term_counts(b, groups) == (8, [2, 2, 2, 3, 0])  # "pumps" is stemmed: three texts say pump(s)
    assert lite.search_text(a, ["pumps"], limit=4)[0].score > 0  # real scores were compared
    lite.close()
    pg.close()


def _columns(url: str) -> dict[str, list[tuple[str, str]]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE "
                            "table_schema = 'public' ORDER BY table_name, ordinal_position").fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, nullable in rows:
        out.setdefault(table, []).append((column, nullable))
    return out


def test_the_schema_is_the_tables_and_opening_again_changes_nothing(postgres_server: PostgresServer) -> None:
    url = postgres_server.new_database()
    PostgresStore(url).close()
    columns = _columns(url)
    # the shared tables, Alembic's, and the lexical index's own (a dialect piece)
    assert set(columns) == set(metadata.tables) | {"alembic_version", "lexical_postings", "lexical_docs"}
    for name, table in metadata.tables.items():
        own = [("embedding", "YES")] if name == "chunk_vectors" else []  # the vector index's column (v11)
        assert columns[name] == [(c.name, "YES" if c.nullable else "NO") for c in table.columns] + own
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD,)]
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    store = PostgresStore(url)  # at the newest revision: only read
    assert store.workspace_id("acme") == store.workspace_id("acme")
    store.close()


def test_other_databases_and_newer_stores_are_refused(postgres_server: PostgresServer) -> None:
    url = postgres_server.new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x int)")
    with pytest.raises(StoreError, match="not a citewell store"):
        PostgresStore(url)
    newer = postgres_server.new_database()
    PostgresStore(newer).close()
    with psycopg.connect(newer, autocommit=True) as conn:
        conn.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}"):
        PostgresStore(newer)
    with pytest.raises(StoreError, match="cannot open the store postgresql://postgres@127.0.0.1"):
        PostgresStore(postgres_server.url("no_such_database"))


def test_errors_never_show_the_password() -> None:
    assert safe_location("postgresql://app:s3cret@db.internal:5433/citewell") == \
        "postgresql://app@db.internal:5433/citewell"
    assert safe_location("postgresql://app@db/citewell") == "postgresql://app@db/citewell"


def test_each_database_keeps_its_own_blob_folder(postgres_server: PostgresServer, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The default blob folder names the database the connection reached (libpq's
    environment defaults too), so two databases reached by the same URL text never share
    one; the name is fixed in the store when it first opens, and a store of before the rule
    whose originals are in the folder of its old name keeps that folder."""
    from urllib.parse import urlsplit, urlunsplit

    from citewell import Engine
    from citewell.store import open_store
    from citewell.store.postgres import BLOB_FOLDER, blob_root, legacy_blob_folder_name

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("CITEWELL_BLOBS", raising=False)
    first, second = postgres_server.new_database(), postgres_server.new_database()
    parts = urlsplit(first)
    bare = urlunsplit((parts.scheme, parts.netloc, "", "", ""))  # no database: PGDATABASE's
    roots = []
    for url in (first, second):
        monkeypatch.setenv("PGDATABASE", url.rsplit("/", 1)[1])
        with closing(open_store(bare)) as store:
            roots.append(store.blobs.root)
            assert sql_rows(url, "SELECT value FROM meta WHERE key = ?", BLOB_FOLDER) == [(roots[-1].name,)]
    monkeypatch.delenv("PGDATABASE")
    assert roots[0] != roots[1] and [r.name.rsplit("-", 1)[1] for r in roots] == \
        [first.rsplit("/", 1)[1], second.rsplit("/", 1)[1]]
    # fixed: the same database by another name of its host keeps its folder
    other_host = first.replace("127.0.0.1", "localhost")
    with closing(open_store(other_host)) as store:
        assert store.blobs.root == roots[0]
    # a store of before the rule, with originals, whose old folder exists: that folder
    legacy_url = postgres_server.new_database()
    name = legacy_url.rsplit("/", 1)[1]
    by_query = urlunsplit((parts.scheme, parts.netloc, "", f"dbname={name}", ""))
    old_name = legacy_blob_folder_name(by_query)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "pumps.txt").write_text("Pumps move water uphill.\n")
    with Engine(open_store(legacy_url, blobs=blob_root() / old_name)) as engine:
        engine.ingest([tmp_path / "docs"])
    sql_rows(legacy_url, "DELETE FROM meta WHERE key = ?", BLOB_FOLDER)
    with closing(open_store(by_query)) as store:
        assert store.blobs.root == blob_root() / old_name != blob_root() / f"127.0.0.1-{parts.port}-{name}"
        resource = store.resources(store.workspace_ids()[0])[0]
        assert store.blobs.exists(resource.blob_key)


def test_open_store_opens_urls_and_chooses_the_blob_folder(postgres_server: PostgresServer, tmp_path,
                                                          monkeypatch) -> None:
    from citewell.store import open_store
    from citewell.store.postgres import blob_folder_name, blob_root

    url = postgres_server.new_database()
    monkeypatch.delenv("CITEWELL_BLOBS", raising=False)
    explicit = open_store(url.replace("postgresql://", "postgres://"), blobs=tmp_path / "given")
    assert isinstance(explicit, PostgresStore) and explicit.url == url
    assert explicit.blobs.root == tmp_path / "given"
    explicit.close()
    port = url.split(":")[-1].split("/")[0]
    default = open_store(url)
    assert default.blobs.root == blob_root() / f"127.0.0.1-{port}-{url.rsplit('/', 1)[1]}"
    default.close()
    # the name of a connection as libpq made it: a socket directory, query parameters
    assert blob_folder_name("/var/run/postgresql", 5432, "app") == "_var_run_postgresql-5432-app"
    assert blob_folder_name("db.example", "6001", "app") == "db.example-6001-app"
    monkeypatch.setenv("CITEWELL_BLOBS", str(tmp_path / "env"))
    from_env = open_store(url)
    assert from_env.blobs.root == tmp_path / "env"
    from_env.close()
    lite = open_store(tmp_path / "s" / "citewell.sqlite")  # the setting applies to every store
    assert isinstance(lite, SQLiteStore) and lite.blobs.root == tmp_path / "env"
    lite.close()
    monkeypatch.delenv("CITEWELL_BLOBS")
    lite = open_store(tmp_path / "s" / "citewell.sqlite")
    assert isinstance(lite, SQLiteStore) and lite.blobs.root == tmp_path / "s" / "citewell.blobs"
    lite.close()


def test_an_engine_on_a_url_ingests_and_answers(postgres_server: PostgresServer, tmp_path, monkeypatch) -> None:
    from citewell import Engine

    from .conftest import CORPUS

    monkeypatch.setenv("CITEWELL_BLOBS", str(tmp_path / "blobs"))
    with Engine(postgres_server.new_database()) as engine:
        report = engine.ingest([CORPUS / "pdf" / "3M_2022_10K.pdf"])
        assert [o.action for o in report.outcomes] == ["ingested"]
        answer = engine.ask("What was 3M's capital expenditure in FY2022?")
        assert "1,749" in answer.text and answer.citations and answer.status == "settled"
        resource = engine.store.resources(engine.workspace_id)[0]
        assert (tmp_path / "blobs" / resource.blob_key).is_file()


def _random_store(store: SQLiteStore | PostgresStore, rng: np.random.Generator, vectors: np.ndarray) -> str:
    """Workspace ``acme`` with two other resources' worth of chunks in workspace ``other``
    (same texts: vectors are per workspace), every text with a row of ``vectors`` (unit
    rows); a third of acme's chunks in ``b.txt``, with fiscal year 2021."""
    texts = [f"passage number {i} about topic {i % 7}" for i in range(len(vectors))]
    for name in ("other", "acme"):
        ws = store.workspace_id(name)
        third = len(texts) // 3
        ingest(store, ws, "a.txt", *texts[third:], path=f"/{name}/a.txt")
        ingest(store, ws, "b.txt", *texts[:third], path=f"/{name}/sub/b.txt", metadata={"fiscal_year": 2021})
        store.put_vectors(ws, "m", vectors.shape[1], [(text_hash(t), v.tobytes()) for t, v in zip(texts, vectors)])
    return store.workspace_id("acme")


def test_dense_top_k_on_postgresql_is_exact_search_on_a_small_store(postgres_server: PostgresServer,
                                                                   tmp_path) -> None:
    """pgvector's HNSW ranking (the index forced on: the planner would rank a store this
    small exactly by itself) gives the exact search's chunks, in the same order, with the
    same cosines, over the workspace, with filters and under a folder."""
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(300, 16)).astype("<f4")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    lite = SQLiteStore(tmp_path / "s.sqlite")
    pg = PostgresStore(postgres_server.new_database())
    a, b = _random_store(lite, rng, vectors), _random_store(pg, rng, vectors)
    pg._conn().execute("SET enable_seqscan = off")  # this thread's connection: the index path
    sql, params = pg._nearest_sql(b, "m", 16, (), None, indexed=True)
    with pg._snapshot() as conn:
        plan = "\n".join(row[0] for row in conn.execute(
            "EXPLAIN " + sql, ["[" + ",".join(["0.25"] * 16) + "]", *params, 10]).fetchall())
    assert index_name("m", 16) in plan
    scopes = [{}, {"conditions": [Condition("fiscal_year", "eq", ("2021",))]},
              {"conditions": [Condition("document_name", "eq", ("a.txt",))]}, {"under": "/acme/sub"}]
    for query in rng.normal(size=(8, 16)).astype("<f4"):
        query /= np.linalg.norm(query)
        for scope in scopes:
            for k in (1, 10, 40):
                exact = lite.nearest_chunks(a, "m", query, limit=k, **scope)
                got = pg.nearest_chunks(b, "m", query, limit=k, **scope)
                assert len(got) == len(exact) == k, (len(got), len(exact), scope, k)
                # chunk ids are made from the workspace id: compare texts' places, and cosines
                ids = {c.id: c.chunk_index for s, ws in ((lite, a), (pg, b)) for c in s.chunks(ws, [x for x, _ in (
                    exact if s is lite else got)]).values() for c in [c.chunk]}
                assert [ids[c] for c, _ in got] == [ids[c] for c, _ in exact], (scope, k)
                assert np.allclose([s for _, s in got], [s for _, s in exact], atol=1e-5)
    assert pg.nearest_chunks(b, "m", query, limit=5, conditions=[Condition("fiscal_year", "eq", ("1999",))]) == []
    lite.close()
    pg.close()


def test_a_v10_store_gets_its_vector_column_and_indexes(postgres_server: PostgresServer) -> None:
    """Revision v11 on a PostgreSQL store of v10: the vectors already stored fill the new
    column (the same float32 values) and their model's HNSW index is made."""
    url = postgres_server.new_database()
    store = PostgresStore(url)
    ws = store.workspace_id("acme")
    resource = ingest(store, ws, "v.txt", "Alpha text.", "Beta text.")
    store.put_vectors(ws, "m", 3, [(text_hash("Alpha text."), np.array([0.1, 0.2, 0.3], "<f4").tobytes()),
                                   (text_hash("Beta text."), np.array([1 / 3, 0.5, 0.7], "<f4").tobytes())])
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:  # back to v10
        conn.execute(f"DROP INDEX {index_name('m', 3)}")
        conn.execute("ALTER TABLE chunk_vectors DROP COLUMN embedding")
        conn.execute("DROP TABLE jobs, job_lanes")  # v12's
        conn.execute("ALTER TABLE lexical_postings DROP CONSTRAINT lexical_postings_pkey, "  # v13's
                     "DROP COLUMN freq, DROP COLUMN doclen, ADD PRIMARY KEY (term, rowid, col)")
        conn.execute("UPDATE alembic_version SET version_num = 'v10'")
        conn.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
    store = PostgresStore(url)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD,)]
        assert conn.execute("SELECT count(*) FROM jobs").fetchone() == (0,)  # and v12 made the jobs' tables
        rows = conn.execute("SELECT embedding::text, vector FROM chunk_vectors ORDER BY text_hash").fetchall()
        assert [np.array(e.strip("[]").split(","), "<f4").tobytes() for e, _ in rows] == [bytes(v) for _, v in rows]
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = %s",
                            (index_name("m", 3),)).fetchone() == (1,)
    chunks = store.resource_chunks(ws, resource.id)
    best = store.nearest_chunks(ws, "m", np.array([1, 1.5, 2.1], "<f4") / np.linalg.norm([1, 1.5, 2.1]), limit=2)
    assert [cid for cid, _ in best] == [chunks[1].id, chunks[0].id] and abs(best[0][1] - 1.0) < 1e-6
    store.close()


def test_a_v12_store_gets_the_counts_of_its_postings(postgres_server: PostgresServer) -> None:
    """Revision v13 on a PostgreSQL store of v12: every posting gets its number of positions
    and its row's tokens, the primary key includes both, and BM25 ranks as before."""
    url = postgres_server.new_database()
    store = PostgresStore(url)
    ws = store.workspace_id("acme")
    for file_name, pieces in DOCUMENTS.items():
        ingest(store, ws, file_name, *pieces)
    queries = [["pumps"], ["u.s.", "segment"], ["capital", "expenditure"]]
    before = [[(p.chunk.id, p.score) for p in store.search_text(ws, q, limit=4)] for q in queries]
    with psycopg.connect(url) as conn:
        counts = conn.execute("SELECT term, rowid, col, freq, doclen FROM lexical_postings ORDER BY 1, 2, 3").fetchall()
    assert ("pump", ) in {(row[0],) for row in counts} and any(row[3] == 3 for row in counts)  # "pumps pumps" and one more
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:  # back to v12
        conn.execute("ALTER TABLE lexical_postings DROP CONSTRAINT lexical_postings_pkey, "
                     "DROP COLUMN freq, DROP COLUMN doclen, ADD PRIMARY KEY (term, rowid, col)")
        conn.execute("UPDATE alembic_version SET version_num = 'v12'")
        conn.execute("UPDATE meta SET value = '12' WHERE key = 'schema_version'")
    store = PostgresStore(url)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD,)] and HEAD == "v13"
        assert conn.execute("SELECT term, rowid, col, freq, doclen FROM lexical_postings "
                            "ORDER BY 1, 2, 3").fetchall() == counts
        key = conn.execute("SELECT pg_get_indexdef('lexical_postings_pkey'::regclass)").fetchone()[0]
        assert key.endswith("(term, rowid, col) INCLUDE (freq, doclen)")
    assert [[(p.chunk.id, p.score) for p in store.search_text(ws, q, limit=4)] for q in queries] == before
    assert all(before)
    store.close()


def test_financebench_dev_questions_rank_the_same_on_both_stores(postgres_server: PostgresServer, tmp_path,
                                                                 monkeypatch) -> None:
    """Lexical mode, top 20, every FinanceBench dev question with its document filter and
    without: the same passages (file, offsets), order and scores on both stores, each
    filled by the engine's own ingest of the 14 dev filings."""
    import json

    from citewell import Engine
    from citewell.eval.dataset import load_questions

    from .conftest import CORPUS

    eval_dir = CORPUS / "eval"
    pdfs = sorted({CORPUS / json.loads(line)["pdf_path"]
                   for line in (eval_dir / "financebench_dev_docs.jsonl").read_text().splitlines() if line.strip()})
    questions = load_questions(eval_dir / "financebench_dev.jsonl")
    assert len(pdfs) == 14 and len(questions) == 39
    monkeypatch.setenv("CITEWELL_BLOBS", str(tmp_path / "pg.blobs"))
    with Engine(tmp_path / "s.sqlite", mode="lexical") as lite, \
            Engine(postgres_server.new_store(), mode="lexical") as pg:
        found: dict[str, list] = {}
        for name, engine in (("sqlite", lite), ("postgresql", pg)):
            report = engine.ingest(pdfs)
            assert [o.action for o in report.outcomes] == ["ingested"] * 14, name
            found[name] = [[(p.file_name, p.chunk.char_start, p.chunk.char_end, p.score, p.rank)
                            for p in engine.retrieve(q.text, k=20, filters=q.query_filters(filter_doc))]
                           for q in questions for filter_doc in (True, False)]
    differ = [questions[i // 2].id for i, (a, b) in enumerate(zip(found["sqlite"], found["postgresql"])) if a != b]
    assert differ == []
    assert len(found["sqlite"]) == 78 and all(found["sqlite"])
    assert sum(len(top) == 20 for top in found["sqlite"]) >= 39  # real rankings were compared


def _backends(conn: psycopg.Connection) -> int:
    """The store's connections (``application_name`` citewell) to the database of ``conn``."""
    return int(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                            "AND application_name = 'citewell'").fetchone()[0])


def test_threads_share_a_bounded_pool_and_a_lost_connection_is_replaced(postgres_server: PostgresServer,
                                                                        monkeypatch) -> None:
    """Eight threads reading and writing through one store open at most
    CITEWELL_PG_POOL_SIZE connections, every answer right; after the server drops them all
    (a restart), the next read and the next write succeed on new connections."""
    import threading
    import time

    monkeypatch.setenv("CITEWELL_PG_POOL_SIZE", "2")
    url = postgres_server.new_database()
    store = PostgresStore(url)
    ws = store.workspace_id("acme")
    for file_name, pieces in DOCUMENTS.items():
        ingest(store, ws, file_name, *pieces)
    expected = [p.chunk.id for p in store.search_text(ws, ["pumps"], limit=3)]
    seen: list[int] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def watch() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            while not stop.is_set():
                seen.append(_backends(conn))

    def work(n: int) -> None:
        try:
            for i in range(15):
                assert [p.chunk.id for p in store.search_text(ws, ["pumps"], limit=3)] == expected
                assert store.workspace_name(store.workspace_id(f"w{n}-{i}")) == f"w{n}-{i}"
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    watcher = threading.Thread(target=watch)
    watcher.start()
    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    assert errors == []
    assert len(store.workspace_ids()) == 1 + 8 * 15
    assert seen and max(seen) <= 2 and max(seen) >= 1  # never more than the pool's size
    with psycopg.connect(url, autocommit=True) as conn:  # the server drops every connection of the store
        dropped = conn.execute("SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE datname = current_database() AND pid <> pg_backend_pid()) t").fetchone()[0]
    assert dropped >= 1
    assert [p.chunk.id for p in store.search_text(ws, ["pumps"], limit=3)] == expected
    assert store.workspace_name(store.workspace_id("after")) == "after"
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:  # close ends every connection (the server notices soon)
        for _ in range(100):
            if not _backends(conn):
                break
            time.sleep(0.05)
        assert _backends(conn) == 0


def test_a_bad_pool_size_is_a_store_error(postgres_server: PostgresServer, monkeypatch) -> None:
    """CITEWELL_PG_POOL_SIZE must be a positive integer: STORE_ERROR naming it when the
    store opens (its pool is made then) otherwise."""
    url = postgres_server.new_database()
    monkeypatch.setenv("CITEWELL_PG_POOL_SIZE", "0")
    with pytest.raises(StoreError, match="CITEWELL_PG_POOL_SIZE must be a positive integer, not '0'") as info:
        PostgresStore(url)
    assert info.value.code == "STORE_ERROR"
    monkeypatch.setenv("CITEWELL_PG_POOL_SIZE", "²")  # a digit to str.isdigit, not to int()
    with pytest.raises(StoreError, match="CITEWELL_PG_POOL_SIZE must be a positive integer, not '²'"):
        PostgresStore(url)
    monkeypatch.setenv("CITEWELL_PG_POOL_SIZE", "2")
    store = PostgresStore(url)
    assert store.workspace_ids() == [] and store._pool().max_size == 2
    store.close()


def test_a_thread_waits_for_a_free_connection_then_gets_a_store_error(postgres_server: PostgresServer,
                                                                      monkeypatch) -> None:
    """With every pooled connection held by an open transaction, another thread's read
    waits the pool's timeout and fails with STORE_ERROR naming the setting; once the
    transaction ends, reads work again."""
    import threading

    from citewell.store.postgres import connection

    monkeypatch.setenv("CITEWELL_PG_POOL_SIZE", "1")
    monkeypatch.setattr(connection, "POOL_TIMEOUT_S", 0.5)
    store = PostgresStore(postgres_server.new_database())
    ws = store.workspace_id("acme")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store._write():
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(30)
    try:
        with pytest.raises(StoreError, match=r"no connection to the store was free within 0.5 s \(1 at most, "
                                             r"CITEWELL_PG_POOL_SIZE\)") as info:
            store.workspace_name(ws)
        assert info.value.code == "STORE_ERROR"
    finally:
        release.set()
        holder.join()
    assert store.workspace_name(ws) == "acme"
    store.close()


def test_a_token_longer_than_a_btree_entry_is_indexed_and_ranked_as_on_sqlite(postgres_server: PostgresServer,
                                                                               tmp_path) -> None:
    """A run of 1,000 CJK characters is one FTS5 token of 3,000 UTF-8 bytes, more than a
    PostgreSQL btree entry holds: the chunk is indexed all the same (keyed by a digest),
    found by that token and by its neighbours, with SQLite's passages, order and scores."""
    long_token = "漢字" * 500
    pieces = [f"Intro {long_token} outro text.", "Other text about outro.", f"{long_token}"]
    lite = SQLiteStore(tmp_path / "s.sqlite")
    pg = PostgresStore(postgres_server.new_database())
    got = []
    for store in (lite, pg):
        ws = store.workspace_id("acme")
        ingest(store, ws, "cjk.txt", *pieces)
        got.append([[(p.chunk.chunk_index, p.score) for p in store.search_text(ws, q, limit=4)]
                    for q in ([long_token], ["outro"], [f"intro {long_token}"], ["漢字"])])
    assert got[0] == got[1]
    assert [i for i, _ in got[0][0]] == [2, 0] and [i for i, _ in got[0][1]] == [0, 1] and got[0][3] == []
    lite.close()
    pg.close()


def test_a_snapshot_whose_connection_drops_reports_why(postgres_server: PostgresServer) -> None:
    """The server ends the connection of an open read snapshot: the next read inside it
    (which cannot run again outside its snapshot) fails with STORE_UNAVAILABLE carrying the
    server's reason (not with a second error from ending the snapshot), and the store works
    again afterwards on a new connection."""
    url = postgres_server.new_database()
    store = PostgresStore(url)
    ws = store.workspace_id("acme")
    with pytest.raises(StoreUnavailable) as info:
        with store._snapshot() as conn:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            with psycopg.connect(url, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", (pid,))
            conn.execute("SELECT 1").fetchone()
    assert info.value.code == "STORE_UNAVAILABLE"
    assert "the connection was lost: terminating connection due to administrator command" in info.value.message
    assert isinstance(info.value.__cause__, psycopg.OperationalError)
    assert store.workspace_name(ws) == "acme"
    store.close()
