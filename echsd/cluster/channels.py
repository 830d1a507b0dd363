"""The NOTIFY channels nodes talk on, and their payloads, sans-IO.

- ``EVENTS``: "THREAD FIRST LAST" lines, one per thread a transaction appended events to.
- ``REQUESTS``: "TARGET_NODE REQUEST_ID": a request row waits for that node.
- ``ANSWERS``: "ORIGIN_NODE REQUEST_ID": the request's answer is written.
- ``BLACKBOARD``: "SEQ": the blackboard's change log grew to SEQ.
- ``NOTICES``: the sending node's id, then one JSON line per live-only event a transaction
  published without storing it (``thread.deleted``: its log went in the same deletion, so
  no other node could read it back).

A payload must stay under PostgreSQL's 8000 bytes, so event notices are split.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence

from echsd.events import Event

EVENTS = "echsd_events"
REQUESTS = "echsd_requests"
ANSWERS = "echsd_answers"
BLACKBOARD = "echsd_blackboard"
NOTICES = "echsd_notices"

MAX_PAYLOAD = 7000


def event_notices(ranges: Mapping[str, Sequence[int]]) -> Iterator[str]:
    """The payloads announcing ``{thread_id: (first_seq, last_seq)}``."""
    lines: list[str] = []
    size = 0
    for thread_id, (first, last) in ranges.items():
        line = f"{thread_id} {first} {last}"
        if lines and size + len(line) + 1 > MAX_PAYLOAD:
            yield "\n".join(lines)
            lines, size = [], 0
        lines.append(line)
        size += len(line) + 1
    if lines:
        yield "\n".join(lines)


def parse_event_notice(payload: str) -> list[tuple[str, int, int]]:
    """``event_notices``' lines back; malformed lines are skipped."""
    found = []
    for line in payload.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            found.append((parts[0], int(parts[1]), int(parts[2])))
    return found


def notice_payloads(node_id: str, events: Iterable[Event]) -> Iterator[str]:
    """The payloads carrying live-only ``events`` from ``node_id``; an event too big for one
    payload is left out (a notice is a few names by nature)."""
    lines: list[str] = []
    size = len(node_id)
    for event in events:
        line = json.dumps([event.thread_id, event.seq, event.type, event.ts, event.data], separators=(",", ":"))
        if len(node_id) + len(line) + 1 > MAX_PAYLOAD:
            continue
        if lines and size + len(line) + 1 > MAX_PAYLOAD:
            yield "\n".join([node_id, *lines])
            lines, size = [], len(node_id)
        lines.append(line)
        size += len(line) + 1
    if lines:
        yield "\n".join([node_id, *lines])


def parse_notices(payload: str) -> tuple[str, list[Event]]:
    """``notice_payloads``' sender and events back; malformed lines are skipped."""
    sender, _, rest = payload.partition("\n")
    found = []
    for line in rest.splitlines():
        try:
            thread_id, seq, kind, ts, data = json.loads(line)
        except (ValueError, TypeError):
            continue
        if isinstance(thread_id, str) and isinstance(seq, int) and isinstance(kind, str) and isinstance(ts, (int, float)) and isinstance(data, dict):
            found.append(Event(thread_id, seq, kind, float(ts), data))
    return sender, found


def addressed(payload: str) -> tuple[str, str] | None:
    """(node, request_id) of a REQUESTS or ANSWERS payload."""
    parts = payload.split()
    return (parts[0], parts[1]) if len(parts) == 2 else None
