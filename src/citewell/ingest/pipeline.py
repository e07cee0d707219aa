"""From files on disk to stored resources: detect, extract, attach metadata, commit.

Rules (docs/architecture.md "Canonical data", "Errors"):

- A file is skipped when unchanged: same size and mtime as last time, or same sha256.
- Extraction runs outside any write transaction; each resource is then written in one.
- Content already stored under another path is linked, not extracted again.
- A file that fails leaves exactly one failed resource row with its error and nothing
  else; a stored ready version of the same path stays as it was.
- Extraction runs in a child process with a memory and a time cap (:mod:`.isolate`), so
  a file that would exhaust memory or crash its parser (a flate-bomb PDF) fails alone
  with its format's code and the rest of the folder is ingested.
- ``sync(dir)`` also marks files gone from ``dir`` as missing (never deletes).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..blobs import INCOMING, BlobNotFound, blob_key
from ..blobs.local import PIECE as _PIECE
from ..errors import CitewellError, IngestError, NotFoundError, StoreUnavailable, UsageError
from ..models import ErrorInfo, Notice, Resource, utcnow
from ..store.base import Store
from ..store.ids import resource_id_for
from ..validtext import valid_json, valid_text
from ..extraction import Extraction
from .isolate import extract_in_worker, extract_isolated
from .manifest import AUTO_MANIFEST, Manifest, ManifestEntry, entry_from_row
from .pieces import bound_chunks
from .posts import NOT_A_POSTS_FILE, extract_posts, is_posts_file
from .text import extract_text

#: Bump an entry when that extractor's chunk boundaries, texts or provenance change: it is
#: part of every chunk id, and a failed row is retried only under a new version.
#: posts-2, vtt-2, srt-2 (issue 14): a long post, and a long cue, are cut into pieces of
#: bounded size (:mod:`citewell.ingest.pieces`).
EXTRACTOR_VERSIONS = {"pdf": "pdf-4", "vtt": "vtt-2", "srt": "srt-2", "text": "text-1", "md": "text-1",
                      "posts": "posts-2"}
FORMATS = {".pdf": "pdf", ".vtt": "vtt", ".srt": "srt", ".txt": "text", ".md": "md", ".markdown": "md",
           ".jsonl": "posts"}
_FAILURE_CODES = {"pdf": "PDF_CORRUPT", "vtt": "VTT_MALFORMED", "srt": "SRT_MALFORMED", "posts": "JSONL_MALFORMED",
                  "text": "TEXT_ENCODING", "md": "TEXT_ENCODING"}

#: How much lower the CPU priority of a server's background work is (re-extraction at
#: start, embedding, a workspace's backlog of uploads): the answers people wait for come
#: first. A workspace's one upload is extracted at the normal priority: its uploader waits
#: for it, and a lowered one starves on a busy machine.
BACKGROUND_NICE = 10

ProgressCallback = Callable[[str, Path, int, int], None]
"""``progress(stage, path, done, total)``: stage is ``start`` (before a file) or ``done``."""


@dataclass
class FileOutcome:
    """What happened to one file.

    ``action``: ingested, unchanged, linked (same content already stored), updated
    (metadata only), reindexed (re-extracted by a newer extractor version), failed, or
    skipped (unsupported / not a posts file).
    """

    path: str
    action: str
    resource_id: str | None = None
    code: str | None = None
    message: str | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class IngestReport:
    """Outcomes of one ingest or sync call, in file order, plus ids marked missing."""

    outcomes: list[FileOutcome] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    #: ``"manifest:line"`` of manifest rows that matched no file of this run.
    manifest_unmatched: list[str] = field(default_factory=list)
    #: ``"manifest:line: reason"`` of invalid manifest rows (skipped).
    manifest_errors: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[FileOutcome]:
        """Outcomes whose file could not be ingested."""
        return [o for o in self.outcomes if o.action == "failed"]

    def count(self, action: str) -> int:
        """How many files had this ``action``."""
        return sum(1 for o in self.outcomes if o.action == action)


def file_format(path: Path) -> str | None:
    """The extractor for ``path`` by extension (pdf, vtt, srt, text, md, posts) or None."""
    return FORMATS.get(path.suffix.lower())


def extract_file(data: bytes, name: str, fmt: str) -> Extraction:
    """:func:`extract` with positional arguments (what an isolated child calls)."""
    return extract(data, name=name, fmt=fmt)


def extract_path(path: str, name: str, fmt: str, posts_only: bool = False) -> Extraction:
    """:func:`extract` of the file at ``path`` (what an isolated child calls: the bytes never
    pass through the parent). ``posts_only``: a ``.jsonl`` that is not a posts file fails
    with ``UNSUPPORTED_FILE`` (an upload; a folder sync skips such files instead)."""
    data = Path(path).read_bytes()
    if posts_only and fmt == "posts" and data.strip() and not is_posts_file(data, name=name):
        raise IngestError(f"{name}: JSONL but not a posts file (its first line lacks a string source, an id and "
                          "a string text)", code="UNSUPPORTED_FILE")
    return extract(data, name=name, fmt=fmt)


def extract(data: bytes, *, name: str, fmt: str) -> Extraction:
    """Run the extractor for ``fmt`` on ``data``; raises :class:`IngestError` with its code.
    Every chunk of the result is at most :data:`~citewell.ingest.pieces.MAX_CHUNK_CHARS`
    characters (:func:`~citewell.ingest.pieces.bound_chunks`: a chunk its extractor did not
    bound is cut with its provenance kept), so what one passage costs a question is bounded."""
    return bound_chunks(_extract(data, name=name, fmt=fmt))


def _extract(data: bytes, *, name: str, fmt: str) -> Extraction:
    if not data.strip():
        raise IngestError(f"{name}: the file is empty", code="EMPTY_FILE")
    if fmt == "pdf":
        from .pdf import extract_pdf
        return extract_pdf(data, name=name)
    if fmt == "vtt":
        from .transcript import extract_vtt
        return extract_vtt(data, name=name)
    if fmt == "srt":
        from .transcript import extract_srt
        return extract_srt(data, name=name)
    if fmt == "posts":
        return extract_posts(data, name=name)
    if fmt in ("text", "md"):
        return extract_text(data, name=name, markdown=fmt == "md")
    raise IngestError(f"{name}: unsupported file type", code="UNSUPPORTED_FILE")


def _text(path: Path | str) -> str:
    """A path as valid UTF-8 text: bytes of a non-UTF-8 file name appear as ``\\xff``.

    POSIX file names are bytes; Python keeps undecodable ones as lone surrogates, which
    no database or terminal accepts.
    """
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def walk(directory: Path, *, exclude: Sequence[Path] = ()) -> list[Path]:
    """Regular files under ``directory``, sorted, skipping hidden names, the auto manifest
    and anything under ``exclude`` (the store's own files when it lives in the folder)."""
    skip = {str(p) for p in exclude}
    found: list[Path] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and str(Path(root) / d) not in skip)
        for name in sorted(files):
            path = Path(root) / name
            if name.startswith(".") or name == AUTO_MANIFEST or str(path) in skip:
                continue
            found.append(path)
    return found


