"""The app-server door is bounded in bytes.

- Clients that pipeline reads of a large thread and never read the answers cost the daemon
  memory bounded by its configured limits, and the memory comes back when they leave: a
  real ``echsd serve`` (its RSS is what is measured) with an app-server listener; a thread
  holding 10 MB of text; 4 clients, each sending 64 ``thread/read {includeTurns: true}``
  (each answer about 10 MB) and reading nothing. The bound comes from the configured limits
  (``[tuning] max_message_bytes``: unsent answers per connection and the largest answer; the
  daemon-wide history reads at once) with room for the daemon's own working set.
- A thread past the answer limit is refused whole, with the way to read it, and read in
  pages cut to fit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import wrap_client_stream

from echsd.appserver.history import REPLAY_FACTOR
from echsd.appserver.ids import thread_uuid
from echsd.appserver.intake import HISTORY_READS
from echsd.wire.client import connect
from tests.appserver.helpers import AppClient, RpcFailed, app_client, start_daemon
from tests.wire.helpers import ServeProcess
from tests.wire.test_budgets import _quiescent

MIB = 1024 * 1024
CLIENTS = 4
PIPELINED = 64
PARTS = 10  # messages of 1 MB: the thread holds 10 MB of text
ANSWER_LIMIT = 16 * MIB  # [tuning] max_message_bytes, set explicitly below
WORKING_SET = 96 * MIB  # the daemon's own churn while it answers (pages of the log read, encoding)


def _status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field}")


def _reset_peak(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")  # the peak RSS (VmHWM) starts again from the current RSS


async def _build_thread(state: Path, cwd: Path) -> str:
    async with connect(state_dir=state) as client:
        thread_id = str((await client.create_thread(cwd=str(cwd)))["thread_id"])
        async with client.events(thread_id) as events:
            for part in range(PARTS):
                await client.send(thread_id, f"part {part} " + "x" * 1_000_000)
                with trio.fail_after(60):
                    async for event in events:
                        if event["event"] in ("turn.completed", "turn.error"):
                            break
    return thread_id


async def _reader_that_never_reads(
    state: Path, thread_id: str, leave: trio.Event, answers_to_read: int, read: list[dict[str, Any]], have_read: trio.Event
) -> None:
    """Initialize, pipeline ``PIPELINED`` whole-thread reads, read ``answers_to_read`` of
    them (0: none), then wait and leave."""
    async with trio.open_nursery() as nursery:
        stream = await trio.open_unix_socket(str(state / "app.sock"))
        ws = await wrap_client_stream(nursery, stream, "localhost", "/rpc", max_message_size=1 << 30)
        await ws.send_message(json.dumps({"id": "i", "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "0"}}}))
        assert "result" in json.loads(await ws.get_message())
        for request_id in range(PIPELINED):
            params = {"threadId": thread_uuid(thread_id), "includeTurns": True}
            await ws.send_message(json.dumps({"id": request_id, "method": "thread/read", "params": params}))
        for _ in range(answers_to_read):
            read.append(json.loads(await ws.get_message()))
        if answers_to_read:
            have_read.set()
        await leave.wait()
        stream.socket.close()  # gone, with everything unread
        nursery.cancel_scope.cancel()


async def test_pipelined_reads_never_read_are_bounded_and_given_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(f"[tuning]\nmax_message_bytes = {ANSWER_LIMIT}\n")
    serve = await trio.to_thread.run_sync(lambda: ServeProcess(state, "--app-server", f"unix://{state / 'app.sock'}"))
    pid = serve.process.pid
    try:
        thread_id = await _build_thread(state, tmp_path)
        await _quiescent(pid)
        before = _status_kib(pid, "VmRSS") * 1024
        _reset_peak(pid)

        leave, have_read, read = trio.Event(), trio.Event(), []
        async with trio.open_nursery() as nursery:
            for client in range(CLIENTS):
                nursery.start_soon(_reader_that_never_reads, state, thread_id, leave, 3 if client == 0 else 0, read, have_read)
            with trio.fail_after(60):
                await have_read.wait()
            await _quiescent(pid)  # everything the daemon will do for them is done
            peak = _status_kib(pid, "VmHWM") * 1024
            leave.set()
        await _quiescent(pid)
        after = _status_kib(pid, "VmRSS") * 1024

        # The answers a client read are whole and in order (none was dropped or refused).
        assert [answer["id"] for answer in read] == [0, 1, 2]
        assert all(len(answer["result"]["thread"]["turns"]) == PARTS for answer in read)
        # Per connection: a budget of unsent answers and the answers in the making; daemon-wide,
        # the history reads at once, each reading at most REPLAY_FACTOR answers' worth of the log.
        bound = CLIENTS * 3 * ANSWER_LIMIT + HISTORY_READS * (REPLAY_FACTOR + 1) * ANSWER_LIMIT + WORKING_SET
        grown = peak - before
        print(f"RSS before {before / MIB:.0f} MiB, peak {peak / MIB:.0f} MiB (+{grown / MIB:.0f}), after leaving {after / MIB:.0f} MiB; bound +{bound / MIB:.0f} MiB")
        assert grown < bound, f"the daemon grew by {grown / MIB:.0f} MiB under the load (bound {bound / MIB:.0f} MiB)"
        assert after < before + 32 * MIB, f"{(after - before) / MIB:.0f} MiB still held after the clients left"

        async with connect(state_dir=state) as client:  # and the daemon goes on serving
            assert (await client.get_thread(thread_id))["thread_id"] == thread_id
    finally:
        assert await trio.to_thread.run_sync(serve.stop) == 0


SMALL_LIMIT = 65536  # the smallest [tuning] max_message_bytes
TURNS = 8
TURN_TEXT = 20_000  # each turn's message: a few turns fill an answer


@pytest.fixture
async def small_answers(tmp_path: Path, mock_upstream: Any, nursery: Any) -> Any:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tuning={"max_message_bytes": SMALL_LIMIT})
    yield daemon
    daemon.request_stop()
    with trio.fail_after(15):
        await daemon.wait_stopped()


async def _pages(client: AppClient, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of a list, following nextCursor; each page's answer under half the limit."""
    data: list[dict[str, Any]] = []
    cursor = None
    while True:
        request_id = await client.start(method, params | ({"cursor": cursor} if cursor else {}))
        response = await client.response(request_id)
        assert "result" in response, response
        assert len(json.dumps(response)) < SMALL_LIMIT // 2 + 1024
        data += response["result"]["data"]
        cursor = response["result"]["nextCursor"]
        if cursor is None:
            return data


