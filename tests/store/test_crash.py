"""Crash consistency: SIGKILL a process that is writing, several times, then check.

On both backends. After every kill: an SQLite file passes integrity_check, every item has
its event and vice versa, events plus retention gaps cover seq 1..last exactly once, the thread row agrees
with the history, and every seq the child saw published survived (publish after commit).
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path

from echsd.store import Conn, open_store, queries

from .conftest import Backend
from .crash_writer import THREAD

CHILD = Path(__file__).with_name("crash_writer.py")
ROUNDS = 6


def run_and_kill(target: str | Path, min_seq: int) -> int:
    """Start the child, wait until it has published past ``min_seq``, SIGKILL it.

    Returns the last seq the child reported as published.
    """
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    published = 0
    try:
        while published < min_seq:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(
                    f"child exited early: {proc.wait()} {proc.stderr.read() if proc.stderr else ''}"
                )
            published = int(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rest = proc.stdout.read()  # lines written before the kill landed
        proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    for line in rest.splitlines():
        if line.strip().isdigit():
            published = max(published, int(line))
    assert proc.returncode == -signal.SIGKILL
    return published


def check(target: str | Path, published: int) -> int:
    with open_store(target) as store:
        if store.dialect == "sqlite":
            assert store.read_sync(queries.integrity_check) == "ok"

        def facts(conn: Conn) -> tuple[object, ...]:
            items = [
                (pos, item)
                for pos, item in conn.execute(
                    "SELECT pos, item FROM items WHERE thread_id = ? ORDER BY pos", (THREAD,)
                )
            ]
            log = queries.read_events(conn, THREAD, 0)
            thread = queries.get_thread(conn, THREAD)
            return items, log, thread, queries.last_seq(conn, THREAD)

        items, log, thread, last = store.read_sync(facts)
    # Seqs 1..last covered exactly once by events and gaps, in order.
    expected = 1
    item_events: dict[int, int] = {}
    for entry in log:
        if isinstance(entry, queries.Gap):
            assert entry.from_seq == expected, (entry, expected)
            expected = entry.to_seq + 1
            continue
        assert entry.seq == expected, (entry.seq, expected)
        expected += 1
        if entry.type == "item.completed":
            item_events[entry.data["pos"]] = entry.seq
        else:
            assert entry.type == "turn.delta"
    assert expected - 1 == last
    # Every item has its event and every item event has its item; positions contiguous.
    assert [pos for pos, _ in items] == list(range(len(items)))
    assert sorted(item_events) == [pos for pos, _ in items]
    # The thread row was written in the same units.
    if items:
        assert thread is not None
        assert thread.usage == {"items": len(items), "seq": last}
    # Nothing the child published was lost.
    assert last >= published, (last, published)
    return last


def test_sigkill_while_writing_leaves_a_consistent_database(backend: Backend) -> None:
    rng = random.Random()
    last = 0
    for _ in range(ROUNDS):
        published = run_and_kill(backend.target, last + rng.randrange(50, 4000))
        last = check(backend.target, published)
    assert last > 0
