"""Turns through the listener, as the TUI drives them: streaming text, tool calls, steer,
interrupt, and turns queued behind a running one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio

from tests.appserver.helpers import AppClient, RpcFailed, start_daemon, user_input
from tests.helpers import mock_directive, one_event_per_delta

SLOW = {"text": " ".join(f"w{i}" for i in range(60)), "delay_ms": 50}


@pytest.fixture
async def appd(tmp_path: Any, mock_upstream: Any, nursery: Any) -> AsyncIterator[Any]:
    """The app-server daemon, one event per model delta: a reply
    streams as one delta per word."""
    daemon = await start_daemon(nursery, one_event_per_delta(tmp_path / "state"), mock_upstream.base_url)
    yield daemon
    daemon.request_stop()
    with trio.fail_after(15):
        await daemon.wait_stopped()


async def test_a_turn_streams_its_reply(client: AppClient) -> None:
    thread = (await client.start_thread())["thread"]["id"]
    request = await client.start("turn/start", user_input(thread, "hello\n" + mock_directive({"text": "one two three four"}), "cm-9"))
    response = await client.response(request)
    turn = response["result"]["turn"]
    assert turn["status"] == "inProgress" and turn["items"] == []
    started_at = client.messages.index(response)
    started = await client.notification("turn/started", after=started_at)
    assert client.index_of(lambda m: m.get("method") == "turn/started") > started_at  # the answer comes first
    assert started["turn"]["id"] == turn["id"] and started["threadId"] == thread
    user = await client.notification("item/completed", after=started_at)
    assert user["item"]["type"] == "userMessage" and user["item"]["clientId"] == "cm-9"
    assert user["item"]["content"][0]["text"].startswith("hello\n")
    done = await client.notification("turn/completed")
    assert done["turn"]["status"] == "completed" and done["turn"]["id"] == turn["id"]
    deltas = [d["delta"] for d in client.of_method("item/agentMessage/delta")]
    assert len(deltas) > 1 and "".join(deltas) == "one two three four"
    completed = [p["item"] for p in client.of_method("item/completed") if p["item"]["type"] == "agentMessage"]
    assert [item["text"] for item in completed] == ["one two three four"]
    started_ids = [p["item"]["id"] for p in client.of_method("item/started") if p["item"]["type"] == "agentMessage"]
    assert started_ids == [completed[0]["id"]]
    usage = client.of_method("thread/tokenUsage/updated")[-1]["tokenUsage"]
    assert usage["last"]["inputTokens"] > 0 and usage["total"] == usage["last"]


async def test_a_tool_call_shows_its_command_and_output(client: AppClient, workdir: Path) -> None:
    thread = (await client.start_thread(cwd=str(workdir)))["thread"]["id"]
    steps = [{"text": "Running.", "calls": [{"name": "exec_command", "arguments": {"cmd": "echo hello; echo world >&2"}}]}, {"text": "Done."}]
    await client.run_turn(thread, "run it\n" + mock_directive(steps))
    await client.notification("turn/completed")
    started = [p["item"] for p in client.of_method("item/started") if p["item"]["type"] == "commandExecution"]
    completed = [p["item"] for p in client.of_method("item/completed") if p["item"]["type"] == "commandExecution"]
    assert len(started) == len(completed) == 1
    assert started[0]["status"] == "inProgress" and started[0]["cwd"] == str(workdir)
    assert started[0]["commandActions"] == [{"type": "unknown", "command": "echo hello; echo world >&2"}]
    item = completed[0]
    assert item["status"] == "completed" and item["exitCode"] == 0 and item["aggregatedOutput"] == "hello\nworld\n"
    output = "".join(d["delta"] for d in client.of_method("item/commandExecution/outputDelta") if d["itemId"] == item["id"])
    assert output == "hello\nworld\n"
    texts = [p["item"]["text"] for p in client.of_method("item/completed") if p["item"]["type"] == "agentMessage"]
    assert texts == ["Running.", "Done."]


async def test_other_tools_are_dynamic_tool_calls(client: AppClient, appd: Any) -> None:
    """The blackboard tools (and any tool without an item of its own) show as ``dynamicToolCall``
    items: arguments when they start, the output or the refusal when they end; resume replays them."""
    thread = (await client.start_thread())["thread"]["id"]
    write = {"name": "blackboard_write", "arguments": {"key": "plan/next", "value": {"step": 2}}}
    conflict = {"name": "blackboard_write", "arguments": {"key": "plan/next", "value": 3, "if_version": 0}}
    read = {"name": "blackboard_read", "arguments": {"key": "plan/next"}}
    await client.run_turn(thread, mock_directive([{"calls": [write]}, {"calls": [conflict]}, {"calls": [read]}, {"text": "Noted."}]))
    await client.notification("turn/completed")
    started = [p["item"] for p in client.of_method("item/started") if p["item"]["type"] == "dynamicToolCall"]
    assert [(i["tool"], i["arguments"], i["status"], i["success"]) for i in started] == [
        (call["name"], call["arguments"], "inProgress", None) for call in (write, conflict, read)
    ]
    completed = [p["item"] for p in client.of_method("item/completed") if p["item"]["type"] == "dynamicToolCall"]
    assert [(i["status"], i["success"]) for i in completed] == [("completed", True), ("failed", False), ("completed", True)]
    written, refused, entry = ("".join(c["text"] for c in i["contentItems"]) for i in completed)
    assert json.loads(written)["version"] == 1 and "conflict" in refused
    assert json.loads(entry)["entry"]["value"] == {"step": 2}
    assert appd.blackboard.get("plan/next").value == {"step": 2}
    turns = (await client.call("thread/read", {"threadId": thread, "includeTurns": True}))["thread"]["turns"]
    assert [i for i in turns[-1]["items"] if i["type"] == "dynamicToolCall"] == completed


async def test_a_failing_command_completes_as_failed(client: AppClient) -> None:
    thread = (await client.start_thread())["thread"]["id"]
    await client.run_turn(thread, mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": "exit 3"}}]}, {"text": "ok"}]))
    await client.notification("turn/completed")
    item = next(p["item"] for p in client.of_method("item/completed") if p["item"]["type"] == "commandExecution")
    assert item["status"] == "failed" and item["exitCode"] == 3


@pytest.mark.parametrize("through_shell", [False, True])
async def test_a_patch_is_a_file_change(client: AppClient, workdir: Path, through_shell: bool) -> None:
    (workdir / "old.txt").write_text("a\nb\nc\n")
    patch = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: old.txt\n@@\n a\n-b\n+B\n c\n*** End Patch\n"
    call = (
        {"name": "exec_command", "arguments": {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"}}
        if through_shell
        else {"name": "apply_patch", "arguments": {"input": patch}}
    )
    thread = (await client.start_thread(cwd=str(workdir)))["thread"]["id"]
    await client.run_turn(thread, mock_directive([{"calls": [call]}, {"text": "patched"}]))
    await client.notification("turn/completed")
    item = next(p["item"] for p in client.of_method("item/completed") if p["item"]["type"] == "fileChange")
    assert item["status"] == "completed"
    assert item["changes"] == [
        {"path": str(workdir / "new.txt"), "kind": {"type": "add"}, "diff": "hello\n"},
        {"path": str(workdir / "old.txt"), "kind": {"type": "update", "move_path": None}, "diff": "@@\n a\n-b\n+B\n c\n"},
    ]
    assert (workdir / "new.txt").read_text() == "hello\n" and (workdir / "old.txt").read_text() == "a\nB\nc\n"


async def test_steer_joins_the_running_turn(client: AppClient) -> None:
    thread = (await client.start_thread())["thread"]["id"]
    turn = await client.run_turn(thread, "slow\n" + mock_directive(SLOW))
    await client.notification("item/agentMessage/delta")
    steer = {"threadId": thread, "expectedTurnId": turn, "clientUserMessageId": "cm-steer", "input": user_input(thread, "steer me")["input"]}
    assert await client.call("turn/steer", steer) == {"turnId": turn}
    steered = await client.wait_for(
        lambda m: m.get("method") == "item/completed" and m["params"]["item"].get("clientId") == "cm-steer"
    )
    assert steered["params"]["turnId"] == turn and steered["params"]["item"]["type"] == "userMessage"
    done = await client.notification("turn/completed")
    assert done["turn"]["id"] == turn and done["turn"]["status"] == "completed"
    assert len(client.of_method("turn/started")) == 1  # a steer starts no turn
    texts = [p["item"]["text"] for p in client.of_method("item/completed") if p["item"]["type"] == "agentMessage"]
    assert texts[-1] == "mock reply to: steer me"


async def test_steer_into_a_turn_that_is_not_running_is_refused(client: AppClient) -> None:
    thread = (await client.start_thread())["thread"]["id"]
    turn = await client.run_turn(thread, "hi")
    await client.notification("turn/completed")
    with pytest.raises(RpcFailed, match="not running"):
        await client.call("turn/steer", {"threadId": thread, "expectedTurnId": turn, "input": user_input(thread, "late")["input"]})


async def test_interrupt_ends_the_turn_as_interrupted(client: AppClient) -> None:
    thread = (await client.start_thread())["thread"]["id"]
    turn = await client.run_turn(thread, mock_directive(SLOW))
    await client.notification("item/agentMessage/delta")
    assert await client.call("turn/interrupt", {"threadId": thread, "turnId": turn}) == {}
    done = await client.notification("turn/completed")
    assert done["turn"]["status"] == "interrupted" and done["turn"]["id"] == turn
    assert (await client.notification("thread/status/changed", status={"type": "idle"}))["threadId"] == thread
    assert await client.call("turn/interrupt", {"threadId": thread, "turnId": turn}) == {}  # nothing left to stop


async def test_interrupt_of_a_running_command_kills_it(client: AppClient, tmp_path: Path) -> None:
    thread = (await client.start_thread())["thread"]["id"]
    turn = await client.run_turn(thread, mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": "echo started; sleep 60"}}]}]))
    await client.notification("item/commandExecution/outputDelta")
    with trio.fail_after(10):
        await client.call("turn/interrupt", {"threadId": thread, "turnId": turn})
    item = next(p["item"] for p in client.of_method("item/completed") if p["item"]["type"] == "commandExecution")
    assert item["status"] == "failed"
    assert (await client.notification("turn/completed"))["turn"]["status"] == "interrupted"


async def test_turn_start_while_a_turn_runs_is_answered_when_its_turn_starts(client: AppClient) -> None:
    thread = (await client.start_thread())["thread"]["id"]
    first = await client.run_turn(thread, mock_directive({"text": "a b c d e f", "delay_ms": 50}))
    second = await client.start("turn/start", user_input(thread, "next", "cm-2"))
    done = await client.notification("turn/completed")
    assert done["turn"]["id"] == first
    response = await client.response(second)
    turn = response["result"]["turn"]["id"]
    assert turn != first
    started = client.index_of(lambda m: m.get("method") == "turn/started" and m["params"]["turn"]["id"] == turn)
    assert started is None or started > client.messages.index(response)
    await client.notification("turn/started", after=client.messages.index(response))
    assert (await client.notification("turn/completed", after=client.messages.index(response)))["turn"]["id"] == turn


async def test_a_model_chosen_in_the_client_becomes_the_threads(client: AppClient, appd: Any) -> None:
    thread = (await client.start_thread())["thread"]
    params = user_input(thread["id"], "hi") | {"model": "gpt-5.4-mini", "effort": "low"}
    await client.call("turn/start", params)
    await client.notification("turn/completed")
    config = (await appd.ops.get_thread(thread["name"]))["config"]
    assert (config["model"], config["reasoning"]) == ("gpt-5.4-mini", "low")


async def test_bad_input_gets_a_clear_error(client: AppClient) -> None:
    thread = (await client.start_thread())["thread"]["id"]
    cases = [
        ({"threadId": thread, "input": []}, "non-empty"),
        ({"threadId": thread, "input": [{"type": "localImage", "path": "/x.png"}]}, "text input only"),
        ({"threadId": thread, "input": [{"type": "text", "text": "   "}]}, "no text"),
        ({"threadId": thread, "input": [{"type": "text", "text": "x"}], "outputSchema": {"type": "object"}}, "outputSchema"),
        ({"threadId": "not-a-thread", "input": [{"type": "text", "text": "x"}]}, "must name an echsd thread"),
        ({"threadId": "ec45d000-0000-8000-8000-000000000000", "input": [{"type": "text", "text": "x"}]}, "no thread"),
    ]
    for params, message in cases:
        with pytest.raises(RpcFailed, match=message):
            await client.call("turn/start", params)


async def test_rate_limits_are_sent_and_can_be_read(client: AppClient) -> None:
    with pytest.raises(RpcFailed, match="no rate limits known yet"):
        await client.call("account/rateLimits/read", {})
    thread = (await client.start_thread())["thread"]["id"]
    limits = {"primary": {"used_percent": 42, "window_minutes": 300, "resets_in_seconds": 600}, "plan_type": "plus"}
    await client.run_turn(thread, mock_directive({"text": "ok", "rate_limits": limits}))
    sent = await client.notification("account/rateLimits/updated")
    assert sent["rateLimits"]["primary"]["usedPercent"] == 42
    read = await client.call("account/rateLimits/read", {})
    assert read["rateLimits"]["primary"] == sent["rateLimits"]["primary"] and read["rateLimits"]["planType"] == "plus"
