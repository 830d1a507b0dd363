"""Memory bounded by bytes: answers a client never reads, big answers refused or paged,
event pages cut at a byte budget and still read to the end by the client library."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from echsd.wire.client import WireError, connect
from tests.helpers import conversation
from tests.wire.helpers import WAIT_S, ServeProcess, raw_connection, start_daemon, stop_daemon, token_of

MIB = 1024 * 1024
FRAME_LIMIT = 65536  # the smallest [tuning] max_message_bytes: small answers already need pages


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


async def _quiescent(pid: int) -> None:
    """Wait until the process has used no CPU for 0.3 s: it has done all it will."""
    with trio.fail_after(WAIT_S * 2):
        last, still = _cpu_ticks(pid), 0
        while still < 3:
            await trio.sleep(0.1)
            now = _cpu_ticks(pid)
            still = still + 1 if now == last else 0
            last = now


async def test_answers_a_client_never_reads_stay_within_a_budget(tmp_path: Path) -> None:
    serve = await trio.to_thread.run_sync(lambda: ServeProcess(tmp_path / "state"))
    try:
        async with connect(state_dir=serve.state_dir) as client:
            for _ in range(40):  # thread.list: ~8 MB
                await client.create_thread(cwd=str(tmp_path), instructions="i" * 200_000)
        async with raw_connection(serve) as raw:
            await raw.hello(token_of(serve))
            await _quiescent(serve.process.pid)
            before = serve.rss_bytes
            for request_id in range(100, 130):  # 30 pipelined answers of 8 MB, none read yet
                await raw.send({"id": request_id, "op": "thread.list", "params": {}})
            await _quiescent(serve.process.pid)
            grown = serve.rss_bytes - before
            answers = [await raw.response() for _ in range(30)]  # nothing lost: all come, in order
        assert [answer["id"] for answer in answers] == list(range(100, 130))
        assert all(answer["ok"] and len(answer["result"]) == 40 for answer in answers)
        assert grown < 64 * MIB, f"the daemon grew by {grown / MIB:.0f} MiB"
    finally:
        assert await trio.to_thread.run_sync(serve.stop) == 0


@pytest.fixture
async def small_frames(tmp_path: Path, mock_upstream: Any, nursery: Any) -> Any:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tcp=False, tuning={"max_message_bytes": FRAME_LIMIT})
    yield daemon
    await stop_daemon(daemon)


async def _big_turns(client: Any, thread_id: str, count: int) -> None:
    """``count`` turns, each on a 20 kB message."""
    async with client.events(thread_id) as events:
        for n in range(count):
            await client.send(thread_id, f"message {n} " + "x" * 20_000)
            with trio.fail_after(WAIT_S):
                async for event in events:
                    if event["event"] == "turn.completed":
                        break


async def _read_pages(fetch: Any) -> list[Any]:
    items: list[Any] = []
    offset: int | None = 0
    while offset is not None:
        page = await fetch(offset)
        assert page["offset"] == offset and page["items"]
        assert len(repr(page["items"])) <= FRAME_LIMIT or len(page["items"]) == 1
        items += page["items"]
        offset = page["next_offset"]
    return items


async def test_history_and_list_over_the_frame_limit_are_refused_whole_and_served_in_pages(small_frames: Any, tmp_path: Path) -> None:
    daemon = small_frames
    async with connect(state_dir=daemon.settings.state_dir) as client:
        threads = [await client.create_thread(cwd=str(tmp_path), instructions=f"{n}" * 20_000) for n in range(5)]
        tid = threads[0]["thread_id"]
        await _big_turns(client, tid, 5)

        for method, whole in (("history", lambda: client.history(tid)), ("list", client.list_threads)):
            with pytest.raises(WireError) as refused:
                await whole()
            assert refused.value.code == "too_large", method
            assert "65,536" in refused.value.message and "offset/limit" in refused.value.message

        history = await _read_pages(lambda offset: client.history(tid, offset=offset))
        assert history == await daemon.ops.history(tid)
        assert len(conversation(history)) == 10 and len(history) == 11  # and the environment context, first
        two = await client.history(tid, offset=1, limit=2)
        assert two["items"] == history[1:3] and two["next_offset"] == 3 and two["total"] == 11

        listed = await _read_pages(lambda offset: client.list_threads(offset=offset))
        assert [thread["thread_id"] for thread in listed] == [thread["thread_id"] for thread in threads]
        assert listed == await daemon.ops.list_threads()


async def test_event_pages_stop_at_a_byte_budget_and_streams_read_on(small_frames: Any, tmp_path: Path) -> None:
    daemon = small_frames
    async with connect(state_dir=daemon.settings.state_dir) as client:
        tid = (await client.create_thread(cwd=str(tmp_path)))["thread_id"]
        await _big_turns(client, tid, 5)  # each user message's item.completed holds 20 kB
        last = (await client.get_thread(tid))["last_seq"]
        page = await client.thread_events(tid, since=0, limit=1000)
        assert 0 < len(page) < last  # short of the limit: the byte budget
        seqs: list[int] = []
        since = 0
        while batch := await client.thread_events(tid, since=since, limit=1000):
            seqs += [event["seq"] for event in batch]
            since = seqs[-1]
        assert seqs == list(range(1, last + 1))
        async with client.events(tid) as stream:  # live-only subscription, the log read in pages
            streamed = []
            with trio.fail_after(WAIT_S):
                async for event in stream:
                    streamed.append(event["seq"])
                    if event["seq"] == last:
                        break
        assert streamed == list(range(1, last + 1))
