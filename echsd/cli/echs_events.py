"""Reading a thread's record: ``history`` (its Responses items) and ``events`` (its event
log, replayed from a seq and, with ``--follow``, streamed live across reconnections)."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any, Callable

import click

from echsd.cli.echs_runtime import echo_json, echo_json_line, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client

PAGE = 1000


@click.command()
@click.argument("thread_id")
@json_option
@click.pass_context
def history(ctx: click.Context, thread_id: str) -> None:
    """Print the thread's history (the items as sent to the model)."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        from echsd.cli.echs_pages import read_all

        items = await read_all(client.history, thread_id)
        if options.json:
            echo_json(items)
            return
        from echsd.cli.render import Style
        from echsd.cli.render_history import history_lines

        click.echo("\n".join(history_lines(items, Style(options.color))), color=options.color)

    run(ctx, action)


def _end_of(event: dict[str, Any]) -> int:
    """The last seq an entry covers (a gap covers a range)."""
    if event.get("event") == "events.gap":
        return int((event.get("data") or {}).get("to_seq", event["seq"]))
    return int(event["seq"])


@click.command()
@click.argument("thread_id")
@click.option("--since", type=click.IntRange(min=0), default=0, show_default=True, help="Replay events after this seq.")
@click.option("--follow", "-f", is_flag=True, help="Then stream live events (survives daemon restarts) until Ctrl-C.")
@json_option
@click.pass_context
def events(ctx: click.Context, thread_id: str, since: int, follow: bool) -> None:
    """Replay the thread's events after --since; with --follow, keep streaming."""
    options = options_of(ctx)
    from echsd.cli.render import Style
    from echsd.cli.render_events import event_line

    style = Style(options.color)

    def emit(event: dict[str, Any]) -> None:
        if options.json:
            echo_json_line(event)
        else:
            click.echo(event_line(event, style), color=options.color)

    async def action(client: Client) -> None:
        if follow:
            await _follow(client, thread_id, since, emit)
            return
        position = since
        while True:  # a page may be short (the daemon's byte budget): only an empty one ends
            page = await client.thread_events(thread_id, since=position, limit=PAGE)
            if not page:
                return
            for event in page:
                emit(event)
            position = _end_of(page[-1])

    run(ctx, action, streaming=follow)


async def _follow(client: Client, thread_id: str, since: int, emit: Callable[[dict[str, Any]], None]) -> None:
    """Stream until Ctrl-C (exit 0); the client library reconnects and resumes from the
    last seq seen, so a daemon restart shows up as neither a gap nor a repeat."""
    import trio

    await client.get_thread(thread_id)  # not_found now, not after a silent subscribe
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def stop_on_signal() -> None:
                async for _ in signals:
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_signal)
            async with client.events(thread_id, since=since) as stream:
                async for event in stream:
                    emit(event)
            nursery.cancel_scope.cancel()
