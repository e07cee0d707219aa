"""The tracking-agent scheduler inside real ``citewell serve`` processes (issue 17,
"Scheduling"): two servers on one store run a due agent once, and the schedule and the
alerts survive a restart."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import httpx

from citewell import Engine

from .agent_posts import write_posts
from .servers import free_port, running


def _serve(store: Path, tmp_path: Path, name: str, env: dict[str, str]):
    port = free_port()
    command = [sys.executable, "-m", "citewell", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--store", str(store)]
    return running(command, port, tmp_path / f"{name}.log", env)


def test_two_servers_on_one_store_run_a_due_agent_once(tmp_path: Path, store_location: str | Path) -> None:
    store = store_location
    with Engine(store, workspace="acme") as engine:
        engine.sync(write_posts(tmp_path / "posts", 1))
        key = engine.create_key()[0]
    env = {**os.environ, "CITEWELL_CONFIG": "", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1", "CITEWELL_AGENT_TICK_S": "0.2"}
    headers = {"X-API-KEY": key}
    with _serve(store, tmp_path, "a", env) as a, _serve(store, tmp_path, "b", env) as b:
        agent = httpx.post(f"{a}/v1/tracking_agents", headers=headers, timeout=30,
                           json={"query": "Activision puts", "interval_s": 3600}).json()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            shown = httpx.get(f"{b}/v1/tracking_agents/{agent['id']}", headers=headers, timeout=30).json()
            if shown["runs"]:
                break
            time.sleep(0.2)
        time.sleep(2.0)  # ten more ticks of each server: the agent is not due again for an hour
        shown = httpx.get(f"{a}/v1/tracking_agents/{agent['id']}", headers=headers, timeout=30).json()
        assert (shown["runs"], shown["alerts"], shown["last_error"]) == (1, 1, None)
        alerts = httpx.get(f"{b}/v1/tracking_agents/{agent['id']}/messages", headers=headers, timeout=30).json()
        assert [[r["id"] for r in m["references"] if r["type"] == "post"] for m in alerts["messages"]] == [
            ["t3_a1", "t3_a3"]]
        # the agent becomes due again (its interval shortened): the next tick of one server runs it once more
        httpx.patch(f"{a}/v1/tracking_agents/{agent['id']}", headers=headers, json={"interval_s": 1}, timeout=30)
    # both servers stopped; a restarted one picks the schedule up from the store
    write_posts(tmp_path / "posts", 2)
    with Engine(store, workspace="acme") as engine:
        engine.sync(tmp_path / "posts")
    with _serve(store, tmp_path, "c", env) as c:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            shown = httpx.get(f"{c}/v1/tracking_agents/{agent['id']}", headers=headers, timeout=30).json()
            if shown["alerts"] == 2:
                break
            time.sleep(0.2)
        assert shown["alerts"] == 2, shown
        newest = httpx.get(f"{c}/v1/tracking_agents/{agent['id']}/messages", headers=headers,
                           params={"limit": 1}, timeout=30).json()["messages"][0]
        assert [r["id"] for r in newest["references"] if r["type"] == "post"] == ["t3_a4", "901"]
        assert any(r["type"] == "pattern" for r in newest["references"])