async def test_a_thread_past_the_answer_limit_is_read_in_pages(small_answers: Any, tmp_path: Path) -> None:
    async with app_client(small_answers) as client:
        await client.initialize()
        thread = (await client.start_thread(cwd=str(tmp_path)))["thread"]
        for n in range(TURNS):
            after = len(client.messages)
            await client.run_turn(thread["id"], f"message {n} " + "x" * TURN_TEXT)
            await client.notification("turn/completed", after=after)

        # The whole thread in one answer would pass the limit: refused, saying how to read it.
        for method, params in (
            ("thread/read", {"threadId": thread["id"], "includeTurns": True}),
            ("thread/resume", {"threadId": thread["id"]}),
        ):
            with pytest.raises(RpcFailed, match="max_message_bytes") as refused:
                await client.call(method, params)
            assert "thread/turns/list" in refused.value.message

        # In pages (asked for all at once: each is cut to fit), every turn and item comes once, in order.
        turns = await _pages(client, "thread/turns/list", {"threadId": thread["id"], "limit": 1000, "sortDirection": "asc"})
        texts = [item["content"][0]["text"] for turn in turns for item in turn["items"] if item["type"] == "userMessage"]
        assert [text.split(" ")[:2] for text in texts] == [["message", str(n)] for n in range(TURNS)]
        assert all(len(text) == len(f"message {n} ") + TURN_TEXT for n, text in enumerate(texts))
        newest_first = await _pages(client, "thread/turns/list", {"threadId": thread["id"], "limit": 1000})
        assert [turn["id"] for turn in newest_first] == [turn["id"] for turn in reversed(turns)]
        items = await _pages(client, "thread/items/list", {"threadId": thread["id"], "limit": 1000, "sortDirection": "asc"})
        assert [entry["item"]["id"] for entry in items] == [item["id"] for turn in turns for item in turn["items"]]
        # A small thread is still read whole.
        small = (await client.start_thread(cwd=str(tmp_path)))["thread"]
        await client.run_turn(small["id"], "hello")
        await client.notification("turn/completed", threadId=small["id"])
        read = await client.call("thread/read", {"threadId": small["id"], "includeTurns": True})
        assert len(read["thread"]["turns"]) == 1
