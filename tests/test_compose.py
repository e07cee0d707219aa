"""compose.yaml (the multi-replica deployment of README "Run on PostgreSQL (several
replicas)") and its Dockerfile. There is no Docker engine here: the file is validated
against the Compose Specification's JSON schema (as vendored by check-jsonschema), and its
services are checked to run commands and options this citewell has."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import typer
import yaml

from citewell.blobs.s3 import parse_location
from citewell.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "compose.yaml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_file_matches_the_compose_specification() -> None:
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                           str(COMPOSE)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_refuses_a_broken_file(tmp_path: Path, compose: dict) -> None:
    broken = dict(compose, services={**compose["services"], "api-1": {**compose["services"]["api-1"],
                                                                      "restart": ["always"]}})
    path = tmp_path / "compose.yaml"
    path.write_text(yaml.safe_dump(broken))
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                           str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "restart" in done.stdout


def citewell_services(compose: dict) -> dict[str, dict]:
    return {name: s for name, s in compose["services"].items() if s.get("image") == "citewell:local"}


def test_services_of_the_deployment(compose: dict) -> None:
    services = compose["services"]
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    assert services["minio"]["image"].startswith("minio/minio")
    ours = citewell_services(compose)
    commands = {name: s["command"] for name, s in ours.items()}
    assert commands == {
        "migrate": ["citewell", "migrate"],
        "api-1": ["citewell", "serve", "--no-workers", "--host", "0.0.0.0", "--port", "8000"],
        "api-2": ["citewell", "serve", "--no-workers", "--host", "0.0.0.0", "--port", "8000"],
        "worker-1": ["citewell", "worker"],
        "worker-2": ["citewell", "worker"]}
    assert ours["migrate"]["restart"] == "no"
    assert ours["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"},
                                             "bucket": {"condition": "service_completed_successfully"}}
    for name in ("api-1", "api-2", "worker-1", "worker-2"):
        assert ours[name]["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
        assert ours[name]["build"] == "."
    # the load balancer spreads over both API replicas, streaming unbuffered (SSE)
    lb = services["lb"]
    nginx = compose["configs"][lb["configs"][0]["source"]]["content"]
    assert re.findall(r"server (api-\d):8000;", nginx) == ["api-1", "api-2"]
    assert "proxy_buffering off;" in nginx
    assert lb["ports"] == ["127.0.0.1:8000:80"]


def test_every_citewell_service_uses_the_database_and_the_bucket(compose: dict) -> None:
    services = compose["services"]
    postgres = services["postgres"]["environment"]
    bucket_command = " ".join(services["bucket"]["command"])
    for name, service in citewell_services(compose).items():
        env = service["environment"]
        store = re.fullmatch(r"postgresql://(\w+):\$\{POSTGRES_PASSWORD:-(\w+)\}@postgres:5432/(\w+)",
                             env["CITEWELL_STORE"])
        assert store is not None, name
        assert (store[1], store[2], store[3]) == (postgres["POSTGRES_USER"], "citewell", postgres["POSTGRES_DB"])
        assert postgres["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD:-citewell}"
        bucket, prefix = parse_location(env["CITEWELL_BLOBS"])
        assert f"mc mb --ignore-existing minio/{bucket}" in bucket_command and prefix
        assert env["AWS_ENDPOINT_URL_S3"] == "http://minio:9000"
        assert env["AWS_ACCESS_KEY_ID"] == services["minio"]["environment"]["MINIO_ROOT_USER"]
        assert env["AWS_SECRET_ACCESS_KEY"] == services["minio"]["environment"]["MINIO_ROOT_PASSWORD"]


def test_commands_and_options_exist_in_this_citewell(compose: dict) -> None:
    group = typer.main.get_command(app)
    for name, service in citewell_services(compose).items():
        argv = service["command"]
        assert argv[0] == "citewell", name
        command = group.commands.get(argv[1])
        assert command is not None, f"{name}: citewell has no command {argv[1]}"
        options = {opt for p in command.params for opt in getattr(p, "opts", ())}
        given = [a for a in argv[2:] if a.startswith("--")]
        assert set(given) <= options, f"{name}: {sorted(set(given) - options)} not options of citewell {argv[1]}"


def test_the_image_installs_the_extras_it_needs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    install = re.search(r'pip install --no-cache-dir "\.\[([a-z0-9,]+)\]"', dockerfile)
    assert install is not None and install[1].split(",") == ["postgresql", "s3"]
    assert {"postgresql", "s3"} <= set(extras) and any(d.startswith("boto3") for d in extras["s3"])
    copied = re.findall(r"^COPY (.+) \S+$", dockerfile, flags=re.M)
    assert copied == ["pyproject.toml README.md", "src"]  # what pip install . reads


OFFLINE = ROOT / "deploy" / "offline" / "compose.offline.yaml"


def test_offline_override_matches_the_compose_specification() -> None:
    """deploy/offline's override (every image built from Debian's packages and PyPI) is a
    valid Compose file on its own, as Compose reads each -f file."""
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                           str(OFFLINE)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_offline_override_builds_every_image_and_changes_nothing_else(compose: dict) -> None:
    """Each service of compose.yaml that pulls an image gets one built from a folder of
    deploy/offline (whose Dockerfile starts from the local base image); citewell's services
    build the repository's Dockerfile on that base; no service is added and the commands,
    dependencies and environment of the database, replicas and workers stay compose.yaml's."""
    offline = yaml.safe_load(OFFLINE.read_text())["services"]
    services = compose["services"]
    assert set(offline) == set(services)
    pulled = {name for name, s in services.items() if "build" not in s}
    assert pulled == {"postgres", "minio", "bucket", "lb"}
    for name in pulled:
        folder = ROOT / offline[name]["build"]
        assert offline[name]["pull_policy"] == "build" and offline[name]["image"].startswith("local/"), name
        assert re.search(r"^FROM local/bookworm$", (folder / "Dockerfile").read_text(), flags=re.M), name
    for name in citewell_services(compose):
        assert offline[name] == {"build": {"context": ".", "args": {"BASE": "local/bookworm"}},
                                 "pull_policy": "build"}, name
    assert re.search(r"^ARG BASE=python:3\.11-slim\nFROM \$\{BASE\}$", (ROOT / "Dockerfile").read_text(), flags=re.M)
    for name, service in offline.items():
        assert not {"environment", "depends_on", "ports", "volumes"} & set(service) or name == "bucket", name
    # pg_isready (the health check compose.yaml's migrate waits for) finds the server's socket
    postgres = (ROOT / "deploy" / "offline" / "postgres" / "Dockerfile").read_text()
    entry = (ROOT / "deploy" / "offline" / "postgres" / "entrypoint.sh").read_text()
    assert "PGHOST=/run/postgresql" in postgres and "-k /run/postgresql" in entry
    assert 'CREATE EXTENSION IF NOT EXISTS vector' in entry
    assert services["postgres"]["healthcheck"]["test"][1].startswith("pg_isready")
