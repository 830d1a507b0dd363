"""Every param is checked at the wire: types, sizes and nesting give `bad_request` naming
the limit, never `internal`, and never a worker crash; subscribe refuses a `since` the
thread has not reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import pytest
import trio

from echsd.wire.params import MAX_DEPTH, ParamsError
from echsd.wire.schema import OPS_BY_NAME
from tests.wire.helpers import WAIT_S, raw_connection, token_of


def _nested(depth: int) -> Any:
    value: Any = "high"
    for _ in range(depth):
        value = {"effort": value}
    return value


BAD_CONFIGS = [
    ({"cwd": "~nosuchuser/project"}, "no user 'nosuchuser'"),
    ({"cwd": "/" + "a" * 5000}, "the limit is 4,095"),
    ({"cwd": "/tmp/" + "b" * 300}, "255 bytes per component"),
    ({"cwd": "/tmp/nul\0byte"}, "NUL"),
    ({"reasoning": _nested(100)}, f"more than {MAX_DEPTH} levels"),
    ({"reasoning": _nested(3)}, "'reasoning' must be a string"),
    ({"model": "m" * 300}, "the limit is 256"),
    ({"model": "gpt\n5"}, "control characters"),
    ({"instructions": "i" * 262_145}, "262,145 characters long; the limit is 262,144"),
    ({"tools": ["exec_command"] * 300}, "the limit is 256"),
    ({"tools": 5}, "'tools' must be a list"),
    ({}, "empty"),
]


@pytest.mark.parametrize(("config", "message"), BAD_CONFIGS, ids=[m for _, m in BAD_CONFIGS])
async def test_bad_config_is_a_bad_request_and_the_thread_lives_on(wired: Any, tmp_path: Path, config: dict[str, Any], message: str) -> None:
    tid = (await wired.ops.create_thread(cwd=str(tmp_path)))["thread_id"]
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        answer = await raw.request("thread.configure", {"thread_id": tid, "config": config})
        assert answer["error"]["code"] == "bad_request" and message in answer["error"]["message"], answer
        if config:
            created = await raw.request("thread.create", config)
            assert created["error"]["code"] == "bad_request" and message in created["error"]["message"], created
        assert (await raw.request("thread.configure", {"thread_id": tid, "config": {"reasoning": "low"}}))["ok"]
        assert (await raw.request("thread.kill", {"thread_id": tid}))["ok"]


async def test_non_string_config_keys_and_deep_frames_are_bad_requests(wired: Any, tmp_path: Path) -> None:
    tid = (await wired.ops.create_thread(cwd=str(tmp_path)))["thread_id"]
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        for key in (1, 2.5, b"cwd", None, True):
            frame = msgpack.packb({"id": 7, "op": "thread.configure", "params": {"thread_id": tid, "config": {key: "x"}}})
            await raw.send(frame)
            answer = await raw.response()
            assert answer["error"]["code"] == "bad_request" and "non-string key" in answer["error"]["message"], answer
        frame = msgpack.packb({"id": 8, "op": "thread.configure", "params": {"thread_id": tid, "config": {"tools": "DEEP"}}})
        for depth in (MAX_DEPTH + 1, 500, 5000):  # 5000: deeper than msgpack itself decodes
            await raw.send(frame.replace(msgpack.packb("DEEP"), b"\x91" * depth + b"\x01"))
            answer = await raw.response()
            assert answer["error"]["code"] == "bad_request", answer
        assert (await raw.request("thread.kill", {"thread_id": tid}))["ok"]


@pytest.mark.parametrize(
    ("op", "params", "message"),
    [
        ("thread.events", {"since": 2**63}, "out of range"),
        ("thread.events", {"since": 2**64 - 1}, "out of range"),
        ("thread.events", {"limit": 2**63}, "out of range"),
        ("subscribe", {"since": 2**63}, "out of range"),
        ("thread.send", {"text": "t" * 1_048_577}, "the limit is 1,048,576"),
        ("thread.send", {"text": "   "}, "'text' must be a non-empty string"),
        ("thread.send", {"text": "hi", "client_msg_id": "c" * 257}, "the limit is 256"),
        ("thread.history", {"limit": 10_001}, "out of range"),
        ("thread.history", {"offset": -1}, "'offset' must be an integer >= 0"),
    ],
)
async def test_out_of_range_params_are_bad_requests(wired: Any, tmp_path: Path, op: str, params: dict[str, Any], message: str) -> None:
    tid = (await wired.ops.create_thread(cwd=str(tmp_path)))["thread_id"]
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        answer = await raw.request(op, {"thread_id": tid, **params})
        assert answer["error"]["code"] == "bad_request" and message in answer["error"]["message"], answer
        assert (await raw.request("thread.get", {"thread_id": tid}))["ok"]


def test_limits_are_named_in_the_error() -> None:
    with pytest.raises(ParamsError, match=r"param 'instructions' is 300,000 characters long; the limit is 262,144"):
        OPS_BY_NAME["thread.create"].validate({"instructions": "x" * 300_000})
    with pytest.raises(ParamsError, match=r"param 'cwd' is a path of 5,001 bytes; the limit is 4,095"):
        OPS_BY_NAME["thread.create"].validate({"cwd": "/" + "x" * 5000})
    with pytest.raises(ParamsError, match=r"param 'config' is not valid: config 'model' is 300 characters long"):
        OPS_BY_NAME["thread.configure"].validate({"thread_id": "t", "config": {"model": "m" * 300}})
    assert OPS_BY_NAME["thread.configure"].validate({"thread_id": "t", "config": {"chain": True}})  # the thread layer judges keys it owns


async def test_subscribe_beyond_the_last_seq_is_refused_and_live_events_flow(wired: Any, tmp_path: Path) -> None:
    tid = (await wired.ops.create_thread(cwd=str(tmp_path)))["thread_id"]
    last = (await wired.ops.get_thread(tid))["last_seq"]
    async with raw_connection(wired) as raw:
        await raw.hello(token_of(wired))
        refused = await raw.request("subscribe", {"thread_id": tid, "since": last + 50})
        assert refused["error"]["code"] == "bad_request" and f"last seq ({last})" in refused["error"]["message"]
        answer = await raw.request("subscribe", {"thread_id": tid, "since": last})
        assert answer["ok"] and answer["result"]["last_seq"] == last
        await raw.request("thread.pause", {"thread_id": tid})
        with trio.fail_after(WAIT_S):
            while not any(e["event"] == "thread.state" and e["seq"] == last + 1 for e in raw.events):
                message = await raw.receive()
                raw.events.extend(message.get("events", [message]))
