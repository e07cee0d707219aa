"""The store conformance suite (tests/store_conformance.py) on the embedded SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from citewell.store.sqlite import SQLiteStore

from .store_conformance import (ChatsContract, EventsContract, IsolationContract, JobsContract, KeysContract,
                                MentionsContract,
                                ResourcesContract, SearchContract, TrackingContract, UploadsContract,
                                VectorsContract)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A fresh SQLite store."""
    opened = SQLiteStore(tmp_path / "store" / "citewell.sqlite")
    yield opened
    opened.close()


class TestSQLiteKeys(KeysContract):
    pass


class TestSQLiteJobs(JobsContract):
    pass


class TestSQLiteEvents(EventsContract):
    pass


class TestSQLiteResources(ResourcesContract):
    pass


class TestSQLiteUploads(UploadsContract):
    pass


class TestSQLiteSearch(SearchContract):
    pass


class TestSQLiteVectors(VectorsContract):
    pass


class TestSQLiteChats(ChatsContract):
    pass


class TestSQLiteMentions(MentionsContract):
    pass


class TestSQLiteTracking(TrackingContract):
    pass


class TestSQLiteIsolation(IsolationContract):
    pass
