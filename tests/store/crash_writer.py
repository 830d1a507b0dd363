"""Child process for test_crash: writes units as fast as it can until SIGKILLed.

Each unit appends one history item and its ``item.completed`` event and updates the
thread row; some add delta events, and now and then a unit folds old deltas. After every
commit it prints the last published seq, so the parent knows what was acknowledged.
"""

from __future__ import annotations

import random
import sys
import time
import trio

from echsd.events import Event
from echsd.store import ThreadRow, Unit, open_store, ops, queries

THREAD = "thr_00000000000000cc"


async def main(target: str) -> None:
    rng = random.Random()
    # Small, varying batches: the kill lands mid-batch, between batches, under backpressure.
    store = open_store(target, max_pending=rng.choice((1, 8, 64, 512)))
    seq = store.read_sync(lambda c: queries.last_seq(c, THREAD))
    pos = store.read_sync(lambda c: queries.count_items(c, THREAD))
    out = sys.stdout

    def on_commit(events: list[Event]) -> None:
        out.write(f"{events[-1].seq}\n")
        out.flush()

    store.writer.set_on_commit(on_commit)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.writer.run)
        while True:
            events: list[Event] = []
            for _ in range(rng.choice((0, 0, 1, 3))):
                seq += 1
                events.append(
                    Event(
                        THREAD, seq, "turn.delta", time.time(), {"delta": "x" * rng.randrange(50)}
                    )
                )
            item = {
                "type": "message",
                "role": "assistant",
                "content": f"item {pos}",
                "pad": "y" * rng.randrange(500),
            }
            seq += 1
            events.append(
                Event(THREAD, seq, "item.completed", time.time(), {"item": item, "pos": pos})
            )
            row = ThreadRow(
                THREAD,
                None,
                1.0,
                "running",
                {},
                {"items": pos + 1, "seq": seq},
                None,
                {},
                time.time(),
            )
            statements = [ops.append_items(THREAD, pos, [item]), ops.upsert_thread(row)]
            if rng.random() < 0.02:
                statements.append(ops.fold_deltas(THREAD, keep=rng.randrange(20)))
            pos += 1
            await store.writer.put(Unit(statements=statements, events=events))


if __name__ == "__main__":
    trio.run(main, sys.argv[1])  # an SQLite path or a postgresql:// URL
