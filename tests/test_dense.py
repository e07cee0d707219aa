"""Dense and hybrid retrieval: the embedder against reference vectors, vectors stored once
per text, cosine search, RRF, filters, the embedding time budget and the lexical mode."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from citewell import Engine
from citewell.cli.app import main
from citewell.errors import StoreError
from citewell.retrieve import BM25Retriever
from citewell.embed import minilm as embedder_mod
from citewell.retrieve.dense import DenseRetriever
from citewell.retrieve.hybrid import BM25_WEIGHT, HybridRetriever, convex, rrf

from .conftest import is_sqlite, sql_rows

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"
needs_model = pytest.mark.skipif(not embedder_mod.available(), reason="embedding model not installed")

PASSAGES = {
    "felines.txt": "Cats are small carnivorous mammals that people keep as household pets.",
    "storms.txt": "Hurricanes form over warm ocean water and bring heavy rainfall and strong winds.",
    "bonds.txt": "Treasury yields rose after the central bank raised its benchmark interest rate.",
    "bread.txt": "Sourdough loaves rise slowly because wild yeast ferments the dough overnight.",
}


def _corpus(folder: Path, files: dict[str, str] = PASSAGES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text + "\n", encoding="utf-8")
    return folder


def _vector_rows(store_path: Path) -> list[tuple[str, str, int]]:
    return sql_rows(store_path, "SELECT text_hash, model, dim FROM chunk_vectors ORDER BY text_hash")


@needs_model
def test_embeddings_match_sentence_transformers_reference() -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    texts = [item["text"] for item in reference["items"]]
    expected = np.array([item["vector"] for item in reference["items"]], dtype=np.float32)
    got = embedder_mod.shared_embedder().embed(texts)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = (got * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    assert cosines.min() >= 0.99, cosines
    # order and batching do not change a vector
    again = embedder_mod.shared_embedder().embed(list(reversed(texts)))[::-1]
    assert np.allclose(again, got, atol=1e-5)


@needs_model
def test_vectors_are_stored_once_per_text_and_never_shared_between_workspaces(tmp_path: Path,
                                                                              store_path: Path) -> None:
    docs = _corpus(tmp_path / "docs")
    copy = _corpus(tmp_path / "copy", {"kittens.txt": PASSAGES["felines.txt"] + "\n\n"})  # same text, other bytes
    with Engine(store_path, workspace="a") as a, Engine(store_path, workspace="b") as b:
        a.ingest([docs])
        assert a.embed() == (4, 4)
        assert len(_vector_rows(store_path)) == 4
        a.ingest([copy])  # identical text in the same workspace: nothing new to embed
        assert a.store.texts_without_vectors(a.workspace_id, embedder_mod.MODEL_ID) == []
        assert a.embedding_coverage() == (5, 5)
        b.ingest([docs])  # the same texts in another workspace: its own vectors, nothing told
        assert b.embedding_coverage() == (0, 4)
        assert len(b.store.texts_without_vectors(b.workspace_id, embedder_mod.MODEL_ID)) == 4
        assert b.embed() == (4, 4)
    rows = _vector_rows(store_path)
    assert len(rows) == 8  # 4 distinct texts, embedded once in each workspace
    texts = {t for (t,) in sql_rows(store_path, "SELECT text FROM chunks")}
    assert len(texts) == 4
    assert {h for h, _, _ in rows} == {hashlib.sha256(t.encode()).hexdigest() for t in texts}
    assert {(m, d) for _, m, d in rows} == {(embedder_mod.MODEL_ID, 384)}


@needs_model
def test_deleting_a_document_deletes_its_vectors(tmp_path: Path, store_path: Path) -> None:
    docs = _corpus(tmp_path / "docs")
    shared = _corpus(tmp_path / "shared", {"bread.txt": PASSAGES["bread.txt"]})  # same text, other workspace
    with Engine(store_path, workspace="a", mode="hybrid") as a, Engine(store_path, workspace="b") as b:
        a.ingest([docs])
        b.ingest([shared])
        assert a.embed() == (4, 4) and len(_vector_rows(store_path)) == 4
        by_name = {r.file_name: r for r in a.resources()}
        question = "Which creature do families adopt for a furry companion?"
        assert a.retrieve(question, k=1)[0].file_name == "felines.txt"  # the vectors are cached now
        text_of = {name: a.store.resource_chunks(a.workspace_id, r.id)[0].text for name, r in by_name.items()}
        a.delete_resource(by_name["felines.txt"].id)
        a.delete_resource(by_name["bread.txt"].id)
        hashes = {h for h, _, _ in _vector_rows(store_path)}
        # the deleted documents' vectors went with them; workspace b (same bread text) never
        # embedded, so it has none: vectors are per workspace
        assert hashes == {hashlib.sha256(text_of[n].encode()).hexdigest() for n in ("storms.txt", "bonds.txt")}
        assert b.store.vector_coverage(b.workspace_id, embedder_mod.MODEL_ID) == (0, 1)
        assert {p.file_name for p in a.retrieve(question, k=5)} == {"storms.txt", "bonds.txt"}
        assert a.store.vector_coverage(a.workspace_id, embedder_mod.MODEL_ID) == (2, 2)


@needs_model
def test_dense_finds_a_paraphrase_sharing_no_words(tmp_path: Path, store_path: Path) -> None:
    with Engine(store_path, mode="dense") as engine:
        engine.ingest([_corpus(tmp_path / "docs")])
        question = "Which creature do families adopt for a furry companion?"
        words = {w.strip("?.,").lower() for w in question.split()}
        target = PASSAGES["felines.txt"]
        assert not words & {w.strip("?.,").lower() for w in target.split()}
        assert BM25Retriever(engine.store, engine.workspace_id).retrieve(question, k=3) == []  # no word shared
        found = engine.retrieve(question, k=2)
        assert found[0].chunk.text.strip() == target
        assert found[0].score > found[1].score and found[0].rank == 1
        engine.mode = "hybrid"  # BM25 has nothing: the dense ranking alone decides
        assert engine.retrieve(question, k=1)[0].chunk.text.strip() == target


@needs_model
def test_vectors_beyond_the_cache_are_ranked_alike_and_said_once(tmp_path: Path, store_path: Path,
                                                                 caplog: pytest.LogCaptureFixture,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace whose vectors exceed the vector cache (CITEWELL_VECTOR_CACHE_MB) is
    ranked the same; on SQLite, whose numpy ranking reads them again per question, with one
    warning naming the setting (PostgreSQL ranks in its index and reads no matrix); a bad
    setting is a STORE_ERROR when the store opens."""
    question = "Which creature do families adopt for a furry companion?"
    with Engine(store_path, mode="dense") as engine:
        engine.ingest([_corpus(tmp_path / "docs")])
        cached = [(p.chunk.id, p.score) for p in engine.retrieve(question, k=3)]
    monkeypatch.setenv("CITEWELL_VECTOR_CACHE_MB", "1")
    with Engine(store_path, mode="dense") as engine:
        assert engine.store._vectors.budget == 1 << 20
        engine.store._vectors.budget = 100  # bytes: fewer than this workspace's vectors
        with caplog.at_level("WARNING", logger="citewell.store"):
            for _ in range(3):
                assert [(p.chunk.id, p.score) for p in engine.retrieve(question, k=3)] == cached
        said = [r.getMessage() for r in caplog.records if "exceed the vector cache" in r.getMessage()]
        if is_sqlite(store_path):  # numpy ranks the matrix: read again each time, said once
            assert len(said) == 1 and "CITEWELL_VECTOR_CACHE_MB" in said[0]
        else:  # the HNSW index ranks: no matrix is read, nothing to say
            assert said == []
    for bad in ("0", "-5", "²", "lots"):
        monkeypatch.setenv("CITEWELL_VECTOR_CACHE_MB", bad)
        with pytest.raises(StoreError, match="CITEWELL_VECTOR_CACHE_MB"):
            Engine(store_path).close()


