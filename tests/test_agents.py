"""Tracking agents, alerts and patterns (issue 17) through the HTTP API and the library.

A posts folder with two datasets grows between runs (new posts appended, the folder
synced again): the first run alerts with the right post citations and offsets, a second
run with nothing new writes nothing, the grown files bring only their new posts and a
pattern spanning both datasets that expands to its members, paused agents never run, a run
claims its agent's lease in the store (once across runners), and no route shows one
workspace's agents, alerts or patterns to another.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from citewell import Engine
from citewell.agents import AgentRunner
from citewell.web import create_app

from .agent_posts import write_posts


def _key(store: Path, workspace: str) -> str:
    with Engine(store, workspace=workspace) as engine:
        return engine.create_key()[0]


def _slice_rule(alert: dict[str, Any]) -> list[dict[str, Any]]:
    """The post references of an alert, each checked against the slice rule (first [N]
    occurrence, every occurrence listed); returns them."""
    posts = [r for r in alert["references"] if r["type"] == "post"]
    text = alert["text"]
    for ref in posts:
        marker = f"[{ref['citation']}]"
        assert text[ref["start_index"]:ref["end_index"]] == marker
        assert ref["start_index"] == text.index(marker)
        assert [o["start_index"] for o in ref["occurrences"]] == [i for i in range(len(text))
                                                                   if text.startswith(marker, i)]
    assert [r["citation"] for r in posts] == list(range(1, len(posts) + 1))
    return posts


@pytest.fixture
def setup(tmp_path: Path, store_location: str | Path):
    store = store_location
    posts = write_posts(tmp_path / "posts", 1)
    with Engine(store, workspace="acme") as engine:
        engine.sync(posts)
    key = _key(store, "acme")
    with TestClient(create_app(store, agent_tick_s=0)) as client:
        client.headers["X-API-KEY"] = key
        yield client, store, posts


def test_alerts_as_the_posts_file_grows(setup: Any) -> None:
    client, store, posts = setup
    made = client.post("/v1/tracking_agents", json={"query": "Activision puts", "interval_s": 600})
    assert made.status_code == 201, made.text
    agent = made.json()
    assert (agent["name"], agent["state"], agent["runs"], agent["alerts"]) == ("Activision puts", "active", 0, 0)
    assert made.headers["Location"] == f"/v1/tracking_agents/{agent['id']}"

    first = client.post(f"/v1/tracking_agents/{agent['id']}/run").json()
    assert (first["ran"], first["new_mentions"], first["matched"], first["error"]) == (True, 4, 2, None)
    alert = first["alert"]
    assert alert["role"] == "assistant" and alert["status"] == "settled" and alert["tracking_agent_id"] == agent["id"]
    refs = _slice_rule(alert)
    assert [(r["source"], r["id"]) for r in refs] == [("reddit", "t3_a1"), ("reddit", "t3_a3")]
    assert refs[0]["text"] == "Activision puts are printing after the Microsoft deal rumours."
    assert "Tesla" not in alert["text"] and "$BTC.X" not in alert["text"]
    # the offsets in UTF-16 too (the text has “ ” quotes: one code unit each, so the same here)
    utf16 = client.get(f"/v1/tracking_agents/{agent['id']}/messages", params={"offsets": "utf16"}).json()
    assert utf16["messages"][0]["references"][0]["offset_unit"] == "utf16"

    second = client.post(f"/v1/tracking_agents/{agent['id']}/run").json()
    assert (second["ran"], second["new_mentions"], second["matched"], second["alert"]) == (True, 0, 0, None)
    page = client.get(f"/v1/tracking_agents/{agent['id']}/messages").json()
    assert [m["id"] for m in page["messages"]] == [alert["id"]] and page["next_before"] is None

    write_posts(posts, 2)  # both files grow: new versions of both datasets
    with Engine(store, workspace="acme") as engine:
        engine.sync(posts)
    third = client.post(f"/v1/tracking_agents/{agent['id']}/run").json()
    assert (third["new_mentions"], third["matched"]) == (3, 2)  # only the new posts, never t3_a1/t3_a3 again
    grown = third["alert"]
    refs = _slice_rule(grown)
    assert [(r["source"], r["id"]) for r in refs] == [("reddit", "t3_a4"), ("stocktwits", "901")]
    patterns = [r for r in grown["references"] if r["type"] == "pattern"]
    assert len(patterns) == 1 and set(patterns[0]) == {"type", "id"}
    pattern = client.get(f"/v1/patterns/{patterns[0]['id']}").json()
    assert pattern["size"] == 2 and len(pattern["datasets"]) == 2
    assert pattern["sources"] == ["reddit", "stocktwits"]
    assert (pattern["first_seen"], pattern["last_seen"]) == ("2022-01-19T09:00:00Z", "2022-01-19T10:00:00Z")
    assert pattern["trend"]["direction"] in ("rising", "falling", "steady")
    assert sum(b["count"] for b in pattern["trend"]["buckets"]) == 2
    assert "activision" in pattern["label"].lower()
    assert pattern["label"] in grown["text"]  # the entity link became its plain label
    members = client.post("/v1/mentions", json={"post_refs": [
        {"source": m["source"], "id": m["id"], "dataset_id": m["dataset_id"]} for m in pattern["members"]]}).json()
    assert [m["text"] for m in members["mentions"]] == [
        "Microsoft buying Activision wiped out my Activision puts overnight.",
        "$ATVI Activision puts got crushed by the Microsoft deal."]
    assert {m["dataset_id"] for m in members["mentions"]} == set(pattern["datasets"])
    listed = client.get("/v1/patterns").json()
    assert patterns[0]["id"] in [p["id"] for p in listed["patterns"]] and listed["total"] >= 1
    assert "members" not in listed["patterns"][0]

    newest = client.get(f"/v1/tracking_agents/{agent['id']}/messages", params={"limit": 1}).json()
    assert [m["id"] for m in newest["messages"]] == [grown["id"]] and newest["next_before"] == grown["id"]
    older = client.get(f"/v1/tracking_agents/{agent['id']}/messages",
                       params={"limit": 1, "before": newest["next_before"]}).json()
    assert [m["id"] for m in older["messages"]] == [alert["id"]] and older["next_before"] is None
    one = client.get(f"/v1/tracking_agents/{agent['id']}/messages/{grown['id']}").json()
    assert one["text"] == grown["text"] and one["references"] == grown["references"]
    shown = client.get(f"/v1/tracking_agents/{agent['id']}").json()
    assert (shown["runs"], shown["alerts"], shown["last_error"]) == (3, 2, None)


def test_a_post_copied_into_another_file_never_alerts_twice(setup: Any) -> None:
    client, store, posts = setup
    agent = client.post("/v1/tracking_agents", json={"query": "Activision puts"}).json()
    assert client.post(f"/v1/tracking_agents/{agent['id']}/run").json()["matched"] == 2
    (posts / "copy.jsonl").write_text((posts / "reddit.jsonl").read_text().splitlines()[0] + "\n")
    with Engine(store, workspace="acme") as engine:
        engine.sync(posts)
    again = client.post(f"/v1/tracking_agents/{agent['id']}/run").json()
    assert (again["new_mentions"], again["matched"], again["alert"]) == (0, 0, None)


def test_filters_keywords_and_authors(setup: Any) -> None:
    client, store, posts = setup
    by_author = client.post("/v1/tracking_agents", json={"query": "Activision puts", "authors": ["Carol"]}).json()
    alert = client.post(f"/v1/tracking_agents/{by_author['id']}/run").json()["alert"]
    assert [r["id"] for r in alert["references"] if r["type"] == "post"] == ["t3_a3"]
    by_source = client.post("/v1/tracking_agents", json={"query": "holding the line",
                                                         "filters": {"source": "stocktwits"},
                                                         "keywords": ["$btc.x"]}).json()
    alert = client.post(f"/v1/tracking_agents/{by_source['id']}/run").json()["alert"]
    assert [(r["source"], r["id"]) for r in alert["references"] if r["type"] == "post"] == [("stocktwits", "900")]
    none = client.post("/v1/tracking_agents", json={"query": "Activision puts",
                                                    "filters": ["created_at>=2022-02-01"]}).json()
    result = client.post(f"/v1/tracking_agents/{none['id']}/run").json()
    assert (result["new_mentions"], result["matched"], result["alert"]) == (4, 0, None)


def test_a_resource_id_filter_follows_its_file_as_it_grows(setup: Any) -> None:
    client, store, posts = setup
    with Engine(store, workspace="acme") as engine:
        (reddit,) = [r.id for r in engine.resources(statuses=["ready"]) if r.file_name == "reddit.jsonl"]
    agent = client.post("/v1/tracking_agents", json={"query": "Activision puts",
                                                     "filters": {"resource_id": reddit}}).json()
    assert agent["filters"] == {"resource_id": reddit}
    first = client.post(f"/v1/tracking_agents/{agent['id']}/run").json()
    assert [r["id"] for r in first["alert"]["references"] if r["type"] == "post"] == ["t3_a1", "t3_a3"]
    write_posts(posts, 2)  # reddit.jsonl grows: a new resource, the filtered one superseded
    with Engine(store, workspace="acme") as engine:
        engine.sync(posts)
        assert engine.store.resource(engine.workspace_id, reddit).status == "superseded"
    grown = client.post(f"/v1/tracking_agents/{agent['id']}/run").json()
    assert grown["matched"] == 1  # the appended reddit post; never the stocktwits one
    assert [r["id"] for r in grown["alert"]["references"] if r["type"] == "post"] == ["t3_a4"]
    # a change of keywords keeps the files followed
    client.patch(f"/v1/tracking_agents/{agent['id']}", json={"keywords": ["activision"]})
    (posts / "reddit.jsonl").write_text((posts / "reddit.jsonl").read_text() + json.dumps({
        "source": "reddit", "id": "t3_a9", "author": "erin", "created_at": "2022-01-20T09:00:00Z",
        "text": "Still holding Activision puts after the Microsoft news."}) + "\n")
    with Engine(store, workspace="acme") as engine:
        engine.sync(posts)
    third = client.post(f"/v1/tracking_agents/{agent['id']}/run").json()
    assert [r["id"] for r in third["alert"]["references"] if r["type"] == "post"] == ["t3_a9"]


def test_pause_resume_update_delete(setup: Any) -> None:
    client, store, _ = setup
    agent = client.post("/v1/tracking_agents", json={"query": "Activision puts", "state": "paused"}).json()
    refused = client.post(f"/v1/tracking_agents/{agent['id']}/run")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "AGENT_PAUSED")
    with Engine(store, workspace="acme") as engine:  # the scheduler skips it too, however overdue
        runner = AgentRunner(engine.store, lambda _: engine)
        assert runner.run_due(datetime.now(timezone.utc) + timedelta(days=1)) == []
    assert client.get(f"/v1/tracking_agents/{agent['id']}").json()["runs"] == 0
    changed = client.patch(f"/v1/tracking_agents/{agent['id']}", json={"state": "active", "interval_s": 60,
                                                                        "name": "ATVI"}).json()
    assert (changed["state"], changed["interval_s"], changed["name"], changed["query"]) == (
        "active", 60, "ATVI", "Activision puts")
    assert client.post(f"/v1/tracking_agents/{agent['id']}/run").json()["matched"] == 2
    assert client.patch(f"/v1/tracking_agents/{agent['id']}", json={"keywords": ["tesla"]}).json()["keywords"] == [
        "tesla"]
    assert [a["id"] for a in client.get("/v1/tracking_agents").json()["tracking_agents"]] == [agent["id"]]
    assert client.delete(f"/v1/tracking_agents/{agent['id']}").json() == {"id": agent["id"], "deleted": True}
    for method, path in (("GET", ""), ("GET", "/messages"), ("POST", "/run"), ("DELETE", "")):
        gone = client.request(method, f"/v1/tracking_agents/{agent['id']}{path}")
        assert (gone.status_code, gone.json()["error"]["code"]) == (404, "NOT_FOUND")


@pytest.mark.parametrize("body, code", [
    ({"query": "   "}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "interval_s": 0}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "state": "sleeping"}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "filters": {"colour": "red"}}, "INVALID_FILTER"),
    ({"query": "x", "name": "two\nlines"}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "keywords": [""]}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "interval_s": True}, "INVALID_REQUEST_BODY"),  # not one second
    ({"query": "x", "interval_s": "60"}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "interval_s": 60.5}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "keywords": ["k" * 201]}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "authors": ["a\nb"]}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "name": "evil\u202etxt.exe"}, "INVALID_REQUEST_BODY"),
    ({"query": "x\x00y"}, "INVALID_REQUEST_BODY"),
    ({"query": 5}, "INVALID_REQUEST_BODY"),
    ({"query": "x", "intervall_s": 5}, "INVALID_REQUEST_BODY"),
])
def test_bad_agents_are_refused(setup: Any, body: dict[str, Any], code: str) -> None:
    client, _, _ = setup
    answer = client.post("/v1/tracking_agents", json=body)
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, code)
    assert client.get("/v1/tracking_agents").json() == {"tracking_agents": []}


def test_a_bad_change_changes_nothing(setup: Any) -> None:
    client, _, _ = setup
    agent = client.post("/v1/tracking_agents", json={"query": "Activision puts", "interval_s": 60.0}).json()
    assert agent["interval_s"] == 60  # a JSON integer written 60.0
    for body, field in (({"intervall_s": 5}, "intervall_s"), ({"interval_s": True}, "interval_s"),
                        ({"keywords": ["k" * 201]}, "keywords"), ({"name": "a\u2066b"}, "name"),
                        ({"query": "q\x00"}, "query"), (None, "body")):
        answer = client.patch(f"/v1/tracking_agents/{agent['id']}", json=body)
        error = answer.json()["error"]
        assert (answer.status_code, error["code"]) == (400, "INVALID_REQUEST_BODY"), (body, answer.text)
        assert field in error["message"], (body, error)
    assert client.get(f"/v1/tracking_agents/{agent['id']}").json() == agent
    tab = client.patch(f"/v1/tracking_agents/{agent['id']}", json={"query": "Activision\tputs", "keywords": ["$ATVI"]})
    assert (tab.status_code, tab.json()["query"], tab.json()["keywords"]) == (200, "Activision\tputs", ["$ATVI"])
    assert client.patch(f"/v1/tracking_agents/{agent['id']}", json={}).json()["query"] == "Activision\tputs"


def test_workspace_isolation_on_every_new_route(setup: Any) -> None:
    client, store, _ = setup
    agent = client.post("/v1/tracking_agents", json={"query": "Activision puts"}).json()
    alert = client.post(f"/v1/tracking_agents/{agent['id']}/run").json()["alert"]
    with Engine(store, workspace="acme") as engine:
        (pattern,) = engine.store.tracking().patterns(engine.workspace_id, limit=5)  # t3_a1 and t3_a3
    other = {"X-API-KEY": _key(store, "other")}
    for method, path, body in [
            ("GET", f"/v1/tracking_agents/{agent['id']}", None),
            ("PATCH", f"/v1/tracking_agents/{agent['id']}", {"state": "paused"}),
            ("DELETE", f"/v1/tracking_agents/{agent['id']}", None),
            ("POST", f"/v1/tracking_agents/{agent['id']}/run", None),
            ("GET", f"/v1/tracking_agents/{agent['id']}/messages", None),
            ("GET", f"/v1/tracking_agents/{agent['id']}/messages/{alert['id']}", None),
            ("GET", f"/v1/patterns/{pattern.id}", None)]:
        answer = client.request(method, path, json=body, headers=other)
        assert (answer.status_code, answer.json()) == (404, {"error": {
            "code": "NOT_FOUND", "message": answer.json()["error"]["message"]}}), (method, path)
        unknown = client.request(method, path.replace(agent["id"], "nope").replace(pattern.id, "nope"), json=body)
        assert unknown.status_code == 404
    assert client.get("/v1/tracking_agents", headers=other).json() == {"tracking_agents": []}
    assert client.get("/v1/patterns", headers=other).json() == {"patterns": [], "total": 0}
    mine = client.get(f"/v1/tracking_agents/{agent['id']}").json()
    assert (mine["state"], mine["runs"], mine["alerts"]) == ("active", 1, 1)  # untouched by the other key
    assert client.get("/v1/tracking_agents").status_code == 200
    assert client.get("/v1/tracking_agents", headers={"X-API-KEY": "cw_nope"}).status_code == 401


def test_the_lease_runs_a_due_agent_once(tmp_path: Path, store_location: str | Path) -> None:
    store = store_location
    with Engine(store) as engine:
        engine.sync(write_posts(tmp_path / "posts", 1))
        agent = engine.store.tracking().create_agent(engine.workspace_id, name="a", query="Activision puts",
                                                     filters={}, interval_s=3600, state="active")
    engines = [Engine(store) for _ in range(4)]
    runners = [AgentRunner(e.store, lambda _, e=e: e, owner=f"runner-{i}") for i, e in enumerate(engines)]
    start = threading.Barrier(len(runners))
    results: list[Any] = []

    def tick(runner: AgentRunner) -> None:
        start.wait()
        results.extend(runner.run_due())

    threads = [threading.Thread(target=tick, args=(r,)) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [(r.ran, r.matched) for r in results] == [(True, 2)]
    tracking = engines[0].store.tracking()
    done = tracking.agent(engines[0].workspace_id, agent.id)
    assert (done.runs, done.alerts, done.lease_owner) == (1, 1, None)
    assert done.next_run_at == agent.next_run_at + timedelta(seconds=3600)  # the next tick, not now + 1 h
    assert runners[0].run_due() == []  # not due again before its next tick
    for e in engines:
        e.close()


def test_a_run_whose_lease_expired_writes_nothing(engine: Engine) -> None:
    tracking = engine.store.tracking()
    agent = tracking.create_agent(engine.workspace_id, name="a", query="q", filters={}, interval_s=60,
                                  state="active")
    now = datetime.now(timezone.utc)
    first = tracking.claim(engine.workspace_id, agent.id, owner="one", now=now, lease_s=0.0, due_only=True)
    assert first is not None
    assert tracking.claim(engine.workspace_id, agent.id, owner="two", now=now, lease_s=60, due_only=True) is None
    later = now + timedelta(seconds=1)  # the first lease has expired: another run takes over
    second = tracking.claim(engine.workspace_id, agent.id, owner="two", now=later, lease_s=60, due_only=True)
    assert second is not None
    assert tracking.finish_run(engine.workspace_id, agent.id, first, now=later, watermark=5, alert=None,
                               alerted=[], patterns=[]) is False
    assert tracking.agent(engine.workspace_id, agent.id).watermark == 0
    assert tracking.finish_run(engine.workspace_id, agent.id, second, now=later, watermark=5, alert=None,
                               alerted=[], patterns=[]) is True
    assert tracking.agent(engine.workspace_id, agent.id).watermark == 5


#: Posts whose quotes end without a sentence end: cut at QUOTE_CHARS, an emoji, a cashtag,
#: no punctuation; a negation; capitalised authors and dates the text never names.
LONG_POSTS = [
    {"source": "reddit", "id": "t3_l1", "author": "DeepValueBob", "created_at": "2022-01-18T10:00:00Z",
     "text": "Activision puts are the play here because the Microsoft deal " + "keeps dragging on and on " * 12},
    {"source": "reddit", "id": "t3_l2", "author": "Carol", "created_at": "2022-01-18T11:00:00Z",
     "text": "Loaded more Activision puts this morning 🚀"},
    {"source": "reddit", "id": "t3_l3", "author": None, "created_at": "2022-01-19T12:00:00Z",
     "text": "Activision puts printing again $ATVI"},
    {"source": "reddit", "id": "t3_l4", "author": "ELON", "created_at": "2021-12-30T12:00:00Z",
     "text": "Why would anyone hold Activision puts with 3 weeks left"},
    {"source": "reddit", "id": "t3_l5", "author": "dave", "created_at": "2022-01-20T12:00:00Z",
     "text": "Sold my Activision puts at 2.5x, the rest " + "is history and more words to cut here " * 8},
]


def test_every_template_alert_quote_is_supported_by_its_own_post(tmp_path: Path,
                                                                 store_location: str | Path) -> None:
    from citewell.agents import Agents
    from citewell.profiles.chats import render_message

    (tmp_path / "posts").mkdir()
    (tmp_path / "posts" / "long.jsonl").write_text("".join(json.dumps(p) + "\n" for p in LONG_POSTS))
    with Engine(store_location) as engine:
        engine.sync(tmp_path / "posts")
        agents = Agents(engine)
        alert = render_message(agents.run(agents.create(query="Activision puts").id).alert)
    refs = _slice_rule(alert)
    assert [r["id"] for r in refs] == ["t3_l4", "t3_l1", "t3_l2", "t3_l3", "t3_l5"]  # oldest first
    assert "(reddit by DeepValueBob on 2022-01-18; the post goes on)" in alert["text"]  # t3_l1 is cut
    assert "(reddit by Carol on 2022-01-18)\n\n> Activision puts printing again $ATVI [4]\n\n(reddit on 2022-01-19)" \
        in alert["text"]
    for ref in refs:
        (occurrence,) = ref["occurrences"]
        assert occurrence["support"]["verdict"] == "supported", (ref["id"], occurrence["support"])
