"""The blackboard over the wire: ``blackboard.get|set|list|delete`` (versions, compare-and-set,
tombstones, paging), bad input refused with clear errors, and ``subscribe {blackboard}``:
a replay/live seam with no gap or duplicate, overlapping prefixes, backpressure, and the
client library's stream across a daemon restart."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgpack
import pytest
import trio

from echsd.wire.client import WireError, connect
from tests.wire.helpers import ServeProcess, raw_connection, start_daemon, stop_daemon, token_of

ENTRY_FIELDS = {"key", "value", "version", "writer", "updated_at"}


async def error_of(call: Any) -> WireError:
    with pytest.raises(WireError) as info:
        await call
    return info.value


async def test_set_get_list_delete_and_versions(client: Any) -> None:
    first = await client.blackboard_set("team/plan", {"steps": ["a"]})
    assert set(first) == ENTRY_FIELDS and first["version"] == 1 and first["writer"] is None
    second = await client.blackboard_set("team/plan", {"steps": ["a", "b"]}, if_version=1)
    assert second["version"] == 2 and second["updated_at"] >= first["updated_at"]
    assert await client.blackboard_get("team/plan") == second
    await client.blackboard_set("team/notes", "text")
    await client.blackboard_set("teamwork", None)  # null is a value like any other
    await client.blackboard_set("other", [1, 2.5, True, {"deep": {"er": []}}])
    assert (await client.blackboard_get("teamwork"))["value"] is None

    assert [e["key"] for e in await client.blackboard_list("team/")] == ["team/notes", "team/plan"]
    assert [e["key"] for e in await client.blackboard_list("team")] == ["team/notes", "team/plan", "teamwork"]
    assert [e["key"] for e in await client.blackboard_list()] == ["other", "team/notes", "team/plan", "teamwork"]
    page = await client.blackboard_list("team", limit=2)
    assert [e["key"] for e in page["items"]] == ["team/notes", "team/plan"] and page["next_offset"] == 2 and page["total"] == 3
    rest = await client.blackboard_list("team", offset=2)
    assert [e["key"] for e in rest["items"]] == ["teamwork"] and rest["next_offset"] is None

    gone = await client.blackboard_delete("team/plan", if_version=2)
    assert gone["deleted"] is True and gone["value"] is None and gone["version"] == 3
    assert (await error_of(client.blackboard_get("team/plan"))).code == "not_found"
    assert (await error_of(client.blackboard_delete("team/plan"))).code == "not_found"
    assert "team/plan" not in [e["key"] for e in await client.blackboard_list()]
    # Re-created, the key's version goes on from its tombstone (watchers rely on it).
    again = await client.blackboard_set("team/plan", "new", if_version=0)
    assert again["version"] == 4


async def test_compare_and_set_failures_change_nothing(client: Any) -> None:
    await client.blackboard_set("k", 1)
    conflict = await error_of(client.blackboard_set("k", 2, if_version=0))
    assert conflict.code == "conflict" and "at version 1" in conflict.message
    assert (await error_of(client.blackboard_set("k", 2, if_version=5))).code == "conflict"
    assert (await error_of(client.blackboard_delete("k", if_version=2))).code == "conflict"
    assert (await error_of(client.blackboard_set("absent", 1, if_version=1))).code == "conflict"
    assert await client.blackboard_get("k") == {**await client.blackboard_get("k"), "value": 1, "version": 1}
    assert (await error_of(client.blackboard_get("absent"))).code == "not_found"


async def test_racing_writers_with_if_version_one_wins(wired: Any) -> None:
    state = wired.settings.state_dir
    async with connect(state_dir=state) as a, connect(state_dir=state) as b:
        base = await a.blackboard_set("race", "start")
        for round_ in range(20):
            outcomes: list[str] = []

            async def write(client: Any, name: str) -> None:
                try:
                    await client.blackboard_set("race", f"{name}{round_}", if_version=base["version"])
                    outcomes.append("ok")
                except WireError as exc:
                    outcomes.append(exc.code)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(write, a, "a")
                nursery.start_soon(write, b, "b")
            assert sorted(outcomes) == ["conflict", "ok"]
            now = await a.blackboard_get("race")
            assert now["version"] == base["version"] + 1 and now["value"] in (f"a{round_}", f"b{round_}")
            base = now


async def test_bad_input_gets_clear_errors(wired: Any, client: Any) -> None:
    limit = wired.settings.tuning.blackboard_max_value_bytes
    huge = await error_of(client.blackboard_set("big", "x" * limit))
    assert huge.code == "bad_request" and "blackboard_max_value_bytes" in huge.message and f"{limit:,}" in huge.message
    long_key = await error_of(client.blackboard_set("k" * 600, 1))
    assert long_key.code == "bad_request" and "the limit is 512 bytes" in long_key.message
    assert "control characters" in (await error_of(client.blackboard_set("a\nb", 1))).message
    assert (await error_of(client.blackboard_get(""))).code == "bad_request"
    missing = await error_of(client.request("blackboard.set", {"key": "k"}))
    assert missing.code == "bad_request" and "value" in missing.message
    both = await error_of(client.subscribe("thr_0000000000000000", blackboard="x"))
    assert both.code == "bad_request" and "exactly one" in both.message
    assert (await error_of(client.request("subscribe", {"blackboard": "", "since": 10**6}))).code == "bad_request"

    async with raw_connection(wired) as raw:  # values a msgpack client can send that are not JSON
        await raw.hello(token_of(wired))
        cases = {
            "int key": {"key": 7, "value": 1},
            "binary value": {"key": "k", "value": b"\x00\x01"},
            "int map key": {"key": "k", "value": {1: "one"}},
            "nan": {"key": "k", "value": {"x": [math.nan]}},
            "ext type": {"key": "k", "value": msgpack.ExtType(5, b"x")},
        }
        messages = {}
        for name, params in cases.items():
            answer = await raw.request("blackboard.set", params)
            assert answer["ok"] is False and answer["error"]["code"] == "bad_request", name
            messages[name] = answer["error"]["message"]
    assert "param 'key' must be a non-empty string" in messages["int key"]
    assert messages["binary value"] == "value is not JSON: Type is not JSON serializable: bytes"
    assert messages["int map key"] == "value is not JSON: a map key is not a string"
    assert messages["nan"] == "value is not JSON: it holds NaN or an infinity"
    assert "value is not JSON" in messages["ext type"]
    assert [e["key"] for e in await client.blackboard_list()] == []  # nothing was written


async def collect(stream: Any, count: int, timeout: float = 15.0) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    with trio.fail_after(timeout):
        async for event in stream:
            got.append(event)
            if len(got) == count:
                return got
    raise AssertionError("stream ended")


async def test_subscribe_replays_then_goes_live_with_no_gap_or_duplicate(wired: Any, client: Any) -> None:
    state = wired.settings.state_dir
    for i in range(30):
        await client.blackboard_set(f"a/{i % 3}", i)
        await client.blackboard_set(f"b/{i % 3}", i)
    async with connect(state_dir=state) as writer, raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        done = trio.Event()

        async def keep_writing() -> None:
            for i in range(30, 200):
                await writer.blackboard_set(f"a/{i % 3}", i)
                await writer.blackboard_set(f"b/{i % 3}", i)
            done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(keep_writing)
            answer = await raw.request("subscribe", {"blackboard": "a/", "since": 10})
            assert answer["ok"] and answer["result"]["thread_id"] is None and answer["result"]["blackboard"] == "a/"
            replayed_up_to = answer["result"]["last_seq"]
            assert all(e["seq"] <= replayed_up_to for e in raw.events)  # the answer follows its replay
            await done.wait()
        await writer.blackboard_set("a/end", "end")
        with trio.fail_after(15):
            while not raw.events or raw.events[-1]["data"]["key"] != "a/end":
                message = await raw.receive()
                raw.events.extend(message.get("events", [message]))
    events = raw.events
    assert all(e["event"] == "blackboard.changed" and e["thread_id"] is None and e["blackboard"] == "a/" for e in events)
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs)) and seqs[0] > 10
    assert {e["data"]["key"] for e in events} <= {"a/0", "a/1", "a/2", "a/end"}
    # Exactly the a/ changes after seq 10: the writes alternate a/, b/, so a/ has the odd seqs.
    assert seqs == [s for s in range(11, seqs[-1] + 1) if s % 2 == 1]
    versions: dict[str, int] = {}
    for event in events:
        data = event["data"]
        assert data["version"] > versions.get(data["key"], 0) and data["deleted"] is False
        versions[data["key"]] = data["version"]


async def test_overlapping_prefixes_and_unsubscribe(wired: Any, client: Any) -> None:
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        assert (await raw.request("subscribe", {"blackboard": "x"}))["ok"]
        assert (await raw.request("subscribe", {"blackboard": "x/y"}))["ok"]
        await client.blackboard_set("x/y/1", 1)
        await client.blackboard_set("x/z", 2)
        await client.blackboard_delete("x/y/1")
        assert (await raw.request("unsubscribe", {"blackboard": "x"}))["result"] == {"thread_id": None, "blackboard": "x", "subscribed": False}
        await client.blackboard_set("x/y/2", 3)
        await client.blackboard_set("x/w", 4)
        await raw.request("status")
    seen = [(e["blackboard"], e["data"]["key"], e["data"]["deleted"]) for e in raw.events]
    assert seen == [
        ("x", "x/y/1", False),
        ("x/y", "x/y/1", False),
        ("x", "x/z", False),
        ("x", "x/y/1", True),
        ("x/y", "x/y/1", True),
        ("x/y", "x/y/2", False),
    ]


async def test_a_slow_blackboard_subscriber_gets_a_gap_and_the_stream_refills_it(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> None:
    daemon = await start_daemon(nursery, tmp_path / "state", mock_upstream.base_url, tuning={"client_queue_events": 100})
    state = daemon.settings.state_dir
    async with connect(state_dir=state) as writer, connect(state_dir=state) as watcher:
        async with raw_connection(daemon) as raw:
            await raw.hello(token_of(daemon))
            await raw.request("subscribe", {"blackboard": "", "since": 0})
            async with trio.open_nursery() as writers:  # the raw client reads nothing meanwhile
                for n in range(4):
                    writers.start_soon(_write_many, writer, f"w{n}/", 400)
            await writer.blackboard_set("last", True)
            total = 4 * 400 + 1
            with trio.fail_after(15):  # read until the last change arrived, or a gap covering it
                while not any(e["seq"] == total or e["data"].get("to_seq") == total for e in raw.events):
                    message = await raw.receive()
                    raw.events.extend(message.get("events", [message]))
            gaps = [e for e in raw.events if e["event"] == "events.gap"]
            assert gaps and all(g["thread_id"] is None and g["blackboard"] == "" and g["data"]["reason"] == "backpressure" for g in gaps)
        async with watcher.blackboard_events("", since=0, max_queued=50) as stream:
            events = await collect(stream, total)
    assert [e["seq"] for e in events] == list(range(1, total + 1))
    await stop_daemon(daemon)


async def _write_many(client: Any, prefix: str, count: int) -> None:
    for i in range(count):
        await client.blackboard_set(f"{prefix}{i % 7}", {"i": i, "pad": "p" * 200})


async def test_client_stream_survives_a_daemon_restart(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> None:
    state = tmp_path / "state"
    daemon = await start_daemon(nursery, state, mock_upstream.base_url)
    async with connect(state_dir=state) as client:
        for i in range(5):
            await client.blackboard_set("k/a", i)
        stream = client.blackboard_events("k/", since=2)
        async with stream:
            first = await collect(stream, 3)
            await stop_daemon(daemon)
            daemon = await start_daemon(nursery, state, mock_upstream.base_url)
            async with connect(state_dir=state) as other:
                for i in range(5, 8):
                    await other.blackboard_set("k/b", i)
                await other.blackboard_set("elsewhere", 0)
                await other.blackboard_set("k/a", "last")
            rest = await collect(stream, 4)
        async with client.blackboard_events("k/") as live:  # live only: from the next change on
            got: list[dict[str, Any]] = []
            arrived = trio.Event()

            async def consume() -> None:
                got.extend(await collect(live, 1))
                arrived.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(consume)
                with trio.fail_after(15):
                    while not arrived.is_set():  # until the stream (subscribing meanwhile) sees one
                        await client.blackboard_set("k/c", "live")
    events = first + rest
    assert [e["seq"] for e in events] == [3, 4, 5, 6, 7, 8, 10]
    assert [e["data"]["value"] for e in events] == [2, 3, 4, 5, 6, 7, "last"]
    assert got[0]["data"]["key"] == "k/c" and got[0]["seq"] > 10  # nothing from before it subscribed
    await stop_daemon(daemon)


async def test_entries_and_their_log_survive_sigkill(tmp_path: Path) -> None:
    """Writes acknowledged before a SIGKILL are all there after a restart, each key's log of
    changes matches its entry, and versions and seqs go on from where they were."""
    state = tmp_path / "state"
    serve = ServeProcess(state)
    acked: dict[str, int] = {}
    enough = trio.Event()

    async def write_until_killed(client: Any, n: int) -> None:
        try:
            for i in range(100_000):
                entry = await client.blackboard_set(f"k{n}/{i % 5}", {"n": n, "i": i})
                acked[entry["key"]] = max(acked.get(entry["key"], 0), entry["version"])
                if sum(acked.values()) >= 300:
                    enough.set()
        except WireError:
            return  # the daemon is gone

    try:
        async with connect(state_dir=state) as client:
            async with trio.open_nursery() as nursery:
                for n in range(4):
                    nursery.start_soon(write_until_killed, client, n)
                with trio.fail_after(30):
                    await enough.wait()
                serve.sigkill()  # mid-burst
    finally:
        serve.sigkill()
    again = ServeProcess(state)
    try:
        async with connect(state_dir=state) as client:
            entries = {e["key"]: e for e in await client.blackboard_list()}
            for key, version in acked.items():
                assert entries[key]["version"] >= version, f"{key}: acknowledged version {version} was lost"
            last_seq = sum(e["version"] for e in entries.values())  # no deletes: one seq per version
            async with client.blackboard_events("", since=0) as stream:
                changes = await collect(stream, last_seq)
            assert [c["seq"] for c in changes] == list(range(1, last_seq + 1))
            latest = {c["data"]["key"]: c["data"] for c in changes}
            for key, entry in entries.items():
                assert (latest[key]["version"], latest[key]["value"]) == (entry["version"], entry["value"])
                assert [c["data"]["version"] for c in changes if c["data"]["key"] == key] == list(range(1, entry["version"] + 1))
            some = next(iter(entries.values()))
            after = await client.blackboard_set(some["key"], "after", if_version=some["version"])
            assert after["version"] == some["version"] + 1
            async with client.blackboard_events("", since=last_seq) as stream:
                [next_change] = await collect(stream, 1)
            assert next_change["seq"] == last_seq + 1
    finally:
        again.stop()
