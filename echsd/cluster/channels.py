"""The NOTIFY channels nodes talk on, and their payloads, sans-IO.

- ``EVENTS``: "THREAD FIRST LAST" lines, one per thread a transaction appended events to.
- ``REQUESTS``: "TARGET_NODE REQUEST_ID": a request row waits for that node.
- ``ANSWERS``: "ORIGIN_NODE REQUEST_ID": the request's answer is written.
- ``BLACKBOARD``: "SEQ": the blackboard's change log grew to SEQ.

A payload must stay under PostgreSQL's 8000 bytes, so event notices are split.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

EVENTS = "echsd_events"
REQUESTS = "echsd_requests"
ANSWERS = "echsd_answers"
BLACKBOARD = "echsd_blackboard"

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


def addressed(payload: str) -> tuple[str, str] | None:
    """(node, request_id) of a REQUESTS or ANSWERS payload."""
    parts = payload.split()
    return (parts[0], parts[1]) if len(parts) == 2 else None
