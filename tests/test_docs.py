"""The documentation: the site builds, every example runs, every setting is documented.

* ``mkdocs build --strict`` of ``mkdocs.yml`` succeeds (the README's test command builds
  the docs in CI).
* Every fenced ``bash``/``shell``/``console`` block and every ``http`` block of
  ``README.md`` and ``docs/*.md`` runs, one test per block (named by file and line),
  against a real store and, for HTTP, a real ``citewell serve`` on 127.0.0.1; a block
  that cannot run carries ``<!-- not-run: reason -->``. The conventions are described in
  docs/contributing.md ("Examples are tests").
* Every ``CITEWELL_*`` variable the code reads and every config-file key appears on
  docs/settings.md, and the page names none that the code does not know.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from .conftest import CORPUS
from .servers import free_port, running

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
RUN_LANGS = ("bash", "shell", "console")
#: the files of ../shared/corpus that the examples see unless a block says otherwise
DEFAULT_CORPUS = (
    "pdf/3M_2022_10K.pdf",
    "transcripts/twiml-409_deep-learning-ocr_cha-zhang.srt",
    "posts/reddit_wallstreetbets_2022-01.jsonl",
    "posts/stocktwits_2022-06_07.jsonl",
)
BLOCK_TIMEOUT_S = 600

_FENCE = re.compile(r"^```(\S*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*([a-z-]+):\s*(.*?)\s*-->$")
_DIRECTIVES = ("not-run", "test-corpus", "test-env", "test-llm", "file")


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` with the ``<!-- name: value -->`` directives on the
    lines right before each (blank lines between them are allowed)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        directives: dict[str, str] = {}
        k = start - 1
        while k >= 0 and (lines[k].strip() == "" or _DIRECTIVE.match(lines[k].strip())):
            d = _DIRECTIVE.match(lines[k].strip())
            if d:
                directives.setdefault(d.group(1), d.group(2))
            k -= 1
        found.append(Block(page, start + 1, m.group(1).lower(), "\n".join(lines[start + 1:j]) + "\n", directives))
        i = j + 1
    return found


ALL_BLOCKS = [b for page in PAGES for b in blocks_of(page)]
RUNNABLE = [b for b in ALL_BLOCKS if b.lang in RUN_LANGS + ("http",)]


# --------------------------------------------------------------------------- the site

def test_mkdocs_build_strict(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr
    nav_pages = {p.stem for p in DOCS.glob("*.md")}
    built = {p.parent.name if p.parent != tmp_path / "site" else "index"
             for p in (tmp_path / "site").rglob("index.html")}
    assert nav_pages - {"index"} <= built, nav_pages - built
    assert "Settings" in (tmp_path / "site" / "settings" / "index.html").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- conventions

def test_blocks_are_found_and_directives_are_known() -> None:
    """The collector sees the examples (a parser that found nothing would pass every
    per-block test), and every directive is one the runner knows."""
    assert len(RUNNABLE) >= 15
    assert {b.lang for b in RUNNABLE} >= {"bash", "console", "http"}
    for block in ALL_BLOCKS:
        unknown = set(block.directives) - set(_DIRECTIVES)
        assert not unknown, f"{block.id}: unknown directive(s) {unknown}"


def test_every_skipped_block_says_why() -> None:
    skipped = [b for b in ALL_BLOCKS if "not-run" in b.directives]
    assert skipped, "the README's pip install blocks at least are not run"
    for block in skipped:
        assert len(block.directives["not-run"]) >= 10, f"{block.id}: <!-- not-run: … --> needs a reason"
        assert block.lang in RUN_LANGS + ("http",), f"{block.id}: only runnable blocks need not-run"
    readme = [b for b in ALL_BLOCKS if b.page.name == "README.md" and b.lang in RUN_LANGS]
    assert any("pip install -e ." in b.text for b in readme)


def test_the_readme_keeps_the_set_up_and_test_commands_and_ci_runs_them() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    for command in ("pip install -e .\n",
                    "citewell ask \"What was 3M's capital expenditure in FY2022?\" --corpus ../shared/corpus\n",
                    "pip install -e '.[test]' && python -m pytest -q -n 4 --dist loadfile\n"):
        assert command in readme, command
    assert "pip install -e .\n" in ci
    assert "citewell ask \"What was 3M's capital expenditure in FY2022?\" --corpus ../shared/corpus\n" in ci
    assert "pip install -e '.[test]'\n" in ci and "python -m pytest -q" in ci and "-n 4 --dist loadfile" in ci


# --------------------------------------------------------------------------- running examples

class Examples:
    """The world the examples run in: ``<tmp>/repo`` as the working folder, with
    ``../shared/corpus`` a small copy of the shared corpus; ``citewell``, ``python`` and
    ``python3`` first on PATH; one SQLite store (``CITEWELL_STORE``); a private HOME,
    config and data folders; curl failing on HTTP errors (``~/.curlrc``); and, when a
    block needs it, a ``citewell serve`` on a free port of 127.0.0.1
    (``CITEWELL_URL``) with a key of workspace ``acme`` (``CITEWELL_API_KEY``)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.bin = base / "bin"
        self.bin.mkdir()
        src = str(ROOT / "src")
        (self.bin / "citewell").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m citewell "$@"\n')
        (self.bin / "citewell").chmod(0o755)
        for name in ("python", "python3"):  # this interpreter (a wrapper: a symlink would lose its venv)
            (self.bin / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
            (self.bin / name).chmod(0o755)
        home = base / "home"
        home.mkdir()
        (home / ".curlrc").write_text("fail-with-body\n")
        self.env = {
            **os.environ,
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "CITEWELL_STORE": str(base / "store" / "citewell.sqlite"),
            "CITEWELL_RETRIEVAL_MODE": "lexical",
        }
        for name in ("CITEWELL_BLOBS", "CITEWELL_WORKSPACE", "CITEWELL_CONFIG", "CITEWELL_LLM_BASE_URL",
                     "OPENAI_BASE_URL", "CITEWELL_GENERATOR", "CITEWELL_EMBED_BASE_URL"):
            self.env.pop(name, None)
        self.default_repo = self.repo_with(DEFAULT_CORPUS, "default")
        self._server = None
        self.url: str | None = None
        self.key: str | None = None

    def repo_with(self, files: tuple[str, ...], name: str) -> Path:
        """A working folder ``<name>/repo`` whose ``../shared/corpus`` holds ``files``."""
        folder = self.base / name
        for rel in files:
            target = folder / "shared" / "corpus" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(CORPUS / rel, target)
            target.chmod(0o644)
        (folder / "repo").mkdir(parents=True)
        return folder / "repo"

    def server(self) -> tuple[str, str]:
        if self._server is None:
            proc = subprocess.run([sys.executable, "-m", "citewell", "keys", "create", "--workspace", "acme"],
                                  capture_output=True, text=True, env=self.env, timeout=120)
            assert proc.returncode == 0, proc.stderr
            self.key = proc.stdout.strip().splitlines()[-1]
            port = free_port()
            self._server = running([sys.executable, "-m", "citewell", "serve", "--host", "127.0.0.1",
                                    "--port", str(port)], port, self.base / "serve.log", self.env)
            self.url = self._server.__enter__()
        assert self.url and self.key
        return self.url, self.key

    def close(self) -> None:
        if self._server is not None:
            self._server.__exit__(None, None, None)


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory):
    world = Examples(tmp_path_factory.mktemp("docs-examples"))
    try:
        yield world
    finally:
        world.close()


