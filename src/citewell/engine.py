"""``citewell.Engine``: the one library facade that the CLI, HTTP API and MCP server share.

::

    engine = Engine()                                  # embedded SQLite store, workspace "default"
    engine.sync("docs/")                               # ingest new/changed files, mark gone ones missing
    message = engine.ask("What was capex in FY2022?", corpus="docs/")
    print(message.text)                                # "... $1.7 billion [1]."
    message.references[0].metadata["page"]             # where [1] lives

Pipeline: ingest → store → retrieve (BM25) → generate (extractive) → cite → Message.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .cite import cite as _cite
from .cite import convert_offsets
from .cite.stream import Event, StreamingCiter
from .errors import UsageError
from .generate import ExtractiveGenerator, Generator
from .ingest.pipeline import IngestReport, Ingestor, ProgressCallback
from .models import Message, Notice, Passage, Resource, utcnow
from .retrieve import BM25Retriever, Retriever, parse_filters
from .settings import Settings
from .store import Store, open_store
from .store.base import ChatRecord

OFFSET_UNITS = ("codepoint", "utf16", "utf8")


def _valid_text(text: str) -> str:
    """``text`` with lone surrogates (undecodable command-line bytes) replaced by U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8") if any("\ud800" <= c <= "\udfff" for c in text) else text


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

    def entity_exists(self, type: str, id: str) -> bool:  # noqa: A002
        """True when an entity of ``type`` with ``id`` exists in this workspace.

        ``resource`` is any resource, ``dataset`` a posts resource; chats, patterns and
        research previews are not stored yet, so they never exist.
        """
        if type not in ("resource", "dataset"):
            return False
        try:
            resource = self.store.resource(self.workspace_id, id)
        except Exception:
            return False
        return type == "resource" or resource.kind == "post"


