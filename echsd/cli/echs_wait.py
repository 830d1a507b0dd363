"""Following the turn that delivers one input (``echs send --wait``).

Theory of operation. Before sending, we subscribe and note the thread's last seq S; every
event caused by our input then has a seq above S, so following ``events(since=S)`` misses
nothing however fast the turn runs. (With ``--id`` the input may be a repeat that was
delivered long ago, so we follow from seq 0.) ``TurnWatch`` is the sans-IO core: it waits
for ``input.delivered`` (or ``input.dropped``) carrying our ``input_id``, learns the turn
id from it, and from then on accepts only that turn's events until its terminal event.
A queued input thus skips the turns before it; a steered input joins the running turn,
whose end is ours. An input that starts an autonomous run (``run``) is followed through
every turn of the run (they run back to back) until ``run.finished`` names it.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from echsd.cli.echs_runtime import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TURN_ERROR

if TYPE_CHECKING:
    from echsd.wire.client import Client

TERMINAL = {"turn.completed": EXIT_OK, "turn.interrupted": EXIT_INTERRUPTED, "turn.error": EXIT_TURN_ERROR}
RUN_EXITS = {"done": EXIT_OK, "steps": EXIT_OK, "error": EXIT_TURN_ERROR}  # any other end: interrupted
INTERRUPT_GRACE_S = 10.0


@dataclass
class TurnWatch:
    input_id: str
    run: bool = False  # the input starts an autonomous run: wait for its run.finished
    turn_id: str | None = None
    outcome: str | None = None  # the terminal event type, or "input.dropped" / "thread.killed"
    final: dict[str, Any] = field(default_factory=dict)  # the event that ended the wait

    @property
    def done(self) -> bool:
        return self.outcome is not None

    def accept(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` belongs to the wait (and should be shown); updates the outcome."""
        kind = event.get("event")
        data = event.get("data") or {}
        if self.turn_id is None:
            if data.get("input_id") != self.input_id:
                return False
            if kind == "input.delivered":
                self.turn_id = data.get("turn_id")
            elif kind == "input.dropped":
                self._end(event)
            return kind in ("input.queued", "input.delivered", "input.dropped")
        if kind == "thread.killed":  # the turn's own end comes first; this is a backstop
            self._end(event)
            return True
        if kind == "turn.error" and data.get("turn_id") is None:  # a worker crash ends the turn too
            self._end(event)
            return True
        if kind == "events.gap":  # events of our turn the log no longer holds (retention): say so
            return True
        if self.run:
            if kind == "run.finished" and data.get("input_id") == self.input_id:
                self._end(event)
                return True
            if kind == "input.delivered":  # the run's next turn (its continuation input)
                self.turn_id = data.get("turn_id")
                return True
            return data.get("turn_id") == self.turn_id
        if data.get("turn_id") != self.turn_id:
            return False
        if kind in TERMINAL:
            self._end(event)
        return True

    def _end(self, event: dict[str, Any]) -> None:
        self.outcome = str(event.get("event"))
        self.final = event

    @property
    def exit_code(self) -> int:
        if self.outcome in TERMINAL:
            return TERMINAL[self.outcome]
        if self.outcome == "run.finished":
            return RUN_EXITS.get(str(self.final.get("data", {}).get("reason")), EXIT_INTERRUPTED)
        if self.outcome == "thread.killed":
            return EXIT_INTERRUPTED
        return EXIT_FAILED  # dropped input


async def observed_seq(client: Client, thread_id: str) -> int:
    """The thread's last committed seq (what a turn started after now comes after)."""
    thread = await client.get_thread(thread_id)
    return int(thread.get("last_seq") or 0)


async def wait_for_turn(
    client: Client,
    thread_id: str,
    since: int,
    watch: TurnWatch,
    show: Callable[[dict[str, Any]], None],
    note: Callable[[str], None],
    aside: Callable[[dict[str, Any]], None] = lambda event: None,
) -> int:
    """Follow the events after ``since`` until ``watch`` is done; returns the exit code.
    Events of our turn go to ``show``, the thread's others to ``aside``.

    Ctrl-C interrupts our turn (once it has started) and keeps waiting for its end; a
    second Ctrl-C, or one before the input was delivered, stops waiting (exit 3).
    """
    import trio

    stopped = False
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:

            async def on_ctrl_c() -> None:
                nonlocal stopped
                async for _ in signals:
                    if watch.turn_id is None or stopped:
                        note(
                            f"stopped waiting; input {watch.input_id} stays queued"
                            if watch.turn_id is None
                            else "stopped waiting"
                        )
                        stopped = True
                        nursery.cancel_scope.cancel()
                        return
                    stopped = True
                    note(f"interrupting turn {watch.turn_id} (Ctrl-C again to stop waiting)")
                    await client.interrupt(thread_id)
                    nursery.cancel_scope.deadline = trio.current_time() + INTERRUPT_GRACE_S

            nursery.start_soon(on_ctrl_c)
            async with client.events(thread_id, since=since, reconnect=False) as stream:
                async for event in stream:
                    if watch.accept(event):
                        show(event)
                    else:
                        aside(event)
                    if watch.done:
                        break
            nursery.cancel_scope.cancel()
    if not watch.done:
        return EXIT_INTERRUPTED if stopped else EXIT_FAILED
    return watch.exit_code
