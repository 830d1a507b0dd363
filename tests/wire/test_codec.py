"""The frame codec: every frame either decodes to a request or fails with a clean error."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from echsd.wire import codec

scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text(max_size=20) | st.binary(max_size=20)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


@given(st.integers(-(2**63), 2**63 - 1), st.text(min_size=1, max_size=30), st.dictionaries(st.text(max_size=10), values, max_size=5))
def test_requests_round_trip(request_id: int, op: str, params: dict[str, Any]) -> None:
    request = codec.decode_request(codec.encode_request(request_id, op, params))
    assert (request.id, request.op, request.params) == (request_id, op, params)


@given(st.binary(max_size=200))
@settings(max_examples=500)
def test_random_bytes_never_escape_as_other_errors(data: bytes) -> None:
    try:
        codec.decode_request(data)
    except (codec.FrameError, codec.RequestError):
        pass


@given(values)
def test_any_value_decodes_or_errors_cleanly(value: Any) -> None:
    data = msgpack.packb(value, use_bin_type=True)
    try:
        request = codec.decode_request(data)
    except codec.FrameError:
        assert not isinstance(value, dict)
    except codec.RequestError as exc:
        assert isinstance(value, dict)
        assert exc.code == "bad_request"
        assert exc.request_id is None or exc.request_id == value.get("id")
    else:
        assert isinstance(value, dict) and request.id == value["id"]


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ("text", "text frames"),
        (b"\xc1", "undecodable"),
        (msgpack.packb([1, 2]), "must hold a map"),
        (msgpack.packb({"op": "status"}), "'id' must be an integer"),
        (msgpack.packb({"id": True, "op": "status"}), "'id' must be an integer"),
        (msgpack.packb({"id": 1.5, "op": "status"}), "'id' must be an integer"),
        (msgpack.packb({"id": 1}), "'op' must be"),
        (msgpack.packb({"id": 1, "op": "status", "params": [1]}), "'params' must be a map"),
        (msgpack.packb({"id": 1, "op": "status", "extra": 1}), "unknown request field(s): extra"),
        (msgpack.packb({"id": 1, "op": "x"}) + b"\x00", "undecodable"),
    ],
)
def test_bad_frames(frame: Any, message: str) -> None:
    with pytest.raises((codec.FrameError, codec.RequestError)) as info:
        codec.decode_request(frame)
    assert message in str(info.value)


def test_missing_params_mean_empty() -> None:
    assert codec.decode_request(msgpack.packb({"id": 3, "op": "status"})).params == {}


@pytest.mark.parametrize("count", [1, 2, 15, 16, 17, 65535, 65536, 70000])
def test_batches_are_what_msgpack_would_encode(count: int) -> None:
    events = [{"event": "turn.delta", "thread_id": "thr_1", "seq": i, "ts": 1.0, "data": {"delta": "x"}} for i in range(count)]
    encoded = [codec.packb(e) for e in events]
    frame = codec.encode_batch(encoded, count)
    halves = [b"".join(encoded[: count // 2]), b"".join(encoded[count // 2 :])]
    assert count == 1 or codec.encode_batch(halves, count) == frame  # parts may hold several
    expected = events[0] if count == 1 else {"events": events}
    assert msgpack.unpackb(frame, raw=False) == expected
    responses, split = codec.split_frame(frame)
    assert responses == [] and split == events


def test_split_frame_tells_responses_from_events() -> None:
    assert codec.split_frame(codec.encode_result(4, {"a": 1})) == ([{"id": 4, "ok": True, "result": {"a": 1}}], [])
    error = codec.encode_error(None, "bad_request", "nope")
    assert codec.split_frame(error)[0][0]["error"] == {"code": "bad_request", "message": "nope"}
    with pytest.raises(codec.FrameError):
        codec.split_frame("text")
