"""Layering: the jobs a worker runs need no HTTP.

The rule (docs/architecture.md, "Jobs"): no module of :mod:`citewell.jobs` imports a
:mod:`citewell.web` module, directly or through other modules, and in particular none
imports :mod:`citewell.web.routes`; ``citewell worker`` runs without the web stack. Checked
twice: statically, over the import graph of the source files (``ast``; imports inside
functions count too, so a lazy import cannot hide), and at run time, importing every jobs
module in a fresh interpreter and looking at ``sys.modules``.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import deque
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "citewell"
JOBS = "citewell.jobs"
WEB = "citewell.web"
ROUTES = "citewell.web.routes"


def _module_name(path: Path) -> str:
    """The dotted name of a source file under :data:`SRC` (a package is its ``__init__``)."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """Every module of the citewell package: dotted name -> source file."""
    return {_module_name(path): path for path in sorted((SRC / PACKAGE).rglob("*.py"))}


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The citewell modules ``name`` imports anywhere in its source (top level or inside a
    function): each ``import a.b`` and ``from a import b`` names ``a.b`` when that is a
    module, else ``a``; relative imports are resolved against the module's package. Every
    package above an imported module, or above ``name`` itself, counts too (importing a
    module runs their ``__init__``)."""
    package = name if _is_package(path) else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in modules)
    closed: set[str] = set()
    for target in found | {name}:
        if not _within(target, PACKAGE):
            continue
        parts = target.split(".")
        closed.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in modules)
    closed.discard(name)
    return closed


def _reached_from(start: str, graph: dict[str, set[str]]) -> dict[str, str | None]:
    """Every module reachable from ``start`` in ``graph``, with the module that imported it
    first (breadth first: the shortest chain)."""
    parent: dict[str, str | None] = {start: None}
    todo = deque([start])
    while todo:
        current = todo.popleft()
        for target in sorted(graph.get(current, ())):
            if target not in parent:
                parent[target] = current
                todo.append(target)
    return parent


def _chain(module: str, parent: dict[str, str | None]) -> str:
    links = [module]
    while parent[links[-1]] is not None:
        links.append(parent[links[-1]])  # type: ignore[arg-type]
    return " -> ".join(reversed(links))


def _jobs_modules(modules: dict[str, Path]) -> list[str]:
    return sorted(name for name in modules if _within(name, JOBS))


def test_the_jobs_package_exists_with_its_modules() -> None:
    """The check below checks something: the jobs package and its handler modules are there
    (and the old homes are gone)."""
    jobs = _jobs_modules(_modules())
    for expected in ("runner", "fairness", "extraction", "embedding", "turns", "streaming", "workers", "process"):
        assert f"{JOBS}.{expected}" in jobs, jobs
    assert not (SRC / PACKAGE / "jobrunner.py").exists()
    assert not (SRC / PACKAGE / "web" / "worker.py").exists()


def test_no_jobs_module_imports_a_web_module_even_through_others() -> None:
    """Statically: no chain of imports (lazy ones included) leads from a jobs module to a
    ``citewell.web`` module, nor to ``citewell.web.routes``."""
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    jobs = _jobs_modules(modules)
    assert len(jobs) >= 8
    problems = []
    for start in jobs:
        reached = _reached_from(start, graph)
        assert PACKAGE in reached, f"{start}: the walk missed its own package"
        # each chain once, up to its first web module (ROUTES is within WEB: named for the rule's sake)
        problems += [_chain(m, reached) for m in sorted(reached)
                     if (_within(m, WEB) or _within(m, ROUTES)) and not _within(reached[m] or "", WEB)]
    assert not problems, "jobs modules reaching citewell.web:\n" + "\n".join(sorted(set(problems)))


def test_the_static_check_sees_a_web_import() -> None:
    """The graph walk finds the web modules the HTTP app imports (so an empty result above
    means no chain, not a blind walk)."""
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "citewell.web.routes.analytics" in _reached_from("citewell.web.app", graph)
    assert "citewell.jobs.streaming" in graph["citewell.web.routes.analytics"]
    assert "citewell.jobs.workers" in _reached_from("citewell.jobs.process", graph)


def test_importing_every_jobs_module_loads_no_web_module() -> None:
    """At run time, in a fresh interpreter: importing every jobs module (and what
    ``citewell worker`` imports: the CLI and the log config) loads no ``citewell.web``
    module."""
    modules = _jobs_modules(_modules()) + ["citewell.logcontext", "citewell.cli.app"]
    code = ("import importlib, json, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         check=True).stdout
    loaded = json.loads(out.splitlines()[-1])
    assert set(modules) <= set(loaded)
    assert [m for m in loaded if _within(m, WEB)] == []
