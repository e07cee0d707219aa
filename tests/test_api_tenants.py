"""Tenants (issue 4, docs/architecture.md "Errors"): no request reads, lists, resolves or cites another
workspace's data, and a foreign id answers exactly like an unknown id.

Two workspaces hold the same files (overlapping content: same bytes, same questions);
each has a plain key, and a third workspace has a platform key. Every route is called
with workspace A's key on workspace B's ids and on unknown ids of the same shape.
"""

from __future__ import annotations

import json
import time
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from citewell import Engine
from citewell.web import create_app

from .conftest import CORPUS

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TRANSCRIPT = (CORPUS / "transcripts" / "twiml-409_deep-learning-ocr_cha-zhang.vtt").read_bytes()
def _pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=14)
    pdf.multi_cell(0, 10, text="OCR of text in photos in the wild")
    return bytes(pdf.output())


NOTES = b"# Field notes\n\nThe lighthouse keeper logs every passing ship in a green ledger.\n"
QUESTION = "What makes OCR of text in photos in the wild hard?"
COMMON_POSTS = [{"source": "reddit", "id": "t3_shared", "text": "OCR on photos of street signs is hard.",
                 "created_at": "2022-01-05T10:00:00Z", "score": 3}]


def _posts(name: str) -> bytes:
    """A posts file: the shared post and one only this tenant has (``reddit:t3_<name>``)."""
    own = {"source": "reddit", "id": f"t3_{name}", "text": f"Only {name} has this post about OCR.",
           "created_at": "2022-01-06T10:00:00Z", "score": 1}
    return "".join(json.dumps(p) + "\n" for p in [*COMMON_POSTS, own]).encode()


def _settle(client: TestClient, chat_id: str, message_id: str, headers: dict[str, str]) -> dict[str, Any]:
    for _ in range(1500):
        message = client.get(f"/v1/chats/{chat_id}/messages/{message_id}", headers=headers).json()
        if message["status"] != "pending":
            return message
        time.sleep(0.02)
    raise AssertionError("still pending")


def _wait(client: TestClient, rid: str, headers: dict[str, str]) -> dict[str, Any]:
    for _ in range(600):
        resource = client.get(f"/v1/resources/{rid}", headers=headers).json()["data"]["resource"]
        if resource["status"] != "processing":
            return resource
        time.sleep(0.05)
    raise AssertionError("still processing")


class Tenant:
    """One workspace's key, resources (the last one a posts file: ``dataset``), session and
    messages, and a chats-profile turn (``chat``, ``chat_question``, ``chat_answer``), ids
    as the API returned them."""

    def __init__(self, client: TestClient, name: str, key: str, workspace_id: str) -> None:
        self.name, self.key, self.workspace_id = name, key, workspace_id
        self.h = {"X-API-KEY": key}
        self.resources: list[str] = []
        for file_name, data in (("ocr.vtt", TRANSCRIPT), ("notes.md", NOTES), ("photo-question.pdf", _pdf()),
                                ("posts.jsonl", _posts(name))):
            r = client.post("/v1/resources", headers=self.h, files={"file": (file_name, data, "text/plain")})
            assert r.status_code == 202
            resource = _wait(client, r.json()["data"]["resource"]["id"], self.h)
            assert resource["status"] == "ready"
            self.resources.append(resource["id"])
        self.session = client.post("/v1/sessions", headers=self.h, json={"title": name}).json()["data"]["session"]["id"]
        turn = client.post(f"/v1/sessions/{self.session}/messages", headers=self.h, json={"content": QUESTION})
        assert turn.status_code == 200
        self.user_message = turn.json()["data"]["user_message"]["id"]
        self.answer = turn.json()["data"]["assistant_message"]["id"]
        assert turn.json()["data"]["assistant_message"]["citations"]
        self.dataset = self.resources[3]
        self.own_post = f"t3_{name}"
        asked = client.post("/v1/ask", headers=self.h, json={"question": QUESTION})
        assert asked.status_code == 202, asked.text
        self.chat, self.chat_answer = asked.json()["chat_id"], asked.json()["message_id"]
        answer = _settle(client, self.chat, self.chat_answer, self.h)
        assert answer["status"] == "settled" and answer["references"]
        history = client.get(f"/v1/chats/{self.chat}/messages", headers=self.h).json()["messages"]
        self.chat_question = history[0]["id"]


