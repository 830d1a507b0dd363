"""The outbound queue: bounded, responses never dropped, every event delivered or in a gap."""

from __future__ import annotations

from typing import Any

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from echsd.wire import codec
from echsd.wire.outbox import BURST_FACTOR, Outbox

THREADS = ["thr_a", "thr_b", "thr_c"]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("event"), st.sampled_from(THREADS), st.integers(1, 3)),  # one item spanning seqs (a gap)
        st.tuples(st.just("page"), st.sampled_from(THREADS), st.integers(1, 5)),  # several events in one item
        st.tuples(st.just("response"), st.none(), st.none()),
        st.tuples(st.just("take"), st.none(), st.none()),
        st.tuples(st.just("idle"), st.none(), st.none()),
    ),
    max_size=300,
)


def _decode(frames: list[bytes]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for frame in frames:
        responses, events = codec.split_frame(frame)
        out += responses + events
    return out


@given(ops, st.integers(1, 12), st.integers(60, 400))
@settings(max_examples=400)
def test_every_event_is_delivered_or_reported_and_responses_never_drop(
    steps: list[tuple[str, Any, Any]], max_events: int, max_frame_bytes: int
) -> None:
    outbox = Outbox(max_events, max_frame_bytes=max_frame_bytes)
    next_seq = {t: 1 for t in THREADS}
    responses_sent: list[int] = []
    received: list[dict[str, Any]] = []
    order = 0
    biggest = 0

    def take() -> None:
        nonlocal biggest
        frames = outbox.take()
        outbox.sent()
        for frame in frames:
            decoded = msgpack.unpackb(frame, raw=False)
            if "events" in decoded:
                assert len(frame) <= max(max_frame_bytes, biggest) + 16  # items are never split; + header
        received.extend(_decode(frames))

    for kind, thread, span in steps:
        order += 1
        if kind == "event":
            first = next_seq[thread]
            last = first + span - 1  # span > 1: a stored gap covering several seqs
            next_seq[thread] = last + 1
            data = codec.packb({"event": "x", "thread_id": thread, "seq": first, "ts": 1.0, "data": {"last": last, "order": order}})
            outbox.push_event(thread, first, last, 1.0, data)
            biggest = max(biggest, len(data))
        elif kind == "page":
            first = next_seq[thread]
            next_seq[thread] = first + span
            seqs = range(first, first + span)
            data = b"".join(codec.packb({"event": "x", "thread_id": thread, "seq": q, "ts": 1.0, "data": {"last": q, "order": order}}) for q in seqs)
            outbox.push_event(thread, first, first + span - 1, 1.0, data, span)
            biggest = max(biggest, len(data))
        elif kind == "idle":
            outbox.writer_idle = True  # the writer found nothing to do and waits
        elif kind == "response":
            responses_sent.append(order)
            outbox.push_response(codec.encode_result(order, None))
        else:
            take()
            outbox.writer_idle = False  # busy sending what it took
        assert outbox.events <= max_events * (BURST_FACTOR if outbox.writer_idle else 1)
    take()
    take()  # gaps of a dropping period come out at the next take
    assert not outbox

    assert [r["id"] for r in received if "id" in r] == responses_sent
    covered: dict[str, list[tuple[int, int]]] = {t: [] for t in THREADS}
    last_order = 0
    for message in received:
        if "id" in message:
            continue
        if message["event"] == "events.gap":
            data = message["data"]
            assert data["reason"] == "backpressure" and message["seq"] == data["from_seq"] - 1
            covered[message["thread_id"]].append((data["from_seq"], data["to_seq"]))
        else:
            assert message["data"]["order"] >= last_order  # queued items keep their order
            last_order = message["data"]["order"]
            covered[message["thread_id"]].append((message["seq"], message["data"]["last"]))
    for thread in THREADS:
        expected = 1
        for first, last in covered[thread]:
            assert first == expected, (thread, covered[thread])
            expected = last + 1
        assert expected == next_seq[thread]


def test_overflow_drops_queued_events_then_reports_one_gap_per_thread() -> None:
    outbox = Outbox(3)
    outbox.writer_idle = False  # the client is behind: the writer is stuck sending
    for seq in range(1, 4):
        assert outbox.push_event("thr_a", seq, seq, 1.0, codec.packb({"seq": seq}))
    outbox.push_response(b"response")
    assert not outbox.push_event("thr_b", 1, 1, 2.0, b"b1")  # overflow: everything queued goes
    assert not outbox.push_event("thr_a", 4, 4, 3.0, b"a4")  # thr_a keeps dropping until a take
    assert outbox.push_event("thr_c", 1, 1, 4.0, codec.packb({"seq": "c1"}))  # room again for others
    frames = outbox.take()
    gaps, rest = frames[0], frames[1:]
    batch = msgpack.unpackb(gaps)["events"]
    assert [(g["thread_id"], g["data"]["from_seq"], g["data"]["to_seq"], g["seq"]) for g in batch] == [
        ("thr_a", 1, 4, 0),
        ("thr_b", 1, 1, 0),
    ]
    assert rest[0] == b"response"
    assert outbox.dropped == 5 and outbox.gaps == 2
    assert outbox.push_event("thr_a", 5, 5, 5.0, b"a5")  # live again


def test_an_idle_writer_absorbs_a_burst() -> None:
    outbox = Outbox(2)
    for seq in range(1, 2 * BURST_FACTOR + 1):
        assert outbox.push_event("thr_a", seq, seq, 1.0, codec.packb(seq))
    assert not outbox.push_event("thr_a", 99, 99, 1.0, b"")
    assert outbox.dropped == 2 * BURST_FACTOR + 1


def test_forget_cancels_a_pending_gap() -> None:
    outbox = Outbox(1)
    outbox.writer_idle = False
    outbox.push_event("thr_a", 1, 1, 1.0, b"a1")
    outbox.push_event("thr_a", 2, 2, 1.0, b"a2")
    outbox.forget("thr_a")
    assert outbox.take() == []


def test_answers_count_in_bytes_until_the_writer_has_sent_them() -> None:
    outbox = Outbox(10)
    outbox.push_response(b"x" * 1000)
    outbox.push_response(b"y" * 500)
    assert (outbox.responses, outbox.response_bytes) == (2, 1500)
    frames = outbox.take()  # taken, but the client may not read them: still ours
    assert len(frames) == 2 and (outbox.responses, outbox.response_bytes) == (2, 1500)
    outbox.push_response(b"z" * 10)
    outbox.sent()
    assert (outbox.responses, outbox.response_bytes) == (1, 10)
    outbox.take()
    outbox.sent()
    assert (outbox.responses, outbox.response_bytes) == (0, 0)


def test_events_overflow_by_bytes_as_well_as_by_count() -> None:
    outbox = Outbox(1000, max_event_bytes=100)
    outbox.writer_idle = False
    assert outbox.push_event("thr_a", 1, 1, 1.0, b"a" * 60)
    assert not outbox.push_event("thr_a", 2, 2, 1.0, b"a" * 60)  # 120 bytes > 100: a gap instead
    assert outbox.event_bytes == 0 and outbox.dropped == 2
    outbox.take()
    assert outbox.push_event("thr_a", 3, 3, 1.0, b"a" * 500)  # alone, even an oversized event goes out
    outbox.writer_idle = True
    outbox.take()
    for seq in range(4, 7):  # idle: twice the bytes are accepted as a burst
        assert outbox.push_event("thr_a", seq, seq, 1.0, b"a" * 60)
    assert not outbox.push_event("thr_a", 7, 7, 1.0, b"a" * 60)
