"""SIGKILL the daemon at random points during turns with tool calls, restart, check everything.

Each round starts ``crash_driver`` (a real daemon and a random client) on the same state
dir and kills it with SIGKILL after a random number of acknowledgements. After every kill
the database must pass ``PRAGMA integrity_check`` (on SQLite) and hold items and their events one to
one; at the end a daemon recovers the lot and every invariant of CONTRACT.md 2.4 holds:
every acknowledged input delivered or still queued (never lost, never twice), every
function_call answered exactly once, seq contiguous.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from echsd.daemon import Daemon
from echsd.events import Event
from echsd.store import Gap, open_store, queries
from tests.helpers import Watch, check_thread_invariants, make_settings, store_target

KILL_POINTS = 22
REPO = Path(__file__).resolve().parents[2]


def items_match_events(conn: Any, thread_id: str) -> None:
    """History rows and item.completed events correspond one to one, in order."""
    items = queries.load_items(conn, thread_id)
    entries = queries.read_events(conn, thread_id, 0, None)
    announced = [e.data["item"] for e in entries if isinstance(e, Event) and e.type == "item.completed"]
    assert items == announced, f"{thread_id}: {len(items)} items vs {len(announced)} item.completed events"
    seqs: list[int] = []
    for entry in entries:
        seqs.extend(range(entry.from_seq, entry.to_seq + 1) if isinstance(entry, Gap) else [entry.seq])
    assert seqs == list(range(1, len(seqs) + 1)), f"{thread_id}: seq not contiguous"


def check_database(state: Path) -> None:
    store = open_store(store_target(state))
    try:
        def check(conn: Any) -> None:
            if conn.dialect == "sqlite":
                assert queries.integrity_check(conn) == "ok"
            for row in queries.load_threads(conn):
                items_match_events(conn, row.thread_id)

        store.read_sync(check)
    finally:
        store.close()


async def run_and_kill(state: Path, base_url: str, acks: Path, seed: int) -> int:
    rng = random.Random(seed)
    kill_after = rng.choice([0, 1, 2, 3, 5, 8])
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.threads.crash_driver", str(state), base_url, str(acks), str(seed)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=open(state.parent / "driver.log", "ab"),
        env={**os.environ, "ECHS_LOG_LEVEL": "warning"},
    )
    assert process.stdout is not None
    seen, buffer = 0, b""
    try:
        with trio.fail_after(60):
            while seen < kill_after or b"READY" not in buffer:
                chunk = await process.stdout.receive_some(4096)
                if not chunk:
                    raise AssertionError(f"driver exited early (seed {seed}); see {state.parent / 'driver.log'}")
                buffer += chunk
                seen = buffer.count(b"ACK ")
        # Sometimes kill at once, sometimes a moment later, mid-turn.
        if rng.random() < 0.5:
            await trio.sleep(rng.random() * 0.05)  # a random kill point, not synchronisation
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()
        await process.stdout.aclose()
    return seen


async def test_sigkill_at_random_points_loses_nothing(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> None:
    state = tmp_path / "state"
    acks = tmp_path / "acks.jsonl"
    acks.touch()
    base_seed = random.randrange(10**6)
    for point in range(KILL_POINTS):
        await run_and_kill(state, mock_upstream.base_url, acks, base_seed + point)
        check_database(state)

    acknowledged = [json.loads(line) for line in acks.read_text().splitlines() if line.strip()]
    assert len(acknowledged) >= KILL_POINTS, "the driver acknowledged too little to test anything"

    daemon = Daemon(make_settings(state, mock_upstream.base_url))
    await nursery.start(daemon.run)
    assert daemon.ops is not None
    for thread in await daemon.ops.list_threads():
        tid = thread["thread_id"]
        if thread["state"] == "paused":
            await daemon.ops.resume(tid)
        async with Watch(daemon, tid) as watch:
            with trio.fail_after(60):
                while (await daemon.ops.get_thread(tid))["queued"] or (await daemon.ops.get_thread(tid))["state"] == "running":
                    await watch.wait_for(lambda e: e.type in ("turn.completed", "turn.error", "turn.interrupted"), after_seq=watch.last_seq)
        await check_thread_invariants(daemon, tid)

    def inputs(conn: Any) -> dict[str, Any]:
        statuses = ("queued", "steering", "delivered", "dropped")
        return {row.input_id: row for row in queries.load_inputs(conn, None, statuses)}

    stored = await daemon.store.read(inputs)
    by_client_id: dict[tuple[str, str], str] = {}
    for ack in acknowledged:
        row = stored.get(ack["input_id"])
        assert row is not None, f"acknowledged input {ack['input_id']} was lost (seed {base_seed})"
        assert row.status == "delivered", f"{ack['input_id']} is {row.status} after recovery"
    for row in stored.values():
        if row.client_msg_id:
            key = (row.thread_id, row.client_msg_id)
            assert key not in by_client_id, "a client_msg_id was stored twice"
            by_client_id[key] = row.input_id
    daemon.request_stop()
    await daemon.wait_stopped()
    check_database(state)
