"""The store interface: everything above it is independent of the database in use.

Two implementations are planned: :class:`citewell.store.sqlite.SQLiteStore` (the
embedded default, one file) and PostgreSQL + pgvector. The SQL every database shares
lives in one module per concern (:mod:`.keys`, :mod:`.events`, :mod:`.resources`,
:mod:`.uploads`, :mod:`.search`, :mod:`.vectors`, :mod:`.chats`, :mod:`.mentions`); a
backend adds its three dialect pieces (connections and locks, the lexical index, the
vector index; :mod:`citewell.store.sqlite`). Every method is scoped to one
workspace id: nothing crosses workspaces, and an id of another workspace behaves like
an unknown id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Protocol, Sequence

import numpy as np

from ..blobs import BlobStore
from ..ingest.base import Extraction
from ..models import Chunk, Mention, Message, Passage, Resource

if TYPE_CHECKING:  # issue 17's store, the jobs (only for annotations)
    from .jobs import JobRecord
    from .tracking import TrackingStore


@dataclass(frozen=True)
class FileRecord:
    """What the store remembers of a file path in a workspace (for sync).

    ``resource_id`` is the path's current usable version (ready, or missing/superseded
    history); ``last_resource_id``/``last_sha256``/``size_bytes``/``mtime_ns`` describe
    the content seen at the last attempt, which may have failed.
    """

    path: str
    resource_id: str | None
    last_resource_id: str | None
    last_sha256: str
    size_bytes: int
    mtime_ns: int
    present: bool


@dataclass(frozen=True)
class Condition:
    """One filter condition: ``key`` (canonical name), ``op`` (eq, ge, le), ``values``.

    ``eq`` with several values means any of them; ``ne`` (``resource_id`` only, made by
    the scope check, never parsed from a request) means none of them; values are already normalised
    (lower-cased strings; fiscal_quarter "1".."4"; fiscal_year an integer string).
    """

    key: str
    op: str
    values: tuple[str, ...]


def iso_utc(value: datetime) -> str:
    """``value`` as ISO 8601 UTC with milliseconds and ``Z`` (``2026-08-05T10:02:11.004Z``)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: Longest title taken from a question (code points, "…" included).
QUESTION_TITLE_CHARS = 80


