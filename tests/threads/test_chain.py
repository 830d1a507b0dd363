"""Response chaining (thread config chain): previous_response_id with only the new items,
and the whole history again when the endpoint no longer has the response."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import Watch, check_thread_invariants, mock_directive


async def one_turn(daemon: Any, tid: str, text: str) -> None:
    async with Watch(daemon, tid) as watch:
        before = watch.last_seq
        await daemon.ops.send(tid, text)
        await watch.wait_type("turn.completed", after_seq=before)


def responses(mock_upstream: Any) -> list[dict[str, Any]]:
    return [r.body for r in mock_upstream.requests if r.path.endswith("/responses")]


async def test_chaining_sends_only_what_is_new_and_falls_back(daemon: Any, workdir: Path, mock_upstream: Any) -> None:
    tid = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    await daemon.ops.configure(tid, {"chain": True})
    call = {"name": "exec_command", "arguments": {"cmd": "echo chained"}}
    await one_turn(daemon, tid, "first\n" + mock_directive([{"calls": [call]}, {"text": "done"}]))
    first, second = responses(mock_upstream)[-2:]
    assert first["store"] is True and "previous_response_id" not in first
    assert second["previous_response_id"] and [item["type"] for item in second["input"]] == ["function_call_output"]
    await one_turn(daemon, tid, "second")
    third = responses(mock_upstream)[-1]
    assert third["previous_response_id"] and [item.get("role") for item in third["input"]] == ["user"]

    mock_upstream.reset()  # the endpoint forgot its stored responses
    await one_turn(daemon, tid, "third")
    refused, resent = responses(mock_upstream)[-2:]
    assert refused["previous_response_id"] and "previous_response_id" not in resent
    assert len(resent["input"]) == len(await daemon.ops.history(tid)) - 1  # everything but the reply
    await one_turn(daemon, tid, "fourth")
    assert responses(mock_upstream)[-1]["previous_response_id"]  # chained again from the resent one
    await check_thread_invariants(daemon, tid)
