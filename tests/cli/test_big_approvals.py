"""Pending approvals whose arguments add up past the frame limit: ``echs approvals`` lists
them (arguments cut short, in pages), ``approval.get`` gives one whole, and ``echs
approve``/``echs deny`` (with id prefixes) still answer them.

Ten threads each wait on a call with 4 MB of arguments (40 MB in all, the frame limit is
16 MiB). The model is a real ``echsd mock-upstream`` scripted from a file, since the
arguments are larger than a user message may be.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import trio

from echsd.wire.client import connect
from tests.cli.helpers import Serve, echs_async, new_thread
from tests.threads.test_big_calls import Upstream, blob, calls_step

THREADS = 10
ARGUMENT_CHARS = 4_000_000  # under [tuning] tool_argument_bytes (4 MiB)
FRAME_LIMIT = 16 * 1024 * 1024
COMMAND = "printf approved # " + blob(ARGUMENT_CHARS)
RULES = [{"match": "BIG-APPROVAL", "steps": calls_step({"name": "exec_command", "arguments": {"cmd": COMMAND}})}]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    root = tmp_path_factory.mktemp("bigapprovals")
    upstream = Upstream(root, RULES)
    serve = Serve(root / "state", "--provider", "openai", "--base-url", upstream.url)
    try:
        yield serve
    finally:
        serve.terminate()
        upstream.stop()


async def _wait_for(client: Any, thread_id: str, event_type: str, **data: Any) -> dict[str, Any]:
    with trio.fail_after(60):
        async with client.events(thread_id, since=0) as stream:
            async for event in stream:
                if event["event"] == event_type and all(event["data"].get(k) == v for k, v in data.items()):
                    return event  # type: ignore[no-any-return]
    raise AssertionError("the stream ended")


async def test_approvals_past_the_frame_limit_list_and_answer(daemon: Serve, tmp_path: Path) -> None:
    state = daemon.state_dir
    threads = [new_thread(state, "--cwd", str(tmp_path), "--approval", "always") for _ in range(THREADS)]
    async with connect(state_dir=state) as client:
        for thread_id in threads:
            await client.send(thread_id, "BIG-APPROVAL")
        requested = [await _wait_for(client, thread_id, "approval.requested") for thread_id in threads]
        ids = [event["data"]["request_id"] for event in requested]

        # Whole, one at a time: together far past a frame.
        whole = [await client.approval(request_id) for request_id in ids]
        assert all(approval["arguments"] == {"cmd": COMMAND} for approval in whole)
        assert sum(len(json.dumps(approval)) for approval in whole) > 2 * FRAME_LIMIT

        # In a list: cut short, every one there; in pages as asked.
        listed = await client.approvals()
        assert [approval["request_id"] for approval in listed] == [approval["request_id"] for approval in sorted(whole, key=lambda a: a["requested_at"])]
        assert all(approval["arguments_truncated"] and approval["arguments"]["cmd"].startswith("printf approved # QUJDRA") for approval in listed)
        assert len(json.dumps(listed)) < 500_000
        page = await client.approvals(offset=2, limit=3)
        assert [a["request_id"] for a in page["items"]] == [a["request_id"] for a in listed[2:5]]
        assert (page["next_offset"], page["total"]) == (5, THREADS)
        mine = await client.approvals(thread_id=threads[0])
        assert [a["request_id"] for a in mine] == [ids[0]]

    shown = await echs_async(state, "approvals")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.decode().splitlines()
    assert len(lines) == THREADS and all(len(line) < 600 for line in lines)
    assert {line.split()[0] for line in lines} == set(ids)

    as_json = await echs_async(state, "approvals", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert [a["request_id"] for a in json.loads(as_json.stdout)] == [a["request_id"] for a in listed]
    of_one = await echs_async(state, "approvals", threads[1][:10], "--json")
    assert [a["request_id"] for a in json.loads(of_one.stdout)] == [ids[1]]

    approved = await echs_async(state, "approve", ids[0][:12])
    assert approved.returncode == 0, approved.stderr
    denied = await echs_async(state, "deny", ids[1][:12], "--json")
    assert denied.returncode == 0, denied.stderr
    assert json.loads(denied.stdout)["decision"] == "deny"
    async with connect(state_dir=state) as client:
        assert (await _wait_for(client, threads[0], "approval.resolved"))["data"]["decision"] == "approve"
        assert (await _wait_for(client, threads[1], "approval.resolved"))["data"]["decision"] == "deny"
        for thread_id in threads[:2]:
            await _wait_for(client, thread_id, "turn.completed")
        left = await client.approvals()
        assert {a["request_id"] for a in left} == set(ids[2:])
        for request_id in ids[2:]:
            await client.respond_approval(request_id, "deny")
