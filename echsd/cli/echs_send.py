"""``echs send ID TEXT [--queue|--steer] [--wait] [--id CLIENT_MSG_ID] [--file PATH]... [--steps N]``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from echsd.cli.echs_files import attachments
from echsd.cli.echs_ids import THREAD_ID, resolve_thread
from echsd.cli.echs_ack import new_msg_id, send_acknowledged
from echsd.cli.echs_runtime import DEFAULT_TIMEOUT_S, echo_json, echo_json_line, json_option, options_of, run
from echsd.cli.echs_text import MESSAGE, NAME
from echsd.cli.echs_wait import wait_for_turn
from echsd.wire.turnwatch import TurnWatch
from echsd.wire.params import MAX_STEPS

if TYPE_CHECKING:
    from echsd.wire.client import Client


@click.command()
@click.argument("given", metavar="THREAD_ID", type=THREAD_ID)
@click.argument("text", type=MESSAGE)
@click.option("--queue", "queue", is_flag=True, help="Queue: run as its own turn after the current one.")
@click.option("--steer", "steer", is_flag=True, help="Steer: join the running turn at its next safe point.")
@click.option("--wait", is_flag=True, help="Stream the reply until the turn that takes this input ends.")
@click.option(
    "--id", "client_msg_id", type=NAME, metavar="CLIENT_MSG_ID", help="Idempotency key: a repeat is never delivered twice (default: a new one, kept across retries)."
)
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

    An input not acknowledged within --timeout is sent again with the same id (never
    delivered twice), up to 3 times.
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
        ack = await send_acknowledged(
            client, options.timeout or DEFAULT_TIMEOUT_S, _note, thread_id, text,
            client_msg_id=client_msg_id or new_msg_id(), mode=mode, attachments=attached, steps=steps,
        )
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
        from echsd.cli.send_reply import ReplyPrinter

        printer = ReplyPrinter(options.color)
        printer.paused = thread.get("state") == "paused"
        code = await wait_for_turn(client, thread_id, since, watch, printer.show, printer.note, printer.aside, printer.tick)
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