@pytest.fixture(scope="module")
def world(module_store_location):
    store_path = module_store_location
    keys = {}
    for name in ("alpha", "beta", "hub"):
        with Engine(store_path, workspace=name) as engine:
            keys[name] = (engine.create_key(platform=name == "hub")[0], engine.workspace_id)
    with TestClient(create_app(store_path)) as client:
        a = Tenant(client, "alpha", *keys["alpha"])
        b = Tenant(client, "beta", *keys["beta"])
        yield client, a, b, keys["hub"]


def unknown_like(value: str) -> str:
    """An id of the same shape as ``value`` that names nothing."""
    return str(uuid.uuid4()) if len(value) == 36 else value[:-4] + "0000"


# Every route that takes an id: (name, call(client, headers, id, tenant_of_caller) -> response).
Call = Callable[[TestClient, dict[str, str], str, Tenant], Any]
ID_ROUTES: dict[str, tuple[str, Call]] = {
    "GET session": ("session", lambda c, h, i, me: c.get(f"/v1/sessions/{i}", headers=h)),
    "GET session messages": ("session", lambda c, h, i, me: c.get(f"/v1/sessions/{i}/messages", headers=h)),
    "POST session message": ("session", lambda c, h, i, me: c.post(f"/v1/sessions/{i}/messages", headers=h,
                                                                    json={"content": QUESTION})),
    "POST message resource_ids": ("resource", lambda c, h, i, me: c.post(
        f"/v1/sessions/{me.session}/messages", headers=h, json={"content": QUESTION, "resource_ids": [i]})),
    "POST message image_url": ("pdf", lambda c, h, i, me: c.post(
        f"/v1/sessions/{me.session}/messages", headers=h,
        json={"content": "", "image_url": f"/v1/resources/{i}/content"})),
    "GET resource": ("resource", lambda c, h, i, me: c.get(f"/v1/resources/{i}", headers=h)),
    "GET resource content": ("resource", lambda c, h, i, me: c.get(f"/v1/resources/{i}/content", headers=h)),
    "DELETE resource": ("resource", lambda c, h, i, me: c.delete(f"/v1/resources/{i}", headers=h)),
    "GET references (answer)": ("answer", lambda c, h, i, me: c.get("/v1/references", headers=h,
                                                                    params={"chat_message_id": i})),
    "GET references (question)": ("user_message", lambda c, h, i, me: c.get("/v1/references", headers=h,
                                                                            params={"chat_message_id": i})),
    "GET conversation references": ("session", lambda c, h, i, me: c.get(
        f"/v2/analytics/conversations/{i}/references", headers=h)),
    # chats profile (seed 000)
    "POST ask chat_id": ("chat", lambda c, h, i, me: c.post("/v1/ask", headers=h,
                                                            json={"question": QUESTION, "chat_id": i})),
    "GET chat": ("chat", lambda c, h, i, me: c.get(f"/v1/chats/{i}", headers=h)),
    "GET chat messages": ("chat", lambda c, h, i, me: c.get(f"/v1/chats/{i}/messages", headers=h)),
    "GET chat messages after": ("chat_answer", lambda c, h, i, me: c.get(
        f"/v1/chats/{me.chat}/messages", headers=h, params={"after": i})),
    "GET chat message (chat)": ("chat", lambda c, h, i, me: c.get(
        f"/v1/chats/{i}/messages/{me.chat_answer}", headers=h)),
    "GET chat message (message)": ("chat_answer", lambda c, h, i, me: c.get(
        f"/v1/chats/{me.chat}/messages/{i}", headers=h)),
    "GET dataset": ("dataset", lambda c, h, i, me: c.get(f"/v1/datasets/{i}", headers=h)),
    "GET research preview": ("chat_answer", lambda c, h, i, me: c.get(f"/v1/research_previews/{i}", headers=h)),
}


def _foreign_ids(b: Tenant, kind: str) -> list[str]:
    if kind == "pdf":
        return [b.resources[2]]
    return b.resources if kind == "resource" else [getattr(b, kind)]


