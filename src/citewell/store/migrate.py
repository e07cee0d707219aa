"""Schema migrations with Alembic, for every database.

Revisions live in ``citewell/store/migrations/versions/`` and are named after the schema
version they bring (``v10`` is the baseline: the schema citewell's own migrations v1–v10
made, see :mod:`citewell.store.sqlite.schema`; ``v11`` adds PostgreSQL's vector column,
``v12`` the jobs, ``v13`` the counts of PostgreSQL's lexical postings). :func:`upgrade` runs
inside the caller's transaction (a dialect holds its lock around it: ``BEGIN IMMEDIATE``
on SQLite), so concurrent openers migrate once:

- a store with no tables: the tables of :mod:`citewell.store.tables` are created and the
  store stamped at the newest revision (Alembic's "build from scratch" way: creating and
  then replaying every revision would apply later columns twice);
- a store without Alembic's ``alembic_version`` (made by citewell's own migrations, now at
  v10): stamped at the baseline, then upgraded;
- otherwise: upgraded from its revision to the newest; a revision this citewell does not
  know (a newer citewell migrated the store) raises :class:`~citewell.errors.StoreError`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StoreError

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from sqlalchemy import Connection

#: the folder of the Alembic script directory (``versions/`` inside)
MIGRATIONS = Path(__file__).parent / "migrations"
#: the revision every store of citewell's own migrations is at (schema v10)
BASELINE = "v10"
#: the newest revision, which a store that needs nothing is at: opening such a store reads
#: it and imports neither Alembic nor SQLAlchemy (a second of start-up on a busy machine);
#: a test holds it equal to the script directory's head
HEAD = "v13"
#: the schema version of :data:`HEAD` (``v10`` → 10): what table ``meta`` records as
#: ``schema_version``, so that a citewell of before Alembic refuses a newer store
SCHEMA_VERSION = int(HEAD.lstrip("v"))


def store_state(conn: Any, tables_sql: str) -> tuple[set[str], int, str | None]:
    """``(tables, schema_version, Alembic revision)`` of the database on ``conn`` (a DB-API
    connection with ``execute(sql)``: sqlite3's or psycopg's), read before migrating:
    ``tables_sql`` lists the names of its tables (the dialect's catalogue query);
    ``schema_version`` is table ``meta``'s (0 when not recorded), the revision
    ``alembic_version``'s (None when not recorded)."""
    tables = {row[0] for row in conn.execute(tables_sql).fetchall()}
    version = revision = None
    if "meta" in tables:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if "alembic_version" in tables:
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return tables, int(version[0]) if version else 0, revision[0] if revision else None


def check_state(location: str, tables: set[str], version: int, *, database: str, option: str) -> None:
    """Refuse a database that is not a citewell store or is newer than this citewell:
    :class:`StoreError` when it has ``tables`` but no ``meta`` ("<location> is
    <database> but not a citewell store; choose another <option>") or its schema
    ``version`` is above :data:`SCHEMA_VERSION` (the rule citewell kept since v1)."""
    if tables and "meta" not in tables:
        raise StoreError(f"{location} is {database} but not a citewell store; choose another {option}")
    if version > SCHEMA_VERSION:
        raise StoreError(f"the store {location} has schema version {version}; this citewell reads up to "
                         f"{SCHEMA_VERSION}: upgrade citewell")


def _config() -> Config:
    """citewell's Alembic configuration (no ``alembic.ini``: the location is the package's)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def script_directory() -> ScriptDirectory:
    """citewell's Alembic script directory (no ``alembic.ini``: the location is the package's)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config())


def upgrade(connection: Connection, *, fresh: bool, location: str,
            create_extra: Callable[[Connection], None] | None = None) -> None:
    """Bring the store on ``connection`` to the newest revision inside the open transaction.

    ``fresh``: the store has no tables yet (they are created, then stamped);
    ``create_extra``: the dialect's own structures of a fresh store (its lexical index),
    called after the tables. ``location`` names the store in errors. Raises
    :class:`StoreError` for a revision this citewell does not know. Alembic and the tables
    are imported here, when a store needs them (see :data:`HEAD`).
    """
    from alembic.runtime.environment import EnvironmentContext
    from alembic.runtime.migration import MigrationContext
    from alembic.util import CommandError

    from .tables import metadata

    script = script_directory()
    context = MigrationContext.configure(connection)
    if fresh:
        metadata.create_all(connection)
        if create_extra is not None:
            create_extra(connection)
        context.stamp(script, "head")
        return
    current = context.get_current_revision()
    if current is None:
        context.stamp(script, BASELINE)
        current = BASELINE
    try:
        script.get_revision(current)
    except CommandError as exc:
        raise StoreError(f"the store {location} is at schema revision {current}, unknown to this citewell "
                         f"(it knows up to {HEAD}): upgrade citewell") from exc
    if current == script.get_current_head():
        return
    env = EnvironmentContext(_config(), script, fn=lambda rev, _: script._upgrade_revs("head", rev),
                             destination_rev="head")
    with env:
        env.configure(connection=connection, target_metadata=metadata)
        env.run_migrations()


__all__ = ["BASELINE", "HEAD", "MIGRATIONS", "SCHEMA_VERSION", "check_state", "script_directory", "store_state",
           "upgrade"]
