"""``echs attach ID``: a live view of a thread with an input line at the bottom.

Four tasks share one connection: the event follower prints what happens (replaying the
last ``--last`` events first, then live, from one event stream, so nothing between the
two is missed or repeated), the input loop reads lines from the prompt (Enter queues,
a leading ``!`` steers, Ctrl-C interrupts the running turn, Ctrl-D detaches), a SIGINT
watcher catches a Ctrl-C typed while no prompt is up, and a ticker redraws the status
line above the prompt while a turn runs (``attach_status``). Detaching changes nothing
on the thread. A lost connection is said at once; the follower reconnects (for up to
``--timeout``, default 30 s) and goes on from the last event shown, or detaches with
exit 1 when the daemon does not come back.
"""

from __future__ import annotations

import shutil
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from echsd.cli.echs_ids import THREAD_ID
from echsd.cli.echs_runtime import EXIT_FAILED, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client

HELP_LINE = "Enter queues · !text steers · y/n/a answers an approval (a: for this thread) · Ctrl-C interrupts the turn · Ctrl-D detaches"
ANSWERS = {"y": ("approve", False), "yes": ("approve", False), "n": ("deny", False), "no": ("deny", False), "a": ("approve", True), "always": ("approve", True)}
RECONNECT_S = 30.0  # how long a lost daemon is waited for, unless --timeout says otherwise
TICK_S = 0.2  # the status line's redraw period while a turn runs


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@click.option("--last", type=click.IntRange(min=0), default=200, show_default=True, help="Show this many recent events first.")
@click.pass_context
def attach(ctx: click.Context, thread_id: str, last: int) -> None:
    """Interactive: watch a thread live and talk to it.

    Enter queues the typed line; a leading '!' steers it into the running turn; while a
    tool call waits for approval, y or n answers it; Ctrl-C interrupts the turn; Ctrl-D
    detaches (the thread keeps going).
    """
    options = options_of(ctx)
    if options.json:
        raise click.UsageError("attach is interactive and has no --json output (use `echs events --follow --json`)")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise click.UsageError("attach needs a terminal (in scripts use `echs events --follow` and `echs send`)")
    reconnect_s = options.timeout if options.timeout is not None else RECONNECT_S
    run(ctx, lambda client: Attached(client, thread_id, options.color, reconnect_s).run(last), streaming=True)