def question_title(question: str) -> str:
    """The title of a chat created without one, from its first question: the question's
    whitespace collapsed to single spaces, cut at a word boundary to at most
    :data:`QUESTION_TITLE_CHARS` code points ending in "…" when cut (a single longer
    word is cut inside). ``""`` for a question without text. Never raises.

    Rule: seed 001 always shows a session ``title`` string (issue 15)."""
    text = " ".join(question.split())
    if len(text) <= QUESTION_TITLE_CHARS:
        return text
    cut = text[:QUESTION_TITLE_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip() + "…"


@dataclass(frozen=True)
class ChatRecord:
    """A stored chat (= session = conversation, docs/architecture.md "Canonical data").

    ``title``: the title it was created with; for a chat created without one, the
    :func:`question_title` of its first question with text (stores derive it on read, so
    older untitled chats get one too), None until that question is asked. ``updated_at``
    moves when a message is added. :meth:`to_dict` gives the seed 001 ``session`` shape:
    ``{id, title, workspace_id, created_at, updated_at}`` with ISO ``Z`` times, ``title``
    always a string (``""`` before the first question).
    """

    id: str
    workspace_id: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    #: the workspace user the chat belongs to (set when a platform key acts for a user);
    #: None for a workspace-level chat
    user_id: str | None = None
    user_email: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``{id, title, workspace_id, created_at, updated_at}`` (``title``: ``""``
        when None)."""
        return {"id": self.id, "title": self.title or "", "workspace_id": self.workspace_id,
                "created_at": iso_utc(self.created_at), "updated_at": iso_utc(self.updated_at)}


@dataclass(frozen=True)
class ApiKeyRecord:
    """A stored API key: never the key itself, only its SHA-256 (see :mod:`citewell.keys`).

    ``platform``: the key may act for another workspace (``organization_id``) and for a
    user of it (seed 003); ``prefix``: the key's first characters, to tell keys apart.
    """

    id: str
    workspace_id: str
    platform: bool
    prefix: str
    created_at: datetime


#: Chunks looked at on each side of a chunk for the rest of its page (a page has at most a
#: few dozen 50–250-word chunks).
PAGE_REACH = 40


class TextHit(NamedTuple):
    """One full-text match read without its chunk's metadata (:meth:`Store.search_hits`):
    the chunk's ``chunk_id``, ``resource_id`` and exact ``text``, and ``score`` (the
    negated BM25 of :meth:`Store.search_text`: higher is better)."""

    chunk_id: str
    resource_id: str
    text: str
    score: float


class Store(Protocol):
    """Persistence of workspaces, resources, chunks, mentions and file records."""

    location: str
    #: originals, staged uploads and derived files (:mod:`citewell.blobs`)
    blobs: BlobStore

    def workspace_id(self, name: str, *, create: bool = True) -> str:
        """Id of the workspace called ``name`` (created when missing and ``create``).

        Raises :class:`citewell.errors.NotFoundError` when missing and not ``create``.
        """
        ...

    def workspace_name(self, workspace_id: str) -> str:
        """Name of the workspace with this id; ``NotFoundError`` for an unknown id."""
        ...

    def secret(self, name: str) -> bytes:
        """A random 32-byte secret stored under ``name``, made on first use and the same for
        every process sharing the store (the signing key of presigned URLs)."""
        ...

    def append_events(self, workspace_id: str, message_id: str, events: Sequence[tuple[int, str, str]]) -> None:
        """Record client events ``(seq, event name, JSON data)`` of a streamed message in one
        transaction; recording a ``seq`` twice is a :class:`~citewell.errors.StoreError`
        (nothing of the call is recorded)."""
        ...

    def events(self, workspace_id: str, message_id: str, *, after: int = 0) -> list[tuple[int, str, str]]:
        """The recorded events ``(seq, name, data)`` of a message with ``seq > after``, in order."""
        ...

    def create_api_key(self, workspace_id: str, key_hash: str, *, platform: bool, prefix: str) -> ApiKeyRecord:
        """Store an API key of the workspace by its hash; ``NotFoundError`` for an unknown workspace."""
        ...

    def api_keys(self, workspace_id: str | None = None) -> list[ApiKeyRecord]:
        """Stored keys (of one workspace, or of all), oldest first: never the keys themselves."""
        ...

    def delete_api_key(self, key_id: str) -> bool:
        """Revoke the key with this id (or this prefix, when exactly one key has it); requests
        with it are refused from then on. True when a key was deleted."""
        ...

    def api_key(self, key_hash: str) -> ApiKeyRecord | None:
        """The key whose SHA-256 is ``key_hash``, or None."""
        ...

    def api_key_by_id(self, key_id: str) -> ApiKeyRecord | None:
        """The key with this id (exactly; not a prefix), or None when there is none (never
        made, or revoked): signed links die with the key that made them."""
        ...

    def file_record(self, workspace_id: str, path: str) -> FileRecord | None:
        """The record of an absolute file path, or None if never seen."""
        ...

    def resource_by_sha(self, workspace_id: str, sha256: str) -> Resource | None:
        """The resource row holding this content, whatever its status."""
        ...

    def commit_resource(self, workspace_id: str, resource: Resource, extraction: Extraction | None,
                        *, path: str | None, size_bytes: int, mtime_ns: int, upload: bool = False) -> Resource:
        """Write one resource (ready with ``extraction``, or failed without) in one transaction.

        A row of the same content still ``processing`` (an upload) is replaced. With
        ``upload`` (the extraction of an upload) the row must still exist: one deleted
        meanwhile raises ``NotFoundError`` instead of coming back.

        Ready: inserts the resource, its chunks (ids from the resource), the search index,
        mentions and metadata facets; the path's previous version becomes superseded.
        Failed: inserts only the failed row (never touching a ready version of the path).
        If the content already exists (another process won the race), links the path to
        it and returns the stored row. The blob must be written before the call.
        """
        ...

    def replace_extraction(self, workspace_id: str, resource_id: str, extraction: Extraction, *,
                           extractor_version: str) -> Resource:
        """Re-index a ready resource with a newer extractor's output (one transaction);
        the old chunks stay readable by id but are no longer listed or searched."""
        ...

    def link_path(self, workspace_id: str, path: str, resource: Resource, *, size_bytes: int,
                  mtime_ns: int) -> Resource:
        """Point ``path`` at an existing resource (same content seen again)."""
        ...

    def mark_missing(self, workspace_id: str, root: str, present: Sequence[str]) -> list[str]:
        """Mark files under ``root`` not in ``present`` gone; their resources become missing.

        Returns the ids of resources newly marked missing. Nothing is deleted.
        """
        ...

    def update_resource_metadata(self, workspace_id: str, resource_id: str, *, title: str | None,
                                 metadata: dict[str, Any], custom_metadata: dict[str, Any] | None) -> None:
        """Replace a resource's title (when given), typed metadata and custom metadata."""
        ...

    def resources(self, workspace_id: str, *, statuses: Sequence[str] | None = None,
                  under: str | None = None, paths: bool = True, limit: int | None = None,
                  offset: int = 0) -> list[Resource]:
        """Resources of the workspace, oldest first, optionally by status or path prefix;
        ``paths=False`` skips filling ``Resource.paths``; ``limit``/``offset`` page it."""
        ...

    def total_resources(self, workspace_id: str, *, statuses: Sequence[str] | None = None) -> int:
        """How many resources the workspace has (of these statuses)."""
        ...

    def begin_upload(self, workspace_id: str, resource: Resource) -> Resource:
        """Record an uploaded file before extraction: insert ``resource`` (status
        processing) in one transaction and return it; when the workspace already holds
        the same bytes, return that row instead (ready, or still processing; a superseded
        or missing one becomes ready again; a failed one is replaced to be tried again)."""
        ...

    def workspace_ids(self) -> list[str]:
        """The id of every workspace, oldest first (for server-wide background work)."""
        ...

    def pending_uploads(self) -> list[tuple[str, str]]:
        """``(workspace_id, resource_id)`` of every resource still processing (all
        workspaces), for a server to resume after a restart."""
        ...

    def delete_resource(self, workspace_id: str, resource_id: str) -> str | None:
        """Delete a resource with its chunks, search rows, facets, mentions (its own copies
        of its posts: another posts file's copy of the same post is untouched), file
        records and the workspace's vectors of texts no other chunk of it has, in one
        transaction.
        Returns its blob key (the caller removes the blob when no resource refers to it);
        ``NotFoundError`` if not in this workspace. Stored messages keep their copies."""
        ...

    def resource_text(self, workspace_id: str, resource_id: str) -> str:
        """The resource's whole extracted text (each chunk is its ``[char_start:char_end]``
        slice, code points); ``NotFoundError`` if not in this workspace."""
        ...

    def resource(self, workspace_id: str, resource_id: str) -> Resource:
        """One resource; :class:`citewell.errors.NotFoundError` if not in this workspace."""
        ...

    def chunks(self, workspace_id: str, chunk_ids: Sequence[str]) -> dict[str, Passage]:
        """Passages for the given chunk ids that exist in this workspace (any status)."""
        ...

    def resource_chunks(self, workspace_id: str, resource_id: str) -> list[Chunk]:
        """All chunks of one resource in ``chunk_index`` order."""
        ...

    def page_passages(self, workspace_id: str, chunk_id: str, *, reach: int = PAGE_REACH) -> list[Passage]:
        """The passages on the same page as chunk ``chunk_id`` (itself included), in
        ``chunk_index`` order, looking at most ``reach`` chunks before and after it; ``[]``
        for a chunk without a ``page`` or not in this workspace."""
        ...

    def post_passage(self, workspace_id: str, source: str, post_id: str, *,
                     dataset_id: str | None = None) -> Passage | None:
        """The (first) chunk of post (source, id) as a passage, or None: the copy of posts
        file ``dataset_id`` when given, else the copy :meth:`mentions` chooses."""
        ...

    def mentions(self, workspace_id: str, refs: Sequence[tuple[str, str]], *,
                 dataset_ids: Sequence[str | None] | None = None) -> list[Mention | None]:
        """Mentions for (source, id) pairs, in the order asked (None where unknown).

        Each posts file (dataset) keeps its own copy of a post (docs/architecture.md "Posts"). With
        ``dataset_ids`` (one per ref, None for "any"), the copy of that dataset; otherwise
        the copy of the most recently added ready dataset holding the post (a dataset no
        longer ready only when no ready one does)."""
        ...

    def list_mentions(self, workspace_id: str, *, source: str | None = None, terms: Sequence[str] = (),
                      created_after: str | None = None, created_before: str | None = None,
                      dataset_id: str | None = None, limit: int = 50,
                      after: tuple[str, ...] | None = None) -> list[Mention]:
        """Mentions of the workspace's ready posts files, ordered by ``(created_at, source
        lower-cased, id, dataset_id)`` (a post two datasets hold is listed once per
        dataset), at most ``limit``: of ``source``, whose text (any piece of it) matches any
        of ``terms`` (full-text), created in ``[created_after, created_before]`` (ISO strings,
        compared as text), in posts file ``dataset_id``; only after the ``after`` key
        (keyset paging: the key of the last mention of the previous page; a three-part key
        of an older cursor continues after every copy of that post)."""
        ...

    def search_text(self, workspace_id: str, terms: Sequence[str], *, limit: int,
                    conditions: Sequence[Condition] = (), under: str | None = None) -> list[Passage]:
        """BM25 full-text search over ready resources; best first, ``score`` higher is better.

        ``terms`` are plain words (the store quotes them); any term may match.
        ``under`` restricts to resources with a present file under that folder.
        """
        ...

    def search_hits(self, workspace_id: str, terms: Sequence[str], *, limit: int,
                    conditions: Sequence[Condition] = (), under: str | None = None) -> list[TextHit]:
        """:meth:`search_text`'s matches, the same chunks in the same order with the same
        scores, as :class:`TextHit` (no metadata, no passage objects): for checks that read
        only where a match is and what it says (the scope check reads about a thousand per
        question)."""
        ...

    def reading(self) -> AbstractContextManager[None]:
        """One read snapshot for the reads of this thread inside the ``with`` block: they see
        one state of the store and share its round trips (one transaction, the generation
        counters read once) instead of each opening its own. Reads only: no write may
        run inside it."""
        ...

    def ranking_resources(self, workspace_id: str, *, under: str | None = None) -> Sequence[Resource]:
        """The workspace's ready resources (with a present file under folder ``under`` when
        given), oldest first, ``paths`` empty: what ranking reads per question. The objects
        may be shared between calls (a store may cache them until a write changes what a
        search sees, in any process): read-only."""
        ...

    def scope_resources(self, workspace_id: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> Sequence[Resource]:
        """The ready resources a search with ``conditions`` (resource-level keys; the
        chunk-level ``created_at`` and ``source`` are not applied) under folder ``under``
        reads, as :meth:`ranking_resources` gives them (shared, read-only)."""
        ...

    def term_counts(self, workspace_id: str, groups: Sequence[Sequence[str]]) -> tuple[int, list[int]]:
        """Document frequencies for ranking: ``(n, counts)``.

        ``n`` is the number of searchable chunks (of ready resources) in the workspace;
        ``counts[i]`` is how many of them have every word of ``groups[i]`` in their text
        (the title is not counted). Words are plain words, matched as the full-text
        index matches them (stemmed the same way); an empty group counts 0.
        """
        ...

    def blob_referenced(self, blob_key: str) -> bool:
        """True when a resource of any workspace refers to this blob (blobs are shared)."""
        ...

    def count_resources(self, workspace_id: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> int:
        """How many ready resources with at least one chunk match ``conditions`` (and lie
        under folder ``under``): tells "nothing matched the question" from "nothing
        matched the filters"."""
        ...

    # -- chunk vectors (schema v8) -----------------------------------------------------
    # Vectors are keyed by workspace and the sha256 of a chunk's text: identical text is
    # embedded once per workspace, and no workspace can learn from its coverage what text
    # another holds.
    def texts_without_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                              under: str | None = None, limit: int | None = None,
                              shortest_first: bool = False) -> list[tuple[str, str]]:
        """``(text_hash, text)`` of the distinct texts of searchable chunks in scope (as
        :meth:`search_text`) that have no ``model`` vector yet, in chunk order (shortest
        first with ``shortest_first``); at most ``limit``."""
        ...

    def missing_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> int:
        """How many distinct texts :meth:`texts_without_vectors` would give (none is read)."""
        ...

    def vector_coverage(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                        under: str | None = None) -> tuple[int, int]:
        """``(embedded, total)`` searchable chunks in scope: with a ``model`` vector, and all."""
        ...

    def put_vectors(self, workspace_id: str, model: str, dim: int, vectors: Sequence[tuple[str, bytes]]) -> int:
        """Store the workspace's ``(text_hash, float32 bytes)`` vectors of ``model`` (``dim``
        floats each), only for texts some chunk of the workspace still has; returns how many
        were stored. Vectors are the workspace's own (schema v8): another workspace with the
        same text embeds it again, so no workspace can learn what another holds."""
        ...

    def scope_vectors(self, workspace_id: str, model: str, *, conditions: Sequence[Condition] = (),
                      under: str | None = None) -> list[tuple[str, bytes]]:
        """``(chunk_id, vector bytes)`` of the searchable chunks in scope that have a ``model`` vector."""
        ...

    def nearest_chunks(self, workspace_id: str, model: str, query: np.ndarray, *, limit: int,
                       conditions: Sequence[Condition] = (), under: str | None = None) -> list[tuple[str, float]]:
        """Dense search: ``(chunk_id, cosine)`` of the ``limit`` searchable chunks in scope
        (``conditions``, ``under``: as :meth:`search_text`) whose ``model`` vectors are
        nearest to ``query`` (a float32 unit vector of the model's dimension), best first,
        ties in chunk order; fewer when fewer in scope have a vector, ``[]`` for
        ``limit`` ≤ 0. The vector index decides how: exact on SQLite (numpy over the
        scope), approximate on PostgreSQL (pgvector's HNSW index; the workspace and the
        filters applied in SQL, see ``docs/architecture.md``, "The store")."""
        ...

    def vectors(self, workspace_id: str, model: str, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        """Vector bytes of ``model`` for the given chunk ids of this workspace that have one."""
        ...

    # -- chats and messages (schema v4) ------------------------------------------------
    def create_chat(self, workspace_id: str, title: str | None = None, *, user_id: str | None = None,
                    user_email: str | None = None) -> ChatRecord:
        """Create an empty chat in the workspace (new UUIDv4 id), of a user when given."""
        ...

    def chat(self, workspace_id: str, chat_id: str, *, user_id: str | None = None) -> ChatRecord:
        """One chat (of that user, when ``user_id``); :class:`citewell.errors.NotFoundError`
        for an unknown id or one of another workspace or user (indistinguishable)."""
        ...

    def chats(self, workspace_id: str, *, user_id: str | None = None) -> list[ChatRecord]:
        """Chats of the workspace (of that user, when ``user_id``), oldest first."""
        ...

    def rename_chat(self, workspace_id: str, chat_id: str, title: str, *, user_id: str | None = None) -> ChatRecord:
        """Set a chat's ``title`` (of that user, when ``user_id``) and return it;
        :class:`citewell.errors.NotFoundError` as :meth:`chat`. ``updated_at`` is kept (it
        dates the last message)."""
        ...

    def add_message(self, workspace_id: str, chat_id: str, message: Message) -> Message:
        """Append ``message`` to a chat in one transaction; returns the stored message.

        The stored message is a copy of ``message`` with ``chat_id`` set and ``id`` a new
        UUIDv4 when it had none; it is stored whole (every field, additive ones included)
        with the current ``format_version`` and reads back identical (rule 10).
        Raises ``NotFoundError`` for an unknown chat, ``UsageError`` when the id is taken.
        """
        ...

    def add_messages(self, workspace_id: str, chat_id: str, messages: Sequence[Message]) -> list[Message]:
        """:meth:`add_message` for several messages (one turn) in one transaction, in order."""
        ...

    def add_legacy_message(self, workspace_id: str, chat_id: str, row: Mapping[str, Any]) -> str:
        """Store a message row of an older shape as it is (``format_version`` NULL).

        ``row``: ``{role, text, references?, id?, status?, created_at?, image_url?, …}``
        with raw links in ``text`` (the pre-``format_version`` shape). It is converted
        when read (:func:`citewell.answer.messages.stored_message`). Returns the message id.
        """
        ...

    def settle_message(self, workspace_id: str, message: Message) -> Message:
        """Replace the stored pending message ``message.id`` by ``message`` (status settled
        or failed) in one transaction; returns what reads return from now on. A message
        settles once: ``UsageError`` if it is not pending (or ``message`` is), ``NotFoundError``
        for an unknown id."""
        ...

    def fail_pending(self, *, before: datetime, code: str, message: str,
                     keep: Callable[[Message], bool] | None = None) -> int:
        """Settle as failed (warning and additive ``error`` ``{code, message}``) every
        pending message of any workspace created before ``before`` — turns a stopped server
        never finished — except those for which ``keep(message)`` is true (a live process
        still answers them); returns how many."""
        ...

    def message_row(self, workspace_id: str, message_id: str, *, user_id: str | None = None) -> dict[str, Any]:
        """The stored row of one message (the ``messages`` columns,
        :data:`citewell.cite.history.ROW_KEYS`): read it with
        :func:`citewell.answer.messages.stored_message`. ``NotFoundError`` for an unknown id
        or one of another workspace (or, with ``user_id``, of another user's chat)."""
        ...

    def message_rows(self, workspace_id: str, chat_id: str, *, limit: int | None = None,
                     after: str | None = None, user_id: str | None = None) -> list[dict[str, Any]]:
        """The stored rows of a chat's messages, oldest first (storage order); at most
        ``limit``; only those stored after message ``after``. ``NotFoundError`` for an
        unknown chat or ``after``."""
        ...

    def save_conversion(self, workspace_id: str, message_id: str, message: Message) -> dict[str, Any] | None:
        """Write the conversion ``message`` of legacy row ``message_id`` back once (rule 10;
        the original stays in ``legacy``). None when written (or the row is gone), else the
        row as stored now (converted first by another process: its version wins);
        ``StoreError`` when the store cannot be written."""
        ...

    def tracking(self) -> TrackingStore:
        """Tracking agents, their alerts, post arrivals, patterns and run leases
        (:class:`citewell.store.tracking.TrackingStore`, issue 17) on this store."""
        ...

    # -- jobs (citewell.store.jobs: the rules of queue, claim, lease and dead letter) ----
    # Times (``now``, ``before``, a job's times) are seconds since the epoch; ``now`` None is
    # the clock of this process. Each method is :class:`citewell.store.jobs.Jobs`'s.
    def enqueue_job(self, workspace_id: str, kind: str, payload: dict[str, Any], *, key: str | None = None,
                    max_attempts: int = 3, delay_s: float = 0.0, now: float | None = None) -> tuple[JobRecord, bool]:
        """Queue a job of ``kind`` with JSON-able ``payload``, due after ``delay_s`` seconds;
        ``(job, created)`` (with ``key``: the queued or running job of that key, False).
        ``ValueError`` for ``max_attempts`` < 1."""
        ...

    def claim_job(self, owner: str, *, kinds: Sequence[str], lease_s: float, per_workspace: int | None = None,
                  now: float | None = None) -> JobRecord | None:
        """Claim the next due job of ``kinds`` for ``owner``, fairly between workspaces (at most
        ``per_workspace`` running per workspace under this owner), with a lease of
        ``lease_s`` seconds; None when none is due."""
        ...

    def renew_job(self, job_id: str, token: str, *, lease_s: float, now: float | None = None) -> bool:
        """Extend the lease of the claim ``token`` to ``now + lease_s`` (seconds); False when
        it no longer holds the job."""
        ...

    def finish_job(self, job_id: str, token: str, *, now: float | None = None) -> bool:
        """Mark the job of the claim ``token`` done; False when it no longer holds it."""
        ...

    def fail_job(self, job_id: str, token: str, *, code: str, message: str, retry: bool = True,
                 backoff_s: float = 5.0, now: float | None = None) -> str | None:
        """Record a failure ``{code, message}``: ``queued`` again after ``backoff_s × 2^(attempts−1)``
        seconds while attempts are left and ``retry``, else ``failed`` (dead letter); the new
        state, None when the claim ``token`` no longer holds the job."""
        ...

    def release_job(self, job_id: str, token: str, *, now: float | None = None) -> bool:
        """Put the job of the claim ``token`` back in the queue without counting the attempt."""
        ...

    def expire_jobs(self, *, now: float | None = None) -> list[JobRecord]:
        """Requeue (or dead-letter) running jobs whose lease expired; returns those dead-lettered."""
        ...

    def requeue_job(self, job_id: str, *, now: float | None = None) -> JobRecord:
        """Queue a dead-lettered (``failed``) job again with all its attempts.
        ``NotFoundError`` for an unknown id, ``UsageError`` for a job that is not ``failed``
        or whose ``key`` is queued or running again."""
        ...

    def job(self, job_id: str) -> JobRecord:
        """One job; ``NotFoundError`` for an unknown id."""
        ...

    def jobs(self, *, workspace_id: str | None = None, states: Sequence[str] | None = None,
             kinds: Sequence[str] | None = None, key: str | None = None, limit: int = 100) -> list[JobRecord]:
        """Jobs, oldest first, of one workspace, states, kinds or ``key`` when given; at most ``limit``."""
        ...

    def prune_jobs(self, *, before: float) -> int:
        """Delete ``done`` jobs last changed before ``before`` (dead letters stay); how many."""
        ...

    def listen_jobs(self, on_job: Callable[[str], None], stop: Any) -> bool:
        """Call ``on_job(kind)`` for jobs queued by any process until ``stop`` (a
        ``threading.Event``) is set; False at once where the database cannot tell."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...
