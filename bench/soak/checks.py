"""The invariants of CONTRACT.md 2.4, checked on one thread's events and history, the
way ``tests/helpers.check_thread_invariants`` and ``tests/threads/test_crash_recovery``
check them: read over the wire (a thread about to be deleted), or from the store after
the daemon stopped (every thread, at the end)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from echsd.store import Gap, open_store, queries
from echsd.threads.history import check_invariants

if TYPE_CHECKING:
    from bench.soak.state import Slot

PAGE = 1000
RESOLVED = ("input.delivered", "input.dropped")
TERMINAL = ("turn.completed", "turn.interrupted", "turn.error")


def event_problems(envelopes: list[dict[str, Any]]) -> list[str]:
    """Seq 1, 2, 3, ... with no hole and no repeat (a folded range counts as present), and
    every input resolved (delivered or dropped) at most once."""
    problems = []
    expected = 1
    outcomes: Counter[str] = Counter()
    for envelope in envelopes:
        first = last = envelope["seq"]
        if envelope["event"] == "events.gap":
            first, last = envelope["data"]["from_seq"], envelope["data"]["to_seq"]
        if first != expected:
            problems.append(f"seq {first}..{last} where {expected} was next")
        expected = last + 1
        if envelope["event"] in RESOLVED:
            outcomes[envelope["data"]["input_id"]] += 1
    problems += [f"input {input_id} resolved {count} times" for input_id, count in outcomes.items() if count > 1]
    return problems


def last_seq(envelope: dict[str, Any]) -> int:
    return envelope["data"]["to_seq"] if envelope["event"] == "events.gap" else envelope["seq"]


def outcomes_of(envelopes: list[dict[str, Any]]) -> Counter[str]:
    return Counter(e["data"]["input_id"] for e in envelopes if e["event"] in RESOLVED)


async def check_over_wire(slot: Slot, thread_id: str) -> list[str]:
    """Problems of one thread, read with ``thread.events`` and ``thread.history`` pages."""
    envelopes: list[dict[str, Any]] = []
    while True:
        since = last_seq(envelopes[-1]) if envelopes else 0
        page = await slot.call("thread.events", thread_id=thread_id, since=since, limit=PAGE)
        if not page:
            break
        envelopes += page
    items: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = await slot.call("thread.history", thread_id=thread_id, offset=offset, limit=PAGE)
        items += page["items"]
        offset = page["next_offset"]
    return event_problems(envelopes) + check_invariants(items)


def check_store(db: Path, acked: dict[str, str], deleted: set[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every thread in the stopped daemon's database: (violations, counts)."""
    store = open_store(db)
    try:
        return store.read_sync(lambda conn: _check_all(conn, acked, deleted))
    finally:
        store.close()


def _check_all(conn: Any, acked: dict[str, str], deleted: set[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    violations: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    integrity = queries.integrity_check(conn)
    if integrity != "ok":
        violations.append({"kind": "database_integrity", "result": integrity})
    inputs = {row.input_id: row for row in queries.load_inputs(conn, None, None)}
    by_thread: dict[str, list[Any]] = {}
    for row in inputs.values():
        by_thread.setdefault(row.thread_id, []).append(row)
    resolved: Counter[str] = Counter()
    for thread in queries.load_threads(conn):
        tid = thread.thread_id
        counts["threads"] += 1
        counts[f"threads_{thread.state}"] += 1
        entries = queries.read_events(conn, tid, 0, None)
        envelopes = [entry.envelope() for entry in entries]
        events = [entry for entry in entries if not isinstance(entry, Gap)]
        for event in events:
            if event.type in TERMINAL or event.type in ("tool.completed", "turn.delta"):
                counts[event.type] += 1
        counts["events"] += len(events)
        counts["folded_ranges"] += len(entries) - len(events)
        items = queries.load_items(conn, tid)
        announced = [e.data["item"] for e in events if e.type == "item.completed"]
        problems = event_problems(envelopes) + check_invariants(items)
        if items != announced:
            problems.append(f"{len(items)} history items but {len(announced)} item.completed events (or they differ)")
        outcomes = outcomes_of(envelopes)
        resolved.update(outcomes)
        for row in by_thread.get(tid, []):
            final = row.status in ("delivered", "dropped")
            if final and outcomes.get(row.input_id) != 1:
                problems.append(f"input {row.input_id} is {row.status} with {outcomes.get(row.input_id, 0)} events")
            if not final and row.input_id in outcomes:
                problems.append(f"input {row.input_id} is {row.status} but was resolved")
            if not final and row.input_id in acked:
                problems.append(f"acknowledged input {row.input_id} still {row.status} after the drain (thread {thread.state})")
        if problems:
            violations.append(
                {
                    "kind": "thread_invariants",
                    "thread_id": tid,
                    "state": thread.state,
                    "problems": problems[:10],
                    "more": max(0, len(problems) - 10),
                }
            )
    for input_id, thread_id in acked.items():
        if thread_id in deleted:
            continue
        row = inputs.get(input_id)
        if row is None:
            violations.append({"kind": "acknowledged_input_lost", "input_id": input_id, "thread_id": thread_id})
        elif resolved.get(input_id, 0) != 1:
            violations.append(
                {
                    "kind": "acknowledged_input_unresolved",
                    "input_id": input_id,
                    "thread_id": thread_id,
                    "status": row.status,
                    "events": resolved.get(input_id, 0),
                }
            )
    seen: dict[tuple[str, str], str] = {}
    for row in inputs.values():
        if row.client_msg_id:
            key = (row.thread_id, row.client_msg_id)
            if key in seen:
                violations.append(
                    {
                        "kind": "client_msg_id_stored_twice",
                        "thread_id": row.thread_id,
                        "client_msg_id": row.client_msg_id,
                        "inputs": [seen[key], row.input_id],
                    }
                )
            seen[key] = row.input_id
    counts["inputs"] = len(inputs)
    counts["acknowledged"] = len(acked)
    return violations, dict(counts)
