"""The blob-store interface (citewell.blobs): one contract, tested on the local folder and
on an S3-compatible bucket (a moto server the session starts on 127.0.0.1), then the
engine, the uploads and the page images of the HTTP API over a bucket."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import boto3  # test extras (pyproject.toml), like moto: missing, the module fails rather than skips
import moto.server as moto_server
import pytest
from fastapi.testclient import TestClient

from citewell import Engine
from citewell.blobs import BlobNotFound, LocalBlobs, blob_key, open_blobs
from citewell.blobs import s3 as s3mod
from citewell.errors import NotFoundError, StoreError
from citewell.store.sqlite import SQLiteStore
from citewell.web.app import create_app
from citewell.web.viewer_render import cache_path

from .conftest import until
from .test_api_routes import pdf_bytes, wait_done

NOTE = b"Clinic visits last thirty minutes on average.\nThe clinic opens at eight.\n"
SHA = hashlib.sha256(NOTE).hexdigest()
KEY = blob_key(SHA, ".txt")
CREDENTIALS = {"aws_access_key_id": "citewell-test", "aws_secret_access_key": "citewell-test-secret",
               "region_name": "us-east-1"}


@pytest.fixture(scope="session")
def s3_endpoint():
    """A moto S3 server on 127.0.0.1 (never beyond loopback), for the whole session."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    assert host == "127.0.0.1"
    yield f"http://{host}:{port}"
    server.stop()


def s3_client(endpoint: str):
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint, config=Config(s3={"addressing_style": "path"}), **CREDENTIALS)


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    """A fresh empty bucket's name."""
    name = f"cw-{uuid.uuid4().hex[:12]}"
    s3_client(s3_endpoint).create_bucket(Bucket=name)
    return name


def s3_blobs(endpoint: str, bucket: str, cache: Path, prefix: str = "citewell") -> s3mod.S3Blobs:
    return s3mod.S3Blobs(f"s3://{bucket}/{prefix}", client=s3_client(endpoint), cache_dir=cache)


def objects(endpoint: str, bucket: str) -> list[str]:
    listed = s3_client(endpoint).list_objects_v2(Bucket=bucket)
    return sorted(o["Key"] for o in listed.get("Contents", []))


@pytest.fixture(params=["folder", "bucket"])
def blobs(request, tmp_path: Path):
    if request.param == "folder":
        return LocalBlobs(tmp_path / "citewell.blobs")
    endpoint = request.getfixturevalue("s3_endpoint")
    return s3_blobs(endpoint, request.getfixturevalue("bucket"), tmp_path / "cache")


# -- the contract, on both ---------------------------------------------------------------

def test_put_read_and_delete(blobs, tmp_path: Path) -> None:
    assert not blobs.exists(KEY)
    blobs.put(KEY, NOTE)
    assert blobs.exists(KEY)
    with blobs.open(KEY) as fh:
        assert fh.read() == NOTE
    assert blobs.local_path(KEY).read_bytes() == NOTE
    source = tmp_path / "other.bin"
    source.write_bytes(b"x" * (3 << 20))  # a file is read in pieces
    blobs.put("ab/other.bin", source)
    assert source.is_file() and blobs.local_path("ab/other.bin").read_bytes() == b"x" * (3 << 20)
    blobs.delete(KEY)
    assert not blobs.exists(KEY)
    with pytest.raises(BlobNotFound):
        blobs.local_path(KEY)
    with pytest.raises(BlobNotFound) as missing:
        blobs.open(KEY)
    assert missing.value.code == "NOT_FOUND"
    blobs.delete(KEY)  # absent: no error


def test_put_new_keeps_the_first_bytes(blobs) -> None:
    assert blobs.put_new(KEY, NOTE) is True
    assert blobs.put_new(KEY, b"something else") is False
    assert blobs.local_path(KEY).read_bytes() == NOTE