@pytest.mark.parametrize("route", list(ID_ROUTES))
def test_foreign_id_answers_exactly_like_an_unknown_id(world: Any, route: str) -> None:
    client, a, b, _ = world
    kind, call = ID_ROUTES[route]
    for foreign in _foreign_ids(b, kind):
        unknown = unknown_like(foreign)
        got = call(client, a.h, foreign, a)
        ref = call(client, a.h, unknown, a)
        assert got.status_code == ref.status_code == 404, (route, got.text)
        assert got.json()["error"]["code"] == ref.json()["error"]["code"] == "NOT_FOUND"
        assert got.text.replace(foreign, "ID") == ref.text.replace(unknown, "ID")
        assert set(got.headers) - {"x-request-id"} == set(ref.headers) - {"x-request-id"}
        # B's own key still reaches its data (the id is real), so nothing was changed by A
        mine = call(client, b.h, foreign, b) if route != "DELETE resource" else \
            client.get(f"/v1/resources/{foreign}", headers=b.h)
        assert mine.status_code == (202 if route == "POST ask chat_id" else 200), (route, mine.text)


def test_lists_and_uploads_never_show_the_other_workspace(world: Any) -> None:
    client, a, b, _ = world
    for me, other in ((a, b), (b, a)):
        listed = client.get("/v1/resources", headers=me.h).json()["data"]
        assert listed["total"] == 4
        assert sorted(r["id"] for r in listed["resources"]) == sorted(me.resources)
        assert {r["workspace_id"] for r in listed["resources"]} == {me.workspace_id}
        assert not set(me.resources) & set(other.resources)  # same bytes, separate resources
        # uploading bytes the other workspace holds gives this workspace's own resource
        again = client.post("/v1/resources", headers=me.h, files={"file": ("again.md", NOTES, "text/markdown")})
        assert again.status_code == 202
        assert again.json()["data"]["resource"]["id"] == me.resources[1]
        session = client.post("/v1/sessions", headers=me.h).json()["data"]["session"]
        assert session["workspace_id"] == me.workspace_id
        # answers cite only this workspace's resources; references resolve only here
        turn = client.post(f"/v1/sessions/{session['id']}/messages", headers=me.h, json={"content": QUESTION})
        cited = {c["resource_id"] for c in turn.json()["data"]["assistant_message"]["citations"]}
        assert cited and cited <= set(me.resources)
        refs = client.get("/v1/references", headers=me.h,
                          params={"chat_message_id": turn.json()["data"]["assistant_message"]["id"]}).json()
        assert {r["document_id"] for r in refs["references"]} <= set(me.resources)
        # chats profile: the chats and mentions listed are this workspace's own
        chats = client.get("/v1/chats", headers=me.h).json()["chats"]
        assert me.chat in {c["id"] for c in chats} and other.chat not in {c["id"] for c in chats}
        assert {c["workspace_id"] for c in chats} == {me.workspace_id}
        mentions = client.post("/v1/mentions", headers=me.h, json={"limit": 200}).json()
        assert [(m["id"], m["dataset_id"]) for m in mentions["mentions"]] == [
            ("t3_shared", me.dataset), (me.own_post, me.dataset)]
        assert client.post("/v1/mentions", headers=me.h, json={"dataset_id": other.dataset}).json() == {
            "mentions": [], "next_cursor": None}
        # an answer cites only this workspace's posts and passages
        asked = client.post("/v1/ask", headers=me.h, json={"question": "What do the posts say about OCR?",
                                                           "filters": {"kind": "post"}}).json()
        answer = _settle(client, asked["chat_id"], asked["message_id"], me.h)
        assert answer["references"] and {r["resource_id"] for r in answer["references"]} == {me.dataset}
        assert {r["id"] for r in answer["references"]} <= {"t3_shared", me.own_post}


def test_a_foreign_post_ref_answers_exactly_like_an_unknown_one(world: Any) -> None:
    client, a, b, _ = world
    unknown = "t3_" + uuid.uuid4().hex[:8]
    r = client.post("/v1/mentions", headers=a.h, json={"post_refs": [
        {"source": "reddit", "id": b.own_post}, {"source": "reddit", "id": "t3_shared"},
        {"source": "reddit", "id": unknown}]})
    assert r.status_code == 200
    foreign, shared, missing = r.json()["mentions"]
    assert foreign["error"]["code"] == "NOT_FOUND"
    assert json.dumps(foreign).replace(b.own_post, "ID") == json.dumps(missing).replace(unknown, "ID")
    assert shared["dataset_id"] == a.dataset  # the same post in both: each workspace's own copy
    mine = client.post("/v1/mentions", headers=b.h, json={"post_refs": [{"source": "reddit", "id": b.own_post}]})
    assert mine.json()["mentions"][0]["dataset_id"] == b.dataset


