"""A refused reasoning summary costs one 400 per daemon and endpoint: not one per thread, not
one per sub-agent, not one more after a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from echsd.codex.mock import open_mock_upstream
from echsd.codex.mock.checks import VERIFY_MESSAGE
from tests.helpers import Watch, mock_directive
from tests.threads.test_subagents import spawn, wait
from tests.wire.helpers import start_daemon, stop_daemon

UNVERIFIED = {"endpoint": {"org_verified": False}}  # every request: an organisation that may not have summaries
MODEL = "gpt-5.4"  # its catalog entry asks for summaries (Codex 0.169's own models ask none)


async def turn(daemon: Any, tid: str, text: str) -> Watch:
    async with Watch(daemon, tid) as watch:
        start = watch.last_seq
        await daemon.ops.send(tid, text)
        end = await watch.wait_for(lambda e: e.type in ("turn.completed", "turn.error"), timeout=30, after_seq=start)
    assert end.type == "turn.completed", end.data
    return watch


def asked_summaries(mock: Any) -> list[Any]:
    return [r for r in mock.requests if r.path.endswith("/responses") and "summary" in (r.body.get("reasoning") or {})]


async def test_a_refused_summary_costs_one_400_per_daemon(tmp_path: Path, nursery: trio.Nursery, workdir: Path) -> None:
    async with open_mock_upstream(UNVERIFIED) as mock:
        state = tmp_path / "state"
        daemon = await start_daemon(nursery, state, mock.base_url, tcp=False)
        first = (await daemon.ops.create_thread(cwd=str(workdir), model=MODEL))["thread_id"]
        await turn(daemon, first, "hello")
        refused = asked_summaries(mock)
        assert len(refused) == 1  # asked once, refused with the real endpoint's 400, resent without
        assert "summary" not in mock.requests[-1].body["reasoning"]
        assert VERIFY_MESSAGE.startswith("Your organization must be verified")

        second = (await daemon.ops.create_thread(cwd=str(workdir), model=MODEL))["thread_id"]
        child = mock_directive({"text": "child done"})
        watch = await turn(daemon, second, mock_directive([{"calls": [spawn(child)]}, {"calls": [wait()]}, {"text": "parent done"}]))
        [spawned] = watch.of_type("subagent.spawned")
        children = [r for r in mock.requests if r.headers.get("thread-id") == spawned.data["agent_id"]]
        assert children and all(r.body["model"] == MODEL and "summary" not in r.body["reasoning"] for r in children)
        assert len(asked_summaries(mock)) == 1  # the second thread and its sub-agent never asked

        await stop_daemon(daemon)
        daemon = await start_daemon(nursery, state, mock.base_url, tcp=False)  # remembered across a restart
        await turn(daemon, first, "after the restart")
        assert len(asked_summaries(mock)) == 1 and "summary" not in mock.requests[-1].body["reasoning"]
        await stop_daemon(daemon)
