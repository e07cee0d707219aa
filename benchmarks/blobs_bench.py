"""What keeping originals in a bucket costs against the local folder (issue 18 part 2).

Ingests the same files into a fresh SQLite store twice, once with the blob folder beside
it and once with an S3-compatible bucket (a moto server this script starts on 127.0.0.1:
loopback only, so the figures are the client's and the protocol's overhead, not a real
network's), then reads every original back as a file (``Engine.resource_content``, what
downloads and the viewer do: from the bucket, the first read of a machine downloads into
its cache, the next reads use the copy) and deletes every resource.

    python benchmarks/blobs_bench.py --corpus ../shared/corpus/pdf [--limit 26]

Needs ``citewell[s3]`` and ``moto[server]`` (the test extra). Prints one row per blob store.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import boto3
from botocore.config import Config
from moto.server import ThreadedMotoServer

from citewell import Engine
from citewell.blobs import BlobStore, LocalBlobs
from citewell.blobs.s3 import S3Blobs
from citewell.store.sqlite import SQLiteStore


def run(blobs: BlobStore, files: list[Path], work: Path) -> dict[str, float]:
    """Seconds to ingest ``files``, ms per first and second read of an original, and
    seconds to delete them all, on a fresh store using ``blobs``."""
    store = SQLiteStore(work / "citewell.sqlite", blobs=blobs)
    with Engine(store) as engine:
        start = time.perf_counter()
        report = engine.ingest(files)
        ingest_s = time.perf_counter() - start
        assert all(o.action == "ingested" for o in report.outcomes), report.outcomes
        resources = engine.resources()
        first, second = [], []
        for r in resources:
            for timings in (first, second):
                t = time.perf_counter()
                path, _, _ = engine.resource_content(r.id)
                timings.append((time.perf_counter() - t) * 1000)
                assert path.stat().st_size == r.size_bytes
        start = time.perf_counter()
        for r in resources:
            engine.delete_resource(r.id)
        delete_s = time.perf_counter() - start
    return {"ingest_s": ingest_s, "first_read_ms": statistics.median(first),
            "second_read_ms": statistics.median(second), "delete_s": delete_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="a folder of files to ingest")
    parser.add_argument("--limit", type=int, default=26, help="at most this many files (sorted by name)")
    args = parser.parse_args()
    files = sorted(p for p in args.corpus.iterdir() if p.is_file())[:args.limit]
    size_mb = sum(p.stat().st_size for p in files) / 1e6
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        client = boto3.client("s3", endpoint_url=f"http://{host}:{port}", config=Config(s3={"addressing_style": "path"}),
                              aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1")
        client.create_bucket(Bucket="citewell-bench")
        print(f"{len(files)} files, {size_mb:.1f} MB")
        print("| blob store | ingest s | first read ms (median) | next read ms (median) | delete all s |")
        print("|---|---|---|---|---|")
        for name in ("folder", "bucket (moto, loopback)"):
            work = Path(tempfile.mkdtemp(prefix="citewell-blobs-bench-"))
            try:
                blobs: BlobStore = (LocalBlobs(work / "citewell.blobs") if name == "folder" else
                                    S3Blobs("s3://citewell-bench/run", client=client, cache_dir=work / "cache"))
                row = run(blobs, files, work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            print(f"| {name} | {row['ingest_s']:.2f} | {row['first_read_ms']:.2f} | {row['second_read_ms']:.3f} | "
                  f"{row['delete_s']:.2f} |")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
