"""The web view's API over real HTTP: every call is an op through the router (the same
checks as the wire), the thread stream replays from any seq and goes live, the overview
stream carries thread objects, approvals and blackboard changes as they change."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import trio

from tests.helpers import Watch, mock_directive
from tests.web.conftest import Browser


class Sse:
    """The messages of one Server-Sent Events response, parsed as they come."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines

    async def next(self, timeout: float = 10) -> tuple[str | None, dict[str, Any]]:
        """(event id, data) of the next message (comments are skipped)."""
        event_id, data = None, []
        with trio.fail_after(timeout):
            async for line in self._lines:
                if line.startswith(":"):
                    continue
                if line.startswith("id: "):
                    event_id = line[4:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and data:
                    return event_id, json.loads("\n".join(data))
        raise AssertionError("the stream ended")

    async def until(self, predicate: Any, timeout: float = 10) -> dict[str, Any]:
        with trio.fail_after(timeout):
            while True:
                _id, data = await self.next(timeout)
                if predicate(data):
                    return data


    async def all_of(self, *predicates: Any, timeout: float = 10) -> None:
        """Until a message has met each predicate, in whatever order they come."""
        left = list(predicates)
        with trio.fail_after(timeout):
            while left:
                _id, data = await self.next(timeout)
                left = [predicate for predicate in left if not predicate(data)]


@asynccontextmanager
async def sse(browser: Browser, path: str, **headers: str) -> AsyncIterator[Sse]:
    async with browser.http.stream("GET", path, headers=headers) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        yield Sse(response.aiter_lines())


async def test_threads_and_controls_go_through_the_ops(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    tid = (await web_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    listed = (await browser.http.get("/api/threads")).json()
    assert [thread["thread_id"] for thread in listed] == [tid] and "waiting_on" in listed[0]
    assert (await browser.http.get(f"/api/threads/{tid}")).json()["state"] == "idle"
    assert (await browser.http.get("/api/threads/thr_0000000000000000")).status_code == 404
    bad = await browser.post(f"/api/threads/{tid}/send", {"text": "hi", "mode": "shout"})
    assert bad.status_code == 400 and "mode" in bad.json()["error"]["message"]  # the wire's own check
    assert (await browser.post(f"/api/threads/{tid}/pause", {})).json()["state"] == "paused"
    ack = (await browser.post(f"/api/threads/{tid}/send", {"text": "later"})).json()
    assert ack["disposition"] == "queued"
    assert (await browser.http.get(f"/api/threads/{tid}/why")).json()["waiting_on"] == {"kind": "paused", "queued": 1}
    async with Watch(web_daemon, tid) as watch:
        assert (await browser.post(f"/api/threads/{tid}/resume", {})).status_code == 200
        await watch.wait_type("turn.completed")
    killed = (await browser.post(f"/api/threads/{tid}/kill", {})).json()
    assert killed["killed"] == [tid]
    refused = await browser.post(f"/api/threads/{tid}/send", {"text": "more"})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "invalid_state"
    assert (await browser.post(f"/api/threads/{tid}/explode", {})).status_code == 404


async def test_the_thread_stream_replays_from_any_seq_then_goes_live(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    tid = (await web_daemon.ops.create_thread(cwd=str(workdir)))["thread_id"]
    async with Watch(web_daemon, tid) as watch:
        await web_daemon.ops.send(tid, "first")
        await watch.wait_type("turn.completed")
    last = watch.last_seq
    async with sse(browser, f"/api/threads/{tid}/stream?since=3") as stream:
        seqs = []
        while len(seqs) < last - 3:
            event_id, event = await stream.next()
            assert event["seq"] == int(str(event_id))
            seqs.append(event["seq"])
        assert seqs == list(range(4, last + 1))
        assert (await stream.next())[1] == {"kind": "subscribed", "data": {"thread_id": tid, "since": 3, "replayed": last - 3, "last_seq": last}}
        await browser.post(f"/api/threads/{tid}/send", {"text": "second"})
        live = await stream.until(lambda e: e.get("event") == "turn.completed")
        assert live["data"]["final_text"] == "mock reply to: second" and live["seq"] > last
    async with sse(browser, f"/api/threads/{tid}/stream?since=0", **{"Last-Event-ID": str(last)}) as stream:
        _id, event = await stream.next()  # a reconnecting EventSource resumes after its last id
        assert event["seq"] == last + 1
    far = await browser.http.get(f"/api/threads/{tid}/stream?since=99999")
    assert far.status_code == 400 and "beyond the thread's last seq" in far.json()["error"]["message"]


async def test_the_overview_streams_threads_approvals_and_the_blackboard(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    tid = (await web_daemon.ops.create_thread(cwd=str(workdir), approval="always"))["thread_id"]
    async with sse(browser, "/api/stream") as stream:
        snapshot = await stream.until(lambda m: m.get("kind") == "threads")
        assert [thread["thread_id"] for thread in snapshot["data"]] == [tid]
        assert (await stream.next())[1] == {"kind": "approvals", "data": []}
        await web_daemon.ops.send(tid, mock_directive([{"calls": [{"name": "exec_command", "arguments": {"cmd": "true"}}]}, {"text": "ok"}]))
        seen: dict[str, Any] = {}

        def asked(message: dict[str, Any]) -> bool:
            if message.get("kind") == "approvals" and message["data"]:
                seen["approvals"] = message["data"]
            return "approvals" in seen

        def waiting(message: dict[str, Any]) -> bool:
            if message.get("kind") == "thread" and (message["data"]["waiting_on"] or {}).get("kind") == "approval":
                seen["waiting_on"] = message["data"]["waiting_on"]
            return "waiting_on" in seen

        await stream.all_of(asked, waiting, timeout=4)  # at once, not at the next periodic refresh
        request_id = seen["approvals"][0]["request_id"]
        assert seen["waiting_on"]["request_id"] == request_id
        assert (await browser.http.get("/api/approvals")).json()[0]["request_id"] == request_id
        decided = await browser.post(f"/api/approvals/{request_id}", {"decision": "approve"})
        assert decided.json() == {"request_id": request_id, "decision": "approve", "thread_id": tid}
        await stream.all_of(  # in the order one pass of the overview sends them
            lambda m: m.get("kind") == "approvals" and not m["data"],
            lambda m: m.get("kind") == "thread" and m["data"]["state"] == "idle" and m["data"]["usage"]["turns"] == 1,
        )
        await web_daemon.ops.blackboard_set("team/plan", {"steps": 2})
        change = await stream.until(lambda m: m.get("event") == "blackboard.changed")
        assert change["data"]["key"] == "team/plan" and change["data"]["value"] == {"steps": 2} and change["thread_id"] is None
    listed = (await browser.http.get("/api/blackboard?prefix=team/")).json()
    assert [entry["key"] for entry in listed] == ["team/plan"]
    assert (await browser.post(f"/api/approvals/{request_id}", {"decision": "approve"})).status_code == 404


async def test_an_approval_approved_for_the_thread_stops_asking_for_its_command(web_daemon: Any, browser: Browser, workdir: Any) -> None:
    tid = (await web_daemon.ops.create_thread(cwd=str(workdir), approval="always"))["thread_id"]
    touch = [{"calls": [{"name": "exec_command", "arguments": {"cmd": f"touch {name}", "prefix_rule": ["touch"]}}]} for name in ("one", "two")]
    compound = [{"calls": [{"name": "exec_command", "arguments": {"cmd": "touch three && touch four"}}]}]
    async with sse(browser, "/api/stream") as stream, Watch(web_daemon, tid) as watch:
        await web_daemon.ops.send(tid, mock_directive([*touch, *compound, {"text": "ok"}]))
        listed = await stream.until(lambda m: m.get("kind") == "approvals" and m["data"])
        first = listed["data"][0]
        assert first["rule"] == ["touch"] and "touch one" in first["summary"]
        decided = await browser.post(f"/api/approvals/{first['request_id']}", {"decision": "approve", "always": True})
        assert decided.json() == {"request_id": first["request_id"], "decision": "approve", "thread_id": tid, "always": True, "rule": ["touch"]}
        # `touch two` runs without asking; the compound command asks, and has no rule to approve for the thread
        listed = await stream.until(lambda m: m.get("kind") == "approvals" and m["data"] and m["data"][0]["request_id"] != first["request_id"])
        second = listed["data"][0]
        assert second["rule"] is None and "touch three" in second["summary"]
        refused = await browser.post(f"/api/approvals/{second['request_id']}", {"decision": "approve", "always": True})
        assert refused.status_code == 409 and "approve it once" in refused.json()["error"]["message"]
        assert (await browser.post(f"/api/approvals/{second['request_id']}", {"decision": "deny"})).status_code == 200
        await watch.wait_type("turn.completed")
    assert (workdir / "one").exists() and (workdir / "two").exists() and not (workdir / "three").exists()
    assert len(watch.of_type("approval.requested")) == 2
    assert (await browser.http.get(f"/api/threads/{tid}")).json()["config"]["approval_allow"] == [["touch"]]
