"""The label index of the scope check (citewell.scope.labelindex): it names the resources
that names_resource names and links what the pairwise ticker_links did, and a scope's
index follows the store's writes (ingest, rename, delete) and stays in its workspace."""

from __future__ import annotations

import re
from pathlib import Path

from citewell import Engine
from citewell.models import Resource
from citewell.question import analyse
from citewell.scope.check import gather
from citewell.scope.labelindex import CACHE_SIZE, LabelIndex, label_index
from citewell.question.names import Name, mentions, ticker_definitions
from citewell.scope.labelindex import _short, names_resource, ticker_links


def _resource(rid: str, title: str, file_name: str, **metadata: object) -> Resource:
    return Resource(id=rid, workspace_id="w", title=title, file_name=file_name, kind="text", sha256=rid,
                    size_bytes=1, status="ready", metadata=metadata)


RESOURCES = (
    _resource("r1", "BESTBUY_2024Q2_10Q", "BESTBUY_2024Q2_10Q.pdf"),
    _resource("r2", "3M_2022_10K", "3M_2022_10K.pdf", tickers=["MMM"], company_names=["3M Company"]),
    _resource("r3", "AMCOR_2023_10K", "AMCOR_2023_10K.pdf", tickers=["AMCR", "amc"],
              company_names=["Amcor plc", "Amcor"]),
    _resource("r4", "annual report", "report.txt", tickers=None, company_names=["Johnson & Johnson"]),
    _resource("r5", "Nestlé review", "nestle.txt", company_names=["Nestlé S.A."], tickers=["NSRGY"]),
    _resource("r6", "wallstreet_2022-01", "wallstreet_2022-01.jsonl"),
    _resource("r7", "Coca-Cola 2021", "coca_cola_2021.pdf", tickers=["KO"], company_names=["The Coca-Cola Company"]),
)
NAMES = [
    Name("Best Buy", "word"), Name("3M", "code", ticker=True), Name("MMM", "code", ticker=True),
    Name("AMCOR", "code"), Name("Amcor", "word"), Name("AMC", "code", ticker=True), Name("amc", "word"),
    Name("Johnson & Johnson", "word"), Name("Johnson", "word"), Name("Nestlé", "word"), Name("NSRGY", "code", ticker=True),
    Name("Coca-Cola", "word"), Name("KO", "code", ticker=True), Name("Cola", "word"), Name("A", "code", ticker=True),
    Name("2022", "code"), Name("Report", "word"), Name("Zorblax", "word"), Name("日本", "word"), Name("", "word"),
    Name("10K", "code"), Name("S.A.", "code"),
]


def _pairwise_links(names: list[Name], resources: tuple[Resource, ...], texts: list[str],
                    tickers: list[str]) -> dict[str, set[str]]:
    """ticker_links as it was written before the index: every name against every pair."""
    out: dict[str, set[str]] = {}
    pairs: list[tuple[str, str]] = []
    known = {t.upper().lstrip("$") for t in tickers}
    for r in resources:
        meta = r.metadata or {}
        known.update(t.upper() for t in meta.get("tickers") or [])
        for t in meta.get("tickers") or []:
            for c in meta.get("company_names") or []:
                pairs.append((c, t.upper()))
    for company, code, explicit in ticker_definitions(texts):
        if explicit or code in known:
            pairs.append((company, code))
    for name in names:
        for company, ticker in pairs:
            if name.ticker and name.text.upper() == ticker:
                out.setdefault(name.text, set()).add(_short(company))
            elif not name.ticker and (mentions(company, name) or name.key == re.sub(
                    "[^0-9a-z]+", "", company.lower())):
                out.setdefault(name.text, set()).add(ticker)
    return out


def test_the_index_names_the_resources_names_resource_names() -> None:
    index = LabelIndex.of(RESOURCES)
    for name in NAMES:
        assert index.named(name) == tuple(r.id for r in RESOURCES if names_resource(r, name)), name
    assert index.named(Name("Best Buy", "word")) == ("r1",)
    assert index.named(Name("AMC", "code", ticker=True)) == ("r3",)  # a metadata ticker, and in "amcor"
    assert index.named(Name("KO", "code", ticker=True)) == ("r7",)  # the ticker (and "kocola" has no "ko")
    assert index.named(Name("2022", "code")) == ("r2", "r6")
    assert index.named(Name("A", "code", ticker=True)) == ()  # one letter: a ticker only, and none is "a"
    assert index.named(Name("", "word")) == ()
    assert index.named(Name("Zorblax", "word")) == ()


def test_ticker_links_are_those_of_every_name_against_every_pair() -> None:
    texts = ["Activision Blizzard (ATVI) puts.", "Amcor ($AMCR) rose.", "Boeing Capital Corporation (BCC) notes.",
             "3M Company (NYSE: MMM) reported.", "Johnson & Johnson (JNJ) filed."]
    for name in NAMES + [Name("Activision Blizzard", "word"), Name("ATVI", "code", ticker=True),
                         Name("BCC", "code", ticker=True), Name("JNJ", "code", ticker=True)]:
        for tickers in ([], ["ATVI", "$JNJ"]):
            assert ticker_links([name], RESOURCES, texts, tickers) == _pairwise_links([name], RESOURCES, texts,
                                                                                       tickers), name
    assert ticker_links([Name("Amcor", "word")], RESOURCES, []) == {"Amcor": {"AMCR", "AMC"}}
    assert ticker_links([Name("AMCR", "code", ticker=True)], RESOURCES, []) == {"AMCR": {"Amcor plc", "Amcor"}}
    assert ticker_links([Name("Coca-Cola", "word")], RESOURCES, []) == {"Coca-Cola": {"KO"}}
    assert ticker_links([Name("Johnson", "word")], RESOURCES, texts, ["JNJ"]) == {"Johnson": {"JNJ"}}
    assert ticker_links([Name("BCC", "code", ticker=True)], RESOURCES, texts) == {}  # an abbreviation


