"""Today's models run tool turns: gpt-6.1-sol (Codex 0.169's default) and gpt-6.9-test, a name
no catalog table has (the mock's /models lists it). Reasoning and include are sent, encrypted
reasoning is carried over, and a scripted invalid_encrypted_content refusal is repaired once
(its reasoning leaves the history) and the thread goes on."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from echsd.codex.mock import open_mock_upstream
from tests.helpers import Watch, check_thread_invariants, mock_directive
from tests.wire.helpers import start_daemon, stop_daemon

CALL = {"name": "exec_command", "arguments": {"cmd": "echo hi", "yield_time_ms": 1000}}


def kinds(body: dict) -> list[str]:
    return [item.get("type", "message") for item in body["input"]]


async def turn(daemon, tid: str, steps: list) -> Watch:
    async with Watch(daemon, tid) as watch:
        start = watch.last_seq
        await daemon.ops.send(tid, mock_directive(steps))
        end = await watch.wait_for(lambda e: e.type in ("turn.completed", "turn.error"), timeout=30, after_seq=start)
    assert end.type == "turn.completed", end.data
    return watch


@pytest.mark.parametrize("model", ["gpt-6.1-sol", "gpt-6.9-test"])
async def test_a_model_of_today_runs_tool_turns(model: str, tmp_path: Path, nursery: trio.Nursery, workdir: Path) -> None:
    async with open_mock_upstream({"models": ["gpt-6.9-test"]}) as mock:
        daemon = await start_daemon(nursery, tmp_path / "state", mock.base_url, tcp=False)
        with trio.fail_after(10):
            await daemon.model_list.wait_fetches(1)
        assert daemon.settings.catalog.get(model).known  # shipped, or listed by the endpoint
        tid = (await daemon.ops.create_thread(cwd=str(workdir), model=model))["thread_id"]

        await turn(daemon, tid, [{"reasoning": "plan", "calls": [CALL]}, {"text": "ran it"}])
        first, followup = [r.body for r in mock.requests[-2:]]
        for body in (first, followup):
            assert body["model"] == model and body["reasoning"]["effort"] in ("low", "medium")
            assert body["include"] == ["reasoning.encrypted_content"] and body["text"] == {"verbosity": "low"}
        [carried] = [item for item in followup["input"] if item.get("type") == "reasoning"]
        assert carried["encrypted_content"].startswith("mockenc:" + model)  # carried over, readable by its model
        assert kinds(followup)[-3:] == ["reasoning", "function_call", "function_call_output"]

        before = len(mock.requests)
        watch = await turn(daemon, tid, [{"reasoning": "again", "calls": [CALL]}, {"text": "repaired", "fault": "invalid_encrypted_content", "times": 1}])
        refused, resent = [r.body for r in mock.requests[before + 1 :]]
        assert kinds(refused).count("reasoning") == 2 and kinds(resent).count("reasoning") == 1  # the one named left out, once
        assert watch.of_type("turn.completed")[-1].data["final_text"] == "repaired"
        assert len(watch.of_type("history.pruned")) == 1
        history = await daemon.ops.history(tid)
        kept = [item["encrypted_content"] for item in history if item["type"] == "reasoning"]
        assert kept == [item["encrypted_content"] for item in resent["input"] if item.get("type") == "reasoning"]
        assert carried["encrypted_content"] not in kept  # the one the refusal named (the mock names the first) left the history

        await turn(daemon, tid, [{"text": "and on"}])  # the thread goes on
        assert kinds(mock.requests[-1].body).count("reasoning") == 1
        await check_thread_invariants(daemon, tid)
        await stop_daemon(daemon)
