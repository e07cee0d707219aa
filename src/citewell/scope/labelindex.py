"""The labels of a scope's resources and the name ↔ ticker links of the data, indexed once so that a question name is matched
against thousands of resources in time that grows with what it matches.

:func:`~citewell.scope.labelindex.names_resource` asks whether one resource's labels name a
name; :meth:`LabelIndex.named` gives the same answer for every resource of a scope at
once, and :meth:`LabelIndex.linked_pairs` the metadata (company, ticker) pairs that
:func:`~citewell.scope.labelindex.ticker_links` may link to a name, without a regular
expression per resource. Both are exact: they only skip resources and companies whose
labels cannot contain the name's key (its letters and digits, lower-cased), then decide
the rest with the same tests.

:func:`label_index` keeps the index of the last few scopes
(:class:`~citewell.tuplecache.TupleCache`). The store hands one shared, read-only tuple of
resources per search generation (:meth:`Store.ranking_resources`), so an index keyed by
that tuple's identity lives exactly as long as that generation: an ingest, delete or
rename makes a new tuple, and so a new index. Other sequences (a list) are indexed afresh
on each call.

Links (:func:`ticker_links`)
----------------------------

A company name and a ticker are linked, both ways, when the data says so: a resource's
metadata lists both (``tickers`` and ``company_names``, from a manifest or an upload), or
a text defines the ticker right after the name, as financial writing does: ``Activision
Blizzard (ATVI)``, ``Amcor ($AMCR)``, ``3M Company (NYSE: MMM)`` (an exchange prefix is
any capitalised word before a colon). A bare code in parentheses is a ticker only when
the sources also use it as one (a cashtag such as ``$ATVI`` in a post, or a resource's
metadata ticker); otherwise it defines an abbreviation (``Boeing Capital Corporation
(BCC)``). No list of companies is built in.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..models import Resource
from ..tuplecache import TupleCache
from ..question.names import ALNUM_RE, Name, mentions, ticker_definitions

#: How many scopes' indexes :func:`label_index` keeps (the least recently used go first).
CACHE_SIZE = 8
#: What separates two resources' labels in :attr:`LabelIndex.text` (never in a label: labels
#: are letters, digits and spaces).
_SEPARATOR = "\n"


def _containing(text: str, starts: Sequence[int], key: str) -> list[int]:
    """Positions ``i`` whose piece ``text[starts[i]:starts[i + 1]]`` contains ``key`` (a
    non-empty string without :data:`_SEPARATOR`), in order."""
    found: list[int] = []
    at = text.find(key)
    while at >= 0:
        i = bisect.bisect_right(starts, at) - 1
        found.append(i)
        if i + 1 >= len(starts):
            break
        at = text.find(key, starts[i + 1])
    return found


@dataclass(frozen=True)
class LabelIndex:
    """The labels of ``resources`` (in their order): ``text``, every resource's
    :func:`~citewell.scope.labelindex.labels` joined by newlines, each starting at its
    ``starts`` offset; ``tickers``, lower-cased metadata ticker -> positions of the
    resources that list it; ``pairs``, the metadata (company, TICKER) pairs in resource
    order; ``known``, every metadata ticker in capitals; ``companies``, the letters and
    digits of each pair's company, lower-cased and joined by newlines from
    ``company_starts``."""

    ids: tuple[str, ...]
    text: str
    starts: tuple[int, ...]
    tickers: dict[str, tuple[int, ...]]
    pairs: tuple[tuple[str, str], ...]
    known: frozenset[str]
    companies: str
    company_starts: tuple[int, ...]

    @classmethod
    def of(cls, resources: Sequence[Resource]) -> LabelIndex:
        """The index of ``resources``."""
        pieces: list[str] = []
        starts: list[int] = []
        tickers: dict[str, list[int]] = {}
        known: set[str] = set()
        pairs: list[tuple[str, str]] = []
        at = 0
        for i, r in enumerate(resources):
            piece = labels(r)
            starts.append(at)
            pieces.append(piece)
            at += len(piece) + len(_SEPARATOR)
            meta = r.metadata or {}
            codes = metadata_strings(meta.get("tickers"))
            known.update(t.upper() for t in codes)
            for t in {t.lower() for t in codes}:
                tickers.setdefault(t, []).append(i)
            for t in codes:
                for c in metadata_strings(meta.get("company_names")):
                    pairs.append((c, t.upper()))
        keys = [ALNUM_RE.sub("", c.lower()) for c, _ in pairs]
        company_starts: list[int] = []
        at = 0
        for k in keys:
            company_starts.append(at)
            at += len(k) + len(_SEPARATOR)
        return cls(tuple(r.id for r in resources), _SEPARATOR.join(pieces), tuple(starts),
                   {t: tuple(v) for t, v in tickers.items()}, tuple(pairs), frozenset(known), _SEPARATOR.join(keys),
                   tuple(company_starts))

    def named(self, name: Name) -> tuple[str, ...]:
        """The ids of the resources whose labels name ``name``, in resource order: the
        resources of which :func:`~citewell.scope.labelindex.names_resource` is true."""
        key = name.key
        if not key:
            return ()
        found = set(self.tickers.get(key, ())) if name.ticker else set()
        if len(key) >= 2:
            found.update(_containing(self.text, self.starts, key))
        return tuple(self.ids[i] for i in sorted(found))

    def linked_pairs(self, name: Name) -> list[tuple[str, str]]:
        """The metadata (company, TICKER) pairs, in order, that may link to ``name``: all
        of them whose ticker is the name for a ticker name; otherwise those whose
        company's letters and digits hold the name's key (in the name's case or in
        capitals), which every company that mentions the name or equals it does."""
        if name.ticker:
            code = name.text.upper()
            return [p for p in self.pairs if p[1] == code]
        keys = {name.key, ALNUM_RE.sub("", name.text.upper().lower())}
        if "" in keys:
            return list(self.pairs)
        found = sorted({i for k in keys for i in _containing(self.companies, self.company_starts, k)})
        return [self.pairs[i] for i in found]


def labels(resource: Resource) -> str:
    """The letters and digits of a resource's title, file name, tickers and company
    names, lower-cased and space-separated (what :func:`names_resource` reads)."""
    meta = resource.metadata or {}
    return _label_text((resource.title, resource.file_name, *metadata_strings(meta.get("tickers")),
                        *metadata_strings(meta.get("company_names"))))


@lru_cache(maxsize=16384)
def _label_text(values: tuple[object, ...]) -> str:
    """:func:`labels` of a resource's label values (cached: every name of every question
    is checked against every resource of the scope)."""
    return " ".join(ALNUM_RE.sub("", str(v).lower()) for v in values if v)


def metadata_strings(value: object) -> list[str]:
    """The strings of a metadata value (``tickers``, ``company_names``): a list or tuple's
    items as strings (None items left out), any other value as one string, nothing for None."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def names_resource(resource: Resource, name: Name) -> bool:
    """Whether the resource's labels name ``name`` (module docstring, "Mentions")."""
    key = name.key
    if not key:
        return False
    if name.ticker and key in {t.lower() for t in metadata_strings((resource.metadata or {}).get("tickers"))}:
        return True
    return len(key) >= 2 and key in labels(resource)


