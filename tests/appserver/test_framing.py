"""Sans-IO parts at the edge: thread UUIDs, frame decoding, the handshake, the outbox."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from echsd.appserver import framing
from echsd.appserver.handshake import check_handshake
from echsd.wire.handshake import bearer_token
from echsd.appserver.ids import thread_id_of, thread_uuid
from echsd.appserver.outbox import Outbox

HEX16 = st.text("0123456789abcdef", min_size=16, max_size=16)


@given(HEX16)
def test_a_thread_uuid_is_a_uuid_that_names_its_thread(digits: str) -> None:
    thread_id = "thr_" + digits
    value = thread_uuid(thread_id)
    parsed = uuid.UUID(value)
    assert str(parsed) == value and parsed.version == 8 and parsed.variant == uuid.RFC_4122
    assert thread_id_of(value) == thread_id == thread_id_of(thread_id) == thread_id_of(value.upper())


@pytest.mark.parametrize("ref", [None, 7, "", "thr_123", str(uuid.uuid4()), "ec45d000-0000-8000-9123-456789abcdef", "THR_X"])
def test_other_references_name_no_thread(ref: object) -> None:
    assert thread_id_of(ref) is None


def test_decode_sorts_frames() -> None:
    assert framing.decode('{"id": 3, "method": "a/b"}') == framing.Request(3, "a/b", {})
    assert framing.decode('{"id": "x", "method": "a", "params": {"k": 1}}') == framing.Request("x", "a", {"k": 1})
    assert framing.decode('{"method": "initialized"}') == framing.Notification("initialized", None)
    assert framing.decode(b'{"id": 0, "result": {"decision": "accept"}}') == framing.Response(0, {"decision": "accept"}, None)
    assert framing.decode('{"id": 0, "error": {"code": 1, "message": "m"}}').error == {"code": 1, "message": "m"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("frame", "code", "has_id"),
    [
        ("nope", framing.PARSE_ERROR, False),
        ("[]", framing.INVALID_REQUEST, False),
        ('{"id": true, "method": "a"}', framing.INVALID_REQUEST, False),
        ('{"id": 1, "method": ""}', framing.INVALID_REQUEST, True),
        ('{"id": 1, "method": "a", "params": "x"}', framing.INVALID_PARAMS, True),
        ('{"id": 2}', framing.INVALID_REQUEST, True),
        ("{}", framing.INVALID_REQUEST, False),
    ],
)
def test_decode_says_what_is_wrong(frame: str, code: int, has_id: bool) -> None:
    problem = framing.decode(frame)
    assert isinstance(problem, framing.FrameProblem) and problem.code == code and problem.message
    assert (problem.id is not None) == has_id


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)))
def test_decode_never_raises(value: object) -> None:
    import json

    framing.decode(json.dumps(value))


def test_encode_has_no_jsonrpc_key() -> None:
    assert framing.encode(framing.result(1, {})) == '{"id":1,"result":{}}'
    assert framing.encode(framing.error("a", -32601, "m")) == '{"id":"a","error":{"code":-32601,"message":"m"}}'
    assert framing.encode(framing.notification("n", {"x": 1})) == '{"method":"n","params":{"x":1}}'


def _check(path: str = "/", host: str | None = "127.0.0.1:5", headers: list[tuple[bytes, bytes]] | None = None, transport: str = "tcp", allow_remote: bool = False) -> int | None:
    given = [(b"authorization", b"Bearer tok")] if headers is None else headers
    refusal = check_handshake(path, host, given, transport, expected_token="tok", allow_remote=allow_remote)
    return None if refusal is None else refusal.status


def test_handshake_rules() -> None:
    assert _check() is None and _check("/rpc") is None and _check(host="localhost") is None and _check(host="[::1]:9") is None
    assert _check(headers=[]) == 401
    assert _check(headers=[(b"Authorization", b"Bearer other")]) == 401
    assert _check(host="evil.example") == 403
    assert _check(host="evil.example", allow_remote=True) is None  # the token still guards it
    assert _check(headers=[(b"authorization", b"Bearer tok"), (b"origin", b"http://x")]) == 403
    assert _check("/v1") == 404
    assert _check(headers=[], transport="unix", host="anything") is None
    assert bearer_token([(b"AUTHORIZATION", b"bearer  abc ")]) == "abc"
    assert bearer_token([(b"authorization", b"Bearer ")]) is None


def test_outbox_drops_deltas_first_and_overflows_on_the_rest() -> None:
    box = Outbox(soft_bytes=10, hard_bytes=20)
    box.push("a" * 8)
    box.push("b" * 8, droppable=True)
    assert box.dropped == 1 and not box.overflowed
    box.push("c" * 8)
    assert box.take() == ["a" * 8, "c" * 8] and box.bytes == 0
    box.push("d" * 21)
    assert box.overflowed and not box


def test_outbox_keeps_every_answer_and_counts_it_until_sent() -> None:
    box = Outbox(soft_bytes=10, hard_bytes=20)
    box.push_answer("r" * 50)  # past both budgets: an answer is never dropped
    box.push("n" * 8)
    assert not box.overflowed and box.answer_bytes == 50 and box.bytes == 8
    assert box.take() == ["r" * 50, "n" * 8]
    assert box.answer_bytes == 50  # taken, not yet sent: still held
    box.push_answer("s" * 5)
    box.sent()
    assert box.answer_bytes == 5  # only what the writer sent is let go
    assert box.take() == ["s" * 5]
    box.sent()
    assert box.answer_bytes == 0