def test_plain_key_may_not_act_for_another_organization_or_a_user(world: Any) -> None:
    client, a, b, _ = world
    routes = [("GET", "/v1/resources", None), ("GET", f"/v1/sessions/{b.session}", None),
              ("POST", "/v1/sessions", {}), ("GET", "/v1/references", {"chat_message_id": b.answer}),
              ("GET", f"/v2/analytics/conversations/{b.session}/references", None),
              ("POST", "/v1/ask", {"question": QUESTION}), ("GET", "/v1/chats", None),
              ("GET", f"/v1/chats/{b.chat}/messages", None), ("POST", "/v1/mentions", {"limit": 5}),
              ("GET", f"/v1/datasets/{b.dataset}", None), ("GET", f"/v1/research_previews/{b.chat_answer}", None)]
    for method, path, body in routes:
        params: dict[str, str] = {"organization_id": b.workspace_id}
        if method == "GET" and body:
            params.update(body)
        kw: dict[str, Any] = {"headers": a.h, "params": params}
        if method == "POST":
            kw["json"] = body
        r = client.request(method, path, **kw)
        assert (r.status_code, r.json()["error"]["code"]) == (403, "FORBIDDEN"), path
        kw["params"] = {**{k: v for k, v in params.items() if k != "organization_id"},
                        "user_id": "u1", "user_email": "u1@example.com"}
        r = client.request(method, path, **kw)
        assert (r.status_code, r.json()["error"]["code"]) == (403, "FORBIDDEN"), path
    # naming its own organization is fine
    r = client.get("/v1/resources", headers=a.h, params={"organization_id": a.workspace_id})
    assert r.status_code == 200 and sorted(x["id"] for x in r.json()["data"]["resources"]) == sorted(a.resources)