def test_an_index_is_kept_per_tuple_and_made_afresh_for_anything_else() -> None:
    scope = tuple(RESOURCES)
    first = label_index(scope)
    assert label_index(scope) is first
    assert label_index(tuple(RESOURCES[:3])) is not first
    assert label_index(list(RESOURCES)) is not label_index(list(RESOURCES))
    assert label_index(list(RESOURCES)) == first
    for i in range(CACHE_SIZE):  # other scopes push it out: then it is made again, the same
        label_index((*RESOURCES, RESOURCES[i % len(RESOURCES)]))
    assert label_index(scope) is not first and label_index(scope) == first


def _labelled(engine: Engine, question: str) -> dict[str, list[str]]:
    """The file names of the resources whose labels name each question name (gather)."""
    names = {r.id: r.file_name for r in engine.store.ranking_resources(engine.workspace_id)}
    facts = gather(engine.store, engine.workspace_id, analyse(question))
    return {f.name.text: sorted(names[rid] for rid in f.resources) for f in facts.names}


def test_the_labels_follow_ingest_rename_and_delete_in_their_workspace(tmp_path: Path, store_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ACME_2022_report.txt").write_text("Acme net sales were $5,000 million in 2022.\n", encoding="utf-8")
    (docs / "notes.txt").write_text("Plant notes: pumps and valves were checked in 2022.\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "ZORBLAX_2022.txt").write_text("Zorblax revenue grew in 2022.\n", encoding="utf-8")
    question = "What were Acme's and Zorblax's sales in 2022?"
    with Engine(store_path) as e, Engine(store_path, workspace="other") as other:
        e.mode = other.mode = "lexical"
        e.ingest([docs])
        other.ingest([elsewhere])
        ws = e.workspace_id
        assert _labelled(e, question) == {"Acme": ["ACME_2022_report.txt"], "Zorblax": []}
        assert _labelled(other, question) == {"Acme": [], "Zorblax": ["ZORBLAX_2022.txt"]}

        notes = next(r for r in e.store.ranking_resources(ws) if r.file_name == "notes.txt")
        e.store.update_resource_metadata(ws, notes.id, title="Zorblax plant notes", metadata={}, custom_metadata=None)
        assert _labelled(e, question) == {"Acme": ["ACME_2022_report.txt"], "Zorblax": ["notes.txt"]}

        (docs / "acme_tickers.txt").write_text("The Acme board met twice.\n", encoding="utf-8")
        e.ingest([docs / "acme_tickers.txt"])
        assert _labelled(e, question) == {"Acme": ["ACME_2022_report.txt", "acme_tickers.txt"],
                                          "Zorblax": ["notes.txt"]}

        e.delete_resource(next(r.id for r in e.store.ranking_resources(ws) if r.file_name == "ACME_2022_report.txt"))
        assert _labelled(e, question) == {"Acme": ["acme_tickers.txt"], "Zorblax": ["notes.txt"]}
        assert _labelled(other, question) == {"Acme": [], "Zorblax": ["ZORBLAX_2022.txt"]}


def test_gather_reads_in_one_snapshot(tmp_path: Path, store_path: Path) -> None:
    """The scope check's lookups share one read transaction (Store.reading): on SQLite one
    BEGIN and one read of the counters for the whole gather; the facts are those of
    lookups made one by one."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ACME_2022_report.txt").write_text("Acme net sales were $5,000 million in 2022.\n", encoding="utf-8")
    (docs / "posts.txt").write_text("Acme Corp (ACME) sales in 2022 beat the plan.\n", encoding="utf-8")
    question = "What were Acme's net sales in 2022?"
    with Engine(store_path) as e:
        e.ingest([docs])
        ws = e.workspace_id
        first = gather(e.store, ws, analyse(question))
        with e.store.reading(), e.store.reading():  # nested: the outer snapshot serves
            assert gather(e.store, ws, analyse(question)) == first
        assert [f.name.text for f in first.names] == ["Acme"]
        assert sorted(p.text for p in first.names[0].passages) == [
            "Acme Corp (ACME) sales in 2022 beat the plan.", "Acme net sales were $5,000 million in 2022."]
        assert sorted(len(v) for v in first.year_passages.values()) == [2]
        if str(store_path).startswith("postgresql://"):
            return
        reads: list[str] = []
        e.store._conn().set_trace_callback(reads.append)
        assert gather(e.store, ws, analyse(question)) == first
        e.store._conn().set_trace_callback(None)
        assert [sql for sql in reads if sql.startswith(("BEGIN", "COMMIT"))] == ["BEGIN", "COMMIT"]
        assert len([sql for sql in reads if "FROM meta" in sql]) == 1
