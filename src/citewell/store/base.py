"""The store interface: everything above it is independent of the database in use.

:class:`Store` is the composition of one small Protocol per concern, each defined in the
module of its concern beside the SQL that implements it (the mixin of the same module):

============================  ======================  ==========================================
protocol                      module                  what it keeps
============================  ======================  ==========================================
:class:`KeyStore`             :mod:`.keys`            workspaces by name, secrets, API keys
:class:`EventStore`           :mod:`.events`          the client events of streamed answers
:class:`ResourceStore`        :mod:`.resources`       resources, chunks, uploads, file records
:class:`SearchStore`          :mod:`.search`          lexical search, term counts, snapshots
:class:`VectorStore`          :mod:`.vectors`         chunk vectors and the dense ranking
:class:`ChatStore`            :mod:`.chats`           chats, messages, pending turns
:class:`MentionStore`         :mod:`.mentions`        the posts of posts files
:class:`TrackingAccess`       :mod:`.tracking`        ``tracking()``: the :class:`TrackingStore`
:class:`JobStore`             :mod:`.jobs`            jobs: queue, claim, lease, dead letter
============================  ======================  ==========================================

:data:`CONCERNS` lists them; ``Store`` adds only ``location``, ``blobs`` and ``close()``.
A caller that needs one concern takes that protocol (``store: SearchStore``), one that
needs several takes ``Store``. The records they exchange are in the leaf module
:mod:`.records`, re-exported here. The implementations are
:class:`citewell.store.sqlite.SQLiteStore` (the embedded default, one file) and
:class:`citewell.store.postgres.PostgresStore`: the concern mixins over a backend's three
dialect pieces (connections and locks, the lexical index, the vector index). Every method
is scoped to one workspace id: nothing crosses workspaces, and an id of another workspace
behaves like an unknown id.
"""

from __future__ import annotations

from typing import Protocol

from ..blobs import BlobStore
from .chats import ChatStore
from .events import EventStore
from .jobs import JobStore
from .keys import KeyStore
from .mentions import MentionStore
from .records import (PAGE_REACH, QUESTION_TITLE_CHARS, ApiKeyRecord, ChatRecord, Condition, FileRecord,
                      TextHit, iso_utc, question_title)
from .resources import ResourceStore
from .search import SearchStore
from .tracking import TrackingAccess, TrackingStore
from .vectors import VectorStore


class Store(KeyStore, EventStore, ResourceStore, SearchStore, VectorStore, ChatStore, MentionStore,
            TrackingAccess, JobStore, Protocol):
    """Persistence of workspaces, resources, chunks, mentions and file records: every
    concern protocol of :data:`CONCERNS` (their methods are not listed again here), plus
    where the store is and keeps its files."""

    #: where the store is: a SQLite file's path, a PostgreSQL URL without its password
    location: str
    #: originals, staged uploads and derived files (:mod:`citewell.blobs`)
    blobs: BlobStore

    def close(self) -> None:
        """Release connections."""
        ...


#: The concern protocols :class:`Store` is composed of, in the order of its bases (and of
#: the table in ``docs/architecture.md``, "The store").
CONCERNS: tuple[type, ...] = (KeyStore, EventStore, ResourceStore, SearchStore, VectorStore, ChatStore,
                              MentionStore, TrackingAccess, JobStore)


__all__ = ["CONCERNS", "PAGE_REACH", "QUESTION_TITLE_CHARS", "ApiKeyRecord", "ChatRecord", "ChatStore",
           "Condition", "EventStore", "FileRecord", "JobStore", "KeyStore", "MentionStore", "ResourceStore",
           "SearchStore", "Store", "TextHit", "TrackingAccess", "TrackingStore", "VectorStore", "iso_utc",
           "question_title"]