def test_put_replaces_and_a_replaced_object_is_read_anew(blobs) -> None:
    key = ".incoming/one"
    blobs.put(key, b"first")
    assert blobs.local_path(key).read_bytes() == b"first"
    blobs.put(key, b"second")
    assert blobs.local_path(key).read_bytes() == b"second"


def test_spool_is_moved_into_place(blobs) -> None:
    spool = blobs.spool()
    assert spool.is_file() and spool.stat().st_size == 0
    spool.write_bytes(NOTE)
    blobs.put(".incoming/upload", spool, move=True)
    assert not spool.exists()
    assert blobs.local_path(".incoming/upload").read_bytes() == NOTE


@pytest.mark.parametrize("key", ["../x", "/etc/passwd", "a//b", "a/./b", "a/../b", "", "a\\b"])
def test_keys_never_leave_the_store(blobs, key: str) -> None:
    with pytest.raises(StoreError):
        blobs.put(key, b"x")
    with pytest.raises(StoreError):
        blobs.exists(key)


def test_derived_files_are_per_original(blobs) -> None:
    other = hashlib.sha256(b"other").hexdigest()
    page = blobs.derived(SHA, "p1-s1.5.png")
    assert page == blobs.cache_dir / ".pages" / SHA[:2] / f"{SHA}-p1-s1.5.png"
    for path in (page, blobs.derived(SHA, "p2-s1.5.png"), blobs.derived(other, "p1-s1.5.png")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"png")
    blobs.drop_derived(SHA)
    assert not page.exists() and not blobs.derived(SHA, "p2-s1.5.png").exists()
    assert blobs.derived(other, "p1-s1.5.png").read_bytes() == b"png"
    with pytest.raises(StoreError):
        blobs.derived("../../etc", "x")


def test_lock_excludes_other_threads(blobs) -> None:
    events: list[str] = []
    held = threading.Event()

    def other() -> None:
        held.wait(10)
        with blobs.lock(KEY):
            events.append("other")

    thread = threading.Thread(target=other)
    thread.start()
    with blobs.lock(KEY):
        held.set()
        time.sleep(0.4)  # the other thread is waiting meanwhile
        events.append("first")
    thread.join(20)
    assert events == ["first", "other"]
    with blobs.lock(KEY):  # released: can be had again at once
        pass


# -- the folder ----------------------------------------------------------------------------

def test_folder_layout_is_the_one_citewell_always_used(tmp_path: Path) -> None:
    root = tmp_path / "citewell.blobs"
    blobs = LocalBlobs(root)
    blobs.put(KEY, NOTE)
    assert (root / SHA[:2] / f"{SHA}.txt").read_bytes() == NOTE
    assert blobs.local_path(KEY) == root / SHA[:2] / f"{SHA}.txt"
    assert blobs.cache_dir == root and blobs.local_files() == (root, tmp_path / "citewell.blobs.lock")
    with blobs.lock(KEY):
        assert (tmp_path / "citewell.blobs.lock").is_file()
    assert blobs.spool().parent == root / ".incoming"


