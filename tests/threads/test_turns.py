"""The tool loop end to end: model over real HTTP (mock upstream), real store, real processes."""

from __future__ import annotations

import json
from typing import Any

import trio

from tests.helpers import Watch, check_thread_invariants, conversation, mock_directive


def _inputs_of(request: Any) -> list[dict[str, Any]]:
    return request.body["input"]


def _user_texts(request: Any) -> list[str]:
    texts = []
    for item in _inputs_of(request):
        if item.get("type") == "message" and item.get("role") == "user":
            texts.append("".join(part.get("text", "") for part in item["content"]))
    return texts


async def test_plain_reply_turn(daemon: Any, workdir: Any) -> None:
    thread = await daemon.ops.create_thread(cwd=str(workdir))
    tid = thread["thread_id"]
    async with Watch(daemon, tid) as watch:
        ack = await daemon.ops.send(tid, "hello there")
        assert ack["disposition"] == "started" and ack["thread_id"] == tid
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "mock reply to: hello there"
    deltas = "".join(e.data["delta"] for e in watch.of_type("turn.delta"))
    assert deltas == "mock reply to: hello there"
    types = [e.type for e in watch.events]
    assert types[0] == "thread.created"
    assert types.index("turn.started") < types.index("input.delivered") < types.index("turn.completed")
    usage = watch.of_type("turn.usage")[0].data
    assert {"input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens"} <= usage.keys()
    history = conversation(await daemon.ops.history(tid))
    assert [item["role"] for item in history] == ["user", "assistant"]
    info = await daemon.ops.get_thread(tid)
    assert info["state"] == "idle" and info["usage"]["turns"] == 1
    await check_thread_invariants(daemon, tid)


async def test_tool_calling_turn(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    thread = await daemon.ops.create_thread(cwd=str(workdir))
    tid = thread["thread_id"]
    script = mock_directive(
        [
            {"calls": [{"name": "exec_command", "arguments": {"cmd": "echo tool-says-hi; pwd"}}]},
            {"text": "all done"},
        ]
    )
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, f"run it\n{script}")
        await watch.wait_type("turn.completed")
    completed = watch.of_type("tool.completed")[0].data
    assert completed["name"] == "exec_command" and completed["ok"] is True
    assert "tool-says-hi" in completed["output"] and str(workdir) in completed["output"]
    assert completed["exit_code"] == 0
    assert "tool-says-hi" in "".join(e.data["chunk"] for e in watch.of_type("tool.output"))
    # The second model request carried the call and its output.
    second = mock_upstream.requests[-1].body
    kinds = [item["type"] for item in second["input"]]
    assert kinds[-2:] == ["function_call", "function_call_output"]
    assert "tool-says-hi" in second["input"][-1]["output"]
    assert any(tool["name"] == "exec_command" for tool in second["tools"])
    await check_thread_invariants(daemon, tid)


async def test_parallel_tool_calls_run_concurrently(daemon: Any, workdir: Any) -> None:
    # A writes to a FIFO that only B reads, then reads what B writes back: run one after the
    # other, A blocks on its write until its call yields a session; run together, both finish.
    import os

    ab, ba = workdir / "ab", workdir / "ba"
    os.mkfifo(ab)
    os.mkfifo(ba)
    calls = [
        {"name": "exec_command", "arguments": {"cmd": f"echo from-a > {ab}; cat {ba}"}},
        {"name": "exec_command", "arguments": {"cmd": f"cat {ab}; echo from-b > {ba}"}},
    ]
    thread = await daemon.ops.create_thread(cwd=str(workdir))
    tid = thread["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": calls}, {"text": "ok"}]))
        await watch.wait_type("turn.completed")
    outputs = " ".join(e.data["output"] for e in watch.of_type("tool.completed"))
    assert "from-a" in outputs and "from-b" in outputs
    assert all(e.data["ok"] for e in watch.of_type("tool.completed"))
    await check_thread_invariants(daemon, tid)


async def test_bad_tool_calls_become_outputs(daemon: Any, workdir: Any) -> None:
    calls = [
        {"name": "no_such_tool", "arguments": {}},
        {"name": "exec_command", "arguments": "{not json"},
        {"name": "exec_command", "arguments": {"command": "ls"}},
    ]
    thread = await daemon.ops.create_thread(cwd=str(workdir))
    tid = thread["thread_id"]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive([{"calls": calls}, {"text": "recovered"}]))
        done = await watch.wait_type("turn.completed")
    assert done.data["final_text"] == "recovered"
    outputs = [e.data["output"] for e in watch.of_type("tool.completed")]
    assert any("unknown tool 'no_such_tool'" in o for o in outputs)
    assert any("not valid JSON" in o for o in outputs)
    assert any("missing required field(s): cmd" in o for o in outputs)
    await check_thread_invariants(daemon, tid)


async def test_upstream_error_ends_turn_with_error(daemon: Any, workdir: Any) -> None:
    thread = await daemon.ops.create_thread(cwd=str(workdir))
    tid = thread["thread_id"]
    step = {"fault": "failed", "code": "context_length_exceeded", "message": "too long"}
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive(step))
        error = await watch.wait_type("turn.error")
        # The thread is usable afterwards.
        await daemon.ops.send(tid, mock_directive({"text": "recovered"}))
        await watch.wait_type("turn.completed")
    assert error.data["error"]["code"] == "context_window_exceeded"
    assert (await daemon.ops.get_thread(tid))["state"] == "idle"
    await check_thread_invariants(daemon, tid)


async def test_config_hot_swap_applies_to_next_request(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    thread = await daemon.ops.create_thread(cwd=str(workdir), instructions="work in {{cwd}}")
    tid = thread["thread_id"]
    other = workdir / "other"
    other.mkdir()
    updated = await daemon.ops.configure(tid, {"model": "gpt-5.4", "reasoning": "high", "cwd": str(other), "tools": []})
    assert updated["config"]["model"] == "gpt-5.4" and updated["config"]["tools"] == []
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, "hi")
        await watch.wait_type("turn.completed")
    body = mock_upstream.requests[-1].body
    assert body["model"] == "gpt-5.4"
    assert body["reasoning"]["effort"] == "high"
    assert body["instructions"] == f"work in {other}"
    assert body.get("tools", []) == []
    again = await daemon.ops.configure(tid, {"tools": ["exec_command"]})
    assert again["config"]["tools"] == ["exec_command"]
    changed = [e.data["changed"] for e in watch.of_type("thread.configured")]
    assert changed and set(changed[0]) == {"model", "reasoning", "cwd", "tools"}


async def test_reasoning_items_round_trip(daemon: Any, workdir: Any, mock_upstream: Any) -> None:
    thread = await daemon.ops.create_thread(cwd=str(workdir))
    tid = thread["thread_id"]
    steps = [{"reasoning": "thinking hard", "calls": [{"name": "exec_command", "arguments": {"cmd": "true"}}]}, {"text": "ok"}]
    async with Watch(daemon, tid) as watch:
        await daemon.ops.send(tid, mock_directive(steps))
        await watch.wait_type("turn.completed")
    assert "".join(e.data["delta"] for e in watch.of_type("turn.reasoning_delta")) == "thinking hard"
    second = mock_upstream.requests[-1].body
    reasoning = [item for item in second["input"] if item["type"] == "reasoning"]
    assert reasoning and reasoning[0].get("encrypted_content")
    assert "id" not in reasoning[0]
    assert second["include"] == ["reasoning.encrypted_content"] and second["store"] is False
    assert json.dumps(second)  # the request body is plain JSON
