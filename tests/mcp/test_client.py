"""Threads call MCP servers' tools through the real tool loop: the demo server over stdio (run
by the daemon) and over streamable HTTP, the mock model calling ``mcp__<server>__<tool>``,
and what each result becomes in the next model request."""

from __future__ import annotations

import base64
import io
import json
import time
from pathlib import Path
from typing import Any

import trio
from PIL import Image

from tests.helpers import Watch, check_thread_invariants, mock_directive
from tests.mcp.conftest import alive, daemon_with, demo_config, start_http_server


def outputs(body: dict[str, Any]) -> dict[str, Any]:
    """call_id -> output of every function_call_output in a request's input."""
    return {item["call_id"]: item["output"] for item in body["input"] if item.get("type") == "function_call_output"}


def calls_of(body: dict[str, Any]) -> dict[str, str]:
    """call_id -> tool name of every function_call in a request's input."""
    return {item["call_id"]: item["name"] for item in body["input"] if item.get("type") == "function_call"}


def by_name(body: dict[str, Any]) -> dict[str, Any]:
    names = calls_of(body)
    return {names[call_id]: output for call_id, output in outputs(body).items()}


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in body.get("tools", [])]


async def run_turn(daemon: Any, thread_id: str, steps: list[dict[str, Any]], text: str = "go") -> Watch:
    async with Watch(daemon, thread_id) as watch:
        after = watch.last_seq
        await daemon.ops.send(thread_id, f"{text}\n{mock_directive(steps)}")
        await watch.wait_type("turn.completed", after_seq=after, timeout=30)
    return watch


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