def test_open_blobs_by_location(tmp_path: Path, s3_endpoint: str, bucket: str, monkeypatch) -> None:
    folder = open_blobs(tmp_path / "b")
    assert isinstance(folder, LocalBlobs) and folder.location == str(tmp_path / "b")
    with pytest.raises(StoreError, match="folder path or s3://"):
        open_blobs("https://example.invalid/bucket")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS["aws_secret_access_key"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("CITEWELL_BLOB_CACHE", str(tmp_path / "cache"))
    blobs = open_blobs(f"s3://{bucket}/team/a/")
    assert isinstance(blobs, s3mod.S3Blobs)
    assert blobs.location == f"s3://{bucket}/team/a" and blobs.cache_dir == tmp_path / "cache"
    blobs.put(KEY, NOTE)
    assert objects(s3_endpoint, bucket) == [f"team/a/{KEY}"]
    with pytest.raises(StoreError, match="does not exist"):
        open_blobs("s3://no-such-bucket-here")
    for bad in ("s3://", "s3://Ab", "s3://bucket/../x"):
        with pytest.raises(StoreError):
            open_blobs(bad)


# -- the bucket ----------------------------------------------------------------------------

def test_bucket_objects_live_under_the_prefix(s3_endpoint: str, bucket: str, tmp_path: Path) -> None:
    blobs = s3_blobs(s3_endpoint, bucket, tmp_path / "cache", prefix="p/q")
    blobs.put(KEY, NOTE)
    with blobs.lock(KEY):
        assert len([o for o in objects(s3_endpoint, bucket) if o.startswith("p/q/.locks/")]) == 1
    assert objects(s3_endpoint, bucket) == [f"p/q/{KEY}"]  # the lock object is gone again
    # another machine (its own cache) reads the same object; a deletion is seen by both
    elsewhere = s3_blobs(s3_endpoint, bucket, tmp_path / "cache2", prefix="p/q")
    assert elsewhere.local_path(KEY).read_bytes() == NOTE
    assert elsewhere.local_path(KEY).parent.is_relative_to(tmp_path / "cache2")
    blobs.delete(KEY)
    assert not elsewhere.exists(KEY) and objects(s3_endpoint, bucket) == []


def test_a_stale_lock_is_broken_and_a_held_one_times_out(s3_endpoint: str, bucket: str, tmp_path: Path,
                                                        monkeypatch) -> None:
    blobs = s3_blobs(s3_endpoint, bucket, tmp_path / "cache")
    lock_object = f"citewell/.locks/{hashlib.sha256(KEY.encode()).hexdigest()}"
    s3_client(s3_endpoint).put_object(Bucket=bucket, Key=lock_object, Body=b"a process that died")
    monkeypatch.setattr(s3mod, "LOCK_WAIT_S", 1.0)
    with pytest.raises(StoreError, match="stayed held"):
        with blobs.lock(KEY):
            pass
    monkeypatch.setattr(s3mod, "LOCK_TTL_S", 1.0)
    monkeypatch.setattr(s3mod, "LOCK_WAIT_S", 30.0)
    time.sleep(2.1)  # older than the TTL by the bucket's clock
    with blobs.lock(KEY):
        pass
    assert objects(s3_endpoint, bucket) == []


# -- the engine and the API over a bucket ------------------------------------------------

def test_engine_keeps_originals_and_uploads_in_the_bucket(s3_endpoint: str, bucket: str, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "clinic.txt").write_bytes(NOTE)
    store = SQLiteStore(tmp_path / "citewell.sqlite", blobs=s3_blobs(s3_endpoint, bucket, tmp_path / "cache"))
    with Engine(store, workspace="a") as a:
        report = a.ingest([folder])
        assert [o.action for o in report.outcomes] == ["ingested"]
        resource = a.resources()[0]
        assert resource.blob_key == KEY and objects(s3_endpoint, bucket) == [f"citewell/{KEY}"]
        assert not (tmp_path / "citewell.blobs").exists()  # nothing beside the database
        # an upload is staged in the bucket, so a worker on another machine can extract it
        vtt = b"WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Dana>Pumps run at forty bar.\n"
        pending = a.upload("pumps.vtt", vtt)
        staged = [o for o in objects(s3_endpoint, bucket) if "/.incoming/" in o]
        assert staged == [f"citewell/.incoming/{pending.id}.{pending.created_at.strftime('%Y%m%dT%H%M%S%f')}"]
    other_machine = SQLiteStore(tmp_path / "citewell.sqlite",
                                blobs=s3_blobs(s3_endpoint, bucket, tmp_path / "cache-worker"))
    with Engine(other_machine, workspace="a") as worker:
        ready = worker.process(pending.id)
        assert ready is not None and ready.status == "ready" and ready.kind == "transcript"
        vtt_key = blob_key(hashlib.sha256(vtt).hexdigest(), ".vtt")
        assert objects(s3_endpoint, bucket) == sorted([f"citewell/{KEY}", f"citewell/{vtt_key}"])
        path, media_type, name = worker.resource_content(ready.id)
        assert path.read_bytes() == vtt and name == "pumps.vtt" and media_type == "text/vtt"
        assert path.is_relative_to(tmp_path / "cache-worker")
        # the same bytes in another workspace share the object; deleting one keeps it
        with Engine(other_machine, workspace="b") as b:
            shared = b.upload("copy.txt", NOTE)
            assert b.process(shared.id).status == "ready"
            worker.delete_resource(resource.id)
            assert f"citewell/{KEY}" in objects(s3_endpoint, bucket)
            b.delete_resource(shared.id)
            assert f"citewell/{KEY}" not in objects(s3_endpoint, bucket)
            with pytest.raises(NotFoundError):
                b.stored_resource(shared.id)
        worker.delete_resource(ready.id)
    assert objects(s3_endpoint, bucket) == []
    assert not list((tmp_path / "cache-worker" / "objects").rglob("*.vtt"))  # this machine's copy went too


def test_a_deletion_never_removes_the_object_of_a_row_being_committed(blobs, tmp_path: Path, monkeypatch) -> None:
    """Blobs are shared by content across workspaces: deleting the last row of some bytes
    checks that no row refers to the object, then removes it, while another workspace may
    be committing a new row for the same bytes (whose object it found stored). The commit
    here is held up after the object was found; the deletion must wait for it (the key's
    lock) instead of removing the object the new row is about to refer to."""
    store = SQLiteStore(tmp_path / "citewell.sqlite", blobs=blobs)
    with Engine(store, workspace="a") as a, Engine(store, workspace="b") as b:
        first = a.upload("n.txt", NOTE)
        assert a.process(first.id).status == "ready"
        second = b.upload("n.txt", NOTE)
        committing = threading.Event()
        commit = store.commit_resource

        def slow_commit(workspace_id: str, *args, **kwargs):
            if workspace_id == b.workspace_id:
                committing.set()
                time.sleep(0.5)
            return commit(workspace_id, *args, **kwargs)

        monkeypatch.setattr(store, "commit_resource", slow_commit)
        processed: list = []
        worker = threading.Thread(target=lambda: processed.append(b.process(second.id)))
        worker.start()
        assert committing.wait(30)
        a.delete_resource(first.id)
        worker.join(60)
        assert processed and processed[0].status == "ready"
        assert store.blobs.exists(KEY) and b.resource_content(second.id)[0].read_bytes() == NOTE


def test_api_uploads_downloads_and_page_images_over_a_bucket(s3_endpoint: str, bucket: str, tmp_path: Path) -> None:
    blobs = s3_blobs(s3_endpoint, bucket, tmp_path / "cache")
    store = SQLiteStore(tmp_path / "citewell.sqlite", blobs=blobs)
    engine = Engine(store, workspace="acme")
    key, _ = engine.create_key()
    data = pdf_bytes("Pumps run at forty bar in the north plant.")
    sha = hashlib.sha256(data).hexdigest()
    with TestClient(create_app(store)) as client:
        client.headers["X-API-KEY"] = key
        created = client.post("/v1/resources", files={"file": ("plant.pdf", data, "application/pdf")})
        assert created.status_code == 202, created.text
        rid = created.json()["data"]["resource"]["id"]
        resource = wait_done(client, rid)
        assert resource["status"] == "ready", resource
        # the staged upload is dropped right after the ready commit (a poll may fall between)
        stored = [f"citewell/{blob_key(sha, '.pdf')}"]
        assert until(lambda: objects(s3_endpoint, bucket) == stored), objects(s3_endpoint, bucket)
        download = client.get(f"/v1/resources/{rid}/content")
        assert download.status_code == 200 and download.content == data
        page = client.get(f"/v1/resources/{rid}/pages/1")
        assert page.status_code == 200 and page.content.startswith(b"\x89PNG")
        assert cache_path(blobs, sha, 1).read_bytes() == page.content  # rendered on this machine
        assert cache_path(blobs, sha, 1).is_relative_to(tmp_path / "cache")
        assert client.delete(f"/v1/resources/{rid}").status_code in (200, 204)
        assert objects(s3_endpoint, bucket) == [] and not cache_path(blobs, sha, 1).exists()
        gone = client.get(f"/v1/resources/{rid}/content")
        assert gone.status_code == 404
    engine.close()


# -- selecting the location: --blobs, CITEWELL_BLOBS, config key blobs ---------------------

def test_blob_location_flag_beats_environment_beats_config(tmp_path: Path, monkeypatch) -> None:
    from citewell.settings import blob_location, configured_blobs

    monkeypatch.delenv("CITEWELL_BLOBS", raising=False)
    config = tmp_path / "conf" / "citewell.toml"
    config.parent.mkdir()
    config.write_text('blobs = "originals"\n')
    assert blob_location(config=config) == str(tmp_path / "conf" / "originals")  # beside the config file
    config.write_text('blobs = "s3://team-bucket/citewell"\n')
    assert blob_location(config=config) == "s3://team-bucket/citewell"
    monkeypatch.setenv("CITEWELL_BLOBS", "s3://env-bucket/x")
    assert blob_location(config=config) == "s3://env-bucket/x"
    assert blob_location(tmp_path / "flag", config=config) == str(tmp_path / "flag")
    monkeypatch.setenv("CITEWELL_CONFIG", str(config))
    monkeypatch.delenv("CITEWELL_BLOBS")
    assert configured_blobs() == "s3://team-bucket/citewell"
    config.write_text('store = "s.sqlite"\n')
    assert configured_blobs() is None  # each store's own folder


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "citewell", *args], capture_output=True, text=True, timeout=300,
                          env=env)


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEWELL_BLOBS", "CITEWELL_CONFIG", "AWS_"))}
    (tmp_path / "empty.toml").write_text("")
    env["CITEWELL_CONFIG"] = str(tmp_path / "empty.toml")  # never the user's own config file
    return env


