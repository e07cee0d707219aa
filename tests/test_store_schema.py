"""The store's schema: SQLAlchemy Core tables and Alembic revisions (citewell.store.tables,
citewell.store.migrate) give a new SQLite store the schema an old store reaches by its own
migrations, and an old store upgrades in place on open."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from citewell.errors import StoreError
from citewell.store.migrate import BASELINE, HEAD, SCHEMA_VERSION, script_directory
from citewell.store.sqlite import SQLiteStore
from citewell.store.sqlite import schema as sqlite_schema


def _legacy(path: Path, version: int) -> None:
    """An empty store of schema ``version`` as citewell's own migrations made it."""
    conn = sqlite3.connect(path)
    conn.create_function("citewell_sha256", 1, lambda t: hashlib.sha256(t.encode()).hexdigest())
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for target, script in sqlite_schema._MIGRATIONS:
        if target <= version:
            if callable(script):
                conn.row_factory = sqlite3.Row
                script(conn)
                continue
            for statement in script.split(";\n"):
                if statement.strip():
                    conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(version),))
    conn.commit()
    conn.close()


def _shape(path: Path) -> dict[str, object]:
    """Every table's columns ``(name, type, default, pk position)`` and every index's
    ``(table, columns, unique)``; the FTS5 index's shadow tables and Alembic's table aside
    (``NOT NULL`` is left out: a new store's primary keys are also NOT NULL, see
    citewell.store.tables)."""
    conn = sqlite3.connect(path)
    try:
        shape: dict[str, object] = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                    "'chunk_fts_%' AND name != 'alembic_version' ORDER BY name"):
            shape[name] = [(r[1], r[2], r[4], r[5]) for r in conn.execute(f"PRAGMA table_info('{name}')")]
            for index in conn.execute(f"PRAGMA index_list('{name}')"):
                columns = [r[2] for r in conn.execute(f"PRAGMA index_info('{index[1]}')")]
                key = index[1] if not index[1].startswith("sqlite_autoindex") else f"{name}:{','.join(columns)}"
                shape[f"index {key}"] = (name, columns, index[2])
        fts = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunk_fts'").fetchone()
        shape["fts"] = "".join(fts[0].split()) if fts else None  # the same statement, however laid out
        return shape
    finally:
        conn.close()


def _meta(path: Path) -> tuple[str, str]:
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
        return version, revision
    finally:
        conn.close()


def test_head_is_the_script_directorys() -> None:
    assert HEAD == script_directory().get_current_head()
    assert SCHEMA_VERSION == int(HEAD.lstrip("v"))
    assert script_directory().get_revision(BASELINE).down_revision is None


@pytest.mark.parametrize("version", [1, 4, 8, 9, 10])
def test_a_new_store_has_the_schema_an_old_store_upgrades_to(tmp_path: Path, version: int) -> None:
    SQLiteStore(tmp_path / "new.sqlite").close()
    _legacy(tmp_path / "old.sqlite", version)
    SQLiteStore(tmp_path / "old.sqlite").close()
    new, old = _shape(tmp_path / "new.sqlite"), _shape(tmp_path / "old.sqlite")
    assert new.keys() == old.keys()
    assert "index chunks_by_post" in new and "chunk_vectors" in new and new["fts"] is not None
    assert {k: v for k, v in new.items() if v != old[k]} == {}
    assert _meta(tmp_path / "new.sqlite") == _meta(tmp_path / "old.sqlite") == (str(SCHEMA_VERSION), HEAD)


def test_the_rowid_of_a_new_store_is_sqlites(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    conn = store._conn()
    conn.execute("INSERT INTO chunks (id, workspace_id, resource_id, chunk_index, text, text_type, char_start, "
                 "char_end, metadata) VALUES ('c', 'w', 'r', 0, 't', 'text', 0, 1, '{}')")
    assert tuple(conn.execute("SELECT rowid, _rowid_ FROM chunks").fetchone()) == (1, 1)


def test_an_old_store_upgrades_in_place_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _legacy(path, 8)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO workspaces VALUES ('ws', 'default', '2024-01-01T00:00:00+00:00')")
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    assert store.workspace_id("default", create=False) == "ws"
    assert _meta(path) == (str(SCHEMA_VERSION), HEAD)
    store.close()
    SQLiteStore(path).close()  # opened again: nothing to do
    assert _meta(path) == (str(SCHEMA_VERSION), HEAD)


def test_a_store_of_an_unknown_revision_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE alembic_version SET version_num = 'v99'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="revision v99, unknown to this citewell"):
        SQLiteStore(path)


def test_a_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}"):
        SQLiteStore(path)


def test_other_files_are_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="is not a citewell store"):
        SQLiteStore(junk)
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a citewell store; choose another"):
        SQLiteStore(other)


def test_citewell_migrate_upgrades_a_store_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from citewell.cli.app import main

    path = tmp_path / "old.sqlite"
    _legacy(path, 5)
    with pytest.raises(SystemExit) as done:
        main(["migrate", "--store", str(path)])
    assert done.value.code in (0, None)
    assert capsys.readouterr().out == f"store {path.resolve()}: schema revision {HEAD} (version {SCHEMA_VERSION})\n"
    assert _meta(path) == (str(SCHEMA_VERSION), HEAD)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(SystemExit) as failed:
        main(["migrate", "--store", str(junk)])
    assert failed.value.code == 1
    assert "is not a citewell store" in capsys.readouterr().err
