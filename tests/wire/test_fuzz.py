"""Thousands of random and mutated frames against ``echsd serve``: every one is answered
with an error, the daemon stays up, and no thread changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import msgpack
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio_websocket import wrap_client_stream

from echsd.wire.client import connect
from echsd.wire.schema import OPS
from tests.wire.helpers import WAIT_S, ServeProcess

GHOST = "thr_" + "f" * 16  # a well-formed id no thread has
# Ops that could succeed without a thread id are left out: they would change nothing, but
# this test asserts that every frame is refused.
FUZZ_OPS = [spec.op_name for spec in OPS if "thread_id" in spec.by_name and spec.by_name["thread_id"].required] + ["hello", "blackboard.get", "nope"]
PARAM_NAMES = sorted({p.name for spec in OPS for p in spec.params}) + ["bogus"]

texts = st.text(max_size=40).filter(lambda s: s != "*")
scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | texts | st.binary(max_size=30)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3), max_leaves=8)
ids = st.integers(-(2**63), 2**63 - 1) | scalars
params = st.dictionaries(st.sampled_from(PARAM_NAMES) | texts, values | st.just(GHOST), max_size=4)
requests = st.fixed_dictionaries({"id": ids, "op": st.sampled_from(FUZZ_OPS) | texts, "params": params | values})
templates = st.sampled_from(
    [
        {"id": 7, "op": "thread.send", "params": {"thread_id": GHOST, "text": "hi", "mode": "queue"}},
        {"id": 8, "op": "thread.kill", "params": {"thread_id": GHOST}},
        {"id": 9, "op": "subscribe", "params": {"thread_id": GHOST, "since": 0}},
        {"id": 10, "op": "thread.configure", "params": {"thread_id": GHOST, "config": {"model": "m"}}},
    ]
)


@st.composite
def mutated(draw: Any) -> bytes:
    data = bytearray(msgpack.packb(draw(templates)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        at = draw(st.integers(0, len(data) - 1)) if data else 0
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "delete" and data:
            del data[at : at + draw(st.integers(1, 4))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif data:
            del data[at:]
    return bytes(data)


frames = st.one_of(
    st.binary(max_size=200),
    texts,
    values.map(lambda v: msgpack.packb(v, use_bin_type=True)),
    requests.map(lambda r: msgpack.packb(r, use_bin_type=True)),
    mutated(),
)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: Any) -> Iterator[dict[str, Any]]:
    state: Path = tmp_path_factory.mktemp("fuzz") / "state"
    process = ServeProcess(state)

    async def snapshot() -> dict[str, Any]:
        async with connect(state_dir=state) as client:
            threads = await client.list_threads()
            events = {t["thread_id"]: await client.thread_events(t["thread_id"]) for t in threads}
            return {"threads": threads, "events": events}

    async def prepare() -> None:
        async with connect(state_dir=state) as client:
            thread = await client.create_thread(cwd=str(state.parent))
            await client.send(thread["thread_id"], "hello")

    trio.run(prepare)
    info = {"state": state, "token": (state / "token").read_text().strip(), "snapshot": snapshot}
    try:
        yield info
    finally:
        assert process.stop() == 0


async def _fire(daemon: dict[str, Any], batch: list[bytes | str]) -> list[dict[str, Any]]:
    async with trio.open_nursery() as nursery:
        stream = await trio.open_unix_socket(str(daemon["state"] / "echsd.sock"))
        ws = await wrap_client_stream(nursery, stream, "localhost", "/v1")
        await ws.send_message(msgpack.packb({"id": 0, "op": "hello", "params": {"protocol": 1, "token": daemon["token"]}}))
        assert msgpack.unpackb(await ws.get_message())["ok"]
        answers = []
        with trio.fail_after(WAIT_S):
            for frame in batch:
                await ws.send_message(frame)
            while len(answers) < len(batch):
                message = msgpack.unpackb(await ws.get_message(), raw=False, strict_map_key=False)
                if "event" not in message and "events" not in message:
                    answers.append(message)
        await ws.aclose()
        nursery.cancel_scope.cancel()
    return answers


@given(st.lists(frames, min_size=10, max_size=60))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
def test_random_frames_are_refused_one_by_one(daemon: dict[str, Any], batch: list[bytes | str]) -> None:
    answers = trio.run(_fire, daemon, batch)
    assert [a.get("ok") for a in answers] == [False] * len(batch)
    for answer in answers:
        assert set(answer) == {"id", "ok", "error"}
        assert answer["error"]["code"] in ("bad_request", "unknown_op", "not_found") and answer["error"]["message"]


def test_nothing_changed(daemon: dict[str, Any]) -> None:
    before = trio.run(daemon["snapshot"])
    trio.run(_fire, daemon, [b"\x00", "text", msgpack.packb({"id": 1, "op": "thread.kill", "params": {"thread_id": GHOST}})])
    after = trio.run(daemon["snapshot"])
    assert before == after
    assert len(after["threads"]) == 1 and after["threads"][0]["state"] == "idle"
