"""echsd as an MCP server: ``echsd mcp`` over stdio and ``echsd serve --mcp`` over streamable
HTTP, driven by the SDK's own client against a real ``echsd serve`` (the mock model)."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import httpx
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.cli.helpers import ECHSD, Serve, echs, free_port
from tests.helpers import mock_directive

TOOLS = {"echs_new", "echs_send", "echs_status", "echs_list", "echs_show", "echs_interrupt", "echs_kill", "echs_wait", "blackboard_get", "blackboard_set"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    root = tmp_path_factory.mktemp("door")
    served = Serve(root / "state", "--mcp", f"tcp://127.0.0.1:{free_port()}")
    yield served
    try:
        served.terminate()
    finally:
        served.kill()


def mcp_url(daemon: Serve) -> str:
    index = daemon.extra.index("--mcp")
    return daemon.extra[index + 1].replace("tcp://", "http://") + "/mcp"


def token(daemon: Serve) -> str:
    return (daemon.state_dir / "token").read_text().strip()


@asynccontextmanager
async def stdio_client(daemon: Serve) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=ECHSD, args=["mcp", "--state-dir", str(daemon.state_dir)], env={"HOME": str(daemon.state_dir.parent)})
    async with Client(params, mode="legacy") as client:
        yield client


@asynccontextmanager
async def http_client(daemon: Serve) -> AsyncIterator[Client]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token(daemon)}"}) as http:
        async with Client(streamable_http_client(mcp_url(daemon), http_client=http), mode="legacy") as client:
            yield client


def result_of(answer: Any) -> dict[str, Any]:
    assert not answer.is_error, answer.content
    return answer.structured_content  # type: ignore[no-any-return]


async def test_a_thread_made_over_stdio_outlives_the_mcp_client(daemon: Serve, tmp_path: Path) -> None:
    progress: list[str] = []

    async def seen(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    with trio.fail_after(60):
        async with stdio_client(daemon) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert TOOLS <= set(tools)
            assert "final answer" in (tools["echs_send"].description or "")
            created = result_of(await client.call_tool("echs_new", {"cwd": str(tmp_path)}))
            thread_id = created["thread_id"]
            assert created["state"] == "idle" and created["cwd"] == str(tmp_path)
            sent = result_of(await client.call_tool("echs_send", {"thread_id": thread_id, "text": "hello there"}, progress_callback=seen))
            assert sent["status"] == "completed" and sent["final_answer"] == "mock reply to: hello there"
            assert sent["disposition"] == "started" and sent["turn_id"]
            with trio.fail_after(5):  # progress callbacks run in tasks of their own
                while not any("is being worked on" in line for line in progress):
                    await trio.sleep(0.01)
            status = result_of(await client.call_tool("echs_status", {"thread_id": thread_id}))
            assert status["status"] == "completed" and status["final_answer"] == "mock reply to: hello there"
    listed = echs(daemon.state_dir, "ls", "--json")
    assert thread_id in [thread["thread_id"] for thread in json.loads(listed.stdout)]
    shown = json.loads(echs(daemon.state_dir, "show", thread_id, "--json").stdout)
    assert shown["state"] == "idle" and shown["last_turn"]["final_text"] == "mock reply to: hello there"


async def test_every_tool_over_stdio(daemon: Serve, tmp_path: Path) -> None:
    with trio.fail_after(90):
        async with stdio_client(daemon) as client:
            first = result_of(await client.call_tool("echs_new", {"cwd": str(tmp_path)}))["thread_id"]
            second = result_of(await client.call_tool("echs_new", {"cwd": str(tmp_path), "instructions": "be brief"}))["thread_id"]
            slow = mock_directive([{"text": "slow one", "deltas": 4, "delay_ms": 300}])
            queued = result_of(await client.call_tool("echs_send", {"thread_id": first, "text": f"go\n{slow}", "wait": False}))
            assert queued["status"] == "sent" and queued["disposition"] == "started"
            await client.call_tool("echs_send", {"thread_id": second, "text": "quick", "wait": False})
            waited = result_of(await client.call_tool("echs_wait", {"thread_ids": [first, second], "mode": "all", "timeout_s": 30}))
            assert waited["timed_out"] is False
            answers = {thread["thread_id"]: (thread["status"], thread["final_answer"]) for thread in waited["threads"]}
            assert answers == {first: ("completed", "slow one"), second: ("completed", "mock reply to: quick")}
            timed = result_of(await client.call_tool("echs_send", {"thread_id": first, "text": f"again\n{slow}", "timeout_s": 0.2}))
            assert timed["status"] == "running" and "echs_wait" in timed["note"]
            interrupted = result_of(await client.call_tool("echs_interrupt", {"thread_id": first}))
            assert interrupted["interrupted"] is True
            listed = result_of(await client.call_tool("echs_list", {"limit": 100}))["threads"]
            assert {first, second} <= {thread["thread_id"] for thread in listed}
            shown = result_of(await client.call_tool("echs_show", {"thread_id": second}))
            assert shown["config"]["instructions"] == "be brief" and shown["status"] == "completed"
            assert result_of(await client.call_tool("echs_status", {}))["threads"]["total"] >= 2
            written = result_of(await client.call_tool("blackboard_set", {"key": "door/plan", "value": {"steps": [1, 2]}}))
            assert written["version"] >= 1
            entry = result_of(await client.call_tool("blackboard_get", {"key": "door/plan"}))
            assert entry["value"] == {"steps": [1, 2]} and entry["version"] == written["version"]
            conflict = await client.call_tool("blackboard_set", {"key": "door/plan", "value": 1, "if_version": 0})
            assert conflict.is_error and "conflict" in conflict.content[0].text
            killed = result_of(await client.call_tool("echs_kill", {"thread_id": second}))
            assert killed["killed"] == [second]
            refused = await client.call_tool("echs_send", {"thread_id": second, "text": "hi"})
            assert refused.is_error and "invalid_state" in refused.content[0].text
            missing = await client.call_tool("echs_show", {"thread_id": "thr_0000000000000000"})
            assert missing.is_error and "not_found" in missing.content[0].text


async def test_stdio_without_a_daemon_says_so(tmp_path: Path) -> None:
    state = tmp_path / "stopped"
    state.mkdir()
    (state / "token").write_text("a-token-of-a-daemon-that-is-not-running\n")
    params = StdioServerParameters(command=ECHSD, args=["mcp", "--state-dir", str(state)], env={"HOME": str(tmp_path)})
    with trio.fail_after(30):
        async with Client(params, mode="legacy") as client:
            answer = await client.call_tool("echs_list", {})
    assert answer.is_error and "unavailable" in answer.content[0].text and "echsd serve" in answer.content[0].text


async def test_the_same_tools_over_streamable_http_in_the_daemon(daemon: Serve, tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with http_client(daemon) as client:
            assert TOOLS <= {tool.name for tool in (await client.list_tools()).tools}
            thread_id = result_of(await client.call_tool("echs_new", {"cwd": str(tmp_path)}))["thread_id"]
            sent = result_of(await client.call_tool("echs_send", {"thread_id": thread_id, "text": "over http"}))
            assert sent["status"] == "completed" and sent["final_answer"] == "mock reply to: over http"
    shown = json.loads(echs(daemon.state_dir, "show", thread_id, "--json").stdout)
    assert shown["last_turn"]["status"] == "completed"


VALID = "Bearer <the daemon's token>"


@pytest.mark.parametrize(
    ("headers", "path", "status"),
    [
        ({}, "/mcp", 401),  # no token
        ({"Authorization": "Bearer wrong-token-0123456789"}, "/mcp", 401),
        ({"Authorization": VALID, "Origin": "http://evil.example"}, "/mcp", 403),  # a web page
        ({"Authorization": VALID, "Host": "evil.example"}, "/mcp", 403),  # DNS rebinding
        ({"Authorization": VALID}, "/other", 404),
    ],
)
def test_the_http_door_refuses_like_the_other_doors(daemon: Serve, headers: dict[str, str], path: str, status: int) -> None:
    given = {name: f"Bearer {token(daemon)}" if value == VALID else value for name, value in headers.items()}
    base = mcp_url(daemon).removesuffix("/mcp")
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    answer = httpx.post(base + path, json=body, headers={"Accept": "application/json, text/event-stream", **given}, timeout=10)
    assert answer.status_code == status, answer.text


def test_a_daemon_with_the_http_door_stops_cleanly(tmp_path: Path) -> None:
    served = Serve(tmp_path / "state", "--mcp", f"tcp://127.0.0.1:{free_port()}")
    try:
        code = served.terminate()
    finally:
        served.kill()
    assert code == 0, "".join(served.lines)  # (it used to end in a traceback: a socket closed twice)


def test_mcp_urls_are_loopback_tcp_only(tmp_path: Path) -> None:
    import subprocess

    for url, message in [("unix:///tmp/x.sock", "give tcp://HOST:PORT"), ("tcp://0.0.0.0:4999", "--allow-remote")]:
        result = subprocess.run([ECHSD, "serve", "--state-dir", str(tmp_path / "s"), "--mcp", url], capture_output=True, text=True, timeout=30)
        assert result.returncode == 2 and message in result.stderr, result.stderr


def test_echsd_mcp_is_listed() -> None:
    import subprocess

    result = subprocess.run([ECHSD, "mcp", "--help"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and "codex mcp add echsd -- echsd mcp" in " ".join(result.stdout.split())
