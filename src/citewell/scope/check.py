"""The scope check: answer "not in the sources" when the sources in scope cannot hold the
answer, before any generator speaks.

:func:`gather` reads from the store what the check needs (the :class:`ScopeFacts`);
:func:`check_scope` is a pure function of (question, facts, retrieved passages) that
returns None (go on and answer) or a :class:`ScopeAbstention` (the whole answer, with no
citation). The rules, in order (the first that applies decides):

1. **Entity.** The question's names (:func:`~citewell.question.names.question_names`) are
   looked up in the scope. A name is *held* when an in-scope resource's labels name it
   (title, file name, metadata tickers and company names), a passage in scope mentions
   it (:func:`~citewell.question.names.mentions`: case-sensitive; a name the sources also
   use as an ordinary word does not count where it starts a sentence), a name linked to
   it (:func:`~citewell.scope.labelindex.ticker_links`: metadata, or "Name (TICK)" in a
   passage) is held, or — for a name of several words — one of its words that the
   sources never use as an ordinary word is held. A held name is an *anchor* when a
   resource's labels name it, it is a ticker or linked to a held one, or it is a word
   name the sources never use as an ordinary word (``Activision``; not ``Revenue``, and
   not a term in capitals such as ``EBITDA`` that only a passage mentions). The check
   abstains when some name of the question (other than a weak first word) is not held
   and none is an anchor: "What was Ferrari's EBITDA margin?" over sources that never
   mention Ferrari, but not "What was AMCOR's Real change in sales?" over Amcor's filings.
   It also abstains, anchors or not, when a *subject* of the question (what is asked
   belongs to it: :class:`~citewell.question.names.Name` ``subject``, a possessive or a
   word name after "of") is *unknown*: no passage or title in scope has any of its
   words in any form (any case, any inflection: the name's full-text lookup finds
   nothing), no label names it and no name is linked to it. "What was Quuxco's total
   revenue in FY2022, according to Zorblax?" over Zorblax's filing abstains; a
   possessive word that the sources use in any form (``the Company's``, a segment, a
   product, a person, a word they write only in lower case) does not.
2. **Period.** The sources *about the question* are the in-scope resources whose labels
   name a held name (or a name linked to it), together with the resources of the
   passages in scope that mention one (a post about a company whose filing is also in
   scope is about it too), else all of the scope. For each year the question names
   (:attr:`~citewell.question.analysis.QuestionAnalysis.years`): when the question does not look
   ahead (:func:`~citewell.question.periods.looks_ahead`) and the year is after the latest
   period of those sources (:func:`~citewell.scope.periods.latest_period`), the check
   abstains (a future year: a 2022 annual report names 2030 only as a maturity or a
   target); otherwise, when no passage of those sources names the year in any form, it
   abstains (a period no source covers).
3. **Topic.** The topic concepts are the concepts of the question's first sentence
   (:func:`~citewell.text.terms.question_concepts`) other than names, numbers and
   the words numbers and periods are written with
   (:data:`~citewell.text.quantities.FILLER_WORDS`), each weighted by its inverse document
   frequency in the workspace, ``ln((n + 1) / (df + 0.5))``. A concept is *missing* when
   no passage of the sources about the question has it (a full-text lookup of its words
   there, the best :data:`TOPIC_LOOKUP_LIMIT` passages read) and no retrieved passage of
   those sources has it. When the missing concepts carry at least
   :data:`MIN_TOPIC_SHARE_MISSING` (two thirds) of the weight and of the concepts (rare
   words of phrasing — "what drove …", "… as the numerator" — are no absent topic), the
   check abstains (a question needs :data:`MIN_TOPIC_CONCEPTS` topic concepts for this:
   "What else?" is no topic): those sources do
   not speak of most of what is asked ("the boiling point of mercury" over filings).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..models import Notice, Passage, Resource
from ..question.analysis import QuestionAnalysis
from ..question.names import (ALNUM_RE, Name, alias_query, as_written, cashtags, lookup_words, mentions, name_parts,
                              spelled, split_words, ticker_definitions, used_as_word)
from ..store.base import Condition, SearchStore, TextHit
from ..text.quantities import periods
from ..text.terms import Concept, content_terms
from .labelindex import label_index, ticker_links
from .periods import latest_period

#: Share of the topic weight that, missing from the sources about the question, makes it
#: off-topic for them (rule 3).
MIN_TOPIC_SHARE_MISSING = 2 / 3
#: Topic concepts a question needs before its topic can be judged absent (one word may be phrasing).
MIN_TOPIC_CONCEPTS = 2
#: Passages read per topic concept when looking for it in the sources about the question.
TOPIC_LOOKUP_LIMIT = 20
#: Passages read per name or year looked up in the scope (full-text, best first).
LOOKUP_LIMIT = 100
#: The code of the warning an abstention carries.
NOT_IN_SOURCES = "NOT_IN_SOURCES"


@dataclass(frozen=True)
class NameFacts:
    """What the scope holds about one question name: ``common`` (the sources use it as an
    ordinary word), the ids of in-scope ``resources`` whose labels name it, the
    ``passages`` in scope that mention it, its linked ``aliases`` and whether one of them
    is held (``alias_held``), the resources that hold an alias (``alias_resources``),
    ``word_held`` (a word of a multi-word name that the sources never use as an ordinary
    word is held), the aliases worth searching for (``expand``: those mentioned by
    passages in scope that do not mention the name, such as posts that give only a
    cashtag), whether any of its words occurs in scope in any form (``known``: the
    name's full-text lookup finds a passage, a label names it, or a name is linked) and how
    passages write it with other word breaks (``spellings``: ``Samba Nova`` for
    ``Sambanova``, :func:`~citewell.question.names.spelled`), which retrieval searches too."""

    name: Name
    common: bool = False
    resources: tuple[str, ...] = ()
    passages: tuple[TextHit, ...] = ()
    aliases: tuple[str, ...] = ()
    alias_held: bool = False
    word_held: bool = False
    alias_resources: tuple[str, ...] = ()
    expand: tuple[str, ...] = ()
    known: bool = True
    spellings: tuple[str, ...] = ()

    @property
    def held(self) -> bool:
        """Whether the scope holds the name (rule 1)."""
        return bool(self.resources or self.passages or self.alias_held or self.word_held)


@dataclass(frozen=True)
class ScopeFacts:
    """What :func:`check_scope` reads about the scope: its ``resources``, the facts of each
    question name, the scope passages naming each question year (``year_passages``), the
    topic concepts with their weights (``topics``), and the ``query`` with linked aliases
    (:func:`~citewell.question.names.alias_query`) that retrieval should read.
    ``topic_resources``: for a figure question whose subject has documents of its own (named
    by their labels), the ids of those documents, where the topic was looked up (a
    company's figures are its own filings', not a customer's that mentions it); empty when
    the topic was looked up in every source about the question."""

    resources: tuple[Resource, ...] = ()
    names: tuple[NameFacts, ...] = ()
    year_passages: Mapping[int, tuple[TextHit, ...]] = field(default_factory=dict)
    topics: tuple[tuple[Concept, float, bool], ...] = ()
    query: str = ""
    topic_resources: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ScopeAbstention:
    """The answer of a question the scope cannot answer: ``text`` (plain, no link), the
    rule that decided (``reason``: ``entity``, ``future_period``, ``period`` or
    ``topic``) and what it is about (``subjects``: names, years or topic words)."""

    text: str
    reason: str
    subjects: tuple[str, ...] = ()

    def notice(self) -> Notice:
        """The ``NOT_IN_SOURCES`` warning the message carries."""
        return Notice(code=NOT_IN_SOURCES, message=self.text, reason=self.reason, subjects=list(self.subjects))


@lru_cache(maxsize=16384)
def _text_years(text: str) -> frozenset[int]:
    """The years a passage's text names (cached: the same passages answer many lookups)."""
    return periods(text)[0]


#: :func:`~citewell.text.terms.content_terms` of passage texts, cached like :func:`_text_years`
_text_terms = lru_cache(maxsize=16384)(content_terms)


def _lookup(store: SearchStore, workspace_id: str, words: Sequence[str], conditions: Sequence[Condition],
            under: str | None, *, limit: int = LOOKUP_LIMIT) -> list[TextHit]:
    terms = [w.lower() for w in words if w.strip()]
    if not terms:
        return []
    return store.search_hits(workspace_id, terms, limit=limit, conditions=conditions, under=under)


def _words(text: str) -> list[str]:
    return [w for w in text.replace("&", " ").replace("-", " ").split() if w]


def _name_facts(store: SearchStore, workspace_id: str, name: Name, resources: Sequence[Resource],
                conditions: Sequence[Condition], under: str | None, *, depth: int = 0) -> NameFacts:
    words = lookup_words(name.text.lstrip("$"))
    labelled = label_index(resources).named(name)
    found = _lookup(store, workspace_id, words, conditions, under)
    if labelled and len(labelled) < len(resources):
        # every passage of a labelled resource matches the name by its title: look in the
        # other resources of the scope too (the scope's conditions, and none of the labelled
        # ones), so that a post mentioning the name is not crowded out
        own = {p.chunk_id for p in found}
        others = Condition("resource_id", "ne", tuple(sorted(labelled)))
        found += [p for p in _lookup(store, workspace_id, words, [*conditions, others], under)
                  if p.chunk_id not in own]
    common = any(used_as_word(p.text, name) for p in found) if name.kind == "word" else False
    passages = tuple(p for p in found if mentions(p.text, name, common=common))
    halves = split_words(name.text.lstrip("$")) if not passages and not labelled and depth == 0 else []
    if halves:  # a one-word name the sources may write as two words (``Sambanova`` as ``Samba Nova``)
        found += [p for p in _lookup(store, workspace_id, halves, conditions, under)
                  if spelled(p.text, name) is not None]
        passages = tuple(p for p in found if mentions(p.text, name, common=common))
    spellings = tuple(dict.fromkeys(w for p in passages for w in (spelled(p.text, name),)
                                    if w is not None and w.lower() != name.text.lower()))
    texts = [p.text for p in passages]
    seen: set[str] = set()
    for _, code, explicit in ticker_definitions(texts) if depth == 0 else ():
        if not explicit and code not in seen:  # a bare code is a ticker when the sources use its cashtag
            seen.add(code)
            if any(code in cashtags(p.text) for p in _lookup(store, workspace_id, [code], conditions, under)):
                seen.add("$" + code)
    links = ticker_links([name], resources, texts, [c[1:] for c in seen if c.startswith("$")])
    aliases = tuple(sorted(links.get(name.text, set())))
    alias_held = False
    alias_resources: list[str] = []
    expand: list[str] = []
    own = {p.chunk_id for p in passages}
    if depth == 0:
        for alias in aliases:
            other = Name(alias, "code" if alias.isupper() else "word", ticker=alias.isupper() and len(alias) <= 6)
            facts = _name_facts(store, workspace_id, other, resources, conditions, under, depth=1)
            if facts.held:
                alias_held = True
                alias_resources.extend((*facts.resources, *(p.resource_id for p in facts.passages)))
            if any(p.chunk_id not in own for p in facts.passages):
                expand.append(alias)
    word_held = False
    parts = _words(name.text)
    if depth == 0 and len(parts) > 1 and not (labelled or passages):
        for part in parts:
            if len(part) < 2 or part.lower() in ("and",):
                continue
            sub = Name(part, "word" if any(c.islower() for c in part) else "code")
            facts = _name_facts(store, workspace_id, sub, resources, conditions, under, depth=1)
            if not facts.common and facts.held:
                word_held = True
                break
    known = bool(found or labelled or aliases)  # the lookup matches any word, in any case and inflection
    return NameFacts(name, common, labelled, passages, aliases, alias_held, word_held,
                     tuple(dict.fromkeys(alias_resources)), tuple(expand), known, spellings)


def gather(store: SearchStore, workspace_id: str, analysis: QuestionAnalysis, *, conditions: Sequence[Condition] = (),
           under: str | None = None, resources: Sequence[Resource] | None = None) -> ScopeFacts:
    """Read the :class:`ScopeFacts` of the analysed question from the store: the scope's
    resources (``resources`` when the caller read them already), one full-text lookup (at
    most :data:`LOOKUP_LIMIT` passages) per question name, linked alias and year, and the
    document frequencies of the topic concepts. About a millisecond per lookup on the
    SQLite store; never raises for any question text. The reads share one snapshot
    (:meth:`Store.reading`)."""
    with store.reading():
        if resources is None:
            resources = store.scope_resources(workspace_id, conditions=conditions, under=under)
        return _gather(store, workspace_id, analysis, tuple(resources), conditions, under)


def _gather(store: SearchStore, workspace_id: str, analysis: QuestionAnalysis, resources: tuple[Resource, ...],
            conditions: Sequence[Condition], under: str | None) -> ScopeFacts:
    """:func:`gather`, inside its snapshot."""
    names = tuple(_name_facts(store, workspace_id, n, resources, conditions, under) for n in analysis.names)
    about, _ = _about_resources(names, resources)
    narrowed = list(conditions)
    if len(about) < len(resources):
        narrowed.append(Condition("resource_id", "eq", tuple(sorted(r.id for r in about))))
    years: dict[int, tuple[TextHit, ...]] = {}
    for year in sorted(analysis.years):
        found = _lookup(store, workspace_id, [str(year), f"fy{year}", f"fy{year % 100:02d}"], narrowed, under)
        years[year] = tuple(p for p in found if year in _text_years(p.text))
    concepts = analysis.topics
    topics: list[tuple[Concept, float, bool]] = []
    own = frozenset(rid for f in names if f.held for rid in (*f.resources, *f.alias_resources))
    own = own if analysis.kind.figure and own and len(own) < len(about) else frozenset()
    if own:
        narrowed = [*conditions, Condition("resource_id", "eq", tuple(sorted(own)))]
    if concepts:
        groups = [list(words) for c in concepts for words in c.words]
        n, counts = store.term_counts(workspace_id, groups)
        i = 0
        for concept in concepts:
            df = max(counts[i:i + len(concept.words)], default=0)
            i += len(concept.words)
            words = sorted({w for alt in concept.words for w in alt})
            present = any(concept.matches(_text_terms(p.text))
                          for p in _lookup(store, workspace_id, words, narrowed, under, limit=TOPIC_LOOKUP_LIMIT))
            topics.append((concept, math.log((n + 1) / (df + 0.5)), present))
    # aliases help retrieval find passages elsewhere when no resource in scope is named by the name
    links = {f.name.text: set(f.expand) for f in names if f.expand and not f.resources}
    for f in names:  # a name the sources break otherwise is searched as they write it too
        if f.spellings:
            links.setdefault(f.name.text, set()).update(f.spellings)
    return ScopeFacts(resources, names, years, tuple(topics), alias_query(analysis.query, links), own)


def _anchor(f: NameFacts) -> bool:
    """A held name that shows what the question is about (rule 1): named by a resource's
    labels, a held ticker, or a held word name the sources never use as an ordinary word."""
    if not f.held:
        return False
    return bool(f.resources) or f.name.ticker or f.alias_held or (f.name.kind == "word" and not f.common)


def _about_resources(names: Sequence[NameFacts], resources: Sequence[Resource]) -> tuple[list[Resource], list[str]]:
    """The sources about the question (rule 2) and the held names they are about: the
    resources whose labels name a held name or a name linked to it, and the resources of
    the passages that mention one (all of ``resources`` when none)."""
    held = [f for f in names if f.held]
    if not held:
        return list(resources), []
    ids = {rid for f in held for rid in (*f.resources, *f.alias_resources)}
    ids.update(p.resource_id for f in held for p in f.passages)
    about = [r for r in resources if r.id in ids]
    return (about or list(resources)), [f.name.text for f in held if not f.name.weak] or [
        f.name.text for f in held]


def check_scope(analysis: QuestionAnalysis, facts: ScopeFacts, passages: Sequence[Passage]) -> ScopeAbstention | None:
    """None when the scope may hold the answer, else the :class:`ScopeAbstention` to give
    instead (rules in the module docstring). Pure: reads only its arguments. A scope
    without resources is left to the "no matching resources" warning: None."""
    if not facts.resources:
        return None
    missing = [f for f in facts.names if not f.name.weak and not f.held]
    unknown = [f for f in missing if f.name.subject and not f.known]
    if unknown or (missing and not any(_anchor(f) for f in facts.names)):
        shown = [f.name.text for f in unknown or missing]
        listed = _join(shown) if len(shown) <= 5 else f"{', '.join(shown[:5])} or {len(shown) - 5} more"
        return ScopeAbstention(f"Not in the sources: none of them mentions {listed}.", "entity", tuple(shown))
    about, subjects = _about_resources(facts.names, facts.resources)
    about_ids = {r.id for r in about}
    whom = f" about {_join(subjects)}" if subjects else ""
    latest = latest_period(about)
    for year in sorted(analysis.years):
        if latest is not None and year > latest and not analysis.periods.ahead:
            return ScopeAbstention(f"Not in the sources: the sources{whom} report on periods up to {latest}, "
                                   f"not on {year}.", "future_period", (str(year),))
        if not any(p.resource_id in about_ids for p in facts.year_passages.get(year, ())):
            return ScopeAbstention(f"Not in the sources: no source{whom} mentions {year}.", "period", (str(year),))
    # one topic concept decides only over the documents of the subject a figure question names
    if len(facts.topics) >= MIN_TOPIC_CONCEPTS or (facts.topics and facts.topic_resources):
        topic_ids = facts.topic_resources or about_ids
        retrieved = [_text_terms(p.chunk.text) for p in passages if p.chunk.resource_id in topic_ids]
        total = sum(w for _, w, _ in facts.topics)
        absent = [(c, w) for c, w, present in facts.topics
                  if not present and not any(c.matches(terms) for terms in retrieved)]
        if total > 0 and sum(w for _, w in absent) / total >= MIN_TOPIC_SHARE_MISSING \
                and len(absent) >= MIN_TOPIC_SHARE_MISSING * len(facts.topics):
            words = [" ".join(c.words[0]) if c.words and c.words[0] else c.head or "" for c, _ in absent]
            return ScopeAbstention(f"Not in the sources: no source{whom} speaks of {_join([w for w in words if w])}.",
                                   "topic", tuple(words))
    missing_words = unmentioned_names(analysis, passages)
    if missing_words:
        shown = [as_written(analysis.query, w) for w in missing_words]
        if len(shown) > 5:
            shown = [*shown[:5], "…"]
        return ScopeAbstention(f"Not in the sources: no passage found for this question mentions {_join(shown)}.",
                               "passages", tuple(shown))
    return None


def unmentioned_names(analysis: QuestionAnalysis, passages: Sequence[Passage]) -> list[str]:
    """The question's name words (:attr:`QuestionAnalysis.name_words`) when *none* of them
    is mentioned by ``passages`` (the passages retrieved for it), else ``[]`` (rule 4).

    A name word counts as mentioned when its stemmed term occurs in a passage's text, or
    its letters and digits occur in a passage's resource title, file name or other names
    (tickers and company names; ``BESTBUY_2024Q2_10Q`` names ``Best Buy``), or the name
    words run together do. Question wording capitalises freely ("Real change", "FY",
    "AGM"), so one unmatched name alone is no reason to abstain; passages that mention
    none of the names would make a confidently off-topic answer."""
    names = dict(analysis.name_words)
    if not names or not passages:
        return []
    # a name written run together, spaced or hyphenated is mentioned in any of those forms
    spelled = {part.lower() for n in analysis.names if any(mentions(p.chunk.text, n) for p in passages)
               for part in (*name_parts(n.text), n.text.replace(" ", ""))}
    if any(s.lower() in spelled for s in names):
        return []  # a name is mentioned: the passages are about the question
    terms: set[str] = set()
    titles: list[str] = []
    for passage in passages:
        terms |= _text_terms(passage.chunk.text)
        labels = " ".join([passage.resource_title, passage.file_name or "", *passage.resource_names])
        titles.append(ALNUM_RE.sub("", labels.lower()))
    title_text = " ".join(titles)
    joined = ALNUM_RE.sub("", "".join(names))  # "Best Buy" -> "bestbuy" for titles
    missing = [surface for surface, term in names.items()
               if term not in terms and ALNUM_RE.sub("", surface) not in title_text and joined not in title_text]
    return missing if len(missing) == len(names) else []



def _join(items: Sequence[str]) -> str:
    items = list(dict.fromkeys(items))
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


__all__ = [
    "LOOKUP_LIMIT",
    "MIN_TOPIC_CONCEPTS",
    "MIN_TOPIC_SHARE_MISSING",
    "NOT_IN_SOURCES",
    "TOPIC_LOOKUP_LIMIT",
    "NameFacts",
    "ScopeAbstention",
    "ScopeFacts",
    "check_scope",
    "gather",
    "unmentioned_names",
]
