"""Tracking agents beyond the HTTP API (issue 17): the alert written by a model through the
answering pipeline (a fake OpenAI-compatible server on 127.0.0.1), the template when the
model fails, the ``citewell agents`` commands, and the ``citewell agents work`` worker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citewell import Engine
from citewell.agents import Agents
from citewell.settings import LLMSettings

from .agent_posts import write_posts
from .llm_server import LLMServer, Status, Stream


@pytest.fixture
def fake():
    with LLMServer() as server:
        yield server


def _llm_engine(tmp_path: Path, store: str | Path, fake: LLMServer) -> Engine:
    llm = LLMSettings(base_url=fake.base_url, model="fake-model", timeout=5.0, retries=0)
    engine = Engine(store, generator="llm", llm=llm, mode="lexical")
    engine.sync(write_posts(tmp_path / "posts", 1))
    return engine


def test_a_model_writes_the_alert_through_the_citation_contract(tmp_path: Path, store_location: str | Path,
                                                                fake: LLMServer) -> None:
    engine = _llm_engine(tmp_path, store_location, fake)
    fake.script(Stream(["Activision puts are printing after the Microsoft deal rumours [S1]. ",
                        "Other Activision puts expired worthless because of the Microsoft deal [S2]."]))
    agents = Agents(engine)
    result = agents.run(agents.create(query="Activision puts").id)
    alert = result.alert
    assert alert is not None and alert.model_extra["generation"]["generator"] == "llm"
    assert alert.text == ("Activision puts are printing after the Microsoft deal rumours [1]. "
                          "Other Activision puts expired worthless because of the Microsoft deal [2].")
    posts = [r for r in alert.references if r.type == "post"]
    assert [(r.source, r.id) for r in posts] == [("reddit", "t3_a1"), ("reddit", "t3_a3")]
    for ref in posts:
        assert alert.text[ref.start_index:ref.end_index] == f"[{ref.citation}]"
    prompt = fake.chats[0]["messages"][-1]["content"]
    assert "Activision puts are printing" in prompt and "Tesla" not in prompt  # only the matching posts
    engine.close()


def test_a_failing_model_leaves_the_template_alert_with_a_warning(tmp_path: Path, store_location: str | Path,
                                                                  fake: LLMServer) -> None:
    engine = _llm_engine(tmp_path, store_location, fake)
    fake.script(Status(500))
    agents = Agents(engine)
    alert = agents.run(agents.create(query="Activision puts").id).alert
    assert alert is not None and alert.text.startswith("2 new mentions match")
    assert [w.code for w in alert.warnings] == ["LLM_UNAVAILABLE"]
    assert [r.id for r in alert.references if r.type == "post"] == ["t3_a1", "t3_a3"]
    engine.close()


def _env(tmp_path: Path, store: str | Path) -> dict[str, str]:
    return {**os.environ, "CITEWELL_CONFIG": "", "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1", "CITEWELL_STORE": str(store)}


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "citewell", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_the_agents_commands(tmp_path: Path, store_location: str | Path) -> None:
    env = _env(tmp_path, store_location)
    assert _cli(env, "ingest", str(write_posts(tmp_path / "posts", 1))).returncode == 0
    made = _cli(env, "agents", "create", "Activision puts", "--every", "600", "--author", "carol", "--json")
    assert made.returncode == 0, made.stderr
    agent = json.loads(made.stdout)
    assert (agent["interval_s"], agent["authors"], agent["state"]) == (600, ["carol"], "active")
    ran = _cli(env, "agents", "run", agent["id"])
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[0] == "1 new mention matches \u201cActivision puts\u201d."
    assert ran.stdout.rstrip().endswith("[1] reddit/t3_a3")
    assert "4 new mention(s), 1 matched" in ran.stderr
    alerts = json.loads(_cli(env, "agents", "alerts", agent["id"], "--json").stdout)
    assert [[r["id"] for r in a["references"]] for a in alerts] == [["t3_a3"]]
    assert _cli(env, "agents", "pause", agent["id"]).returncode == 0
    paused = _cli(env, "agents", "run", agent["id"])
    assert paused.returncode == 1 and "AGENT_PAUSED" in paused.stderr
    listed = json.loads(_cli(env, "agents", "list", "--json").stdout)
    assert [(a["id"], a["state"], a["runs"], a["alerts"]) for a in listed] == [(agent["id"], "paused", 1, 1)]
    bad = _cli(env, "agents", "create", "x", "--filter", "colour=red")
    assert bad.returncode == 2 and "INVALID_FILTER" in bad.stderr
    assert _cli(env, "agents", "delete", agent["id"]).returncode == 0
    gone = _cli(env, "agents", "show", agent["id"])
    assert gone.returncode == 1 and "NOT_FOUND" in gone.stderr


def test_the_worker_runs_due_agents(tmp_path: Path, store_location: str | Path) -> None:
    env = _env(tmp_path, store_location)
    store = store_location
    with Engine(store) as engine:
        engine.sync(write_posts(tmp_path / "posts", 1))
        agent = Agents(engine).create(query="Activision puts", interval_s=3600)
    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen([sys.executable, "-m", "citewell", "agents", "work", "--tick", "0.2"],
                              stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        with Engine(store) as engine:
            while time.monotonic() < deadline and Agents(engine).get(agent.id).runs == 0:
                time.sleep(0.2)
            shown = Agents(engine).get(agent.id)
        assert (shown.runs, shown.alerts) == (1, 1), (tmp_path / "worker.log").read_text()
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            assert worker.wait(timeout=30) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
            log.close()
