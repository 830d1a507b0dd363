"""The soak's run: the daemon's life (restarts with SIGTERM or SIGKILL), sampling its RSS,
descriptors and database every few seconds, the traffic, and at the end the drain, the
graceful stop and the check of every thread in the store."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import trio

from bench.soak.checks import check_store
from bench.soak.driver import Driver
from bench.soak.procs import kill_leftovers
from bench.soak.state import Slot, Soak
from bench.soak.watchers import Follower, SlowReader, Stalled, reconnect_chaos

SIGKILL_SHARE = 1 / 3
SHUTDOWN_LIMIT_S = 10.0  # CONTRACT.md 1.1: a graceful stop persists everything within 10 s
LEFTOVER_S = 15.0  # for a restarted daemon to kill what a SIGKILLed one left
DRAIN_S = 300.0
DRIVERS_PER_SLOT = 10
FOLLOWERS, FOLLOWED_EACH = 5, 5


def process_sample(pid: int) -> dict[str, Any]:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    ticks = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return {
        "cpu_s": round((int(ticks[11]) + int(ticks[12])) / os.sysconf("SC_CLK_TCK"), 1),  # this lifetime's, user + system
        "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1),
        "os_threads": int(status["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
    }


def db_sample(state: Path) -> dict[str, float]:
    def mb(name: str) -> float:
        path = state / name
        return round(path.stat().st_size / 2**20, 2) if path.exists() else 0.0

    return {"db_mb": mb("echsd.db"), "wal_mb": mb("echsd.db-wal")}


class Run:
    def __init__(self, soak: Soak) -> None:
        self.soak = soak
        self.rng = soak.rng
        self.samples = soak.out / "samples.jsonl"
        self._lifecycle = trio.Lock()

    # -- the daemon's life ----------------------------------------------------------------

    async def start_daemon(self) -> None:
        await self.soak.daemon.ready(60)
        self.soak.set_up(True)

    async def restarts(self) -> None:
        while True:
            await trio.sleep(self.rng.uniform(0.7, 1.3) * self.soak.options.restart_every_s)
            with trio.CancelScope(shield=True):  # never leave the daemon half restarted
                await self.restart(kill=self.rng.random() < SIGKILL_SHARE)

    async def restart(self, kill: bool) -> None:
        soak, daemon = self.soak, self.soak.daemon
        async with self._lifecycle:
            soak.set_up(False)
            record: dict[str, Any] = {
                "t": soak.elapsed(),
                "how": "SIGKILL" if kill else "SIGTERM",
                "tool_processes": len(soak.procs.latest),
            }
            if kill:
                await trio.to_thread.run_sync(daemon.kill)
            else:
                try:
                    record["stop_s"] = round(await trio.to_thread.run_sync(daemon.stop), 2)
                except subprocess.TimeoutExpired:
                    soak.violation("shutdown_hung", waited_s=30)
                    await trio.to_thread.run_sync(daemon.kill)
                if record.get("stop_s", 0) > SHUTDOWN_LIMIT_S:
                    soak.violation("slow_shutdown", seconds=record["stop_s"], limit_s=SHUTDOWN_LIMIT_S)
                left = await soak.procs.wait_gone(soak.marker, 5)
                if left:
                    soak.violation("tool_process_survived_shutdown", processes=left)
            daemon.start()
            record["ready_s"] = round(await daemon.ready(120), 2)
            soak.set_up(True)
            if kill:
                left = await soak.procs.wait_gone(soak.marker, LEFTOVER_S)
                if left:
                    soak.violation("tool_process_survived_sigkill", processes=left, waited_s=LEFTOVER_S)
            soak.restarts.append(record)

    async def _revive(self) -> None:
        """The daemon exited by itself: that is a finding; start it again."""
        soak = self.soak
        async with self._lifecycle:
            code = soak.daemon.process.poll()
            if not soak.is_up or code is None:
                return
            soak.violation("daemon_exited", returncode=code)
            soak.set_up(False)
            soak.daemon.start()
            await soak.daemon.ready(120)
            soak.set_up(True)

    # -- sampling ---------------------------------------------------------------------------

    async def sampler(self, slot: Slot) -> None:
        while True:
            await self.sample(slot)
            if self.soak.is_up and self.soak.daemon.process.poll() is not None:
                with trio.CancelScope(shield=True):
                    await self._revive()
            await trio.sleep(self.soak.options.sample_every_s)

    async def sample(self, slot: Slot) -> dict[str, Any]:
        soak = self.soak
        row: dict[str, Any] = {"t": soak.elapsed(), "generation": soak.generation, "up": soak.is_up}
        row.update(db_sample(soak.state_dir))
        row.update(
            tool_processes=len(soak.procs.latest),
            actions=sum(soak.actions.values()),
            errors=sum(soak.errors.values()),
            load1=round(os.getloadavg()[0], 2),
        )
        row.update(soak.latency.take_window())
        if soak.is_up:
            try:
                row.update(process_sample(soak.daemon.process.pid))
            except (OSError, KeyError):
                pass  # exited between the check and the read
            with trio.move_on_after(5):
                threads = (await slot.call("status"))["threads"]
                row.update(threads=threads["total"], running=threads["running"], paused=threads["paused"], killed=threads.get("killed"))
        with self.samples.open("a") as out:
            out.write(json.dumps(row) + "\n")
        return row

    # -- the end ----------------------------------------------------------------------------

    async def drain(self, slot: Slot) -> None:
        """Resume what is paused and wait until no thread runs or has input queued."""
        for thread in await slot.call("thread.list"):
            if thread["state"] == "paused":
                await slot.call("thread.resume", thread_id=thread["thread_id"])
        busy: list[dict[str, Any]] = []
        with trio.move_on_after(DRAIN_S):
            while True:
                busy = [t for t in await slot.call("thread.list") if t["state"] != "killed" and (t["active_turn"] or t["queued"])]
                if not busy:
                    return
                await trio.sleep(1)  # polling the daemon's state from outside
        self.soak.violation(
            "drain_stuck", threads=[{k: t[k] for k in ("thread_id", "state", "active_turn", "queued")} for t in busy[:20]], waited_s=DRAIN_S
        )

    async def finish(self, slot: Slot) -> dict[str, Any]:
        soak = self.soak
        last = await self.sample(slot)
        soak.set_up(False)
        stop_s = await trio.to_thread.run_sync(soak.daemon.stop)
        if stop_s > SHUTDOWN_LIMIT_S:
            soak.violation("slow_shutdown", seconds=round(stop_s, 2), limit_s=SHUTDOWN_LIMIT_S)
        left = await soak.procs.wait_gone(soak.marker, 5)
        if left:
            soak.violation("tool_process_survived_shutdown", processes=left)
        kill_leftovers(soak.marker)
        violations, counts = await trio.to_thread.run_sync(check_store, soak.state_dir / "echsd.db", dict(soak.acked), set(soak.deleted))
        for violation in violations:
            soak.violation(violation.pop("kind"), **violation)
        return {"final_sample": last, "final_stop_s": round(stop_s, 2), "store": counts}


async def soak_run(soak: Soak) -> tuple[dict[str, Any], list[Any]]:
    """Everything, start to end: (the end's figures, the watchers)."""
    run = Run(soak)
    deadline = trio.current_time() + soak.options.duration_s
    try:
        return await _soak(soak, run, deadline)
    finally:
        if soak.daemon.process.poll() is None:  # the soak itself failed: leave nothing behind
            soak.daemon.kill()
        kill_leftovers(soak.marker)


async def _soak(soak: Soak, run: Run, deadline: float) -> tuple[dict[str, Any], list[Any]]:
    options = soak.options
    async with trio.open_nursery() as root:
        root.start_soon(soak.procs.run)
        await run.start_daemon()
        status_slot = Slot(soak)
        slots = [Slot(soak) for _ in range(math.ceil(options.threads / DRIVERS_PER_SLOT))]
        for slot in [status_slot, *slots]:
            root.start_soon(slot.run)
        soak.containment = (await status_slot.call("status")).get("containment", "unknown")
        root.start_soon(run.sampler, status_slot)
        drivers = [Driver(soak, slots[i // DRIVERS_PER_SLOT], i) for i in range(options.threads)]
        watchers: list[Any] = [SlowReader(soak), Stalled(soak)]
        async with trio.open_nursery() as watching:
            async with trio.open_nursery() as traffic:
                for driver in drivers:
                    traffic.start_soon(driver.run)
                while not all(d.tid for d in drivers):
                    await trio.sleep(0.1)  # the drivers' first threads
                followed = [d.tid for d in drivers[: FOLLOWERS * FOLLOWED_EACH]]
                watchers += [Follower(soak, followed[k::FOLLOWERS], soak.rng.random()) for k in range(FOLLOWERS)]
                for watcher in watchers:
                    watching.start_soon(watcher.run)
                traffic.start_soon(run.restarts)
                traffic.start_soon(reconnect_chaos, soak, slots)
                await trio.sleep_until(deadline)
                traffic.cancel_scope.cancel()
            await run.drain(status_slot)
            watching.cancel_scope.cancel()
        end = await run.finish(status_slot)
        root.cancel_scope.cancel()
    return end, watchers
