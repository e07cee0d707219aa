"""The MCP server through the official SDK's own client, over both transports (issue 17,
"MCP"): ``citewell mcp`` over stdio and ``/mcp`` on a real ``citewell serve`` (streamable
HTTP, the API keys). The tools are listed, ``ask`` returns references whose offsets obey
the slice rule, posts resolve, alerts carry their pattern, a bad key is refused over HTTP,
and a key sees only its own workspace."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from citewell import Engine
from citewell.agents import Agents

from .agent_posts import write_posts
from .servers import free_port, running

TOOLS = {"ask", "get_message", "resolve_mentions", "search_mentions", "search_passages", "list_resources",
         "list_tracking_agents", "read_alerts"}


#: Tool calls with bad arguments and the start of the field their error names.
BAD_CALLS = [
    ("resolve_mentions", {"post_refs": [{"bad": 1}]}, "post_refs.0."),
    ("resolve_mentions", {"post_refs": [{"source": "reddit", "id": str(i)} for i in range(5000)]}, "post_refs"),
    ("search_mentions", {"limit": 0}, "limit"),
    ("search_mentions", {"limit": 1_000_000}, "limit"),
    ("search_passages", {"query": "x" * 8001}, "query"),
    ("list_resources", {"status": "bogus"}, "status"),
]


@pytest.fixture
def seeded(tmp_path: Path, store_location: str | Path) -> dict[str, Any]:
    """A store with two grown posts files and an agent that alerted twice (the second alert
    with a cross-dataset pattern); a key of its workspace and one of another."""
    store = store_location
    posts = write_posts(tmp_path / "posts", 1)
    with Engine(store, workspace="acme") as engine:
        engine.sync(posts)
        agents = Agents(engine)
        agent = agents.create(query="Activision puts")
        agents.run(agent.id)
        write_posts(posts, 2)
        engine.sync(posts)
        second = agents.run(agent.id)
        assert second.alert is not None
        key = engine.create_key()[0]
    with Engine(store, workspace="other") as engine:
        other = engine.create_key()[0]
    env = {**os.environ, "CITEWELL_CONFIG": "", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1", "CITEWELL_AGENT_TICK_S": "0"}
    return {"store": store, "agent_id": agent.id, "alert_id": second.alert.id, "key": key, "other": other,
            "env": env, "tmp": tmp_path}


def _check_answer(answer: dict[str, Any]) -> list[dict[str, Any]]:
    posts = [r for r in answer["references"] if r["type"] == "post"]
    assert posts, answer
    for ref in posts:
        assert answer["text"][ref["start_index"]:ref["end_index"]] == f"[{ref['citation']}]"
        assert ref["offset_unit"] == "codepoint"
    return posts


async def _exercise(client: Client, seeded: dict[str, Any]) -> dict[str, Any]:
    """The same calls over either transport; returns the ask answer."""
    tools = await client.list_tools()
    assert {t.name for t in tools.tools} == TOOLS
    assert all(t.description for t in tools.tools)
    result = await client.call_tool("ask", {"question": "What happened to Activision puts?"})
    assert not result.is_error, result.content
    answer = result.structured_content
    assert json.loads(result.content[0].text) == answer  # the same JSON as text, for clients without structure
    posts = _check_answer(answer)
    assert {(r["source"], r["id"]) for r in posts} <= {("reddit", "t3_a1"), ("reddit", "t3_a3"),
                                                        ("reddit", "t3_a4"), ("stocktwits", "901")}
    again = (await client.call_tool("get_message", {"message_id": answer["message_id"]})).structured_content
    assert (again["text"], again["references"]) == (answer["text"], answer["references"])
    refs = [{"source": r["source"], "id": r["id"], "dataset_id": r["resource_id"]} for r in posts]
    resolved = (await client.call_tool("resolve_mentions", {"post_refs": refs})).structured_content
    assert [m["id"] for m in resolved["mentions"]] == [r["id"] for r in posts]
    assert all(m["text"] == r["text"] for m, r in zip(resolved["mentions"], posts))
    found = (await client.call_tool("search_mentions", {"query": "Activision", "source": "stocktwits"}))
    assert [m["id"] for m in found.structured_content["mentions"]] == ["901"]
    passages = (await client.call_tool("search_passages", {"query": "Tesla calls", "k": 2})).structured_content
    assert passages["passages"][0]["id"] == "t3_a2"
    resources = (await client.call_tool("list_resources", {"status": "ready"})).structured_content
    assert sorted(r["file_name"] for r in resources["resources"]) == ["reddit.jsonl", "stocktwits.jsonl"]
    agents = (await client.call_tool("list_tracking_agents", {})).structured_content
    assert [a["id"] for a in agents["tracking_agents"]] == [seeded["agent_id"]]
    alerts = (await client.call_tool("read_alerts", {"agent_id": seeded["agent_id"], "limit": 1})).structured_content
    (alert,) = alerts["messages"]
    assert alert["id"] == seeded["alert_id"] and alerts["next_before"] == alert["id"]
    assert [r["id"] for r in _check_answer(alert)] == ["t3_a4", "901"]
    assert [r["type"] for r in alert["references"] if r["type"] != "post"] == ["pattern"]
    fetched = (await client.call_tool("get_message", {"message_id": alert["id"]})).structured_content
    assert fetched["references"] == alert["references"]
    missing = await client.call_tool("read_alerts", {"agent_id": "nope"})
    assert missing.is_error and "NOT_FOUND" in missing.content[0].text
    for name, args, where in BAD_CALLS:  # bad arguments: the API's code and the field, no traceback
        bad = await client.call_tool(name, args)
        assert bad.is_error, (name, args)
        assert f": INVALID_REQUEST_BODY: {where}" in bad.content[0].text, (name, bad.content[0].text)
    return answer


def test_mcp_over_stdio(seeded: dict[str, Any]) -> None:
    params = StdioServerParameters(command=sys.executable, env=seeded["env"], args=[
        "-m", "citewell", "mcp", "--store", str(seeded["store"]), "--workspace", "acme"])

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            return await _exercise(client, seeded)

    answer = anyio.run(main)
    assert answer["viewer_links"] == {}  # no server to show them over stdio


def test_mcp_over_streamable_http(seeded: dict[str, Any]) -> None:
    port = free_port()
    command = [sys.executable, "-m", "citewell", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--store", str(seeded["store"])]
    with running(command, port, seeded["tmp"] / "serve.log", seeded["env"]) as base:
        url = f"{base}/mcp"

        async def main(key: str) -> Any:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
            async with Client(streamable_http_client(url, http_client=http)) as client:
                if key == seeded["key"]:
                    return await _exercise(client, seeded)
                return (await client.call_tool("list_tracking_agents", {})).structured_content

        answer = anyio.run(main, seeded["key"])
        for number, link in answer["viewer_links"].items():  # signed viewer links open without a key
            page = httpx.get(link, timeout=30)
            assert page.status_code == 200 and "text/html" in page.headers["content-type"], number
        assert set(answer["viewer_links"]) == {str(r["citation"]) for r in answer["references"] if r.get("citation")}
        assert anyio.run(main, seeded["other"]) == {"tracking_agents": []}  # another workspace sees none

        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        for headers, code in (({}, "API_KEY_MISSING"), ({"X-API-KEY": "cw_wrong"}, "INVALID_API_KEY")):
            refused = httpx.post(url, json=body, headers={**headers, "Accept": "application/json, text/event-stream"},
                                 timeout=30)
            assert (refused.status_code, refused.json()["error"]["code"]) == (401, code)

        async def with_bad_key() -> None:
            http = create_mcp_http_client(headers={"X-API-KEY": "cw_wrong"})
            async with Client(streamable_http_client(url, http_client=http)) as client:
                await client.list_tools()

        with pytest.raises(BaseException) as refused_by_sdk:
            anyio.run(with_bad_key)
        assert any(isinstance(e, MCPError) for e in _leaves(refused_by_sdk.value)), refused_by_sdk.value


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    return [leaf for e in inner for leaf in _leaves(e)] if inner else [exc]
