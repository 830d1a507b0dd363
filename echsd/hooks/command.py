"""The ``[hooks]`` command: run once per event, the event's JSON on its stdin (and, for a
shell one-liner, ``ECHS_EVENT``, ``ECHS_THREAD_ID``, ``ECHS_SEQ``, ``ECHS_DELIVERY`` and
``ECHS_SUMMARY`` in its environment).

A thread never waits for it: the event tap only queues the JSON (``offer``, bounded in
count and bytes; past that an event is dropped and the drop logged). A runner task starts
at most ``MAX_RUNNING`` programs at once, each in a session (process group) of its own;
one still running at its ``timeout_s`` is killed with its whole group. A program that
cannot start, fails or times out is logged with the tail of what it printed.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
from typing import Any, Callable, Mapping

import trio

from echsd.hooks.config import CommandHook
from echsd.logs import get_logger

log = get_logger(__name__)

MAX_RUNNING = 4
MAX_QUEUED = 256  # events waiting for a program
MAX_QUEUED_BYTES = 4 * 1024 * 1024
OUTPUT_TAIL = 1024  # of what a failing program printed, logged
Outcome = Callable[[str, str], None]  # (kind, outcome): the metrics


class CommandRunner:
    def __init__(self, hook: CommandHook, env: Mapping[str, str], outcome: Outcome) -> None:
        self.hook = hook
        self.env = dict(env)
        self._outcome = outcome
        self._send, self._receive = trio.open_memory_channel[tuple[str, bytes, dict[str, str]]](math.inf)
        self._queued = 0
        self._queued_bytes = 0
        self.running: dict[int, float] = {}  # pid -> when it started (trio time)

    def offer(self, event_type: str, body: bytes, env: Mapping[str, str]) -> None:
        """Queue one event's JSON and its ``ECHS_*`` variables (never blocks: called as
        events are published)."""
        if event_type not in self.hook.events:
            return
        if self._queued >= MAX_QUEUED or self._queued_bytes + len(body) > MAX_QUEUED_BYTES:
            log.warning("hook command queue full; an event is not passed on", event_type=event_type, queued=self._queued)
            self._outcome("command", "dropped")
            return
        self._queued += 1
        self._queued_bytes += len(body)
        self._send.send_nowait((event_type, body, dict(env)))

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        limiter = trio.CapacityLimiter(MAX_RUNNING)
        async with trio.open_nursery() as nursery:
            task_status.started()
            async for event_type, body, env in self._receive:
                self._queued -= 1
                self._queued_bytes -= len(body)
                await limiter.acquire_on_behalf_of(body)
                nursery.start_soon(self._one, event_type, body, env, limiter)

    async def _one(self, event_type: str, body: bytes, env: dict[str, str], limiter: trio.CapacityLimiter) -> None:
        try:
            outcome = await self._run_program(event_type, body, env)
        except Exception:
            log.exception("hook command failed", command=self.hook.command, event_type=event_type)
            outcome = "failed"
        finally:
            limiter.release_on_behalf_of(body)
        self._outcome("command", outcome)

    async def _run_program(self, event_type: str, body: bytes, env: dict[str, str]) -> str:
        hook = self.hook
        try:
            process = await trio.lowlevel.open_process(
                [hook.command, *hook.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: a timeout kills all of it
                env={**self.env, **env},
            )
        except OSError as exc:
            log.error("hook command cannot start", command=hook.command, error=exc.strerror or str(exc))
            return "failed"
        self.running[process.pid] = trio.current_time()
        tail = bytearray()
        try:
            with trio.move_on_after(hook.timeout_s) as timer:
                async with trio.open_nursery() as io:
                    io.start_soon(_feed, process, body)
                    io.start_soon(_drain, process, tail)
                    await process.wait()
                    io.cancel_scope.cancel()
        finally:
            if process.returncode is None:  # timed out, or the daemon is stopping
                _kill_group(process.pid)
                with trio.CancelScope(shield=True):
                    await process.wait()
            self.running.pop(process.pid, None)
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    with trio.CancelScope(shield=True):
                        await stream.aclose()
        output = bytes(tail[-OUTPUT_TAIL:]).decode(errors="replace")
        if timer.cancelled_caught:
            log.warning("hook command timed out and was killed", command=hook.command, event_type=event_type, timeout_s=hook.timeout_s, output=output)
            return "timeout"
        if process.returncode != 0:
            log.warning("hook command failed", command=hook.command, event_type=event_type, exit_code=process.returncode, output=output)
            return "failed"
        return "ok"


async def _feed(process: trio.Process, body: bytes) -> None:
    """Write the JSON and close stdin (a program that reads nothing is fine)."""
    assert process.stdin is not None
    try:
        await process.stdin.send_all(body + b"\n")
        await process.stdin.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def _drain(process: trio.Process, tail: bytearray) -> None:
    """Read what it prints (kept: the last bytes, for the log), so it never blocks on a full pipe."""
    assert process.stdout is not None
    try:
        while chunk := await process.stdout.receive_some(65536):
            tail += chunk
            del tail[: max(0, len(tail) - OUTPUT_TAIL)]
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        log.warning("cannot kill a hook command's process group", pid=pid)