class Ingestor:
    """Ingests files into one workspace of a store (used by :class:`citewell.Engine`)."""

    def __init__(self, store: Store, workspace_id: str) -> None:
        self.store = store
        self.workspace_id = workspace_id
        db = Path(store.location)
        self._exclude = [*store.blobs.local_files(), db,
                         *(db.with_name(db.name + s) for s in ("-wal", "-shm", "-journal"))]

    # -- public ------------------------------------------------------------------------
    def ingest(self, paths: Iterable[Path], *, manifests: Sequence[Path] = (),
               progress: ProgressCallback | None = None) -> IngestReport:
        """Ingest files and folders (folders recursively, without marking missing files).

        A file named explicitly with an unsupported extension fails with
        ``UNSUPPORTED_FILE``; inside folders such files are skipped.
        """
        report = IngestReport()
        jobs: list[tuple[Path, Path, bool]] = []
        manifest = Manifest()
        roots: list[Path] = []
        for raw in paths:
            path = Path(raw).expanduser().resolve()
            if path.is_dir():
                roots.append(path)
                self._auto_manifest(manifest, path)
                jobs += [(p, path, False) for p in walk(path, exclude=self._exclude)]
            else:
                roots.append(path.parent)
                jobs.append((path, path.parent, True))
        for m in manifests:
            manifest.load(Path(m).expanduser().resolve(), roots=roots)
        self._run(jobs, manifest, report, progress)
        report.manifest_unmatched = manifest.unmatched()
        report.manifest_errors = list(manifest.errors)
        return report

    def sync(self, directory: Path, *, manifests: Sequence[Path] = (),
             progress: ProgressCallback | None = None) -> IngestReport:
        """Bring the workspace in line with ``directory``: new and changed files are
        ingested, unchanged ones skipped, files gone from it marked missing."""
        root = Path(directory).expanduser().resolve()
        if not root.is_dir():
            raise IngestError(f"{directory}: not a folder", code="NOT_FOUND")
        manifest = Manifest()
        self._auto_manifest(manifest, root)
        for m in manifests:
            manifest.load(Path(m).expanduser().resolve(), roots=[root])
        report = IngestReport()
        files = walk(root, exclude=self._exclude)
        self._run([(p, root, False) for p in files], manifest, report, progress)
        report.manifest_unmatched = manifest.unmatched()
        report.manifest_errors = list(manifest.errors)
        report.missing = self.store.mark_missing(self.workspace_id, _text(root), [_text(p) for p in files])
        return report

    # -- uploads (the HTTP API) ---------------------------------------------------------
    def spool(self) -> Path:
        """A new empty local file for an upload being received (the HTTP route streams the
        request into it, never holding the file in memory; :meth:`BlobStore.spool`); hand
        it to :meth:`stage_upload`, which takes it over, or remove it."""
        return self.store.blobs.spool()

    def stage_upload(self, file_name: str, data: bytes | Path, *,
                     metadata: Mapping[str, Any] | None = None) -> Resource:
        """Record an uploaded file: its bytes are staged and one resource row is written
        with status ``processing`` (extraction is :meth:`process_upload`, run later). The
        same bytes already in the workspace return that resource, with ``metadata`` (when
        given) merged into its own: each key given replaces that key, the others stay.

        ``data``: the bytes, or a file of :meth:`spool` holding them, which is moved into
        place (or removed) whatever happens: an upload is read from disk in pieces, never
        whole into memory.

        ``metadata``: a JSON object as a user sends it: ``title``, ``custom_metadata`` and
        the typed fields of seeds 003/004, read like a manifest row
        (:func:`~citewell.ingest.manifest.entry_from_row`; other keys go to custom metadata).
        Raises :class:`~citewell.errors.UsageError` for an empty file name or a bad value.
        """
        spooled = data if isinstance(data, Path) else None
        try:
            name = upload_name(file_name)
            if metadata is not None and not isinstance(metadata, Mapping):
                raise UsageError("metadata must be a JSON object")
            try:
                entry = entry_from_row(valid_json(dict(metadata or {})))
            except (TypeError, ValueError) as exc:
                raise UsageError(f"metadata: {exc}") from exc
            sha, size = file_digest(spooled) if spooled is not None else (hashlib.sha256(data).hexdigest(), len(data))
            now = utcnow()
            resource = Resource(
                id=resource_id_for(self.workspace_id, sha), workspace_id=self.workspace_id,
                title=entry.title or Path(name).stem or name, file_name=name, sha256=sha, size_bytes=size,
                status="processing", metadata=entry.metadata, custom_metadata=entry.custom_metadata or None,
                extractor_version=EXTRACTOR_VERSIONS.get(file_format(Path(name)) or "", "none"),
                created_at=now, updated_at=now)
            staged = self.staged(resource)
            self.store.blobs.put(staged, spooled if spooled is not None else data, move=spooled is not None)
        except BaseException:
            if spooled is not None:
                spooled.unlink(missing_ok=True)
            raise
        try:
            stored = self.store.begin_upload(self.workspace_id, resource)
        except BaseException:
            self.store.blobs.delete(staged)
            raise
        if stored.status == "processing" and stored.created_at == resource.created_at:
            return stored  # ours: process_upload reads the staged bytes
        self.store.blobs.delete(staged)  # the same bytes are stored (or being processed) already
        if stored.status == "processing":
            return stored
        if metadata:  # merged into what the resource has: a key given replaces that key only
            custom = {**(stored.custom_metadata or {}), **entry.custom_metadata}
            self.store.update_resource_metadata(self.workspace_id, stored.id, title=entry.title,
                                                metadata={**stored.metadata, **entry.metadata},
                                                custom_metadata=custom or None)
            stored = self.store.resource(self.workspace_id, stored.id)
        return stored

    def process_upload(self, resource_id: str, *, nice: int = 0) -> Resource | None:
        """Extract a staged upload: the resource becomes ``ready`` (chunks, search index,
        blob) or ``failed`` with its coded error and nothing else (docs/architecture.md "Errors").
        ``nice``: the extraction child's lower CPU priority (0: the caller's).

        Idempotent: a resource no longer processing is returned as it is; one deleted
        meanwhile gives None. Bytes lost before extraction (a crash between the upload and
        its processing) fail with ``UPLOAD_LOST``.
        """
        try:
            resource = self.store.resource(self.workspace_id, resource_id)
        except NotFoundError:
            return None  # deleted: delete_resource removed its staged bytes
        blobs = self.store.blobs
        staged_key = self.staged(resource)
        if resource.status != "processing":
            blobs.delete(staged_key)
            return resource
        name = resource.file_name
        fmt = file_format(Path(name))
        extraction: Extraction | None = None
        error: IngestError | None = None
        try:
            staged: Path | None = blobs.local_path(staged_key)  # a worker on another machine downloads it
        except BlobNotFound:
            staged = None
        if staged is None:
            error = IngestError(f"{name}: the uploaded bytes were lost before extraction (the server stopped); "
                                "upload the file again", code="UPLOAD_LOST")
        elif fmt is None:
            error = IngestError(f"{name}: unsupported file type (supported: {', '.join(sorted(FORMATS))})",
                                code="UNSUPPORTED_FILE")
        else:
            try:
                # untrusted bytes: extracted from the file by a child with memory and time caps
                extraction = extract_isolated(staged, name=name, fmt=fmt, posts_only=True, nice=nice)
            except IngestError as exc:
                error = exc
            except Exception as exc:  # noqa: BLE001 - an extractor bug fails this upload only
                error = IngestError(f"{name}: could not be read ({type(exc).__name__}: {exc})",
                                    code=_FAILURE_CODES.get(fmt, "UNSUPPORTED_FILE"))
        if extraction is None:
            assert error is not None
            failed = resource.model_copy(update={"status": "failed", "error": ErrorInfo(code=error.code,
                                                                                        message=error.message)})
            stored = self._commit_upload(failed, None, None)
        else:
            metadata = {k: v for k, v in extraction.metadata.items() if k != "pdf_title"}
            ready = resource.model_copy(update={
                "status": "ready", "kind": extraction.kind, "media_type": extraction.media_type,
                "warnings": [Notice(**w) for w in extraction.warnings], "metadata": {**metadata, **resource.metadata},
                "extractor_version": EXTRACTOR_VERSIONS[fmt], "updated_at": utcnow()})
            stored = self._commit_upload(ready, extraction, staged)
        blobs.delete(staged_key)
        return stored

    def fail_upload(self, resource_id: str, code: str, message: str) -> Resource | None:
        """Settle an upload still ``processing`` as ``failed`` with ``{code, message}``
        (``message`` prefixed with the file name; its extraction job gave up: out of
        attempts) and drop its staged bytes. A resource that is no longer processing is
        returned as it is; None when it was deleted. Raises what the store raises
        (:class:`~citewell.errors.StoreUnavailable`)."""
        try:
            resource = self.store.resource(self.workspace_id, resource_id)
        except NotFoundError:
            return None
        if resource.status != "processing":
            return resource
        failed = resource.model_copy(update={"status": "failed", "error": ErrorInfo(
            code=code, message=f"{resource.file_name}: {message}")})
        try:
            stored = self._commit_upload_once(failed, None, None)
        except NotFoundError:
            return None
        self.store.blobs.delete(self.staged(resource))
        return stored

    @staticmethod
    def staged(resource: Resource) -> str:
        """The blob key under which the bytes of an upload wait for extraction:
        ``.incoming/<resource id>.<upload time>``, one per upload, so a deleted upload's
        leftovers never touch a new upload of the same bytes."""
        return f"{INCOMING}/{resource.id}.{resource.created_at.strftime('%Y%m%dT%H%M%S%f')}"

    def _commit_upload(self, resource: Resource, extraction: Extraction | None,
                       staged: Path | None) -> Resource | None:
        """Write an extracted (or failed) upload; None when it was deleted (or replaced by
        a new upload of the same bytes) meanwhile. A ready upload that cannot be stored
        (an unexpected store error) is stored failed instead: it never stays processing.
        :class:`~citewell.errors.StoreUnavailable` (the database could not be reached) is
        raised as it is: the commit is one transaction, so nothing was written, the upload
        is still processing with its staged bytes, and its job runs again later (the
        job's handler settles it failed once the job is out of attempts)."""
        try:
            return self._commit_upload_once(resource, extraction, staged)
        except NotFoundError:
            return None
        except StoreUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - one failed row rather than a stuck upload
            if extraction is None:
                raise
            failed = resource.model_copy(update={
                "status": "failed", "blob_key": None, "kind": None, "media_type": None, "warnings": [],
                "error": ErrorInfo(code="SERVER_ERROR", message=f"{resource.file_name}: could not be stored "
                                                                f"({type(exc).__name__}: {exc})")})
            try:
                return self._commit_upload_once(failed, None, staged)
            except NotFoundError:
                return None

    def _commit_upload_once(self, resource: Resource, extraction: Extraction | None,
                            staged: Path | None) -> Resource:
        if extraction is None or staged is None:
            return self.store.commit_resource(self.workspace_id, resource, extraction, path=None,
                                              size_bytes=resource.size_bytes, mtime_ns=0, upload=True)
        key = blob_key(resource.sha256, _text(Path(resource.file_name).suffix.lower()))
        with self.store.blobs.lock(key):
            resource.blob_key = key
            created = self.store.blobs.put_new(key, staged)
            try:
                return self.store.commit_resource(self.workspace_id, resource, extraction, path=None,
                                                  size_bytes=resource.size_bytes, mtime_ns=0, upload=True)
            finally:
                if created and not self.store.blob_referenced(key):
                    self.store.blobs.delete(key)

    # -- internals ---------------------------------------------------------------------
    @staticmethod
    def _auto_manifest(manifest: Manifest, root: Path) -> None:
        auto = root / AUTO_MANIFEST
        if auto.is_file():
            manifest.load(auto, roots=[root])

    def _run(self, jobs: list[tuple[Path, Path, bool]], manifest: Manifest, report: IngestReport,
             progress: ProgressCallback | None) -> None:
        total = len(jobs)
        for done, (path, _root, explicit) in enumerate(jobs):
            if progress:
                progress("start", path, done, total)
            try:
                outcome = self._one(path, manifest, explicit)
            except StoreUnavailable:  # not this file's fault, and the next ones would meet it too
                raise
            except CitewellError as exc:
                outcome = FileOutcome(_text(path), "failed", code=exc.code, message=exc.message)
            except OSError as exc:
                outcome = FileOutcome(_text(path), "failed", code="READ_ERROR",
                                      message=f"{_text(path)}: cannot be read ({exc.strerror or exc})")
            except Exception as exc:  # noqa: BLE001 - one file must never stop the rest
                code = _FAILURE_CODES.get(file_format(path) or "", "UNSUPPORTED_FILE")
                outcome = FileOutcome(_text(path), "failed", code=code,
                                      message=f"{_text(path.name)}: could not be ingested ({type(exc).__name__}: {exc})")
            report.outcomes.append(outcome)
            if progress:
                progress("done", path, done + 1, total)

    def _one(self, path: Path, manifest: Manifest, explicit: bool) -> FileOutcome:
        fmt = file_format(path)
        if fmt is None:
            msg = f"{_text(path.name)}: unsupported file type (supported: {', '.join(sorted(FORMATS))})"
            if explicit:
                data = path.read_bytes()
                return self._fail(path, data, IngestError(msg, code="UNSUPPORTED_FILE"), fmt=None,
                                  manifest=manifest)
            return FileOutcome(_text(path), "skipped", code="UNSUPPORTED_FILE", message=msg)
        st = path.stat()
        record = self.store.file_record(self.workspace_id, _text(path))
        if (record and record.present and record.size_bytes == st.st_size and record.mtime_ns == st.st_mtime_ns
                and record.last_resource_id):
            return (self._reindex_if_stale(path, record.last_resource_id, fmt)
                    or self._unchanged(path, record.last_resource_id, manifest, record.last_sha256))
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        existing = self.store.resource_by_sha(self.workspace_id, sha)
        version = EXTRACTOR_VERSIONS[fmt]
        if existing is not None and (existing.error is None or existing.extractor_version == version):
            self.store.link_path(self.workspace_id, _text(path), existing, size_bytes=st.st_size,
                                 mtime_ns=st.st_mtime_ns)
            action = "unchanged" if record and record.last_sha256 == sha else "linked"
            outcome = self._unchanged(path, existing.id, manifest, sha)
            outcome.action = "failed" if existing.error is not None else (
                outcome.action if outcome.action == "updated" else action)
            if existing.error:
                outcome.code, outcome.message = existing.error.code, existing.error.message
            return self._reindex_if_stale(path, existing.id, fmt, data=data) or outcome
        if fmt == "posts":
            try:
                if not is_posts_file(data, name=_text(path.name)):
                    return FileOutcome(_text(path), "skipped", code=NOT_A_POSTS_FILE,
                                       message=f"{_text(path.name)}: JSONL but not a posts file (first line lacks "
                                               "string source, id and string text)")
            except IngestError as exc:
                return self._fail(path, data, exc, fmt=fmt, manifest=manifest, sha=sha)
        try:
            extraction = extract_in_worker(data, name=_text(path.name), fmt=fmt)  # capped: a bomb fails this file
        except IngestError as exc:
            return self._fail(path, data, exc, fmt=fmt, manifest=manifest, sha=sha)
        except Exception as exc:  # an extractor bug must not abort the folder
            err = IngestError(f"{_text(path.name)}: could not be read ({type(exc).__name__}: {exc})",
                              code=_FAILURE_CODES.get(fmt, "UNSUPPORTED_FILE"))
            return self._fail(path, data, err, fmt=fmt, manifest=manifest, sha=sha)
        resource = self._resource(path, data, sha, fmt, manifest, extraction)
        key = blob_key(sha, _text(path.suffix.lower()))
        with self.store.blobs.lock(key):
            resource.blob_key = key
            created = self.store.blobs.put_new(key, data)
            try:
                stored = self.store.commit_resource(self.workspace_id, resource, extraction, path=_text(path),
                                                    size_bytes=st.st_size, mtime_ns=st.st_mtime_ns)
            except BaseException:
                if created and not self.store.blob_referenced(key):
                    self.store.blobs.delete(key)
                raise
        return FileOutcome(_text(path), "ingested" if stored.id == resource.id else "linked", stored.id,
                           warnings=[w.model_dump() for w in stored.warnings])

    def _reindex_if_stale(self, path: Path, resource_id: str, fmt: str, *, data: bytes | None = None
                          ) -> FileOutcome | None:
        """Re-extract a ready resource made by an older extractor version (an upgrade of
        citewell); None when it is current. If the new extractor fails, the old chunks
        stay and the outcome carries a ``REINDEX_FAILED`` warning."""
        resource = self.store.resource(self.workspace_id, resource_id)
        version = EXTRACTOR_VERSIONS[fmt]
        if resource.error is not None or resource.extractor_version == version or resource.status != "ready":
            return None
        data = path.read_bytes() if data is None else data
        if hashlib.sha256(data).hexdigest() != resource.sha256:
            return None  # changed under us: the next sync ingests it as a new version
        try:
            extraction = extract_in_worker(data, name=_text(path.name), fmt=fmt)
        except IngestError as exc:
            return FileOutcome(_text(path), "unchanged", resource_id, warnings=[{
                "code": "REINDEX_FAILED", "message": f"re-extraction with {version} failed ({exc.code}: "
                                                     f"{exc.message}); the passages of {resource.extractor_version} "
                                                     "stay in use"}])
        self.store.replace_extraction(self.workspace_id, resource_id, extraction, extractor_version=version)
        return FileOutcome(_text(path), "reindexed", resource_id,
                           warnings=list(extraction.warnings))

    def _unchanged(self, path: Path, resource_id: str, manifest: Manifest, sha: str) -> FileOutcome:
        """Skip a known file, but apply a manifest row that changed since it was ingested."""
        entry = manifest.lookup(sha256=sha, path=path)
        resource = self.store.resource(self.workspace_id, resource_id)
        if resource.status == "failed":
            return FileOutcome(_text(path), "failed", resource.id, resource.error.code if resource.error else None,
                               resource.error.message if resource.error else None)
        if entry is not None:
            title = entry.title or resource.title
            metadata = {**{k: v for k, v in resource.metadata.items() if k in _EXTRACTED_KEYS}, **entry.metadata}
            custom = entry.custom_metadata or None
            if title != resource.title or metadata != resource.metadata or custom != resource.custom_metadata:
                self.store.update_resource_metadata(self.workspace_id, resource.id, title=entry.title,
                                                    metadata=metadata, custom_metadata=custom)
                return FileOutcome(_text(path), "updated", resource.id)
        return FileOutcome(_text(path), "unchanged", resource.id)

    def _resource(self, path: Path, data: bytes, sha: str, fmt: str | None, manifest: Manifest,
                  extraction: Extraction | None) -> Resource:
        entry: ManifestEntry | None = manifest.lookup(sha256=sha, path=path)
        metadata: dict[str, Any] = dict(extraction.metadata) if extraction else {}
        metadata.pop("pdf_title", None)
        if entry:
            metadata.update(entry.metadata)
        now = utcnow()
        return Resource(
            id=resource_id_for(self.workspace_id, sha), workspace_id=self.workspace_id,
            title=(entry.title if entry and entry.title else _text(path.stem)), file_name=_text(path.name),
            kind=extraction.kind if extraction else None,
            media_type=extraction.media_type if extraction else None, sha256=sha, size_bytes=len(data),
            status="ready" if extraction else "failed",
            warnings=[Notice(**w) for w in extraction.warnings] if extraction else [],
            metadata=metadata, custom_metadata=(entry.custom_metadata or None) if entry else None,
            extractor_version=EXTRACTOR_VERSIONS.get(fmt or "", "none"), created_at=now, updated_at=now)

    def _fail(self, path: Path, data: bytes, exc: IngestError, *, fmt: str | None, manifest: Manifest,
              sha: str | None = None) -> FileOutcome:
        sha = sha or hashlib.sha256(data).hexdigest()
        resource = self._resource(path, data, sha, fmt, manifest, None)
        resource.error = ErrorInfo(code=exc.code, message=exc.message)
        st = path.stat()
        stored = self.store.commit_resource(self.workspace_id, resource, None, path=_text(path),
                                            size_bytes=st.st_size, mtime_ns=st.st_mtime_ns)
        if stored.status != "failed":  # the same bytes were ingested fine meanwhile
            return FileOutcome(_text(path), "linked", stored.id)
        return FileOutcome(_text(path), "failed", stored.id, exc.code, exc.message)

    # -- re-extraction of stored bytes ----------------------------------------------------
    def reindex_stored(self, resource_id: str) -> Resource | None:
        """Re-extract a ready resource made by an older extractor version from its stored
        bytes (an upload has no file a sync could re-read), in a child process with the
        upload limits; the new chunks replace the old in search (the old stay readable).
        Returns the updated resource; None when there was nothing to do (current, not
        ready, no stored bytes, deleted) or the new extractor failed (the old chunks stay)."""
        try:
            resource = self.store.resource(self.workspace_id, resource_id)
        except NotFoundError:
            return None
        fmt = file_format(Path(resource.file_name))
        if (fmt is None or resource.status != "ready" or resource.error is not None or not resource.blob_key
                or resource.extractor_version == EXTRACTOR_VERSIONS[fmt]):
            return None
        try:
            blob = self.store.blobs.local_path(resource.blob_key)
        except BlobNotFound:
            return None
        try:
            extraction = extract_isolated(blob, name=resource.file_name, fmt=fmt, nice=BACKGROUND_NICE)  # no one waits
        except IngestError:
            return None
        try:
            return self.store.replace_extraction(self.workspace_id, resource_id, extraction,
                                                 extractor_version=EXTRACTOR_VERSIONS[fmt])
        except NotFoundError:
            return None