_indexes: TupleCache[LabelIndex] = TupleCache(LabelIndex.of, CACHE_SIZE)


def label_index(resources: Sequence[Resource]) -> LabelIndex:
    """The :class:`LabelIndex` of ``resources``: kept for a tuple (the store's shared tuple
    of one search generation, :class:`~citewell.tuplecache.TupleCache`), made afresh for
    anything else."""
    return _indexes.get(resources)




def ticker_links(names: Iterable[Name], resources: Sequence[Resource], texts: Iterable[str],
                 tickers: Iterable[str] = ()) -> dict[str, set[str]]:
    """Aliases of each name from the data (module docstring, "Links"): ``{name.text:
    {linked tickers or company names}}``. ``texts`` are passages that may define a
    ticker (those that mention the names). A code in parentheses after a name is a
    ticker when it is written as one (``$ATVI``, ``NYSE: MMM``) or is a known ticker:
    one of ``tickers`` (cashtags seen in the sources) or of a resource's metadata; other
    parenthesised codes define abbreviations (``Boeing Capital Corporation (BCC)``) and
    link nothing. A name without links is left out."""
    index = label_index(resources)
    wanted = list(names)
    out: dict[str, set[str]] = {}
    defined: list[tuple[str, str]] = []
    known = index.known | {t.upper().lstrip("$") for t in tickers}
    for company, code, explicit in ticker_definitions(texts):
        if explicit or code in known:
            defined.append((company, code))
    for name in wanted:
        # the metadata pairs that can link to the name (:meth:`LabelIndex.linked_pairs`), then the texts'
        for company, ticker in (*index.linked_pairs(name), *defined):
            if name.ticker and name.text.upper() == ticker:
                out.setdefault(name.text, set()).add(_short(company))
            elif not name.ticker and (mentions(company, name) or name.key == ALNUM_RE.sub("", company.lower())):
                out.setdefault(name.text, set()).add(ticker)
    return out


def _short(company: str) -> str:
    """A company name up to its first comma, whitespace runs as one space."""
    return " ".join(company.split(",")[0].split())


__all__ = ["CACHE_SIZE", "LabelIndex", "label_index", "labels", "metadata_strings", "names_resource", "ticker_links"]
