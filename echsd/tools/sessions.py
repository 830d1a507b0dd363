"""Exec sessions: commands that outlive the tool call that started them (Codex's unified exec).

``exec_command`` starts a contained process (pty or pipes) and waits until it exits or the
call's yield time is up; a process still running then becomes a session the model polls or
types into with ``write_stdin``. Each session's output is read all the time by a task of its
own into a bounded head+tail buffer; a call waiting on the session streams what arrives
through its ``emit`` and returns what was buffered when it ends.

One ``ExecSessionManager`` per thread owns that thread's sessions. The thread runtime:
- ``manager.run_in(nursery)``: the sessions' tasks run in the thread's worker (its nursery
  is closed only after ``close``), not as system tasks; a manager used alone (tests,
  benches) falls back to system tasks;
- ``await manager.turn_ended(turn_id, interrupted)``: when a turn ends; an interrupted turn's
  sessions are killed (those of turns that completed stay, as Codex's do);
- ``await manager.close(reason)``: when the thread is paused or killed, or the daemon stops:
  every session is killed. The manager stays usable (a resumed thread starts new ones).
A session's life is told to ``SessionEvents`` (the thread logs it: ``exec.session_started``
when a call returns with the command still running, ``exec.session_ended`` whatever ends it),
so clients read it from the events instead of guessing it.
A call cancelled while it waits on the session it just started kills that session (it
belongs to the turn being interrupted); the daemon's shutdown net (``kill_all_groups``) and
the on-disk registry cover everything else, a SIGKILLed daemon included.

Sessions are capped per thread: starting one more closes the least recently used idle one
(an exited one first), with a note in the output.
"""

from __future__ import annotations

import codecs
import random
import signal
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Protocol

import trio

from echsd.logs import get_logger
from echsd.tools.errors import ToolError
from echsd.tools.exec_output import Captured, ExecReport, HeadTailBuffer
from echsd.tools.process import ContainedProcess, ToolProcesses, command_env, tool_processes
from echsd.tools.sandbox.hints import denial_note
from echsd.tools.sandbox.policy import SandboxPolicy
from echsd.tools.sandbox.runtime import SandboxUnavailable

log = get_logger(__name__)

MAX_SESSIONS_PER_THREAD = 16
REMEMBERED_CLOSED = 64  # ids of closed sessions kept to explain why they are gone
DRAIN_AFTER_EXIT_S = 0.25  # output still in flight when the command exits
STREAMED_OUTPUT_LIMIT = 1024 * 1024  # bytes streamed through emit per call; the model sees head+tail

Emit = Callable[[str], Awaitable[None]]


class SessionEvents(Protocol):
    """Who hears of sessions becoming one and ending (the thread: it logs them)."""

    async def started(self, session_id: int, turn_id: str, command: str) -> None: ...

    async def ended(self, session_id: int, reason: str, exit_code: int | None) -> None: ...


@dataclass(frozen=True)
class ExecRequest:
    argv: list[str]
    cwd: str
    tty: bool
    yield_s: float
    max_tokens: int
    command: str  # as the model wrote it, for notes
    notes: tuple[str, ...] = ()
    sandbox: SandboxPolicy | None = None  # the thread's policy; None: unconfined


@dataclass(eq=False)
class ExecSession:
    thread_id: str
    session_id: int
    turn_id: str
    command: str
    process: ContainedProcess
    last_used: float
    buffer: HeadTailBuffer = field(default_factory=HeadTailBuffer)
    exit_status: int | None = None
    finished: trio.Event = field(default_factory=trio.Event)  # exited, drained and released
    lock: trio.Lock = field(default_factory=trio.Lock)  # one call at a time
    _changed: trio.Event = field(default_factory=trio.Event)
    _drained: trio.Event = field(default_factory=trio.Event)
    closed_because: str | None = None  # set when the manager kills it
    told: bool = False  # its start was told to ``SessionEvents`` (so its end will be)
    policy: SandboxPolicy | None = None  # what confined it (for the note on a permission error)
    _stream: bytearray | None = None  # output for the call attached now, not yet emitted
    _streamed: int = 0

    @property
    def idle(self) -> bool:
        return not self.lock.locked()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def run(self) -> None:
        """The session's own task: read output until the command exits, then kill what it
        left behind, let the last output drain, release the enclosure. Runs as a trio
        system task (it outlives the call), so it must never raise."""
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._pump)
                self.exit_status = await self.process.wait()
                self.process.kill()  # what the command left in its enclosure dies with it
                with trio.move_on_after(DRAIN_AFTER_EXIT_S):
                    await self._drained.wait()
                nursery.cancel_scope.cancel()
        except Exception:
            log.exception("exec session failed", thread_id=self.thread_id, session_id=self.session_id)
        finally:
            status = await self.process.release()
            if self.exit_status is None:
                self.exit_status = status
            self.finished.set()
            self._wake()

    async def _pump(self) -> None:
        try:
            while chunk := await self.process.read():
                self.buffer.append(chunk)
                if self._stream is not None and self._streamed < STREAMED_OUTPUT_LIMIT:
                    self._stream += chunk
                    self._streamed += len(chunk)
                self._wake()
        except trio.BrokenResourceError as exc:
            log.warning("exec session output broke", thread_id=self.thread_id, session_id=self.session_id, error=repr(exc.__cause__))
        finally:
            self._drained.set()

    async def collect(self, deadline: float, emit: Emit) -> Captured:
        """Wait until the command has finished or ``deadline``, streaming new output through
        ``emit``; return what the buffer holds (and empty it)."""
        self._stream = bytearray(self.buffer.snapshot()[:STREAMED_OUTPUT_LIMIT])
        self._streamed = len(self._stream)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            while True:
                changed = self._changed
                if self._stream:
                    text = decoder.decode(bytes(self._stream))
                    self._stream.clear()
                    if text:
                        await emit(text)
                if self.finished.is_set() or trio.current_time() >= deadline:
                    break
                with trio.move_on_at(deadline):
                    await changed.wait()
        finally:
            self._stream = None
        return self.buffer.take()