def _files_for(block: Block, folder: Path) -> None:
    """Write the page's ``<!-- file: NAME -->`` blocks into ``folder``."""
    for other in ALL_BLOCKS:
        if other.page == block.page and "file" in other.directives:
            (folder / other.directives["file"]).write_text(other.text, encoding="utf-8")


def _needs_server(block: Block) -> bool:
    return block.lang == "http" or "CITEWELL_URL" in block.text or "CITEWELL_API_KEY" in block.text


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_example(block: Block, examples: Examples) -> None:
    if "not-run" in block.directives:
        pytest.skip(f"{block.id}: not-run: {block.directives['not-run']}")
    env = dict(examples.env)
    if _needs_server(block):
        env["CITEWELL_URL"], env["CITEWELL_API_KEY"] = examples.server()
    for pair in block.directives.get("test-env", "").split():
        name, _, value = pair.partition("=")
        env[name] = value
    if "test-corpus" in block.directives:
        cwd = examples.repo_with(tuple(block.directives["test-corpus"].split()),
                                 f"corpus-{block.page.stem}-{block.line}")
    else:
        cwd = examples.default_repo
    _files_for(block, cwd)
    if "test-llm" in block.directives:
        from .llm_server import LLMServer, Stream

        with LLMServer() as fake:
            fake.script(Stream(pieces=[block.directives["test-llm"]]))
            env.update(CITEWELL_LLM_BASE_URL=fake.base_url, CITEWELL_LLM_MODEL="fake-model")
            _run(block, env, cwd)
            assert fake.paths.count("/v1/chat/completions") == 1, f"{block.id}: the model was not asked: {fake.paths}"
        return
    _run(block, env, cwd)


