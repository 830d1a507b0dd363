"""``echs send ID TEXT [--queue|--steer] [--wait] [--id CLIENT_MSG_ID] [--file PATH]... [--steps N]``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from echsd.cli.echs_files import attachments
from echsd.cli.echs_ids import THREAD_ID, resolve_thread
from echsd.cli.echs_runtime import echo_json, echo_json_line, json_option, options_of, run
from echsd.cli.echs_text import MESSAGE, NAME
from echsd.cli.echs_wait import wait_for_turn
from echsd.wire.turnwatch import TurnWatch
from echsd.wire.params import MAX_STEPS

if TYPE_CHECKING:
    from echsd.wire.client import Client


RUN_ENDS = {
    "done": "the model said it was done",
    "steps": "its --steps were used up",
    "interrupt": "interrupted",
    "pause": "the thread was paused",
    "kill": "the thread was killed",
    "shutdown": "the daemon stopped",
    "error": "a turn failed",
    "restart": "the daemon restarted",
}


class ReplyPrinter:
    """Human output of ``--wait``: the reply text on stdout as it streams; tool activity
    on stderr when that is a terminal; how the turn ended on stderr."""

    def __init__(self, color: bool) -> None:
        from echsd.cli.render import Style

        self.style = Style(color and sys.stderr.isatty())
        self.tools = sys.stderr.isatty()
        self.terminal = sys.stdout.isatty()  # there, model text is made printable first
        self.item_id: str | None = None
        self.streamed = ""  # the text shown of the current message
        self.gapped = False  # some of the turn's events were folded out of the log unseen
        self.wrote = False
        self.at_line_start = True
        self.paused = False  # the thread's state as last seen, for aside()

    def show(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        data = event.get("data") or {}
        if kind == "turn.delta":
            self._text(str(data.get("delta", "")), data.get("item_id"))
        elif kind == "events.gap":
            self.gapped = True
        elif kind == "item.completed" and (data.get("item") or {}).get("role") == "assistant":
            self._completed(data["item"])
        elif kind == "tool.started" and self.tools:
            from echsd.cli.render_history import arguments_summary

            self.note(self.style.dim(f"⚙ {data.get('name')}({arguments_summary(data.get('arguments'), 60)})"), prefix=False)
        elif kind in ("turn.retry", "turn.waiting"):
            from echsd.cli.render_events import waiting_text

            self.note(waiting_text(kind, data))

    def aside(self, event: dict[str, Any]) -> None:
        """An event of the thread outside our turn: a pause or a resume changes our wait."""
        if event.get("event") != "thread.state":
            return
        paused = (event.get("data") or {}).get("state") == "paused"
        if paused != self.paused:
            self.paused = paused
            self.note("the thread was paused: the input waits until `echs resume`" if paused else "the thread was resumed")

    def _completed(self, item: dict[str, Any]) -> None:
        """A whole message: shown if its deltas were not (or not all) seen."""
        from echsd.cli.render_history import content_text

        whole = content_text(item)
        if self.item_id is None:
            self._text(whole, None)  # a reply whose deltas the log no longer holds
        elif self.gapped and whole != self.streamed:
            self.note("part of this reply was folded out of the daemon's log before it could be shown; here it is whole:")
            self._text(whole, "whole")
        self.gapped = False

    def _text(self, text: str, item_id: Any) -> None:
        if item_id != self.item_id and self.wrote:
            self._newline()
            click.echo("")
        if item_id != self.item_id:
            self.streamed = ""
        self.item_id = item_id or self.item_id or "replayed"
        self.streamed += text
        if text:
            if self.terminal:
                from echsd.cli.render import printable

                text = printable(text)
            click.echo(text, nl=False)
            self.wrote = True
            self.at_line_start = text.endswith("\n")

    def _newline(self) -> None:
        if not self.at_line_start:
            click.echo("")
            self.at_line_start = True

    def note(self, message: str, *, prefix: bool = True) -> None:
        self._newline()
        click.echo(f"echs: {message}" if prefix else message, err=True)

    def finish(self, watch: TurnWatch) -> None:
        self._newline()
        data = watch.final.get("data") or {}
        if watch.outcome == "turn.interrupted":
            self.note(f"turn interrupted ({data.get('reason', 'interrupt')})")
        elif watch.outcome == "turn.error":
            error = data.get("error") or {}
            self.note(f"turn failed: {error.get('code', 'error')}: {error.get('message', '')}")
        elif watch.outcome == "input.dropped":
            self.note(f"input {watch.input_id} was dropped: {data.get('reason', '')}")
        elif watch.outcome == "thread.killed":
            self.note("the thread was killed")
        elif watch.outcome == "run.finished":
            turns = data.get("turns")
            self.note(f"autonomous run finished after {turns} turn{'s' if turns != 1 else ''} ({RUN_ENDS.get(data.get('reason'), data.get('reason'))})")


@click.command()
@click.argument("given", metavar="THREAD_ID", type=THREAD_ID)
@click.argument("text", type=MESSAGE)
@click.option("--queue", "queue", is_flag=True, help="Queue: run as its own turn after the current one.")
@click.option("--steer", "steer", is_flag=True, help="Steer: join the running turn at its next safe point.")
@click.option("--wait", is_flag=True, help="Stream the reply until the turn that takes this input ends.")
@click.option("--id", "client_msg_id", type=NAME, metavar="CLIENT_MSG_ID", help="Idempotency key: a repeat is never delivered twice.")
@click.option("--file", "files", multiple=True, metavar="PATH", type=click.Path(dir_okay=False), help="Attach a text file or an image (repeatable).")
@click.option("--steps", type=click.IntRange(1, MAX_STEPS), help=f"Run autonomously for up to N turns (1-{MAX_STEPS}); --wait waits for the whole run.")
@json_option
@click.pass_context
def send(
    ctx: click.Context,
    given: str,
    text: str,
    queue: bool,
    steer: bool,
    wait: bool,
    client_msg_id: str | None,
    files: tuple[str, ...],
    steps: int | None,
) -> None:
    """Send TEXT to a thread ('-' reads standard input).

    An idle thread starts a turn; during a turn the input is queued and runs after it
    (--steer joins the running turn instead); a paused thread keeps it queued until
    resumed. Without --wait, prints the acknowledgement. With --wait, streams the reply
    and exits 0 when the turn completes, 3 when it is interrupted (Ctrl-C interrupts
    it), 4 when it fails. With --steps N (or the thread's steps config), the input starts
    an autonomous run and --wait follows every turn of it until run.finished.
    """
    if queue and steer:
        raise click.UsageError("give --queue or --steer, not both")
    if steer and steps:
        raise click.UsageError("--steps starts a run of its own: it cannot --steer into a running turn")
    mode = "queue" if queue else "steer" if steer else None
    options = options_of(ctx)
    attached = attachments(files)

    async def action(client: Client) -> int:
        thread_id = await resolve_thread(client, given)
        thread = await client.get_thread(thread_id)
        before = int(thread.get("last_seq") or 0)  # everything our input causes comes after this seq
        ack = await client.send(thread_id, text, mode=mode, client_msg_id=client_msg_id, attachments=attached, steps=steps)
        repeat = client_msg_id is not None and await is_repeat(client, thread_id, before, str(ack["input_id"]))
        if ack.get("note"):  # e.g. the daemon saying a reused --id came with another text
            _note(str(ack["note"]))
        elif repeat:
            _note(f"--id {client_msg_id} was used before on {thread_id}: its input {ack['input_id']} stands and nothing new was sent")
        if not wait:
            if options.json:
                echo_json(ack)
            else:
                from echsd.cli.render_thread import ack_line

                click.echo(ack_line(ack))
            return 0
        since = 0 if repeat else before  # a repeat may have been delivered long ago
        run_steps = steps or int((thread.get("config") or {}).get("steps") or 1)
        watch = TurnWatch(ack["input_id"], run=run_steps > 1 and ack.get("disposition") != "steered")
        if options.json:
            return await wait_for_turn(client, thread_id, since, watch, echo_json_line, _note)
        if ack.get("disposition") == "queued" and not repeat:
            _note(waiting_note(thread_id, str(thread.get("state"))))
        printer = ReplyPrinter(options.color)
        printer.paused = thread.get("state") == "paused"
        code = await wait_for_turn(client, thread_id, since, watch, printer.show, printer.note, printer.aside)
        printer.finish(watch)
        return code

    run(ctx, action, streaming=wait)


def _note(message: str) -> None:
    click.echo(f"echs: {message}", err=True)


def waiting_note(thread_id: str, state: str) -> str:
    """Why ``--wait`` will wait before anything streams (the input was queued)."""
    if state == "paused":
        return f"{thread_id} is paused: the input waits in its queue until `echs resume {thread_id}` (Ctrl-C stops waiting)"
    return f"a turn is running on {thread_id}: the input is queued and runs after it (Ctrl-C stops waiting)"


async def is_repeat(client: Client, thread_id: str, before: int, input_id: str) -> bool:
    """Whether the ack was for an input sent before (a reused ``--id``): a new input's
    ``input.queued``/``input.delivered`` is committed before it is acknowledged, so it is
    among the events after ``before``; a repeat's is not."""
    from contextlib import aclosing

    from echsd.cli.echs_pages import event_pages

    async with aclosing(event_pages(client, thread_id, before)) as pages:
        async for page in pages:
            if any((event.get("data") or {}).get("input_id") == input_id for event in page):
                return False
    return True
