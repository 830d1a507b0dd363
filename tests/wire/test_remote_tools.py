"""Remote tools over the wire: registered by a client, called by the model through the real
tool loop, answered with tool.result; timeouts, disconnects and name clashes give clear outputs."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from echsd.wire.client import WireError, connect
from tests.helpers import mock_directive

LOOKUP = {
    "name": "lookup",
    "description": "Looks a word up.",
    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
}


def call(word: str = "cat") -> dict[str, Any]:
    return {"name": "lookup", "arguments": {"word": word}}


async def wait_turn(client: Any, tid: str) -> list[dict[str, Any]]:
    seen = []
    with trio.fail_after(15):
        async with client.events(tid) as events:
            async for event in events:
                seen.append(event)
                if event["event"] in ("turn.completed", "turn.error"):
                    return seen
    return seen


async def test_a_remote_tool_is_called_and_its_result_reaches_the_model(wired: Any, mock_upstream: Any) -> None:
    state = wired.settings.state_dir
    async with connect(state_dir=state) as provider, connect(state_dir=state) as driver:
        tid = (await driver.create_thread(cwd=str(state)))["thread_id"]
        registered = await provider.register_tools(tid, [LOOKUP])
        assert registered == {"thread_id": tid, "registered": ["lookup"]}
        await driver.send(tid, mock_directive([{"calls": [call("cat")]}, {"text": "thanks"}]))
        with trio.fail_after(15):
            message = await provider.direct_messages.receive()
        assert message["event"] == "tool.call" and message["seq"] is None and message["thread_id"] == tid
        assert message["data"]["name"] == "lookup" and message["data"]["arguments"] == {"word": "cat"}
        with pytest.raises(WireError) as foreign:
            await driver.tool_result(message["data"]["call_id"], "not mine to answer")
        assert foreign.value.code == "not_found"
        assert await provider.tool_result(message["data"]["call_id"], "a small domesticated feline") == {
            "call_id": message["data"]["call_id"],
            "accepted": True,
        }
        events = await wait_turn(driver, tid)
    assert events[-1]["event"] == "turn.completed"
    offered = [tool["name"] for tool in mock_upstream.requests[0].body["tools"]]
    assert "lookup" in offered
    sent = mock_upstream.requests[-1].body["input"][-1]
    assert sent == {"type": "function_call_output", "call_id": message["data"]["call_id"], "output": "a small domesticated feline"}


async def test_a_disconnected_provider_gives_a_clear_output_and_its_tools_go(wired: Any, mock_upstream: Any) -> None:
    state = wired.settings.state_dir
    async with connect(state_dir=state) as driver:
        tid = (await driver.create_thread(cwd=str(state)))["thread_id"]
        async with connect(state_dir=state) as provider:
            await provider.register_tools(tid, [LOOKUP])
            await driver.send(tid, mock_directive([{"calls": [call()]}, {"text": "carried on"}]))
            with trio.fail_after(15):
                await provider.direct_messages.receive()
        events = await wait_turn(driver, tid)  # the provider left without answering
        completed = [e for e in events if e["event"] == "tool.completed"][0]["data"]
        assert not completed["ok"] and "disconnected before answering" in completed["output"]
        await driver.send(tid, mock_directive({"text": "next"}))
        await wait_turn(driver, tid)
    assert "lookup" not in [tool["name"] for tool in mock_upstream.requests[-1].body["tools"]]


async def test_an_unanswered_call_times_out(wired: Any) -> None:
    state = wired.settings.state_dir
    async with connect(state_dir=state) as provider, connect(state_dir=state) as driver:
        tid = (await driver.create_thread(cwd=str(state)))["thread_id"]
        await provider.register_tools(tid, [{**LOOKUP, "timeout_s": 0.3}])
        await driver.send(tid, mock_directive([{"calls": [call()]}, {"text": "gave up"}]))
        events = await wait_turn(driver, tid)
        completed = [e for e in events if e["event"] == "tool.completed"][0]["data"]
        assert "did not answer within 0.3 s" in completed["output"]


async def test_name_clashes_and_bad_specs_are_refused(wired: Any) -> None:
    state = wired.settings.state_dir
    async with connect(state_dir=state) as first, connect(state_dir=state) as second:
        tid = (await first.create_thread(cwd=str(state)))["thread_id"]
        await first.register_tools(tid, [LOOKUP])
        assert (await first.register_tools(tid, [LOOKUP]))["registered"] == ["lookup"]  # the same client: replaced
        for client, specs, code, words in (
            (second, [LOOKUP], "conflict", "another client"),
            (second, [{**LOOKUP, "name": "exec_command"}], "conflict", "built-in"),
            (second, [{"name": "bad name!"}], "bad_request", "name must be"),
            (second, [{**LOOKUP, "parameters": {"type": "string"}}], "bad_request", "type object"),
            (second, [], "bad_request", "list of 1 to"),
        ):
            with pytest.raises(WireError) as refused:
                await client.register_tools(tid, specs)
            assert refused.value.code == code and words in refused.value.message, refused.value


async def test_a_responses_api_function_spec_is_taken_as_it_is_pasted(wired: Any, mock_upstream: Any) -> None:
    state = wired.settings.state_dir
    pasted = {"type": "function", **LOOKUP, "parameters": {**LOOKUP["parameters"], "additionalProperties": False}, "strict": True}
    async with connect(state_dir=state) as provider, connect(state_dir=state) as driver:
        tid = (await driver.create_thread(cwd=str(state)))["thread_id"]
        assert (await provider.register_tools(tid, [pasted]))["registered"] == ["lookup"]
        await driver.send(tid, mock_directive({"text": "seen"}))
        await wait_turn(driver, tid)
        for specs, words in (([{**pasted, "type": "custom"}], 'type must be "function"'), ([{**pasted, "strict": "yes"}], "strict must be")):
            with pytest.raises(WireError) as refused:
                await provider.register_tools(tid, specs)
            assert refused.value.code == "bad_request" and words in refused.value.message
    [offered] = [tool for tool in mock_upstream.requests[-1].body["tools"] if tool["name"] == "lookup"]
    assert offered == {**pasted, "strict": True}


@pytest.mark.parametrize("name", ["naïve", "日本語", "tab\tname", "", "x" * 65])
async def test_tool_names_are_ascii_as_the_endpoint_requires(wired: Any, name: str) -> None:
    state = wired.settings.state_dir
    async with connect(state_dir=state) as provider:
        tid = (await provider.create_thread(cwd=str(state)))["thread_id"]
        with pytest.raises(WireError) as refused:
            await provider.register_tools(tid, [{**LOOKUP, "name": name}])
        assert refused.value.code == "bad_request" and "ASCII letters, digits, _ or -" in refused.value.message


async def test_a_thread_s_remote_tools_are_capped_in_number_and_size(wired: Any) -> None:
    from echsd.tools.remote import MAX_SPECS, MAX_THREAD_TOOL_BYTES, MAX_THREAD_TOOLS

    state = wired.settings.state_dir
    async with connect(state_dir=state) as first, connect(state_dir=state) as second:
        tid = (await first.create_thread(cwd=str(state)))["thread_id"]
        batches = MAX_THREAD_TOOLS // MAX_SPECS
        for batch in range(batches):  # up to the limit, over several calls
            client = first if batch % 2 else second
            await client.register_tools(tid, [{**LOOKUP, "name": f"t{batch}_{n}"} for n in range(MAX_SPECS)])
        with pytest.raises(WireError) as too_many:
            await first.register_tools(tid, [{**LOOKUP, "name": "one_more"}])
        assert too_many.value.code == "bad_request" and f"more than the limit of {MAX_THREAD_TOOLS}" in too_many.value.message
        assert (await first.register_tools(tid, [{**LOOKUP, "name": "t1_0"}]))["registered"] == ["t1_0"]  # replacing is fine

        other = (await first.create_thread(cwd=str(state)))["thread_id"]
        big = {**LOOKUP, "description": "d" * 4000}
        per_spec = MAX_THREAD_TOOL_BYTES // 4100
        with pytest.raises(WireError) as too_big:
            for start in range(0, per_spec + 1, MAX_SPECS):
                count = min(MAX_SPECS, per_spec + 1 - start)
                await first.register_tools(other, [{**big, "name": f"big{start + n}"} for n in range(count)])
        assert too_big.value.code == "bad_request" and "bytes, more than the limit" in too_big.value.message
        thread = await first.request("thread.get", {"thread_id": other})
    assert len([name for name in thread["config"]["tools"] if name.startswith("big")]) <= per_spec