def _run(block: Block, env: dict[str, str], cwd: Path) -> None:
    if block.lang == "http":
        _run_http(block, env)
    elif block.lang == "console":
        _run_console(block, env, cwd)
    else:
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
        assert proc.returncode == 0, f"{block.id} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


# console blocks: "$ command" lines (continued by a trailing backslash), then its output

_MARK = "\x1edocs-command-{}\x1e"


def console_commands(text: str) -> list[tuple[str, list[str]]]:
    """``[(command, expected output lines)]`` of a console block."""
    commands: list[tuple[str, list[str]]] = []
    lines = text.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = [line[2:]]
            while command[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                command.append(lines[i])
            commands.append(("\n".join(command), []))
        else:
            assert commands, f"output before the first command: {line!r}"
            commands[-1][1].append(line)
        i += 1
    return commands


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line, trailing spaces and trailing blank lines aside: ``…`` in an expected
    line matches any text, and a line that is only ``…`` any number of lines."""
    def trim(lines: list[str]) -> list[str]:
        lines = [line.rstrip() for line in lines]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    pattern = []
    for line in trim(expected):
        if line.strip() == "…":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*?".join(re.escape(part) for part in line.split("…")) + r"\n")
    return re.fullmatch("".join(pattern), "".join(line + "\n" for line in trim(actual))) is not None


def _run_console(block: Block, env: dict[str, str], cwd: Path) -> None:
    commands = console_commands(block.text)
    assert commands, f"{block.id}: a console block without a $ command"
    script = "".join(f"printf '{_MARK.format(n)}\\n'\n{command}\n" for n, (command, _) in enumerate(commands))
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
    assert proc.returncode == 0, f"{block.id} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    outputs = re.split("\x1edocs-command-\\d+\x1e\n", proc.stdout)[1:]
    assert len(outputs) == len(commands), proc.stdout
    for (command, expected), actual in zip(commands, outputs):
        assert output_matches(expected, actual.split("\n")), (
            f"{block.id}: the output of\n  $ {command}\ndiffers from the documentation:\n{actual}\n"
            f"expected:\n" + "\n".join(expected))


# http blocks: a request (METHOD PATH, headers, blank line, body), then optionally
# "HTTP/1.1 STATUS" with headers and a JSON body that the answer must contain

def parse_http(text: str) -> tuple[dict, dict | None]:
    request_text, _, response_text = text.partition("\nHTTP/")
    def parts(chunk: str) -> tuple[list[str], str]:
        head, _, body = chunk.strip("\n").partition("\n\n")
        return head.split("\n"), body.strip()
    head, body = parts(request_text)
    method, path = head[0].split()[:2]
    headers = dict(line.split(": ", 1) for line in head[1:] if line.strip())
    request = {"method": method, "path": path, "headers": headers, "body": body}
    if not response_text:
        return request, None
    head, body = parts("HTTP/" + response_text)
    status = int(head[0].split()[1])
    return request, {"status": status, "headers": dict(line.split(": ", 1) for line in head[1:] if line.strip()),
                     "json": json.loads(body) if body else None}


def json_contains(actual, expected) -> bool:
    """``expected`` is a part of ``actual``: objects by the keys shown, lists item by item,
    ``"…"`` for any value."""
    if expected == "…":
        return True
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and json_contains(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            json_contains(a, e) for a, e in zip(actual, expected))
    return actual == expected


def _expand(text: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?([A-Z_][A-Z0-9_]*)\}?", lambda m: env.get(m.group(1), m.group(0)), text)


def _run_http(block: Block, env: dict[str, str]) -> None:
    request, response = parse_http(block.text)
    headers = {k: _expand(v, env) for k, v in request["headers"].items()}
    answer = httpx.request(request["method"], env["CITEWELL_URL"] + _expand(request["path"], env), headers=headers,
                           content=_expand(request["body"], env).encode() or None, timeout=120)
    if response is None:
        assert answer.status_code < 400, f"{block.id}: {answer.status_code} {answer.text[:2000]}"
        return
    assert answer.status_code == response["status"], f"{block.id}: {answer.status_code} {answer.text[:2000]}"
    for name, value in response["headers"].items():
        assert answer.headers.get(name) == value, f"{block.id}: header {name}: {answer.headers.get(name)!r}"
    if response["json"] is not None:
        assert json_contains(answer.json(), response["json"]), f"{block.id}: {answer.text[:3000]}"


def test_the_example_runners_can_fail() -> None:
    """The matchers reject what they should (so a passing example means something)."""
    assert output_matches(["a … c", "…", "z"], ["a b c", "x", "y", "z", ""])
    assert not output_matches(["a … c"], ["a b d"])
    assert not output_matches(["one"], ["one", "two"])
    assert output_matches([], ["", ""]) and not output_matches([], ["text"])
    assert console_commands("$ a \\\n  b\nout\n$ c\n") == [("a \\\n  b", ["out"]), ("c", [])]
    request, response = parse_http("GET /x\nX-API-KEY: k\n\nHTTP/1.1 404 Not Found\n\n{\"error\": {\"code\": \"NOT_FOUND\"}}\n")
    assert request["headers"] == {"X-API-KEY": "k"} and response["status"] == 404
    assert json_contains({"error": {"code": "NOT_FOUND", "message": "m"}}, response["json"])
    assert not json_contains({"error": {"code": "FORBIDDEN"}}, response["json"])
    assert not json_contains({"a": [1, 2]}, {"a": [1]})


# --------------------------------------------------------------------------- settings

_NAME = re.compile(r"CITEWELL_[A-Z][A-Z0-9_]*[A-Z0-9]")


def settings_in_code() -> tuple[set[str], set[str]]:
    """``(environment variables, config keys)``: the variables of
    :mod:`citewell.settings` (its ``LLM_FIELDS``/``EMBED_FIELDS`` name
    ``CITEWELL_LLM_*``/``CITEWELL_EMBED_*``) and every ``"CITEWELL_…"`` string literal
    of ``src/`` (what ``os.environ`` reads, or a helper reads by name), and the config
    keys of ``CONFIG_KEYS``."""
    from citewell import settings

    env = {f"CITEWELL_LLM_{name.upper()}" for name, _ in settings.LLM_FIELDS}
    env |= {f"CITEWELL_EMBED_{name.upper()}" for name, _ in settings.EMBED_FIELDS}
    for path in (ROOT / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAME.fullmatch(node.value):
                env.add(node.value)
    return env, set(settings.CONFIG_KEYS)


def test_every_setting_is_on_the_settings_page() -> None:
    env, keys = settings_in_code()
    # the collector must see the ways settings are declared, else this test proves nothing
    assert {"CITEWELL_STORE", "CITEWELL_LLM_TEMPERATURE", "CITEWELL_EMBED_BATCH_SIZE", "CITEWELL_PG_POOL_SIZE",
            "CITEWELL_EXTRACT_MEMORY_MB", "CITEWELL_RENDER_TIMEOUT_S"} <= env
    assert {"store", "blobs", "workspace", "generator", "llm_model", "embed_model"} <= keys
    page = (DOCS / "settings.md").read_text(encoding="utf-8")
    missing = sorted(name for name in env | keys if f"`{name}`" not in page)
    assert not missing, f"docs/settings.md does not document: {', '.join(missing)}"
    stale = sorted(set(_NAME.findall(page)) - env)
    assert not stale, f"docs/settings.md documents variables the code never reads: {', '.join(stale)}"
