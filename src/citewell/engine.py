"""``citewell.Engine``: the one library facade that the CLI, HTTP API and MCP server share.

::

    engine = Engine()                                  # embedded SQLite store, workspace "default"
    engine.sync("docs/")                               # ingest new/changed files, mark gone ones missing
    message = engine.ask("What was capex in FY2022?", corpus="docs/")
    print(message.text)                                # "... $1.7 billion [1]."
    message.references[0].metadata["page"]             # where [1] lives

The engine holds a workspace's store, retrieval set-up (:class:`~citewell.answer.Retrieval`)
and answer writers, and delegates: questions are validated into turns
(:func:`~citewell.answer.prepare_turn`), retrieved for, and answered by the one answering
pipeline (:class:`~citewell.answer.AnswerPipeline`: generator → cite → support → storage),
whatever the caller (library, CLI, HTTP profiles).
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .answer import AnswerPipeline, PendingTurn, Retrieval, Turn, failure, prepare_turn
from .answer.history import conversation
from .answer.messages import StoreResolver, stored_message, stored_messages
from .answer.pipeline import user_message
from .answer.retrieval import DEFAULT_MODE, EMBED_BUDGET_S, PRIORITY_POOL
from .answer.turn import IMAGE_QUERY_WORDS, MAX_QUESTION_CHARS, NO_IMAGE_TEXT, OFFSET_UNITS, POLICIES, check_choices
from .blobs import BlobNotFound
from .cite.given import GivenSources, cite_sources, read_sources
from .cite.stream import Event
from .embed import Embedder
from .errors import CitewellError, NotFoundError, UsageError
from .generate import ExtractiveGenerator, Generator
from .ingest.pipeline import IngestReport, Ingestor, ProgressCallback
from .keys import SHOWN_PREFIX, hash_key, new_key
from .models import Mention, Message, Notice, Passage, Resource
from .retrieve import Retriever, parse_filters
from .retrieve.hybrid import FUSIONS, Ranked
from .retrieve.pages import page_context
from .settings import LLMSettings, Settings
from .store import Store, open_store
from .store.base import ApiKeyRecord, ChatRecord, question_title
from .validtext import one_line, title_problem, valid_text

#: Longest chat title (code points).
MAX_TITLE_CHARS = 1000

__all__ = ["DEFAULT_MODE", "EMBED_BUDGET_S", "IMAGE_QUERY_WORDS", "MAX_QUESTION_CHARS", "MAX_TITLE_CHARS",
           "NO_IMAGE_TEXT", "OFFSET_UNITS", "POLICIES", "PRIORITY_POOL", "Engine", "PendingTurn", "StoreResolver"]


class Engine:
    """The citewell library facade.

    ``store``: a :class:`~citewell.store.Store`, a path to a SQLite file, a PostgreSQL URL
    (``postgresql://…``, see :func:`~citewell.store.open_store`), or None for the
    configured default (``CITEWELL_STORE``, config file, user data directory).
    ``workspace``: the workspace name; every call is scoped to it. ``generator``: the
    answer writer (a :class:`~citewell.generate.Generator`, or a name: ``extractive``,
    the default, or ``llm``, the configured OpenAI-compatible endpoint); ``generators``:
    further writers a question may name (``ask(..., generator="llm")``; a ``dict`` given is
    shared and filled as writers are built, so a server builds each once); ``llm``: the
    endpoint settings of the ``llm`` writer (default :meth:`LLMSettings.resolve`).
    ``mode``: retrieval ``lexical``, ``dense`` or ``hybrid`` (default
    ``CITEWELL_RETRIEVAL_MODE``, else :data:`DEFAULT_MODE`); ``embedder``: the dense model
    (default: the configured one, see :class:`~citewell.answer.Retrieval`; without one
    dense and hybrid answer lexically with ``DENSE_UNAVAILABLE``); ``fusion``: how hybrid
    mode fuses its rankings, ``convex`` (default) or ``rrf``; ``retriever``: a custom
    retriever, used as is whatever the mode.
    Raises :class:`~citewell.errors.StoreError` when the store cannot be opened and
    ``INVALID_REQUEST`` for a bad mode, fusion or generator name.
    """

    def __init__(self, store: Store | str | os.PathLike[str] | None = None, workspace: str = "default", *,
                 generator: Generator | str | None = None, generators: Mapping[str, Generator] | None = None,
                 llm: LLMSettings | None = None, retriever: Retriever | None = None, mode: str | None = None,
                 embedder: Embedder | None = None, fusion: str = FUSIONS[0]) -> None:
        if store is None or isinstance(store, (str, os.PathLike)):
            store = open_store(store if store is not None else Settings.resolve().store)
        self.store: Store = store
        self.workspace = workspace
        self.workspace_id = self.store.workspace_id(workspace)
        self._retrieval = Retrieval(self.store, self.workspace_id, retriever=retriever, mode=mode,
                                    embedder=embedder, fusion=fusion)
        self._llm = llm
        #: answer writers by name (``extractive``, ``llm`` …), filled on first use
        self.generators: dict[str, Generator] = generators if isinstance(generators, dict) else dict(generators or {})
        self.generator: Generator = (self.generator_for(generator) if isinstance(generator, str)
                                     else generator or self.generator_for("extractive"))
        #: seconds a generator may take per answer (None: its own limits, such as the llm
        #: generator's ``answer_timeout``, which applies too when it is shorter)
        self.answer_timeout_s: float | None = None
        self.resolver = StoreResolver(self.store, self.workspace_id)
        self._ingestor = Ingestor(self.store, self.workspace_id)

    # -- answer writers ----------------------------------------------------------------
    def generator_for(self, name: str | None) -> Generator:
        """The answer writer called ``name`` (None: :attr:`generator`): one of
        :attr:`generators`, else ``extractive`` (built here) or ``llm`` (built from the
        endpoint settings). ``INVALID_REQUEST`` for an unknown name, or ``llm`` without a
        configured endpoint."""
        if name is None:
            return self.generator
        found = self.generators.get(name)
        if found is not None:
            return found
        if name == "extractive":
            found = ExtractiveGenerator()
        elif name == "llm":
            settings = self._llm if self._llm is not None else LLMSettings.resolve()
            if not settings.configured:
                raise UsageError("the llm generator needs an endpoint: set CITEWELL_LLM_BASE_URL and "
                                 "CITEWELL_LLM_MODEL (or llm_base_url/llm_model in the config file)")
            from .generate.llm import LLMGenerator

            found = LLMGenerator(settings)
        else:
            raise UsageError(f"generator must be one of extractive, llm, not {name!r}")
        self.generators[name] = found
        return found

    def _pipeline(self, turn: Turn) -> AnswerPipeline:
        """The answering pipeline of ``turn``: its generator, the extractive fallback when
        that generator asks for one, the embedder and judge of its support checks, the
        chat's history."""
        generator = self.generator_for(turn.generator)
        aliased = bool(getattr(generator, "cites_by_alias", False))
        fallback = self.generator_for("extractive") if getattr(generator, "fallback", False) else None
        embedder = None
        if aliased and self._retrieval.dense_available():
            try:
                embedder = self._retrieval.embedder
            except CitewellError:
                embedder = None
        return AnswerPipeline(
            self.store, self.workspace_id, self.resolver, generator, fallback=fallback, embedder=embedder,
            judge=getattr(generator, "judge_fn", None) if aliased else None,
            history=conversation(self.store, self.workspace_id, turn.chat_id, self.resolver),
            deadline_s=self.answer_timeout_s)

    # -- retrieval set-up (citewell.answer.retrieval) ----------------------------------
    @property
    def mode(self) -> str:
        """Retrieval mode: lexical, dense or hybrid (see :data:`DEFAULT_MODE`)."""
        return self._retrieval.mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._retrieval.mode = value

    @property
    def fusion(self) -> str:
        """Hybrid fusion: convex or rrf."""
        return self._retrieval.fusion

    @fusion.setter
    def fusion(self, value: str) -> None:
        self._retrieval.fusion = value

    @property
    def retriever(self) -> Retriever:
        """The retriever of :attr:`mode` (BM25 when lexical or when no embedder is installed),
        or the custom one set here."""
        return self._retrieval.retriever

    @retriever.setter
    def retriever(self, value: Retriever | None) -> None:
        self._retrieval.custom = value

    @property
    def lexical(self) -> Any:
        """The BM25 retriever of the workspace."""
        return self._retrieval.lexical

    @property
    def embedder(self) -> Embedder | None:
        """The embedder (given, else the configured one, built on first use), or None."""
        return self._retrieval.embedder

    @property
    def embed_budget_s(self) -> float:
        """Seconds a question waits at most for missing embeddings of its scope."""
        return self._retrieval.embed_budget_s

    @embed_budget_s.setter
    def embed_budget_s(self, value: float) -> None:
        self._retrieval.embed_budget_s = value

    @property
    def embed_stop(self) -> Callable[[], bool] | None:
        """Checked before each batch a question embeds: True stops (a server shutting down)."""
        return self._retrieval.embed_stop

    @embed_stop.setter
    def embed_stop(self, value: Callable[[], bool] | None) -> None:
        self._retrieval.embed_stop = value

    def dense_available(self) -> bool:
        """True when dense retrieval can run (an embedder was given, or one is configured or installed)."""
        return self._retrieval.dense_available()

    def embed(self, *, filters: Iterable[str] | Mapping[str, Any] | None = None,
              corpus: str | os.PathLike[str] | None = None, budget_s: float | None = None,
              progress: Any = None, stop: Callable[[], bool] | None = None) -> tuple[int, int]:
        """Embed the chunks (of the filter scope / corpus folder) that have no vector yet,
        for at most ``budget_s`` seconds (None: all of them); ``progress(done, total)``
        after each batch; ``stop()`` checked before each batch (True: stop there). Returns
        ``(embedded, total)`` chunks of the scope afterwards. ``(0, total)`` and nothing
        done when no embedder is installed."""
        conditions = parse_filters(filters)
        return self._retrieval.embed_scope(conditions, _under(corpus), budget_s, progress, stop)

    def embedding_coverage(self, *, filters: Iterable[str] | Mapping[str, Any] | None = None,
                           corpus: str | os.PathLike[str] | None = None) -> tuple[int, int]:
        """``(embedded, total)``: how many searchable chunks of the scope (filters, corpus
        folder) have a vector of the embedding model, without embedding anything.
        Raises ``INVALID_FILTER`` for a bad filter."""
        return self._retrieval.coverage(parse_filters(filters), _under(corpus))

    def explain(self, question: str, *, k: int = 5, filters: Iterable[str] | Mapping[str, Any] | None = None,
                corpus: str | os.PathLike[str] | None = None) -> list[Ranked]:
        """The passages :meth:`retrieve` returns, each with its BM25, dense and fused rank
        (None where a ranking did not have it). Embeds nothing: run after :meth:`ask`."""
        return self._retrieval.explain(question, k=k, conditions=parse_filters(filters), under=_under(corpus))

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

    def upload(self, file_name: str, data: bytes | Path, *, metadata: Mapping[str, Any] | None = None) -> Resource:
        """Accept an uploaded file: stage its bytes and record one resource with status
        ``processing`` (or return the resource already holding these bytes). Extraction
        is :meth:`process`, which a server runs in the background. ``data``: the bytes, or
        a file made by :meth:`spool` (taken over: moved into place or removed), so a
        server never holds a whole upload in memory. ``metadata``: ``title``,
        ``custom_metadata`` and the seeds' typed fields (as a manifest row). Raises
        ``INVALID_REQUEST`` for an empty file name or a bad metadata value; bad *content*
        is found by :meth:`process`."""
        return self._ingestor.stage_upload(file_name, data, metadata=metadata)

    def spool(self) -> Path:
        """A new empty file beside the store for an upload being received (write the bytes
        to it, then pass it to :meth:`upload`)."""
        return self._ingestor.spool()

    def reindex_stored(self, resource_id: str) -> Resource | None:
        """Re-extract a ready resource made by an older extractor version from its stored
        bytes, isolated like an upload (a server does this at start for every such
        resource); None when there is nothing to do or the new extractor failed (the old
        passages stay). See :meth:`Ingestor.reindex_stored`."""
        return self._ingestor.reindex_stored(resource_id)

    def process(self, resource_id: str, *, nice: int = 0) -> Resource | None:
        """Extract an upload staged by :meth:`upload`: ready, or failed with its coded
        error (``UNSUPPORTED_FILE``, ``EMPTY_FILE``, ``PDF_CORRUPT`` …) and nothing else
        left behind. Idempotent; None when the resource was deleted meanwhile. ``nice``:
        how much lower the extraction child's CPU priority is (a server lowers a
        workspace's backlog of uploads)."""
        return self._ingestor.process_upload(resource_id, nice=nice)

    def fail_upload(self, resource_id: str, code: str, message: str) -> Resource | None:
        """Settle an upload still processing as ``failed`` with ``{code, message}`` (its
        extraction gave up) and drop its staged bytes; a resource no longer processing is
        returned as it is, None when it was deleted. See :meth:`Ingestor.fail_upload`."""
        return self._ingestor.fail_upload(resource_id, code, message)

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
        return self.store.resources(self.workspace_id, statuses=statuses, under=_under(corpus), limit=limit,
                                    offset=offset)

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
        blobs = self.store.blobs
        blobs.delete(self._ingestor.staged(resource))  # this upload's own staged bytes only
        if blob_key:
            with blobs.lock(blob_key):
                if not self.store.blob_referenced(blob_key):
                    blobs.delete(blob_key)
                    blobs.drop_derived(resource.sha256)  # the viewer's page images go with it

    def stored_resource(self, resource_id: str) -> Resource:
        """A resource of the workspace that has stored original bytes, without reading
        them; ``NOT_FOUND`` when it is not in this workspace or has none (failed or still
        processing)."""
        resource = self.store.resource(self.workspace_id, resource_id)
        if not self.has_original(resource):
            raise NotFoundError(f"resource {resource_id} has no stored content (status {resource.status})")
        return resource

    def has_original(self, resource: Resource) -> bool:
        """Whether ``resource`` (already read) has stored original bytes (a blob key whose
        blob exists), without reading them or its row again."""
        return bool(resource.blob_key) and self.store.blobs.exists(resource.blob_key)

    def resource_content(self, resource_id: str) -> tuple[Path, str, str]:
        """``(a local file of the original bytes, media type, file name)`` of a resource
        (:meth:`citewell.blobs.BlobStore.local_path`: from a bucket, a copy downloaded once
        to this machine); ``NOT_FOUND`` when it is not in this workspace or has no stored
        bytes (failed or still processing). To check only, :meth:`stored_resource`."""
        resource = self.store.resource(self.workspace_id, resource_id)
        path = self.original_path(resource)
        media_type = resource.media_type or mimetypes.guess_type(resource.file_name)[0] or "application/octet-stream"
        return path, media_type, resource.file_name

    def original_path(self, resource: Resource) -> Path:
        """A local file of the original bytes of ``resource``, a resource of this workspace
        already read (:meth:`resource`), so a request that has it reads no row again
        (:meth:`citewell.blobs.BlobStore.local_path`: from a bucket, a copy downloaded once
        to this machine); ``NOT_FOUND`` when it has no stored bytes (failed or still
        processing)."""
        try:
            if not resource.blob_key:
                raise BlobNotFound(resource.id)
            return self.store.blobs.local_path(resource.blob_key)
        except BlobNotFound:
            raise NotFoundError(f"resource {resource.id} has no stored content (status {resource.status})") from None


    # -- answering ---------------------------------------------------------------------
    def retrieve(self, question: str, *, k: int = 5,
                 filters: Iterable[str] | Mapping[str, Any] | None = None,
                 corpus: str | os.PathLike[str] | None = None) -> list[Passage]:
        """Top ``k`` passages for ``question`` (filters as docs/architecture.md "Filters"; ``corpus``
        limits to resources with a file under that folder), searched as :meth:`ask`
        searches: with the linked aliases of its names. Raises ``INVALID_FILTER``."""
        if k < 1:
            raise UsageError("k must be at least 1")
        conditions = parse_filters(filters)
        under = _under(corpus)
        self._retrieval.prepare(conditions, under, question)
        return self._retrieval.retrieve(question, k=k, conditions=conditions, under=under)

    def ask(self, question: str, *, k: int = 5, filters: Iterable[str] | Mapping[str, Any] | None = None,
            corpus: str | os.PathLike[str] | None = None, sync: bool = True, offsets: str = "codepoint",
            manifests: Sequence[str | os.PathLike[str]] = (), progress: ProgressCallback | None = None,
            chat_id: str | None = None, policy: str = "flag", image: str | os.PathLike[str] | None = None,
            image_url: str | None = None, user_id: str | None = None, generator: str | None = None) -> Message:
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
        image's path). ``user_id``: the chat must belong to that user. ``generator``: the
        answer writer by name (``extractive``, ``llm``; None: :attr:`generator`); the
        message records it in ``generation`` ``{generator, model, usage}``.
        Raises ``INVALID_FILTER`` for bad filters, ``INVALID_REQUEST`` for bad arguments
        and ``NOT_FOUND`` for an unknown ``chat_id`` (checked before any work), and the
        generator's :class:`~citewell.errors.GenerationError` (``LLM_UNAVAILABLE``,
        ``LLM_BAD_RESPONSE``) when it fails and no fallback applies.
        """
        turn = self._prepare(question, k=k, filters=filters, corpus=corpus, offsets=offsets, chat_id=chat_id,
                             policy=policy, image=image, image_url=image_url, user_id=user_id, generator=generator)
        passages = self._retrieve_for(turn, sync=sync, manifests=manifests, progress=progress)
        return self._pipeline(turn).answer(turn, passages)

    def ask_stream(self, question: str, *, k: int = 5, filters: Iterable[str] | Mapping[str, Any] | None = None,
                   corpus: str | os.PathLike[str] | None = None, sync: bool = True, offsets: str = "codepoint",
                   manifests: Sequence[str | os.PathLike[str]] = (), progress: ProgressCallback | None = None,
                   chat_id: str | None = None, policy: str = "flag",
                   image: str | os.PathLike[str] | None = None, image_url: str | None = None,
                   user_id: str | None = None, generator: str | None = None) -> Iterator[Event]:
        """:meth:`ask`, streamed through the same pipeline.

        Yields ``citation``/``delta``/``support`` events as they become safe to send
        (docs/architecture.md rule 9) and a last ``done`` event whose ``message`` is the message
        :meth:`ask` returns for the same call (same text, numbering, references, parts,
        support, warnings; its own ``id``). Arguments and errors as :meth:`ask` (argument
        errors raised before the first event). Under policy ``drop`` nothing unchecked
        may reach the client: a model's sentences are each held until checked, an
        extractive answer is checked whole and sent as one delta. Closing the iterator
        early stops the generator (an LLM's HTTP stream is closed).
        """
        turn = self._prepare(question, k=k, filters=filters, corpus=corpus, offsets=offsets, chat_id=chat_id,
                             policy=policy, image=image, image_url=image_url, user_id=user_id, generator=generator)

        def events() -> Iterator[Event]:
            passages = self._retrieve_for(turn, sync=sync, manifests=manifests, progress=progress)
            yield from self._pipeline(turn).events(turn, passages)

        return events()

    def answer_over(self, question: str, passages: Sequence[Passage], *, generator: str | None = None,
                    offsets: str = "codepoint", policy: str = "flag") -> Message:
        """Answer ``question`` from the given ``passages`` (no retrieval, nothing stored)
        through the answering pipeline: generator, cite stage, support. Tracking agents
        write their alerts with it (:mod:`citewell.agents.alerts`). Raises as :meth:`ask`
        (``INVALID_REQUEST``, the generator's :class:`~citewell.errors.GenerationError`)."""
        turn = self._prepare(question, k=5, filters=None, corpus=None, offsets=offsets, chat_id=None,
                             policy=policy, generator=generator)
        return self._pipeline(turn).answer(turn, list(passages))

    def _prepare(self, question: str, *, k: int, filters: Iterable[str] | Mapping[str, Any] | None,
                 corpus: str | os.PathLike[str] | None, offsets: str, chat_id: str | None,
                 policy: str, image: str | os.PathLike[str] | None = None, image_url: str | None = None,
                 user_id: str | None = None, generator: str | None = None) -> Turn:
        """:func:`~citewell.answer.prepare_turn` in this workspace; the generator name is
        checked too (``llm`` needs an endpoint)."""
        turn = prepare_turn(self.store, self.workspace_id, self.resolver, question, k=k, filters=filters,
                            corpus=corpus, offsets=offsets, chat_id=chat_id, policy=policy, image=image,
                            image_url=image_url, user_id=user_id, generator=generator)
        self.generator_for(generator)
        return turn

    def _retrieve_for(self, turn: Turn, *, sync: bool, manifests: Sequence[str | os.PathLike[str]],
                      progress: ProgressCallback | None) -> list[Passage]:
        """The passages of ``turn``: its folder synced first (``sync``), embeddings its
        scope lacks computed within the budget, its warnings noted on the turn. An
        embeddings endpoint that fails leaves the question to lexical retrieval, with a
        ``DENSE_UNAVAILABLE`` warning naming the failure."""
        if not turn.query:  # an image without text: nothing to retrieve with (rule 11)
            return []
        if turn.corpus is not None and sync:
            self.sync(turn.corpus, manifests=manifests, progress=progress)
        # one snapshot, and its round trips, for every read of the retrieval; the page context
        # is the rest of the best passage's page: every row of a statement it starts
        reading = turn.reading
        try:
            turn.notes.extend(self._retrieval.prepare(turn.conditions, turn.under, turn.query))  # may write vectors
            with self.store.reading():
                # the question is analysed once, with the domain pack of its scope; every later
                # stage (retrieval, scope check, generator, relevance) reads this analysis
                reading.analysis, reading.facts = self._retrieval.read_question(
                    turn.question, turn.query, turn.previous, conditions=turn.conditions, under=turn.under)
                passages = self._retrieval.retrieve(turn.query, k=turn.k, conditions=turn.conditions,
                                                    under=turn.under, facts=reading.facts, analysis=reading.analysis)
                return passages + page_context(self.store, self.workspace_id, passages)
        except CitewellError as exc:
            if exc.code != "EMBED_UNAVAILABLE":
                raise
            turn.notes.append(Notice(code="DENSE_UNAVAILABLE",
                                     message=f"{exc.message}; this answer used lexical (BM25) retrieval only"))
        with self.store.reading():
            if reading.analysis is None:
                reading.analysis, reading.facts = self._retrieval.read_question(
                    turn.question, turn.query, turn.previous, conditions=turn.conditions, under=turn.under)
            passages = self._retrieval.retrieve(turn.query, k=turn.k, conditions=turn.conditions, under=turn.under,
                                                facts=reading.facts, analysis=reading.analysis, lexical=True)
            return passages + page_context(self.store, self.workspace_id, passages)

    # -- asynchronous turns (the chats and analytics profiles) ---------------------------
    def begin_turn(self, question: str, *, chat_id: str | None = None, k: int = 5,
                   filters: Iterable[str] | Mapping[str, Any] | None = None, offsets: str = "codepoint",
                   policy: str = "flag", user_id: str | None = None, user_email: str | None = None,
                   generator: str | None = None) -> PendingTurn:
        """Start a turn that settles later: validate it (raising as :meth:`ask`, before
        anything is stored), create a chat when ``chat_id`` is None (titled by the
        question, of the user when given), and store the user message and a ``pending``
        assistant message in one transaction. :meth:`complete_turn` does the work."""
        turn = self._prepare(question, k=k, filters=filters, corpus=None, offsets=offsets, chat_id=chat_id,
                             policy=policy, user_id=user_id, generator=generator)
        if chat_id is None:
            chat = self.chat(question_title(one_line(turn.question)), user_id=user_id, user_email=user_email)
            turn = Turn(**{**turn.__dict__, "chat_id": chat.id})
        else:
            chat = self.store.chat(self.workspace_id, chat_id, user_id=user_id)
        preview = self._pending_answer(chat.id) if chat_id is not None else None
        placeholder = Message(role="assistant", status="pending", text="", offset_unit=turn.offsets)
        user, pending = self.store.add_messages(self.workspace_id, chat.id,
                                                [user_message(turn, turn.offsets), placeholder])
        return PendingTurn(chat, user, pending, turn, preview)

    def _pending_answer(self, chat_id: str) -> str | None:
        """The id of the chat's last assistant message when it is still pending, else None."""
        answers = [m for m in stored_messages(self.store, self.workspace_id, chat_id, resolver=self.resolver)
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
            return self._pipeline(turn).answer(turn, passages, pending=pending)
        except Exception as exc:  # noqa: BLE001 - a turn settles, whatever went wrong
            return self.fail_turn(pending, *failure(exc))

    def stream_turn(self, pending: PendingTurn) -> Iterator[Event]:
        """:meth:`complete_turn`, streamed: answer a turn begun by :meth:`begin_turn` and
        settle its message, yielding the client events on the way.

        Events: ``search_results`` ``{"passages": [Passage dict, …]}`` (what retrieval
        found, best first), then the answer's ``citation``/``delta``/``support`` events as
        :meth:`ask_stream` yields them (the same pipeline), then ``done`` ``{"message":
        Message dict}``: the message as settled and stored (the concatenated deltas equal
        its ``text``). When anything fails the message settles ``failed`` (as
        :meth:`complete_turn`: :meth:`fail_turn` with the error's code, ``SERVER_ERROR``
        for an unexpected one) and the last event is ``error`` ``{"code", "message"}``
        instead of ``done``.

        Run it to the end: a consumer that closes it early stops the generator and leaves
        the message settled ``failed`` with ``TURN_INTERRUPTED`` (unless it had settled
        already).
        """
        turn = pending.turn
        settled = False
        try:
            passages = self._retrieve_for(turn, sync=False, manifests=(), progress=None)
            yield Event("search_results", {"passages": [p.model_dump(mode="json") for p in passages]})
            for event in self._pipeline(turn).events(turn, passages, pending=pending):
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
            code, text = failure(exc)
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
            title = _checked_title(title)
        return self.store.create_chat(self.workspace_id, title, user_id=user_id, user_email=user_email)

    def rename_chat(self, chat_id: str, title: str, *, user_id: str | None = None) -> ChatRecord:
        """Give a chat of this workspace (of that user, when ``user_id``) a new ``title``
        (one line of text, at most ``MAX_TITLE_CHARS``: ``UsageError`` otherwise);
        ``NOT_FOUND`` for a chat it does not see."""
        return self.store.rename_chat(self.workspace_id, chat_id, _checked_title(title), user_id=user_id)

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
        return stored_messages(self.store, self.workspace_id, chat_id, limit=limit, after=after,
                               resolver=self.resolver, user_id=user_id)

    def message(self, message_id: str, *, user_id: str | None = None) -> Message:
        """One stored message of this workspace (in that user's chats, when ``user_id``);
        its ``chat_id`` names its chat. ``NOT_FOUND`` otherwise."""
        return stored_message(self.store, self.workspace_id, message_id, resolver=self.resolver, user_id=user_id)

    def cite(self, raw_text: str, *, sources: Sequence[Passage | Mapping[str, Any]] | GivenSources | None = None,
             offsets: str = "codepoint", policy: str = "flag", numbered: bool = False) -> Message:
        """Run the cite stage on generator output: links → ``[N]``, references, parts,
        citations, rule-8 support (``policy`` flag or drop). ``sources``: the sources the
        generator saw, in order — passages, or objects given inline
        (``{chunk_id|source+id, text, title?, metadata?}``: numbered and checked against
        that text) or by id (resolved in this workspace; a post it does not hold is still
        numbered, its support unchecked) (:mod:`citewell.cite.given`); without, every
        resolvable link counts (rule 4). ``numbered``: the generator cites the sources by
        position, ``[1]``, ``[1, 2]``, ``[1-3]``, ``【1】``, ``[n]`` being the ``n``-th
        given (a :class:`~citewell.cite.given.GivenSources` from :meth:`resolve_sources` is
        used as read). Raises ``INVALID_REQUEST`` for a bad unit, policy or source, or
        ``numbered`` without sources."""
        check_choices(offsets, policy)
        return cite_sources(raw_text, sources, resolver=self.resolver, offsets=offsets, policy=policy,
                            numbered=numbered)

    def resolve_sources(self, items: Sequence[Passage | Mapping[str, Any]]) -> GivenSources:
        """Read a sources list as :meth:`cite` does (:func:`citewell.cite.given.read_sources`):
        per item in order its passage, a post's ``(source, id)`` whose text is unknown, or
        None (a chunk this workspace does not hold), and the warnings saying so. Raises
        ``INVALID_REQUEST`` for an item that is no source."""
        return read_sources(items, self.resolver)

    def close(self) -> None:
        """Close the store's connections."""
        self.store.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- recorded answer streams (the analytics profile) ---------------------------------
    def record_events(self, message_id: str, rows: Sequence[tuple[int, str, str]]) -> None:
        """Record client events ``(seq, name, data JSON)`` of an answer's stream, in order."""
        self.store.append_events(self.workspace_id, message_id, list(rows))

    def recorded_events(self, message_id: str, *, after: int = 0) -> list[tuple[int, str, str]]:
        """The recorded events of an answer's stream with ``seq > after``, in order."""
        return self.store.events(self.workspace_id, message_id, after=after)

    def mentions(self, refs: Sequence[tuple[str, str]], *,
                 dataset_ids: Sequence[str | None] | None = None) -> list[Mention | None]:
        """The posts ``(source, id)`` of this workspace, in the order asked (None: unknown):
        each the copy of its ``dataset_ids`` entry (a posts file) when given, else the copy
        :meth:`Store.mentions` chooses."""
        return self.store.mentions(self.workspace_id, list(refs), dataset_ids=dataset_ids)


def _checked_title(title: str) -> str:
    """``title`` as a chat keeps it (lone surrogates replaced); ``UsageError`` when it is
    longer than ``MAX_TITLE_CHARS`` or not one line of text (:func:`title_problem`)."""
    title = valid_text(title)
    if len(title) > MAX_TITLE_CHARS:
        raise UsageError(f"the title is longer than {MAX_TITLE_CHARS:,} characters")
    problem = title_problem(title)
    if problem:
        raise UsageError(problem)
    return title


def _under(corpus: str | os.PathLike[str] | None) -> str | None:
    """The resolved folder of ``corpus`` (None: no folder scope)."""
    return str(Path(corpus).expanduser().resolve()) if corpus is not None else None