class _CountingEmbedder:
    """A tiny fake embedder (3 dimensions) that counts the texts it embeds."""

    model_id = "fake-3"
    dim = 3

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts):  # noqa: ANN001, ANN201 - the Embedder protocol
        self.texts.extend(texts)
        out = np.ones((len(texts), 3), dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_embedding_stops_when_asked_and_when_its_texts_are_gone(tmp_path: Path, store_path: Path) -> None:
    from citewell.retrieve.dense import embed_missing

    docs = _corpus(tmp_path / "docs", {f"note{i}.txt": f"Note number {i} about topic {i}." for i in range(10)})
    with Engine(store_path, mode="lexical") as engine:
        engine.ingest([docs])
        fake = _CountingEmbedder()
        calls = iter([False, True])  # a server shutting down after the first batch
        done = embed_missing(engine.store, engine.workspace_id, fake, batch=4, stop=lambda: next(calls))
        assert (done.embedded, done.missing) == (4, 6) and len(fake.texts) == 4
        # vectors of texts no chunk has are not stored (a resource deleted mid-embedding)
        assert engine.store.put_vectors(engine.workspace_id, fake.model_id, 3,
                                        [("0" * 64, np.ones(3, dtype="<f4").tobytes())]) == 0
        for resource in engine.resources():
            engine.delete_resource(resource.id)
        assert embed_missing(engine.store, engine.workspace_id, fake, batch=4).missing == 0
        assert sql_rows(store_path, "SELECT count(*) FROM chunk_vectors") == [(0,)]


def test_embedding_reads_its_texts_in_bounded_pages_shortest_first(tmp_path: Path, store_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 14: every text of the scope was read at once (a 52 MB post took ~8 GB to
    embed); now at most ``PAGE`` texts are in hand, shortest first, and all get embedded."""
    from citewell.retrieve import dense

    monkeypatch.setattr(dense, "PAGE", 8)
    docs = _corpus(tmp_path / "docs", {f"note{i:02d}.txt": f"Note {i} " + "word " * (30 - i) for i in range(20)})
    with Engine(store_path, mode="lexical") as engine:
        engine.ingest([docs])
        pages: list[int] = []
        read = engine.store.texts_without_vectors

        def recording(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            found = read(*args, **kwargs)
            pages.append(len(found))
            assert kwargs.get("limit") == 8 and kwargs.get("shortest_first") is True
            return found

        monkeypatch.setattr(engine.store, "texts_without_vectors", recording)
        fake = _CountingEmbedder()
        seen: list[tuple[int, int]] = []
        done = dense.embed_missing(engine.store, engine.workspace_id, fake, batch=4,
                                   progress=lambda n, total: seen.append((n, total)))
        assert (done.embedded, done.missing) == (20, 0) and pages == [8, 8, 4]
        assert [len(t) for t in fake.texts] == sorted(len(t) for t in fake.texts)  # shortest first
        assert seen[0] == (0, 20) and seen[-1] == (20, 20)
        assert engine.store.missing_vectors(engine.workspace_id, fake.model_id) == 0


def test_the_budget_bounds_the_priority_embedding_too(tmp_path: Path, store_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    class Slow(_CountingEmbedder):
        def embed(self, texts):  # noqa: ANN001, ANN201
            time.sleep(0.05)
            return super().embed(texts)

    docs = _corpus(tmp_path / "docs", {f"note{i}.txt": f"Topic notes number {i}." for i in range(40)})
    slow = Slow()
    with Engine(store_path, mode="hybrid", embedder=slow) as engine:
        engine.ingest([docs])
        engine.embed_budget_s = 0.01
        message = engine.ask("What do the topic notes say?", sync=False)
        # one batch of the question's candidates (8) may start inside the budget; no more
        # (the question itself is embedded too, for the dense ranking)
        assert len([t for t in slow.texts if t.startswith("Topic notes number")]) == 8
        assert [(w.code, w.embedded, w.missing) for w in message.warnings] == [("EMBEDDINGS_INCOMPLETE", 8, 32)]
        assert "searched lexically only" in message.warnings[0].message
        engine.mode = "dense"
        assert "not searched (dense mode" in engine.ask("What do the topic notes say?", sync=False).warnings[0].message
    for raw, expected in (("nan", 10.0), ("inf", 10.0), ("-3", 0.0), ("2.5", 2.5), ("soon", 10.0)):
        monkeypatch.setenv("CITEWELL_EMBED_BUDGET_S", raw)
        with Engine(store_path) as engine:
            assert engine.embed_budget_s == expected


def test_a_question_embeds_nothing_when_stopping_or_wordless(tmp_path: Path, store_path: Path) -> None:
    docs = _corpus(tmp_path / "docs", {f"note{i}.txt": f"Topic notes number {i}." for i in range(12)})
    fake = _CountingEmbedder()
    with Engine(store_path, mode="hybrid", embedder=fake) as engine:
        engine.ingest([docs])
        message = engine.ask("?!?", sync=False)  # no searchable word: more vectors cannot help
        assert fake.texts == [] or all(not t.startswith("Topic notes") for t in fake.texts)
        assert [(w.code, w.embedded) for w in message.warnings] == [("EMBEDDINGS_INCOMPLETE", 0)]
        engine.embed_stop = lambda: True  # a server shutting down
        message = engine.ask("What do the topic notes say?", sync=False)
        assert not [t for t in fake.texts if t.startswith("Topic notes")]
        assert [(w.code, w.embedded, w.missing) for w in message.warnings] == [("EMBEDDINGS_INCOMPLETE", 0, 12)]
        assert message.references  # answered lexically all the same
        engine.embed_stop = None
        engine.ask("What do the topic notes say?", sync=False)
        assert len([t for t in fake.texts if t.startswith("Topic notes")]) == 12


def test_rrf_arithmetic_on_a_hand_made_example() -> None:
    fused = rrf([["a", "b", "c"], ["c", "a", "d"]], k=60)
    expected = {"a": 1 / 61 + 1 / 62, "c": 1 / 63 + 1 / 61, "b": 1 / 62, "d": 1 / 63}
    assert [item for item, _ in fused] == ["a", "c", "b", "d"]
    assert all(abs(score - expected[item]) < 1e-12 for item, score in fused)
    assert rrf([["x", "y"], []]) == [("x", 1 / 61), ("y", 1 / 62)]
    assert rrf([["p"], ["q"]]) == [("p", 1 / 61), ("q", 1 / 61)]  # a tie keeps first-seen order


def test_weighted_rrf_arithmetic() -> None:
    # BM25 (weight 1.5) ranks a, b; dense (weight 1) ranks b, c
    fused = rrf([["a", "b"], ["b", "c"]], weights=(1.5, 1.0))
    expected = {"b": 1.5 / 62 + 1 / 61, "a": 1.5 / 61, "c": 1 / 62}
    assert [item for item, _ in fused] == ["b", "a", "c"]
    assert all(abs(score - expected[item]) < 1e-12 for item, score in fused)
    # a first place in the heavier ranking beats a first place in the lighter one
    assert [item for item, _ in rrf([["x"], ["y"]], weights=(BM25_WEIGHT, 1.0))] == ["x", "y"]
    with pytest.raises(ValueError):
        rrf([["a"], ["b"]], weights=(1.0,))


def test_convex_fusion_arithmetic() -> None:
    lexical = [("a", 2.0), ("b", 1.5), ("c", 1.0)]  # reranker scores, best first
    dense = [("d", 0.8), ("b", 0.6), ("a", 0.4)]  # cosines, best first
    cosines = {"a": 0.4, "b": 0.6, "d": 0.8, "c": 0.2}  # c has a vector, outside the dense top
    fused = dict(convex(lexical, dense, cosines, alpha=0.9))  # cosines scale over 0.2 .. 0.8
    assert fused["a"] == pytest.approx(0.9 * 1.0 + 0.1 * (0.4 - 0.2) / 0.6)
    assert fused["b"] == pytest.approx(0.9 * 0.5 + 0.1 * (0.6 - 0.2) / 0.6)
    assert fused["c"] == pytest.approx(0.0)  # lexical minimum and the lowest cosine
    assert fused["d"] == pytest.approx(0.1)  # dense only: lexical part 0
    assert [i for i, _ in convex(lexical, dense, cosines, alpha=0.9)] == ["a", "b", "d", "c"]
    # alpha 0 is the dense order; a passage without a vector keeps its lexical score alone
    assert [i for i, _ in convex(lexical, dense, cosines, alpha=0.0)][:3] == ["d", "b", "a"]
    no_vector = dict(convex(lexical, dense, {"d": 0.8, "b": 0.6}, alpha=0.5))
    assert no_vector["a"] == pytest.approx(1.0) and no_vector["c"] == pytest.approx(0.0)
    # equal scores normalise to 1; empty lists fuse to nothing
    assert convex([("x", 3.0)], [], {}, alpha=0.9) == [("x", 1.0)]
    assert convex([], [], {}) == []
    with pytest.raises(ValueError):
        convex(lexical, dense, cosines, alpha=1.5)


@needs_model
def test_a_passage_without_a_vector_is_not_pushed_down(tmp_path: Path, store_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # the first questions on a new corpus run with part of it embedded: a passage BM25 ranks
    # first must not lose its place because it has no vector yet (RRF would demote it)
    docs = _corpus(tmp_path / "docs", {
        "capex.txt": "Purchases of property, plant and equipment were $1,749 million in 2022.",
        "plans.txt": "Capital expenditures on new plants are planned for the coming years.",
        "outlook.txt": "Spending on capital projects is expected to grow next year.",
    })
    question = "What were the purchases of property, plant and equipment in 2022?"
    with Engine(store_path, mode="hybrid") as engine:
        engine.ingest([docs])
        capex = next(p for p in engine.lexical.retrieve(question, k=3) if p.file_name == "capex.txt")
        assert capex.rank == 1
        engine.embed()
    sql_rows(store_path, "DELETE FROM chunk_vectors WHERE text_hash = ?",  # forget the capex passage's vector
             hashlib.sha256(capex.chunk.text.encode()).hexdigest())  # (behind the store's back)
    with Engine(store_path, mode="hybrid") as engine:  # a new process's view
        assert not engine.store.vectors(engine.workspace_id, embedder_mod.MODEL_ID, [capex.chunk.id])
        monkeypatch.setattr(engine, "embed_budget_s", 0.0)
        assert engine.retrieve(question, k=3)[0].file_name == "capex.txt"
        message = engine.ask(question, sync=False)
        assert [w.code for w in message.warnings] == ["EMBEDDINGS_INCOMPLETE"]
        assert message.references[0].file_name == "capex.txt"


def test_fusion_names_are_checked(store_path: Path) -> None:
    with pytest.raises(Exception) as bad:
        Engine(store_path, fusion="borda")
    assert getattr(bad.value, "code", "") == "INVALID_REQUEST"
    with Engine(store_path, fusion="rrf") as engine:
        assert engine.fusion == "rrf"


@needs_model
def test_the_dense_ranking_keeps_to_the_company_the_question_names(tmp_path: Path, store_path: Path) -> None:
    docs = _corpus(tmp_path / "docs", {
        "ACME_2022_10K.txt": "Acme held enough cash to cover its short-term obligations in fiscal 2022.",
        "GLOBEX_2022_10K.txt": "Globex kept ample cash reserves to meet its near-term liabilities.",
        "INITECH_2022_10K.txt": "Initech's liquidity position remained strong throughout the year.",
    })
    question = "How strong is GLOBEX's liquidity position?"
    with Engine(store_path, mode="hybrid") as engine:
        engine.ingest([docs])
        engine.embed()
        ranked = engine.explain(question, k=3)
        dense = {r.passage.file_name for r in ranked if r.dense_rank is not None}
        assert dense == {"GLOBEX_2022_10K.txt"}  # the named company only, on the dense side
        # BM25 still sees Initech's passage (it shares "liquidity position"); fusion keeps both sides
        assert {r.passage.file_name for r in ranked if r.bm25_rank is not None} >= {"INITECH_2022_10K.txt"}
        # a question naming no company ranks every embedded passage
        unnamed = engine.explain("Which company has the strongest liquidity position?", k=3)
        assert {r.passage.file_name for r in unnamed if r.dense_rank is not None} == {
            "ACME_2022_10K.txt", "GLOBEX_2022_10K.txt", "INITECH_2022_10K.txt"}


@needs_model
@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_filters_apply_before_ranking(tmp_path: Path, store_path: Path, mode: str) -> None:
    with Engine(store_path, mode=mode) as engine:
        engine.ingest([_corpus(tmp_path / "docs")])
        question = "Which creature do families adopt for a furry companion?"
        found = engine.retrieve(question, k=5, filters=["document_name=bread"])
        assert [p.file_name for p in found] == ["bread.txt"]
        found = engine.retrieve(question, k=5, filters=["document_name=storms", "document_name=bonds"])
        assert sorted(p.file_name for p in found) == ["bonds.txt", "storms.txt"]
        assert engine.retrieve(question, k=5, filters=["kind=post"]) == []
        # a corpus folder scopes it too
        other = _corpus(tmp_path / "other", {"pets.txt": "Dogs are loyal animals kept as pets."})
        engine.ingest([other])
        assert {p.file_name for p in engine.retrieve(question, k=5, corpus=other)} == {"pets.txt"}


@needs_model
def test_budget_zero_answers_lexically_and_says_so(tmp_path: Path, store_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWELL_EMBED_BUDGET_S", "0")
    monkeypatch.setenv("CITEWELL_RETRIEVAL_MODE", "hybrid")
    with Engine(store_path) as engine:
        assert engine.mode == "hybrid"
        engine.ingest([_corpus(tmp_path / "docs")])
        message = engine.ask("Why does sourdough rise slowly?")
        notes = [w for w in message.warnings if w.code == "EMBEDDINGS_INCOMPLETE"]
        assert len(notes) == 1
        assert (notes[0].embedded, notes[0].missing) == (0, 4)  # type: ignore[attr-defined]
        assert message.grounded and message.references[0].file_name == "bread.txt"
        assert _vector_rows(store_path) == []
        monkeypatch.setenv("CITEWELL_EMBED_BUDGET_S", "30")
        engine.embed_budget_s = 30.0
        complete = engine.ask("Why does sourdough rise slowly?")
        assert not [w for w in complete.warnings if w.code == "EMBEDDINGS_INCOMPLETE"]
        assert len(_vector_rows(store_path)) == 4


def test_lexical_mode_is_bm25_unchanged_and_embeds_nothing(tmp_path: Path, store_path: Path) -> None:
    with Engine(store_path, mode="lexical") as engine:
        engine.ingest([_corpus(tmp_path / "docs")])
        plain = BM25Retriever(engine.store, engine.workspace_id)
        for question in ("Why does sourdough rise slowly?", "interest rate yields", "ocean storms"):
            # text files have no pages: the page re-ranking keeps BM25's order (scores become page scores)
            assert ([p.chunk.id for p in engine.retrieve(question, k=3)]
                    == [p.chunk.id for p in plain.retrieve(question, k=3)])
        message = engine.ask("Why does sourdough rise slowly?")
        assert not message.warnings and message.grounded
    assert _vector_rows(store_path) == []


def test_without_an_embedder_hybrid_falls_back_to_lexical(tmp_path: Path, store_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder_mod, "available", lambda: False)
    monkeypatch.setattr(embedder_mod, "_SHARED", None)
    with Engine(store_path, mode="hybrid") as engine:
        engine.ingest([_corpus(tmp_path / "docs")])
        message = engine.ask("Why does sourdough rise slowly?")
        assert [w.code for w in message.warnings] == ["DENSE_UNAVAILABLE"]
        assert message.grounded and message.references[0].file_name == "bread.txt"
        assert [p.chunk.id for p in engine.retrieve("Why does sourdough rise slowly?", k=2)] == [
            p.chunk.id for p in BM25Retriever(engine.store, engine.workspace_id).retrieve(
                "Why does sourdough rise slowly?", k=2)]
        assert engine.retriever.mode == "lexical" and engine.retriever.dense is None


@needs_model
def test_cli_mode_explain_and_ingest_wait(tmp_path: Path, store_path: Path, capsys: pytest.CaptureFixture) -> None:
    docs = _corpus(tmp_path / "docs")
    with pytest.raises(SystemExit) as done:
        main(["ingest", str(docs), "--wait", "--store", str(store_path)])
    assert done.value.code in (0, None)
    err = capsys.readouterr().err
    assert "embedded: 4 of 4 passages" in err
    assert "embedding: 4/4 passages" in err  # stderr is no terminal here: plain progress lines, never silence
    with pytest.raises(SystemExit) as done:
        main(["ask", "Why does sourdough rise slowly?", "--store", str(store_path), "--mode", "hybrid",
              "--explain", "-k", "2", "--json"])
    out, err = capsys.readouterr()
    assert done.value.code in (0, None)
    message = json.loads(out)
    assert message["references"][0]["file_name"] == "bread.txt"
    assert "retrieval (hybrid): fused  bm25  dense" in err
    first = [line for line in err.splitlines() if "bread.txt" in line][0].split()
    assert first[:3] == ["1", "1", "1"]  # fused, BM25 and dense rank
    with pytest.raises(SystemExit) as done:
        main(["ask", "x", "--store", str(store_path), "--mode", "fuzzy"])
    assert done.value.code == 2


@needs_model
def test_a_question_embeds_its_bm25_candidates_first(tmp_path: Path, store_path: Path) -> None:
    with Engine(store_path, mode="hybrid") as engine:
        engine.ingest([_corpus(tmp_path / "docs")])
        engine.embed_budget_s = 1e-9  # time for the question's own candidates, none for the rest
        message = engine.ask("Why does sourdough rise slowly?")
        lexical = engine.lexical.retrieve("Why does sourdough rise slowly?", k=40)
        assert [p.file_name for p in lexical] == ["bread.txt"]
        notes = [w for w in message.warnings if w.code == "EMBEDDINGS_INCOMPLETE"]
        assert [(n.embedded, n.missing) for n in notes] == [(1, 3)]  # type: ignore[attr-defined]
        assert engine.store.vectors(engine.workspace_id, embedder_mod.MODEL_ID, [lexical[0].chunk.id])
        assert message.references[0].file_name == "bread.txt"


def test_the_default_mode_is_hybrid(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CITEWELL_RETRIEVAL_MODE", raising=False)
    with Engine(store_path) as engine:
        assert engine.mode == "hybrid"
        assert isinstance(engine.retriever, HybridRetriever)
        assert engine.retriever.mode == ("hybrid" if embedder_mod.available() else "lexical")
    monkeypatch.setenv("CITEWELL_RETRIEVAL_MODE", "lexical")
    with Engine(store_path) as engine:
        # lexical: BM25 alone (no dense side), still re-ranked by page
        assert engine.mode == "lexical" and engine.retriever.mode == "lexical" and engine.retriever.dense is None
        assert engine.retriever.lexical is engine.lexical and engine.retriever.pages is not None
    with pytest.raises(Exception) as bad:
        Engine(store_path, mode="fuzzy")
    assert getattr(bad.value, "code", "") == "INVALID_REQUEST"


@needs_model
def test_a_long_text_costs_the_embedder_a_bounded_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 14: the tokenizer read whole texts (a 52 MB post took gigabytes), and a pass of
    32 texts of 256 tokens held some 600 MB of attention tensors. Now at most 32,768
    characters of a text are tokenized and a pass holds at most 2 × 256² attention cells;
    the vectors are the same."""
    model = embedder_mod.MiniLMEmbedder(threads=1)
    tokenized: list[int] = []
    passes: list[tuple[int, int]] = []
    encode, forward = model._tokenizer.encode_batch, model._forward

    def spy_encode(texts):  # noqa: ANN001, ANN202
        tokenized.extend(len(t) for t in texts)
        return encode(texts)

    def spy_forward(encodings):  # noqa: ANN001, ANN202
        passes.append((len(encodings), max(len(e.ids) for e in encodings)))
        return forward(encodings)

    monkeypatch.setattr(model._tokenizer, "encode_batch", spy_encode, raising=False)
    monkeypatch.setattr(model, "_forward", spy_forward)
    long_texts = ["The board approved the merger after a long debate about prices. " * 40] * 5
    short_texts = [f"Note {i} on pumps." for i in range(40)]
    huge = "Revenue grew. " * 1_000_000  # 14 MB
    vectors = model.embed([huge, *long_texts, *short_texts])
    assert tokenized and max(tokenized) == embedder_mod.MAX_CHARS
    assert all(n * width * width <= embedder_mod.MAX_ATTENTION_CELLS for n, width in passes), passes
    assert sum(n for n, _ in passes) == 46 and max(n for n, _ in passes) == 32  # short texts still share passes
    alone = model.embed([long_texts[0]])
    assert np.allclose(vectors[1], alone[0], atol=1e-5) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


def test_a_question_embedded_ahead_is_embedded_once_and_waited_for() -> None:
    class Held(_CountingEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.go = threading.Event()

        def embed(self, texts):  # noqa: ANN001, ANN201
            self.go.wait(10)
            return super().embed(texts)

    embedder = Held()
    dense = DenseRetriever(None, "ws", embedder)  # type: ignore[arg-type] - no store is read here
    dense.prefetch("What was the capex?")
    dense.prefetch("What was the capex?")  # already ahead: not embedded twice
    embedder.go.set()
    vector = dense._query_vector("What was the capex?")  # waits for the embedding ahead
    assert embedder.texts == ["What was the capex?"] and vector.shape == (3,)
    assert dense._query_vector("What was the capex?") is vector  # kept as the last question
    dense.prefetch("Another question?")
    assert dense._query_vector("A third one?").shape == (3,)  # not the one ahead: embedded directly
    assert "A third one?" in embedder.texts
