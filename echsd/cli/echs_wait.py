"""Following the turn that delivers one input (``echs send --wait``).

``TurnWatch`` (``echsd.wire.turnwatch``, shared with the MCP door) decides which events
belong to the wait; here is the following itself, with Ctrl-C, and the exit codes.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any, Callable

from echsd.cli.echs_runtime import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TURN_ERROR
from echsd.wire.turnwatch import TurnWatch

if TYPE_CHECKING:
    from echsd.wire.client import Client

TERMINAL = {"turn.completed": EXIT_OK, "turn.interrupted": EXIT_INTERRUPTED, "turn.error": EXIT_TURN_ERROR}
RUN_EXITS = {"done": EXIT_OK, "steps": EXIT_OK, "error": EXIT_TURN_ERROR}  # any other end: interrupted
INTERRUPT_GRACE_S = 10.0
TICK_S = 0.2  # a status line's redraw period (its spinner and clock)


def exit_code(watch: TurnWatch) -> int:
    """``echs send --wait``'s exit code for how the wait ended."""
    if watch.outcome in TERMINAL:
        return TERMINAL[watch.outcome]
    if watch.outcome == "run.finished":
        return RUN_EXITS.get(str(watch.final.get("data", {}).get("reason")), EXIT_INTERRUPTED)
    if watch.outcome == "thread.killed":
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
    tick: Callable[[], None] | None = None,
) -> int:
    """Follow the events after ``since`` until ``watch`` is done; returns the exit code.
    Events of our turn go to ``show``, the thread's others to ``aside``; ``tick`` is called
    every ``TICK_S`` meanwhile (a status line's redraw).

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
            if tick is not None:
                nursery.start_soon(_ticking, tick)
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
    return exit_code(watch)


async def _ticking(tick: Callable[[], None]) -> None:
    import trio

    while True:
        await trio.sleep(TICK_S)  # a periodic redraw, not a wait for something
        tick()
