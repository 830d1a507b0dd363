"""The web view opens a thread from its end: the thread stream's ``tail`` replays the last
events only (whole turns where they fit, bounded in bytes), and ``/earlier`` pages back
through the rest, through a real daemon's web listener."""

from __future__ import annotations

from typing import Any

import orjson

from echsd.web.tail import TAIL_BYTES
from tests.helpers import Watch, mock_directive
from tests.web.conftest import Browser
from tests.web.test_api import sse


async def whole_log(browser: Browser, tid: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        page = (await browser.http.get(f"/api/threads/{tid}/events?since={events[-1]['seq'] if events else 0}")).json()
        if not page:
            return events
        events.extend(page)


async def run_turns(daemon: Any, tid: str, prompts: list[str]) -> int:
    """Run one turn per prompt; the thread's last seq after them."""
    async with Watch(daemon, tid) as watch:
        for prompt in prompts:
            await daemon.ops.send(tid, prompt)
        await watch.wait_count("turn.completed", len(prompts))
    return watch.last_seq


async def replayed(browser: Browser, path: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The events a thread stream replays, and its ``subscribed`` message."""
    events = []
    async with sse(browser, path) as stream:
        while True:
            _id, message = await stream.next()
            if message.get("kind") == "subscribed":
                return events, message["data"]
            events.append(message)


def stored_bytes(events: list[dict[str, Any]]) -> int:
    return sum(len(orjson.dumps(event["data"])) for event in events)


async def test_a_thread_opens_at_its_last_turns_and_pages_back_to_its_start(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    tid = (await web_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    prompts = [mock_directive({"text": " ".join(f"w{turn}_{k}" for k in range(40)), "deltas": 40, "delay_ms": 2, "chunks": "event"}) for turn in range(4)]
    last = await run_turns(web_daemon, tid, prompts)
    log = await whole_log(browser, tid)
    assert [event["seq"] for event in log] == list(range(1, last + 1))
    starts = [event["seq"] for event in log if event["event"] == "turn.started"]
    assert len(starts) == 4
    n = max(b - a for a, b in zip(starts, [*starts[1:], last + 1]))  # the longest turn's events

    def page_since(before: int) -> int:  # where the page of n events before ``before`` starts
        window = range(max(1, before - n), before)
        if before - 1 <= n:
            return 0
        return min([seq for seq in starts if seq in window] or [window[0]]) - 1

    tail, subscribed = await replayed(browser, f"/api/threads/{tid}/stream?tail={n}")
    # the last n events hold the last turn's start: the tail begins at a turn's start, not mid-turn
    assert subscribed["since"] == page_since(last + 1) and subscribed["since"] + 1 in starts and subscribed["last_seq"] == last
    assert [event["seq"] for event in tail] == list(range(subscribed["since"] + 1, last + 1))

    pages, before = [], subscribed["since"] + 1
    while before > 1:
        page = (await browser.http.get(f"/api/threads/{tid}/earlier?before={before}&limit={n}")).json()
        assert page["before"] == before and page["since"] == page_since(before) and page["events"][-1]["seq"] == before - 1
        assert page["since"] == 0 or page["events"][0]["event"] == "turn.started"
        pages.append(page["events"])
        before = page["since"] + 1
    assert pages and [event for page in reversed(pages) for event in page] + tail == log

    async with sse(browser, f"/api/threads/{tid}/stream?tail={n}") as stream:  # and live after the tail
        await stream.until(lambda m: m.get("kind") == "subscribed")
        await browser.post(f"/api/threads/{tid}/send", {"text": "more"})
        live = await stream.until(lambda m: m.get("event") == "turn.completed")
        assert live["seq"] > last


async def test_the_tail_is_bounded_in_bytes_and_cut_mid_turn_when_one_turn_is_bigger(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    tid = (await web_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    chunk = "x" * 999 + " "
    last = await run_turns(web_daemon, tid, ["small", mock_directive({"repeat": {"chunk": chunk, "count": 400}})])  # ~1.2 MB in one turn
    log = await whole_log(browser, tid)
    tail, subscribed = await replayed(browser, f"/api/threads/{tid}/stream?tail=5000")
    since = subscribed["since"]
    assert tail and [event["seq"] for event in tail] == list(range(since + 1, last + 1))
    big_turn = [event["seq"] for event in log if event["event"] == "turn.started"][-1]
    assert since > big_turn and "turn.started" not in {event["event"] for event in tail}  # no turn start fits: cut inside the turn
    assert stored_bytes(tail) <= TAIL_BYTES < stored_bytes(log[since - 1 :])  # one event more would not fit

    page = (await browser.http.get(f"/api/threads/{tid}/earlier?before={since + 1}&limit=5000")).json()
    assert page["since"] == 0 and page["events"] == log[:since]  # the rest fits in one page
    assert stored_bytes(page["events"]) <= TAIL_BYTES

    bad = await browser.http.get(f"/api/threads/{tid}/stream?tail=0")
    assert bad.status_code == 400 and "tail" in bad.json()["error"]["message"]
    assert (await browser.http.get(f"/api/threads/{tid}/earlier")).status_code == 400
    assert (await browser.http.get("/api/threads/thr_0000000000000000/earlier?before=3")).status_code == 404
    async with sse(browser, f"/api/threads/{tid}/stream?tail=5", **{"Last-Event-ID": str(last - 1)}) as stream:
        _id, event = await stream.next()  # a reconnect resumes after its last id, whatever the tail
        assert event["seq"] == last
