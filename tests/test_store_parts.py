"""The store composed by concern: ``Store`` is exactly its concern protocols, each store
class implements every method of every concern with the same parameters, the docs list
the same concerns, and no import cycle runs through the store package.

Only classes and source files are inspected: no store is opened.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Generic, Protocol

import pytest

from citewell.store.base import CONCERNS, Store
from citewell.store.postgres import PostgresStore
from citewell.store.sqlite import SQLiteStore
from citewell.store.tracking import SQLTracking, TrackingStore

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
STORE_CLASSES = (SQLiteStore, PostgresStore)


def own_methods(cls: type) -> set[str]:
    """The public methods ``cls`` itself defines (not inherited)."""
    return {name for name, value in vars(cls).items()
            if inspect.isfunction(value) and not name.startswith("_")}


def protocol_methods(protocol: type) -> set[str]:
    """The public methods of ``protocol`` and of the protocols it is composed of."""
    bases = [c for c in protocol.__mro__ if c not in (object, Protocol, Generic)]
    return set().union(*(own_methods(c) for c in bases))


def _shape(function: Any) -> list[tuple[str, Any, Any]]:
    """Name, kind and default of each parameter of ``function`` (annotations may differ)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def mismatches(cls: type, protocol: type) -> list[str]:
    """How ``cls`` fails to implement ``protocol``'s methods: a method missing, or one whose
    parameters differ in name, kind or default from the protocol's."""
    problems = []
    for name in sorted(protocol_methods(protocol)):
        implementation = getattr(cls, name, None)
        if not callable(implementation):
            problems.append(f"{cls.__name__}.{name} is missing ({protocol.__name__})")
        elif _shape(implementation) != _shape(getattr(protocol, name)):
            problems.append(f"{cls.__name__}.{name}{inspect.signature(implementation)} differs from "
                            f"{protocol.__name__}.{name}{inspect.signature(getattr(protocol, name))}")
    return problems


def uncovered(store: type, concerns: tuple[type, ...]) -> set[str]:
    """Methods of ``store`` that no concern protocol declares, ``close`` apart."""
    return protocol_methods(store) - set().union(*(own_methods(c) for c in concerns)) - {"close"}


# -- the composition ---------------------------------------------------------------------

def test_store_is_the_union_of_its_concerns() -> None:
    assert Store.__bases__ == (*CONCERNS, Protocol)
    assert own_methods(Store) == {"close"}, "a Store method belongs in a concern protocol"
    assert uncovered(Store, CONCERNS) == set()
    assert protocol_methods(Store) == set().union(*(own_methods(c) for c in CONCERNS)) | {"close"}


def test_each_method_has_one_concern() -> None:
    seen: dict[str, str] = {}
    for concern in CONCERNS:
        assert getattr(concern, "_is_protocol", False), f"{concern.__name__} is not a Protocol"
        assert concern.__bases__ == (Protocol,), f"{concern.__name__} is composed of others"
        assert inspect.getdoc(concern), f"{concern.__name__} has no docstring"
        for name in own_methods(concern):
            assert name not in seen, f"{name} is in {seen.get(name)} and {concern.__name__}"
            seen[name] = concern.__name__
            assert getattr(concern, name).__doc__, f"{concern.__name__}.{name} has no docstring"


@pytest.mark.parametrize("cls", STORE_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("concern", CONCERNS, ids=lambda c: c.__name__)
def test_store_classes_implement_every_concern(cls: type, concern: type) -> None:
    assert mismatches(cls, concern) == []


def test_tracking_implements_tracking_store() -> None:
    assert mismatches(SQLTracking, TrackingStore) == []


def test_the_check_can_fail() -> None:
    class Missing(SQLiteStore):
        workspace_name = None  # type: ignore[assignment]

    class Renamed(SQLiteStore):
        def chat(self, workspace_id: str, chat: str, *, user_id: str | None = None) -> Any:  # type: ignore[override]
            """A parameter renamed."""

    class Extra(Store, Protocol):
        def extra(self) -> None:
            """A method of no concern."""

    assert mismatches(Missing, CONCERNS[0]) == ["Missing.workspace_name is missing (KeyStore)"]
    assert len(mismatches(Renamed, next(c for c in CONCERNS if c.__name__ == "ChatStore"))) == 1
    assert uncovered(Extra, CONCERNS) == {"extra"}


# -- the docs ----------------------------------------------------------------------------

def documented_concerns() -> dict[str, str]:
    """``{protocol: module}`` of the concern table in docs/architecture.md, "The store"."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## The store\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `([\w/.]+)` \|", section, flags=re.M)
    return dict(rows)


def test_docs_list_the_concerns() -> None:
    documented = documented_concerns()
    assert set(documented) == {c.__name__ for c in CONCERNS}
    for concern in CONCERNS:
        assert documented[concern.__name__] == concern.__module__.rsplit(".", 1)[1] + ".py"


# -- import cycles -----------------------------------------------------------------------

def _modules() -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (file, is a package)}`` of the store package, settings and locations."""
    found = {}
    for path in [*(SRC / "citewell" / "store").rglob("*.py"), SRC / "citewell" / "settings.py",
                 SRC / "citewell" / "locations.py"]:
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def import_edges() -> dict[str, set[str]]:
    """Every import (module level, in functions and under ``TYPE_CHECKING`` alike) between
    the modules of :func:`_modules`."""
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = name.split(".") if package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in modules]
                targets = subs + ([module] if len(subs) < len(node.names) else [])
            edges[name].update(t for t in targets if t in modules and t != name)
    return edges


def cycle_from(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``edges`` (its modules in order), or None."""
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        trail.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        trail.pop()
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_no_import_cycle_in_the_store() -> None:
    edges = import_edges()
    assert "citewell.store.records" in edges["citewell.store.base"]  # the edges are read, not empty
    assert cycle_from(edges) is None
    assert not any(t.startswith("citewell.store") for t in edges["citewell.settings"])
    assert edges["citewell.store.records"] == set() and edges["citewell.locations"] == set()


def test_the_cycle_check_can_fail() -> None:
    edges = import_edges()
    edges["citewell.store.records"].add("citewell.store.base")
    assert cycle_from(edges) is not None


def test_settings_imports_no_store() -> None:
    code = ("import sys, citewell.settings\n"
            "print(sorted(m for m in sys.modules if m.startswith('citewell.store')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(SRC)}).stdout
    assert out.strip() == "[]"


def test_old_names_still_import() -> None:
    from citewell.store import POSTGRES_SCHEMES, is_url
    from citewell.store.base import (PAGE_REACH, QUESTION_TITLE_CHARS, ApiKeyRecord, ChatRecord, Condition,  # noqa: F401
                                     FileRecord, TextHit, iso_utc, question_title)
    from citewell.store.postgres import safe_location

    assert is_url("postgres://db/x") and not is_url("/tmp/x.sqlite") and POSTGRES_SCHEMES[0] == "postgresql://"
    assert safe_location("postgresql://a:secret@h/db") == "postgresql://a@h/db"