def test_cli_blobs_flag_and_config_key_choose_the_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "clinic.txt").write_bytes(NOTE)
    store = tmp_path / "store" / "citewell.sqlite"
    env = clean_env(tmp_path)
    done = run_cli("ingest", str(docs), "--store", str(store), "--blobs", str(tmp_path / "flagged"), env=env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "flagged" / KEY).read_bytes() == NOTE
    assert not (tmp_path / "store" / "citewell.blobs").exists()
    config = tmp_path / "conf" / "citewell.toml"
    config.parent.mkdir()
    config.write_text(f'store = "{store}"\nblobs = "kept"\n')
    (docs / "other.txt").write_bytes(b"The pumps run at forty bar.\n")
    done = run_cli("ingest", str(docs / "other.txt"), "--config", str(config), env=env)
    assert done.returncode == 0, done.stderr
    other = blob_key(hashlib.sha256(b"The pumps run at forty bar.\n").hexdigest(), ".txt")
    assert (tmp_path / "conf" / "kept" / other).is_file()


def test_cli_environment_chooses_a_bucket(tmp_path: Path, s3_endpoint: str, bucket: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "clinic.txt").write_bytes(NOTE)
    env = clean_env(tmp_path) | {
        "CITEWELL_BLOBS": f"s3://{bucket}/team", "CITEWELL_BLOB_CACHE": str(tmp_path / "cache"),
        "AWS_ENDPOINT_URL_S3": s3_endpoint, "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"], "AWS_DEFAULT_REGION": "us-east-1"}
    store = tmp_path / "citewell.sqlite"
    done = run_cli("ingest", str(docs), "--store", str(store), env=env)
    assert done.returncode == 0, done.stderr
    assert objects(s3_endpoint, bucket) == [f"team/{KEY}"]
    missing = run_cli("ingest", str(docs), "--store", str(store), "--blobs", "s3://no-such-bucket-here", env=env)
    assert missing.returncode == 1 and "STORE_ERROR" in missing.stderr and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
