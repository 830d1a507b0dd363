"""The app-server door is bounded in bytes.

A thread past the answer limit is refused whole, with the way to read it, and read in
pages cut to fit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.appserver.helpers import AppClient, RpcFailed, app_client, start_daemon

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