def stale_resources(store: Store) -> list[tuple[str, str]]:
    """``(workspace_id, resource_id)`` of every ready resource, in any workspace, with stored
    bytes and made by an older extractor version than this citewell's (for
    :meth:`Ingestor.reindex_stored`; a server re-extracts them at its start)."""
    out: list[tuple[str, str]] = []
    for workspace_id in store.workspace_ids():
        for r in store.resources(workspace_id, statuses=["ready"], paths=False):
            fmt = file_format(Path(r.file_name))
            if fmt is not None and r.blob_key and r.error is None and r.extractor_version != EXTRACTOR_VERSIONS[fmt]:
                out.append((workspace_id, r.id))
    return out


#: Resource metadata that extraction writes (kept when a user's metadata replaces the rest).
_EXTRACTED_KEYS = ("page_count", "post_count", "cue_count", "duration")
#: Control characters, and the bidirectional and zero-width format characters that can make
#: a name display as another (``evil\u202egnp.exe``).
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def upload_name(file_name: str) -> str:
    """The file name to keep for an upload: its last path component (``/`` or ``\\``),
    without control, bidirectional or zero-width characters, at most 255 characters;
    ``UsageError`` when nothing is left."""
    name = _UNSAFE_NAME.sub("", valid_text(re.split(r"[/\\]", file_name or "")[-1])).strip()
    if name in ("", ".", ".."):
        raise UsageError("the upload has no file name (send the file with a filename, e.g. report.pdf)")
    return name[-255:] if len(name) > 255 else name


def file_digest(path: Path) -> tuple[str, int]:
    """``(hex sha256, size in bytes)`` of a file, read in pieces."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while piece := fh.read(_PIECE):
            digest.update(piece)
            size += len(piece)
    return digest.hexdigest(), size