class Attached:
    def __init__(self, client: Client, thread_id: str, color: bool, reconnect_s: float = RECONNECT_S) -> None:
        from echsd.cli.attach_prompt import PromptLine
        from echsd.cli.attach_status import TurnStatus
        from echsd.cli.attach_view import AttachView
        from echsd.cli.render import Style

        self.client = client
        self.thread_id = thread_id
        self.color = color
        self.style = Style(color)
        self.view = AttachView(self.style, width=shutil.get_terminal_size().columns - 1)
        self.status = TurnStatus()
        self.prompt = PromptLine(self._prompt_message)
        self.reconnect_s = reconnect_s
        self.disconnected = False
        self.gone = False  # the daemon did not come back
        self.deleted = False  # the thread was deleted: nothing more to attach to

    def _prompt_message(self) -> Any:
        """The input line's prompt, under the live status line while a turn runs."""
        from prompt_toolkit.formatted_text import ANSI

        if self.disconnected:
            return ANSI(self.style("disconnected", fg="red") + " › ")
        pending = self.view.pending_approval()
        if pending is not None:
            prompt = self.style(f"approve {pending.get('tool')}? [y/n/a]", fg="yellow", bold=True) + " › "
        else:
            prompt = self.style.state(self.view.state or "?") + " › "
        status = self.status.line(time.time(), self.view.partial(), self.view.width)
        return ANSI((self.style.dim(status) + "\n" if status else "") + prompt)

    def out(self, lines: list[str]) -> None:
        for line in lines:
            click.echo(line, color=self.color)

    async def run(self, last: int) -> int:
        import trio
        from prompt_toolkit.patch_stdout import patch_stdout

        from echsd.cli.echs_wait import observed_seq
        from echsd.cli.render import short_path

        from echsd.cli.echs_ids import resolve_thread

        self.thread_id = await resolve_thread(self.client, self.thread_id)
        thread = await self.client.get_thread(self.thread_id)
        self.view.state = str(thread.get("state"))
        for request in await self.client.approvals(thread_id=self.thread_id):
            self.view.waiting(request)  # asked before this attach (maybe before its window of events)
        since = await self._window_start(max(0, await observed_seq(self.client, self.thread_id) - last))
        config = thread.get("config") or {}
        where = self.style.dim(f" · {config.get('model')} · {short_path(str(config.get('cwd')))}")
        self.out([self.style.bold(f"attached to {self.thread_id}") + where])  # before the prompt exists
        if since:
            self.out([self.style.dim(f"… recent events only (all of them: echs events {self.thread_id})")])
        self.out([self.style.dim(HELP_LINE)])
        with patch_stdout(raw=True):
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._follow, since, nursery.cancel_scope)
                    nursery.start_soon(self._watch_sigint)
                    nursery.start_soon(self._tick)
                    await self._read_input()
                    nursery.cancel_scope.cancel()
            finally:
                with trio.CancelScope(shield=True):
                    await self.prompt.close()
            if self.gone:
                self.out([*self.view.flush(), self.style(f"the daemon did not come back within {self.reconnect_s:g} s; detached", fg="red")])
                return EXIT_FAILED
            if self.deleted:
                self.out([*self.view.flush(), self.style.dim(f"detached: {self.thread_id} was deleted")])
                return 0
            self.out([*self.view.flush(), self.style.dim(f"detached from {self.thread_id}; it keeps running")])
        return 0

    async def _window_start(self, since: int) -> int:
        """Start the replay at a turn's beginning, not in the middle of a streamed message."""
        if since == 0:
            return 0
        window = await self.client.thread_events(self.thread_id, since=since, limit=1000)
        starts = [e["seq"] for e in window if e.get("event") == "turn.started"]
        return int(starts[0]) - 1 if starts else since

    async def _follow(self, since: int, scope: Any) -> None:
        """Show every event from ``since`` on; across a lost connection, from the last shown."""
        from echsd.wire.errors import WireError

        position = since
        while True:
            try:
                async with self.client.events(self.thread_id, since=position, reconnect=False) as stream:
                    async for event in stream:
                        self._show(event)
                        position = stream.position(self.thread_id)
                    if stream.deleted:
                        self.deleted = True
                        scope.cancel()
                return
            except WireError as exc:
                if exc.code == "not_found":  # deleted while we were away
                    self.deleted = True
                    scope.cancel()
                    return
                if exc.code != "connection_lost":
                    raise
            if not await self._reconnect():
                self.gone = True
                scope.cancel()
                return

    def _show(self, event: dict[str, Any]) -> None:
        from echsd.cli.render import terminal_safe

        event = terminal_safe(event)  # model and tool text, names too: never a control sequence
        self.status.feed(event)
        self.out(self.view.feed(event))
        if event.get("event") in ("thread.state", "approval.requested", "approval.resolved", "turn.started"):
            self.prompt.refresh()

    async def _reconnect(self) -> bool:
        """Say the connection is lost (at once), then wait for the daemon to come back."""
        from echsd.wire.errors import WireError

        self.disconnected = True
        self.out([*self.view.flush(), self.style(f"⚠ lost the connection to the daemon; waiting up to {self.reconnect_s:g} s for it", fg="yellow")])
        self.prompt.refresh()
        try:
            await self.client.reconnect(timeout=self.reconnect_s)
        except WireError:
            return False
        try:
            self.view.state = str((await self.client.get_thread(self.thread_id)).get("state"))
        except WireError as exc:
            if exc.code != "not_found":
                raise  # (not_found: deleted meanwhile, which the follower says next)
        self.disconnected = False
        self.out([self.style.dim("reconnected; going on from the last event shown")])
        self.prompt.refresh()
        return True

    async def _tick(self) -> None:
        """Redraw the status line (spinner, elapsed time, the partial line) while a turn runs."""
        import trio

        while True:
            await trio.sleep(TICK_S)  # a periodic redraw, not a wait for something
            if self.status.running and not self.disconnected:
                self.prompt.refresh()

    async def _read_input(self) -> None:
        from echsd.cli.attach_prompt import EOF, INTERRUPT

        while True:
            line = await self.prompt.read()
            if line == EOF:
                return
            pending = self.view.pending_approval()
            if line == INTERRUPT:
                await self._interrupt()
            elif pending is not None and line.strip().lower() in ANSWERS:
                await self._answer(str(pending.get("request_id")), *ANSWERS[line.strip().lower()])
            else:
                await self._send(line)

    async def _watch_sigint(self) -> None:
        """Ctrl-C while no prompt holds the terminal arrives as a signal: same meaning."""
        import trio

        with trio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                await self._interrupt()

    async def _send(self, line: str) -> None:
        from echsd.wire.client import WireError

        text, mode = line.strip(), "queue"
        if text.startswith("!"):
            text, mode = text[1:].strip(), "steer"
        if not text:
            return
        try:
            ack = await self.client.send(self.thread_id, text, mode=mode)
        except WireError as exc:
            self.out([self.style(f"not sent: {exc.message}", fg="red")])
            return
        if ack.get("disposition") == "steered":  # nothing else shows until it is delivered
            self.out([self.style.dim(f"⋯ steering {ack.get('input_id')} into the running turn")])

    async def _answer(self, request_id: str, decision: str, always: bool) -> None:
        from echsd.wire.client import WireError

        try:
            await self.client.respond_approval(request_id, decision, always=always)
        except WireError as exc:
            self.out([self.style(f"not answered: {exc.message}", fg="red")])

    async def _interrupt(self) -> None:
        from echsd.wire.client import WireError

        try:
            result = await self.client.interrupt(self.thread_id)
        except WireError as exc:
            self.out([self.style(f"interrupt failed: {exc.message}", fg="red")])
            return
        if not result.get("interrupted"):
            self.out([self.style.dim("no turn is running (Ctrl-D detaches)")])