def test_platform_key_acts_for_an_organization(world: Any) -> None:
    client, a, b, (hub_key, _) = world
    h = {"X-API-KEY": hub_key}
    own = client.get("/v1/resources", headers=h).json()["data"]
    assert own["total"] == 0  # without organization_id: its own (empty) workspace
    for tenant in (a, b):
        org = {"organization_id": tenant.workspace_id}
        listed = client.get("/v1/resources", headers=h, params=org).json()["data"]
        assert sorted(r["id"] for r in listed["resources"]) == sorted(tenant.resources)
        r = client.get(f"/v1/sessions/{tenant.session}", headers=h, params=org)
        assert r.status_code == 200 and r.json()["data"]["session"]["workspace_id"] == tenant.workspace_id
        refs = client.get("/v1/references", headers=h, params={**org, "chat_message_id": tenant.answer})
        assert refs.status_code == 200 and refs.json()["references"]
        # still scoped: the other tenant's ids are unknown there
        other = b if tenant is a else a
        r = client.get(f"/v1/sessions/{other.session}", headers=h, params=org)
        assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    r = client.get("/v1/resources", headers=h, params={"organization_id": str(uuid.uuid4())})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    r = client.get("/v1/references", headers=h, params={"organization_id": str(uuid.uuid4()), "chat_message_id": "x"})
    assert (r.status_code, r.json()["error"]["code"], r.json()["payload"]) == (404, "NOT_FOUND", None)
    r = client.get("/v1/resources", headers=h, params={"organization_id": a.workspace_id, "user_id": "u1"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "USER_EMAIL_MISSING")
    r = client.get("/v1/resources", headers=h, params={"organization_id": a.workspace_id, "user_email": "u@x.io"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "USER_ID_MISSING")


def test_platform_key_needs_organization_id_on_the_analytics_routes(world: Any) -> None:
    """Seed 003: organization_id is "Required for platform API keys": without it every analytics
    route answers 400 ORGANIZATION_ID_MISSING in the analytics envelope (before looking at
    anything else); the sessions and chats routes, whose seeds have no organization, act for
    the key's own workspace; a plain key never needs it."""
    client, a, _, (hub_key, hub_workspace) = world
    h = {"X-API-KEY": hub_key}
    analytics = [("GET", "/v1/references", {"chat_message_id": a.answer}),
                 ("GET", f"/v2/analytics/conversations/{a.session}/references", {}),
                 ("GET", "/v1/presigned_url", {"document_id": a.resources[0]}),
                 ("GET", "/rms/viewer", {"chat_message_id": a.answer, "citation_idx": "1"}),
                 ("GET", "/rms/viewer/page", {"chat_message_id": a.answer, "citation_idx": "1"}),
                 ("GET", "/v2/analytics/sse", {"chat_message_id": a.answer})]
    for method, path, params in analytics:
        r = client.request(method, path, headers=h, params=params)
        assert (r.status_code, r.json()) == (400, {"error": {"code": "ORGANIZATION_ID_MISSING",
                                                             "msg": "organization_id is required for a platform API key",
                                                             "message": "organization_id is required for a platform API key"},
                                                   "payload": None}), path
    r = client.post("/v2/analytics/sse", headers=h, json={"query": QUESTION})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "ORGANIZATION_ID_MISSING")
    # naming its own organization is enough (its own workspace holds no answer: 404)
    r = client.get("/v1/references", headers=h, params={"organization_id": hub_workspace, "chat_message_id": a.answer})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    # sessions and chats routes: the key's own workspace
    assert client.get("/v1/resources", headers=h).json()["data"]["total"] == 0
    assert client.get("/v1/chats", headers=h).json() == {"chats": []}
    # a plain key needs no organization_id on the analytics routes
    assert client.get("/v1/references", headers=a.h, params={"chat_message_id": a.answer}).status_code == 200


def test_platform_key_user_scoping_of_chats(world: Any) -> None:
    client, _, b, (hub_key, _) = world
    h = {"X-API-KEY": hub_key}

    def as_user(uid: str) -> dict[str, str]:
        return {"organization_id": b.workspace_id, "user_id": uid, "user_email": f"{uid}@example.com"}

    created = client.post("/v1/sessions", headers=h, params=as_user("u1"), json={"title": "mine"})
    assert created.status_code == 200
    sid = created.json()["data"]["session"]["id"]
    assert created.json()["data"]["session"]["workspace_id"] == b.workspace_id
    turn = client.post(f"/v1/sessions/{sid}/messages", headers=h, params=as_user("u1"), json={"content": QUESTION})
    assert turn.status_code == 200
    answer = turn.json()["data"]["assistant_message"]["id"]
    # u1 sees its chat and its messages' references
    assert client.get(f"/v1/sessions/{sid}", headers=h, params=as_user("u1")).status_code == 200
    assert len(client.get(f"/v1/sessions/{sid}/messages", headers=h,
                          params=as_user("u1")).json()["data"]["messages"]) == 2
    refs = client.get("/v1/references", headers=h, params={**as_user("u1"), "chat_message_id": answer})
    assert refs.status_code == 200 and refs.json()["references"]
    conv = client.get(f"/v2/analytics/conversations/{sid}/references", headers=h, params=as_user("u1"))
    assert conv.status_code == 200 and conv.json()["payload"]["references"] == [
        {**x, "chat_message_id": answer} for x in refs.json()["references"]]
    # u2 (same organization) sees none of it, exactly as if it did not exist
    unknown = str(uuid.uuid4())
    for call in (lambda i: client.get(f"/v1/sessions/{i}", headers=h, params=as_user("u2")),
                 lambda i: client.get(f"/v1/sessions/{i}/messages", headers=h, params=as_user("u2")),
                 lambda i: client.post(f"/v1/sessions/{i}/messages", headers=h, params=as_user("u2"),
                                       json={"content": QUESTION}),
                 lambda i: client.get(f"/v2/analytics/conversations/{i}/references", headers=h,
                                      params=as_user("u2"))):
        got, ref = call(sid), call(unknown)
        assert got.status_code == ref.status_code == 404
        assert got.text.replace(sid, "ID") == ref.text.replace(unknown, "ID")
    got = client.get("/v1/references", headers=h, params={**as_user("u2"), "chat_message_id": answer})
    ref = client.get("/v1/references", headers=h, params={**as_user("u2"), "chat_message_id": unknown})
    assert got.status_code == ref.status_code == 404
    assert got.text.replace(answer, "ID") == ref.text.replace(unknown, "ID")
    # a user does not see the workspace-level chats either
    r = client.get(f"/v1/sessions/{b.session}", headers=h, params=as_user("u1"))
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NOT_FOUND")
    # the organization's own plain key acts at workspace level
    assert client.get(f"/v1/sessions/{sid}", headers=b.h).status_code == 200
    # u2's failed attempts stored nothing in u1's chat
    assert len(client.get(f"/v1/sessions/{sid}/messages", headers=b.h).json()["data"]["messages"]) == 2
    assert json.loads(created.text)["data"]["session"]["title"] == "mine"
