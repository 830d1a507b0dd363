"""Reading a thread's record: ``history`` (its Responses items) and ``events`` (its event
log, replayed from a seq and, with ``--follow``, streamed live across reconnections)."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any, Callable

import click

from echsd.cli.echs_ids import THREAD_ID, resolve_thread
from echsd.cli.echs_runtime import echo_json, echo_json_line, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@json_option
@click.pass_context
def history(ctx: click.Context, thread_id: str) -> None:
    """Print the thread's history (the items as sent to the model)."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        from echsd.cli.echs_pages import read_all

        items = await read_all(client.history, await resolve_thread(client, thread_id))
        if options.json:
            echo_json(items)
            return
        from echsd.cli.render import Style
        from echsd.cli.render_history import history_lines

        click.echo("\n".join(history_lines(items, Style(options.color))), color=options.color)

    run(ctx, action)


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@click.option("--since", type=click.IntRange(min=0), default=0, show_default=True, help="Replay events after this seq.")
@click.option("--follow", "-f", is_flag=True, help="Then stream live events (survives daemon restarts) until Ctrl-C, a kill or a deletion.")
@json_option
@click.pass_context
def events(ctx: click.Context, thread_id: str, since: int, follow: bool) -> None:
    """Replay a thread's events; --follow keeps streaming.

    Events after --since (default: all); with --follow, live ones too until Ctrl-C, a kill
    or the thread's deletion.
    """
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
        tid = await resolve_thread(client, thread_id)
        if follow:
            await _follow(client, tid, since, emit)
            return
        await _replay(client, tid, since, emit)

    run(ctx, action, streaming=follow)


async def _follow(client: Client, thread_id: str, since: int, emit: Callable[[dict[str, Any]], None]) -> None:
    """Stream until Ctrl-C, the thread's kill or its deletion (exit 0); the client library reconnects
    and resumes from the last seq seen, so a daemon restart shows up as neither a gap
    nor a repeat. A thread killed already has nothing to follow: its events are replayed."""
    import trio

    from echsd.wire.errors import WireError

    if (await client.get_thread(thread_id)).get("state") == "killed":  # (not_found now, not after a subscribe)
        await _replay(client, thread_id, since, emit)  # nothing will ever follow
        return
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def stop_on_signal() -> None:
                async for _ in signals:
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_signal)
            try:
                async with client.events(thread_id, since=since) as stream:
                    async for event in stream:
                        emit(event)  # (a thread.deleted is the last: the stream ends after it)
                        if event.get("event") == "thread.state" and (event.get("data") or {}).get("state") == "killed":
                            break  # a killed thread's last event
            except WireError as exc:
                if exc.code != "not_found":
                    raise
                # Deleted while the connection was down: its thread.deleted was not seen.
                click.echo(f"echs: {thread_id} was deleted", err=True)
            nursery.cancel_scope.cancel()


async def _replay(client: Client, thread_id: str, since: int, emit: Callable[[dict[str, Any]], None]) -> None:
    from echsd.cli.echs_pages import event_pages

    async for page in event_pages(client, thread_id, since):
        for event in page:
            emit(event)