async def test_results_reach_the_next_request_in_their_shapes(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    steps = [
        {"calls": [call("mcp__demo__echo", text="hello"), call("mcp__demo__word_count", text="one two three")]},
        {"calls": [call("mcp__demo__swatch", color="blue", size=8), call("mcp__demo__fail", reason="not today")]},
        {"text": "done"},
    ]
    watch = await run_turn(mcp_daemon, tid, steps)
    first, second, third = (request.body for request in mock_upstream.requests[-3:])
    offered = {tool["name"]: tool for tool in first["tools"]}
    assert {"mcp__demo__echo", "mcp__demo__swatch", "mcp__web__echo", "mcp__web__header"} <= set(offered)
    assert "mcp__web__swatch" not in offered  # enabled_tools of the web server leaves it out
    echo = offered["mcp__demo__echo"]
    assert echo["type"] == "function" and echo["description"] == "Says the text back."
    assert echo["parameters"]["properties"]["text"]["type"] == "string" and echo["parameters"]["required"] == ["text"]

    results = by_name(second)
    assert results["mcp__demo__echo"] == "hello"  # text
    assert json.loads(results["mcp__demo__word_count"]) == {"words": 3, "characters": 13}  # structured content, as JSON text

    results = by_name(third)
    image = results["mcp__demo__swatch"]  # an image: input_image content
    assert isinstance(image, list) and [part["type"] for part in image] == ["input_image"]
    url = image[0]["image_url"]
    assert url.startswith("data:image/png;base64,")
    picture = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert picture.size == (8, 8) and picture.getpixel((0, 0)) == (0, 0, 255)
    failure = results["mcp__demo__fail"]  # isError: a failed call
    assert failure.startswith("error: the tool reported a failure") and "refused: not today" in failure
    completed = {event.data["name"]: event.data for event in watch.of_type("tool.completed")}
    assert completed["mcp__demo__fail"]["ok"] is False and completed["mcp__demo__echo"]["ok"] is True
    assert completed["mcp__demo__swatch"]["output"] == "[image]"
    await check_thread_invariants(mcp_daemon, tid)


async def test_a_streamable_http_server_with_its_token_and_headers(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    steps = [{"calls": [call("mcp__web__echo", text="over http"), call("mcp__web__header")]}, {"text": "ok"}]
    await run_turn(mcp_daemon, tid, steps)
    results = by_name(mock_upstream.requests[-1].body)
    assert results == {"mcp__web__echo": "over http", "mcp__web__header": "from-config"}


async def test_a_server_that_crashes_mid_call_is_started_again_for_the_next(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    steps = [{"calls": [call("mcp__demo__whoami")]}, {"calls": [call("mcp__demo__crash")]}, {"calls": [call("mcp__demo__whoami")]}, {"text": "ok"}]
    watch = await run_turn(mcp_daemon, tid, steps)
    completed = [event.data for event in watch.of_type("tool.completed")]
    before, crash, after = completed
    assert crash["name"] == "mcp__demo__crash" and crash["ok"] is False
    assert "exited or closed the connection during the call" in crash["output"] and "started again" in crash["output"]
    assert after["ok"] is True and int(after["output"]) != int(before["output"])  # a new process answered
    assert not alive(int(before["output"]))
    status = {server["name"]: server for server in mcp_daemon.mcp.status()}
    assert status["demo"]["state"] == "ready" and status["demo"]["restarts"] >= 1
    await check_thread_invariants(mcp_daemon, tid)


async def test_an_http_server_that_dies_mid_call_is_reached_again_when_it_is_back(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path) -> None:
    server = start_http_server(token=None)
    config = f'[mcp_servers.web]\nurl = "{server.url}"\ntool_timeout_sec = 30\n'
    try:
        async with daemon_with(tmp_path, config, mock_upstream.base_url, nursery) as daemon:
            tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
            started = time.monotonic()
            watch = await run_turn(daemon, tid, [{"calls": [call("mcp__web__crash")]}, {"calls": [call("mcp__web__echo", text="gone")]}, {"text": "ok"}])
            crash, gone = (event.data for event in watch.of_type("tool.completed"))
            assert crash["ok"] is False and "connection to the MCP server web was lost during the call" in crash["output"]
            assert gone["ok"] is False and "the MCP server web is down (ConnectError" in gone["output"]  # after its startup timeout at most
            assert time.monotonic() - started < 20  # not the 30 s tool timeout
            server.process.wait(10)
            server = start_http_server(token=None, port=server.port)  # back, at the same address
            watch = await run_turn(daemon, tid, [{"calls": [call("mcp__web__echo", text="back")]}, {"text": "ok"}])
            back = watch.of_type("tool.completed")[-1].data
            assert back["ok"] is True and back["output"] == "back"
    finally:
        server.process.kill()
        server.process.wait()


async def test_a_server_that_writes_garbage_is_still_answered(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    steps = [{"calls": [call("mcp__demo__babble", lines=3)]}, {"calls": [call("mcp__demo__echo", text="after")]}, {"text": "ok"}]
    watch = await run_turn(mcp_daemon, tid, steps)
    babble, echo = (event.data for event in watch.of_type("tool.completed"))
    assert babble["ok"] is True and babble["output"] == "babbled 3 lines"  # lines that are not messages are passed over
    assert echo["ok"] is True and echo["output"] == "after"  # and the session goes on


async def test_servers_that_cannot_start_cost_a_turn_their_startup_timeout_at_most(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path) -> None:
    import sys

    quits = "import sys; sys.stderr.write('warming up\\\\ncannot reach the registry: network unreachable\\\\n'); sys.exit(1)"
    config = (
        '[mcp_servers.missing]\ncommand = "/nonexistent/server"\n\n'
        f'[mcp_servers.mute]\ncommand = "{sys.executable}"\nargs = ["-c", "import time; time.sleep(600)"]\nstartup_timeout_sec = 1\n\n'
        f'[mcp_servers.quits]\ncommand = "{sys.executable}"\nargs = ["-c", "{quits}"]\n'
    )
    async with daemon_with(tmp_path, config, mock_upstream.base_url, nursery) as daemon:
        tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
        started = time.monotonic()
        watch = await run_turn(daemon, tid, [{"calls": [call("mcp__mute__anything")]}, {"text": "ok"}])
        assert time.monotonic() - started < 8
        assert not any(name.startswith("mcp__") for name in tool_names(mock_upstream.requests[-2].body))  # no tools to offer
        (refused,) = watch.of_type("tool.completed")
        assert refused.data["ok"] is False and "unknown tool 'mcp__mute__anything'" in refused.data["output"]
        status = {server["name"]: server for server in daemon.mcp.status()}
        assert status["missing"]["state"] != "ready" and status["missing"]["last_error"].startswith("cannot start '/nonexistent/server'")
        assert "No such file or directory" in status["missing"]["last_error"] and "sandbox" not in status["missing"]["last_error"]
        assert status["mute"]["last_error"] == "it did not start within 1 s (startup_timeout_sec)"
        why = status["quits"]["last_error"]  # what it said last, and what it may not do
        assert "its last words on stderr: 'cannot reach the registry: network unreachable'" in why
        assert "it runs in the sandbox workspace-write, network off (see sandbox and network in its table)" in why


async def test_a_server_that_hangs_is_cut_at_its_tool_timeout(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    steps = [{"calls": [call("mcp__demo__hang")]}, {"calls": [call("mcp__demo__echo", text="still there")]}, {"text": "ok"}]
    started = time.monotonic()
    watch = await run_turn(mcp_daemon, tid, steps)
    hang, echo = (event.data for event in watch.of_type("tool.completed"))
    assert hang["ok"] is False and "did not answer within 1.5 s (tool_timeout_sec)" in hang["output"]
    assert 1.4 <= hang["duration_ms"] / 1000 < 4.0
    assert echo["output"] == "still there"  # the same session serves the next call
    assert time.monotonic() - started < 15


async def test_a_tool_list_change_reaches_the_next_request(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    steps = [{"calls": [call("mcp__demo__grow", tool="sprout")]}, {"calls": [call("mcp__demo__sprout", text="leaf")]}, {"text": "ok"}]
    await run_turn(mcp_daemon, tid, steps)
    first, second, third = (request.body for request in mock_upstream.requests[-3:])
    assert "mcp__demo__sprout" not in tool_names(first)
    assert "mcp__demo__sprout" in tool_names(second)  # the very next request
    assert by_name(third)["mcp__demo__sprout"] == "sprout: leaf"


async def test_approval_applies_to_an_mcp_tool(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir), approval="on-write"))["thread_id"]
    target = workdir / "touched.txt"
    steps = [{"calls": [call("mcp__demo__touch", path=str(target), text="x")]}, {"calls": [call("mcp__demo__echo", text="read-only")]}, {"text": "ok"}]
    async with Watch(mcp_daemon, tid) as watch:
        await mcp_daemon.ops.send(tid, f"go\n{mock_directive(steps)}")
        asked = await watch.wait_type("approval.requested")
        assert asked.data["tool"] == "mcp__demo__touch" and asked.data["arguments"] == {"path": str(target), "text": "x"}
        mcp_daemon.supervisor.approvals.respond(asked.data["request_id"], "deny")
        await watch.wait_type("turn.completed", timeout=30)
    touch, echo = (event.data for event in watch.of_type("tool.completed"))
    assert touch["ok"] is False and "denied" in touch["output"] and not target.exists()  # the server never ran it
    assert echo["output"] == "read-only"  # readOnlyHint: no approval under on-write
    assert len(watch.of_type("approval.requested")) == 1


async def test_approval_rules_match_mcp_tool_names(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery, workdir: Path) -> None:
    rules = '[approval]\ndeny = ["mcp__demo__touch"]\nallow = ["mcp__demo__slow"]\n\n'
    target = workdir / "touched.txt"
    steps = [
        {"calls": [call("mcp__demo__touch", path=str(target))]},  # denied by name: refused, never asked
        {"calls": [call("mcp__demo__slow", steps=1)]},  # allowed by name: runs without asking
        {"calls": [call("mcp__demo__echo", text="asked")]},  # approval = always: asks; approved for the thread
        {"calls": [call("mcp__demo__echo", text="not asked")]},  # the thread's new rule: runs
        {"text": "ok"},
    ]
    async with daemon_with(tmp_path, rules + demo_config(), mock_upstream.base_url, nursery) as daemon:
        tid = (await daemon.ops.create_thread(cwd=str(workdir), approval="always"))["thread_id"]
        async with Watch(daemon, tid) as watch:
            await daemon.ops.send(tid, f"go\n{mock_directive(steps)}")
            asked = await watch.wait_type("approval.requested", timeout=30)
            assert asked.data["tool"] == "mcp__demo__echo" and asked.data["arguments"] == {"text": "asked"}
            answer = daemon.supervisor.approvals.respond(asked.data["request_id"], "approve", always=True)
            assert answer["rule"] == ["mcp__demo__echo"]
            await watch.wait_type("turn.completed", timeout=30)
        touch, slow, first, second = (event.data for event in watch.of_type("tool.completed"))
        assert touch["ok"] is False and "refused by the approval rule deny [mcp__demo__touch]" in touch["output"] and not target.exists()
        assert slow["ok"] is True and slow["output"] == "done after 1 steps"
        assert (first["output"], second["output"]) == ("asked", "not asked")
        assert len(watch.of_type("approval.requested")) == 1


async def test_a_thread_uses_only_the_servers_its_config_names(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir), mcp="-web"))["thread_id"]
    thread = await mcp_daemon.ops.configure(tid, {"instructions": "plain"})
    assert thread["config"]["mcp"] == ["demo"]
    steps = [{"calls": [call("mcp__web__echo", text="x")]}, {"text": "ok"}]
    watch = await run_turn(mcp_daemon, tid, steps)
    names = tool_names(mock_upstream.requests[-2].body)
    assert "mcp__demo__echo" in names and not any(name.startswith("mcp__web__") for name in names)
    (refused,) = watch.of_type("tool.completed")
    assert refused.data["ok"] is False and "unknown tool 'mcp__web__echo'" in refused.data["output"]
    thread = await mcp_daemon.ops.configure(tid, {"mcp": "+web"})
    assert thread["config"]["mcp"] == ["demo", "web"]


async def test_servers_stop_with_the_daemon(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    watch = await run_turn(mcp_daemon, tid, [{"calls": [call("mcp__demo__whoami")]}, {"text": "ok"}])
    pid = int(watch.of_type("tool.completed")[0].data["output"])
    assert alive(pid)
    mcp_daemon.request_stop()
    with trio.fail_after(15):
        await mcp_daemon.wait_stopped()
    assert not alive(pid)


async def test_an_interrupt_cancels_a_call_in_flight(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(mcp_daemon, tid) as watch:
        await mcp_daemon.ops.send(tid, f"go\n{mock_directive([{'calls': [call('mcp__demo__slow', steps=100000)]}, {'text': 'x'}])}")
        await watch.wait_type("tool.output", timeout=30)  # the call runs: its progress streams
        asked = time.monotonic()
        await mcp_daemon.ops.interrupt(tid)
        await watch.wait_type("turn.interrupted")
        assert time.monotonic() - asked < 1.0
    watch = await run_turn(mcp_daemon, tid, [{"calls": [call("mcp__demo__echo", text="after")]}, {"text": "ok"}])
    assert watch.of_type("tool.completed")[-1].data["output"] == "after"
    await check_thread_invariants(mcp_daemon, tid)


async def test_sub_agents_inherit_or_narrow_the_servers(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir), mcp=["demo"]))["thread_id"]
    spawn = [call("spawn_agent", message="hi"), call("spawn_agent", message="hi", agent_type="webonly")]
    watch = await run_turn(mcp_daemon, tid, [{"calls": spawn}, {"text": "ok"}])
    configs = [event.data["config"] for event in watch.of_type("subagent.spawned")]
    assert sorted((config["mcp"] for config in configs), key=len) == [[], ["demo"]]  # webonly: web, narrowed to the parent's
    top = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    watch = await run_turn(mcp_daemon, top, [{"calls": [spawn[1]]}, {"text": "ok"}])
    assert watch.of_type("subagent.spawned")[0].data["config"]["mcp"] == ["web"]


async def test_a_clients_tool_named_like_an_mcp_tool_is_offered_once(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    from echsd.wire.client import connect

    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with connect(state_dir=mcp_daemon.settings.state_dir) as client:
        await client.register_tools(tid, [{"name": "mcp__demo__echo", "description": "the client's own"}])
        await run_turn(mcp_daemon, tid, [{"text": "ok"}])
    names = tool_names(mock_upstream.requests[-1].body)
    assert names.count("mcp__demo__echo") == 1 and len(names) == len(set(names))
    offered = next(tool for tool in mock_upstream.requests[-1].body["tools"] if tool["name"] == "mcp__demo__echo")
    assert offered["description"] == "the client's own"


async def test_a_large_result_is_read_and_capped_like_any_output(mcp_daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    tid = (await mcp_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    text = "x" * 150_000 + "y" * 150_000  # a 300 KB message from the server: parsed off the event loop
    watch = await run_turn(mcp_daemon, tid, [{"calls": [call("mcp__demo__echo", text=text)]}, {"text": "ok"}])
    output = by_name(mock_upstream.requests[-1].body)["mcp__demo__echo"]
    assert output.startswith("xxxx") and output.endswith("yyyy") and len(output) < 100_000  # head and tail kept
    assert watch.of_type("tool.completed")[0].data["ok"] is True