class Engine:
    """The citewell library facade.

    ``store``: a :class:`~citewell.store.Store`, a path to a SQLite file, or None for the
    configured default (``CITEWELL_STORE``, config file, user data directory).
    ``workspace``: the workspace name; every call is scoped to it. ``generator``: the
    answer writer (default :class:`~citewell.generate.ExtractiveGenerator`).
    Raises :class:`~citewell.errors.StoreError` when the store cannot be opened.
    """

    def __init__(self, store: Store | str | os.PathLike[str] | None = None, workspace: str = "default", *,
                 generator: Generator | None = None, retriever: Retriever | None = None) -> None:
        if store is None or isinstance(store, (str, os.PathLike)):
            store = open_store(store if store is not None else Settings.resolve().store)
        self.store: Store = store
        self.workspace = workspace
        self.workspace_id = self.store.workspace_id(workspace)
        self.generator: Generator = generator or ExtractiveGenerator()
        self.retriever: Retriever = retriever or BM25Retriever(self.store, self.workspace_id)
        self.resolver = StoreResolver(self.store, self.workspace_id)
        self._ingestor = Ingestor(self.store, self.workspace_id)

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

    def resources(self, *, statuses: Sequence[str] | None = None,
                  corpus: str | os.PathLike[str] | None = None) -> list[Resource]:
        """Resources of the workspace, oldest first (optionally by status or corpus folder)."""
        under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
        return self.store.resources(self.workspace_id, statuses=statuses, under=under)

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
        return self.retriever.retrieve(question, k=k, conditions=conditions, under=under)

    def ask(self, question: str, *, k: int = 5, filters: Iterable[str] | Mapping[str, Any] | None = None,
            corpus: str | os.PathLike[str] | None = None, sync: bool = True, offsets: str = "codepoint",
            manifests: Sequence[str | os.PathLike[str]] = (), progress: ProgressCallback | None = None,
            chat_id: str | None = None) -> Message:
        """Answer ``question`` with numbered citations.

        With ``corpus`` the folder is synced first (unless ``sync=False``) and only its
        resources are searched; without, the whole workspace is. ``offsets`` is the unit
        of every offset in the message: codepoint (default), utf16 or utf8.
        With ``chat_id`` (a chat of this workspace, see :meth:`chat`) the turn is stored:
        the user message (``text`` = the question, ``resource_ids`` = the resources the
        ``resource_id`` filter restricted it to) then the returned assistant message, in
        one transaction; :meth:`history` returns them exactly as returned here.
        Raises ``INVALID_FILTER`` for bad filters, ``INVALID_REQUEST`` for bad arguments
        and ``NOT_FOUND`` for an unknown ``chat_id`` (checked before any work).
        """
        if offsets not in OFFSET_UNITS:
            raise UsageError(f"offsets must be one of {', '.join(OFFSET_UNITS)}")
        if not question or not question.strip():
            raise UsageError("the question is empty")
        question = _valid_text(question)
        if k < 1:
            raise UsageError("k must be at least 1")
        conditions = parse_filters(filters)
        if chat_id is not None:
            self.store.chat(self.workspace_id, chat_id)
        asked_at = utcnow()
        if corpus is not None and sync:
            self.sync(corpus, manifests=manifests, progress=progress)
        under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
        passages = self.retriever.retrieve(question, k=k, conditions=conditions, under=under)
        raw = self.generator.generate(question, passages)
        message = _cite(raw, sources=passages, resolver=self.resolver)
        if not passages and not self.store.count_resources(self.workspace_id, conditions=conditions, under=under):
            what = "matches the filters" if conditions else ("is in that folder" if under else "is in the workspace")
            message.warnings.append(Notice(
                code="NO_MATCHING_RESOURCES",
                message=f"no searchable resource {what} (check filter values with citewell resources --json; "
                        "files without a text layer are not searchable)"))
        message.id = str(uuid.uuid4())
        message.grounded = bool(message.references)
        message = convert_offsets(message, offsets) if offsets != "codepoint" else message
        if chat_id is None:
            return message
        restricted = [v for c in conditions if c.key == "resource_id" and c.op == "eq" for v in c.values]
        user = Message(role="user", text=question, resource_ids=list(dict.fromkeys(restricted)),
                       offset_unit=message.offset_unit, created_at=asked_at)
        _, stored = self.store.add_messages(self.workspace_id, chat_id, [user, message])
        return stored

    # -- chats -------------------------------------------------------------------------
    def chat(self, title: str | None = None) -> ChatRecord:
        """Create a chat in this workspace; pass its ``id`` as ``ask(chat_id=…)``."""
        return self.store.create_chat(self.workspace_id, title)

    def chats(self) -> list[ChatRecord]:
        """Chats of this workspace, oldest first."""
        return self.store.chats(self.workspace_id)

    def history(self, chat_id: str, *, limit: int | None = None, after: str | None = None) -> list[Message]:
        """Messages of a chat, oldest first, as first returned (rule 10: stored messages
        read back unchanged; legacy rows converted once). ``after``: a message id, only
        later ones; ``limit``: at most that many. ``NOT_FOUND`` for an unknown chat (or
        one of another workspace) or ``after``."""
        return self.store.messages(self.workspace_id, chat_id, limit=limit, after=after, resolver=self.resolver)

    def message(self, message_id: str) -> Message:
        """One stored message of this workspace; ``NOT_FOUND`` otherwise."""
        return self.store.message(self.workspace_id, message_id, resolver=self.resolver)

    def cite(self, raw_text: str, *, sources: Sequence[Passage] | None = None, offsets: str = "codepoint") -> Message:
        """Run the cite stage on generator output: links → ``[N]``, references, parts,
        citations. Without ``sources`` every resolvable link counts (rule 4)."""
        if offsets not in OFFSET_UNITS:
            raise UsageError(f"offsets must be one of {', '.join(OFFSET_UNITS)}")
        message = _cite(raw_text, sources=sources, resolver=self.resolver)
        return convert_offsets(message, offsets) if offsets != "codepoint" else message

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
                   chat_id: str | None = None, support: Any = None) -> Iterator[Event]:
        """:meth:`ask`, streamed: the generator's pieces go through the cite stage's
        :class:`~citewell.cite.stream.StreamingCiter`, so every answer path is one path.

        Yields ``citation``/``delta``/``support`` events as they become safe to send
        (DESIGN.md rule 9) and a last ``done`` event whose ``message`` is the message
        :meth:`ask` returns for the same call (same text, numbering, references, parts,
        warnings; its own ``id``). Arguments and errors as :meth:`ask` (raised before the
        first event). ``support(sentence, passage) -> dict`` adds support events.
        """
        if offsets not in OFFSET_UNITS:
            raise UsageError(f"offsets must be one of {', '.join(OFFSET_UNITS)}")
        if not question or not question.strip():
            raise UsageError("the question is empty")
        question = _valid_text(question)
        if k < 1:
            raise UsageError("k must be at least 1")
        conditions = parse_filters(filters)
        if chat_id is not None:
            self.store.chat(self.workspace_id, chat_id)

        def events() -> Iterator[Event]:
            asked_at = utcnow()
            if corpus is not None and sync:
                self.sync(corpus, manifests=manifests, progress=progress)
            under = str(Path(corpus).expanduser().resolve()) if corpus is not None else None
            passages = self.retriever.retrieve(question, k=k, conditions=conditions, under=under)
            citer = StreamingCiter(sources=passages, resolver=self.resolver, support=support)
            for piece in self.generator.stream(question, passages):
                yield from citer.feed(piece)
            tail, message = citer.close()
            yield from tail
            if not passages and not self.store.count_resources(self.workspace_id, conditions=conditions,
                                                               under=under):
                what = "matches the filters" if conditions else ("is in that folder" if under else "is in the workspace")
                message.warnings.append(Notice(
                    code="NO_MATCHING_RESOURCES",
                    message=f"no searchable resource {what} (check filter values with citewell resources --json; "
                            "files without a text layer are not searchable)"))
            message.id = str(uuid.uuid4())
            message.grounded = bool(message.references)
            message = convert_offsets(message, offsets) if offsets != "codepoint" else message
            if chat_id is not None:
                restricted = [v for c in conditions if c.key == "resource_id" and c.op == "eq" for v in c.values]
                user = Message(role="user", text=question, resource_ids=list(dict.fromkeys(restricted)),
                               offset_unit=message.offset_unit, created_at=asked_at)
                _, message = self.store.add_messages(self.workspace_id, chat_id, [user, message])
            yield Event("done", {"message": message.model_dump(mode="json")})

        return events()