class ExecSessionManager:
    """A thread's exec sessions. ``thread_id`` labels logs; ``processes`` is the daemon's
    process table (its containment and registry), by default the one the daemon set up."""

    def __init__(
        self,
        thread_id: str = "",
        *,
        processes: ToolProcesses | None = None,
        max_sessions: int = MAX_SESSIONS_PER_THREAD,
        events: SessionEvents | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.processes = processes
        self.max_sessions = max_sessions
        self.events = events
        self.sessions: dict[int, ExecSession] = {}
        self._closed: OrderedDict[int, str] = OrderedDict()
        self._starting = 0  # places taken by commands being started (not in ``sessions`` yet)
        self._nursery: trio.Nursery | None = None

    def run_in(self, nursery: trio.Nursery) -> None:
        """Run the sessions' tasks in ``nursery`` (the thread worker's; it must ``close``
        the manager before that nursery ends)."""
        self._nursery = nursery

    def _spawn(self, session: ExecSession) -> None:
        name = f"exec session {session.session_id}"
        if self._nursery is not None:
            self._nursery.start_soon(session.run, name=name)
        else:  # a manager used alone (tests, benches): no thread worker to run in
            trio.lowlevel.spawn_system_task(session.run, name=name)

    async def exec_command(self, request: ExecRequest, *, turn_id: str, emit: Emit) -> ExecReport:
        notes = list(request.notes)
        notes += await self._make_room()
        self._starting += 1  # no checkpoint since the room was made: the cap holds exactly
        try:
            session = await self._start(request, turn_id, notes)
        finally:
            self._starting -= 1
        started = session.last_used
        self._spawn(session)
        try:
            async with session.lock:
                captured = await session.collect(started + request.yield_s, emit)
        except BaseException:
            with trio.CancelScope(shield=True):  # interrupted while it ran: it was this turn's
                await self._close(session, "the call that started it was cancelled")
            raise
        report = self._report(session, started, captured, request.max_tokens, notes)
        if report.session_id is not None and self.events is not None:
            session.told = True
            await self.events.started(session.session_id, turn_id, request.command)
        return report

    async def _start(self, request: ExecRequest, turn_id: str, notes: list[str]) -> ExecSession:
        """Spawn the command (sandboxed as its policy says) and register its session."""
        table = self.processes or tool_processes()
        policy = request.sandbox
        if policy is not None:
            try:
                policy, fallback_notes = await table.sandbox.admit(policy)
            except SandboxUnavailable as exc:
                raise ToolError(str(exc), meta={"sandbox_denied": "unenforceable"}) from None
            notes += fallback_notes
        env = command_env({"TMPDIR": policy.tmpdir} if policy is not None and policy.tmpdir else None)
        try:
            process = await table.spawn(request.argv, cwd=request.cwd, env=env, tty=request.tty, sandbox=policy)
        except OSError as exc:
            raise ToolError(f"cannot start the command: {exc.strerror or exc}") from None
        session = ExecSession(self.thread_id, self._new_id(), turn_id, request.command, process, trio.current_time(), policy=policy)
        self.sessions[session.session_id] = session
        return session

    async def write_stdin(self, session_id: int, chars: str, *, yield_s: float, max_tokens: int, emit: Emit) -> ExecReport:
        session = self._get(session_id)
        if chars and not session.process.tty:
            raise ToolError(
                f"session {session_id} was started without a tty, so its stdin is closed; "
                "run the command again with exec_command and tty=true to type into it"
            )
        async with session.lock:
            started = trio.current_time()
            deadline = started + yield_s
            session.last_used = started
            notes = []
            if chars:
                notes += await self._type(session, chars.encode(), deadline)
            captured = await session.collect(deadline, emit)
        report = self._report(session, started, captured, max_tokens, notes)
        if report.exit_status is not None:
            await self._tell_end(session, "its process exited", report.exit_status)
        return report

    def busy(self) -> list[tuple[int, str, float]]:
        """``(pid, command, last used)`` of each session a tool call is attached to now, the
        longest attached first (what a thread's ``waiting_on`` names)."""
        attached = sorted((s for s in self.sessions.values() if not s.idle and not s.finished.is_set()), key=lambda s: s.last_used)
        return [(s.process.pid, s.command, s.last_used) for s in attached]

    async def turn_ended(self, turn_id: str, interrupted: bool) -> None:
        """A turn ended: an interrupted turn's sessions are killed, others stay."""
        if interrupted:
            await self._close_all([s for s in self.sessions.values() if s.turn_id == turn_id], "the turn that started it was interrupted")

    async def close(self, reason: str) -> None:
        """Kill every session (thread paused or killed, daemon stopping)."""
        await self._close_all(list(self.sessions.values()), reason)

    # --- internals ---------------------------------------------------------------------

    def _get(self, session_id: int) -> ExecSession:
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        why = self._closed.get(session_id)
        if why is not None:
            raise ToolError(f"session {session_id} is gone: {why}")
        raise ToolError(f"unknown session_id {session_id}; exec_command returns the session_id of a command still running")

    async def _type(self, session: ExecSession, data: bytes, deadline: float) -> list[str]:
        if session.finished.is_set():
            return ["the process had already exited; nothing was written"]
        with trio.move_on_at(deadline) as timer:
            try:
                await session.process.write(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return ["the process exited before the input could be written"]
        if timer.cancelled_caught:
            return ["the process did not read all the input before the wait ended"]
        return []

    def _report(self, session: ExecSession, started: float, captured: Captured, max_tokens: int, notes: list[str]) -> ExecReport:
        report = ExecReport(trio.current_time() - started, captured, max_tokens, notes=notes)
        if session.finished.is_set():
            report.exit_status = session.exit_status
            if session.closed_because:
                # we SIGKILLed it (unshare, in the pidns mechanism, would report status 1)
                report.exit_status = -signal.SIGKILL
                notes.append(f"the session was closed: {session.closed_because}")
            self._forget(session, "its process exited and the exit status was reported")
            note = denial_note(session.policy, report.exit_status, (captured.head + captured.tail).decode(errors="replace"))
            if note is not None:
                notes.append(note)
                report.sandbox_denied = "command"
        else:
            report.session_id = session.session_id
        return report

    async def _make_room(self) -> list[str]:
        """Close idle sessions until a new one fits (commands being started count too)."""
        notes = []
        while len(self.sessions) + self._starting >= self.max_sessions:
            idle = [s for s in self.sessions.values() if s.idle]
            if not idle:
                taken = len(self.sessions) + self._starting
                raise ToolError(f"all {taken} sessions of this thread are busy; wait for one to finish")
            victim = min(idle, key=lambda s: (not s.finished.is_set(), s.last_used))
            what = "had exited" if victim.finished.is_set() else "was still running; it was killed"
            notes.append(
                f"session {victim.session_id} (`{_short(victim.command)}`) {what} and was closed: "
                f"a thread keeps at most {self.max_sessions} sessions, the least recently used idle one goes first"
            )
            await self._close(victim, f"closed to make room for a new session (at most {self.max_sessions} per thread)")
        return notes

    async def _close_all(self, sessions: list[ExecSession], reason: str) -> None:
        async with trio.open_nursery() as nursery:
            for session in sessions:
                nursery.start_soon(self._close, session, reason)

    async def _close(self, session: ExecSession, reason: str) -> None:
        if not session.finished.is_set():
            session.closed_because = session.closed_because or reason
        session.process.kill()
        await session.finished.wait()
        if self._forget(session, reason):
            await self._tell_end(session, reason, None if session.closed_because else session.exit_status)

    async def _tell_end(self, session: ExecSession, reason: str, exit_code: int | None) -> None:
        if session.told and self.events is not None:
            session.told = False
            await self.events.ended(session.session_id, reason, exit_code)

    def _forget(self, session: ExecSession, reason: str) -> bool:
        """Drop a session that is over; False if it was dropped already."""
        if self.sessions.pop(session.session_id, None) is None:
            return False
        self._closed[session.session_id] = reason
        while len(self._closed) > REMEMBERED_CLOSED:
            self._closed.popitem(last=False)
        return True

    def _new_id(self) -> int:
        while True:  # Codex's range: short enough to type, unlikely to be guessed from another thread
            candidate = random.randint(1000, 99_999)
            if candidate not in self.sessions and candidate not in self._closed:
                return candidate


def _short(command: str, limit: int = 60) -> str:
    command = " ".join(command.split())
    return command if len(command) <= limit else command[: limit - 1] + "…"
