"""A model response whose parallel calls share a ``call_id`` (malformed or hostile): the
first runs, each repeat gets an id of its own and an error output, so every function_call
keeps exactly one output, in the thread and in the next request to the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import Watch, check_thread_invariants, mock_directive


async def test_a_repeated_call_id_is_answered_with_an_error_and_kept_distinct(daemon: Any, mock_upstream: Any, workdir: Path) -> None:
    calls = [
        {"name": "exec_command", "arguments": {"cmd": f"echo run-{n} >> ran.txt"}, "call_id": "call_same"} for n in (1, 2, 3)
    ]
    thread = (await daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(daemon, thread) as watch:
        await daemon.ops.send(thread, mock_directive([{"calls": calls}, {"text": "done"}]))
        await watch.wait_type("turn.completed")
    assert (workdir / "ran.txt").read_text() == "run-1\n"  # the repeats did not run
    completed = {event.data["call_id"]: event.data for event in watch.of_type("tool.completed")}
    assert sorted(completed) == ["call_same", "call_same~2", "call_same~3"]
    assert completed["call_same"]["ok"]
    for repeat in ("call_same~2", "call_same~3"):
        assert not completed[repeat]["ok"] and "repeated the call_id 'call_same'" in completed[repeat]["output"]
    await check_thread_invariants(daemon, thread)
    sent = mock_upstream.requests[-1].body["input"]
    call_ids = [item["call_id"] for item in sent if item["type"] == "function_call"]
    output_ids = [item["call_id"] for item in sent if item["type"] == "function_call_output"]
    assert sorted(call_ids) == sorted(output_ids) == ["call_same", "call_same~2", "call_same~3"]
