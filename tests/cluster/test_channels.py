"""The NOTIFY payloads, sans-IO: split under PostgreSQL's limit, parsed back, bad lines skipped."""

from __future__ import annotations

from echsd.cluster.channels import MAX_PAYLOAD, addressed, event_notices, notice_payloads, parse_event_notice, parse_notices
from echsd.events import Event


def test_event_notices_round_trip_and_stay_under_the_payload_limit() -> None:
    ranges = {f"thr_{i:016x}": (i + 1, i + 10) for i in range(2000)}
    payloads = list(event_notices(ranges))
    assert len(payloads) > 1 and all(len(p) <= MAX_PAYLOAD for p in payloads)
    parsed = [entry for p in payloads for entry in parse_event_notice(p)]
    assert parsed == [(tid, first, last) for tid, (first, last) in ranges.items()]


def test_malformed_notices_are_skipped() -> None:
    assert parse_event_notice("thr_1 2 3\ngarbage\nthr_2 x 4\n\nthr_3 5 6") == [("thr_1", 2, 3), ("thr_3", 5, 6)]
    assert addressed("node-a req_1") == ("node-a", "req_1")
    assert addressed("just-one") is None


def test_notices_carry_whole_events_from_their_node_under_the_payload_limit() -> None:
    events = [Event(f"thr_{i:016x}", i + 1, "thread.deleted", 1.5, {"root": "thr_0000000000000000"}) for i in range(500)]
    payloads = list(notice_payloads("node-a", [*events, Event("thr_big", 1, "thread.deleted", 1.0, {"root": "x" * MAX_PAYLOAD})]))
    assert len(payloads) > 1 and all(len(p) <= MAX_PAYLOAD for p in payloads)
    parsed = [parse_notices(p) for p in payloads]
    assert {sender for sender, _ in parsed} == {"node-a"}
    assert [event for _, found in parsed for event in found] == events  # the one too big is left out
    assert parse_notices('node-b\n["thr_1",2,"thread.deleted",1.0,{}]\ngarbage\n[1,2]\n{"a":1}') == ("node-b", [Event("thr_1", 2, "thread.deleted", 1.0, {})])
