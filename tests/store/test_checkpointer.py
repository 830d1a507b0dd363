"""Checkpoints run off the commit path: the writer never checkpoints, the checkpointer does."""

from __future__ import annotations

from pathlib import Path

import trio

from echsd.store import Unit, open_store, run_checkpoints


def wal_size(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def test_writer_leaves_checkpoints_to_the_checkpointer(tmp_path: Path) -> None:
    db = tmp_path / "echsd.db"
    store = open_store(db)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.writer.run)
        big = "x" * 4000
        for i in range(1500):  # ~6 MB: past SQLite's 1000-page automatic checkpoint
            await store.writer.put(Unit(statements=[("INSERT INTO meta(key, value) VALUES(?, ?)", (f"k{i}", big))]))
        await store.writer.flush()
        assert wal_size(db) > 4096 * 1000  # nothing checkpointed it on the commit path
        assert db.stat().st_size < 1_000_000  # the rows live only in the WAL so far
        await nursery.start(run_checkpoints, db, 0.001)
        with trio.fail_after(10):
            while db.stat().st_size < 4096 * 1000:  # pages reach the file only by checkpoint
                await trio.sleep(0.01)  # waiting on the checkpointer's timer
        nursery.cancel_scope.cancel()
    await store.writer.aclose()
    store.close()
    assert wal_size(db) == 0  # close truncates the WAL


async def test_a_big_wal_is_truncated_while_the_daemon_runs(tmp_path: Path) -> None:
    db = tmp_path / "echsd.db"
    store = open_store(db)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.writer.run)
        big = "x" * 4000
        for i in range(1500):
            await store.writer.put(Unit(statements=[("INSERT INTO meta(key, value) VALUES(?, ?)", (f"k{i}", big))]))
        await store.writer.flush()
        assert wal_size(db) > 4096 * 1000
        await nursery.start(lambda task_status: run_checkpoints(db, 0.001, truncate_bytes=1_000_000, task_status=task_status))
        with trio.fail_after(10):
            while wal_size(db) > 1_000_000:  # the store stays open: only a TRUNCATE checkpoint shrinks it
                await trio.sleep(0.01)  # waiting on the checkpointer's timer
        nursery.cancel_scope.cancel()
    await store.writer.aclose()
    store.close()
