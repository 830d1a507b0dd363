"""Turn and thread control: ``interrupt``, ``pause``, ``resume``, ``kill``, ``compact``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

import click

from echsd.cli.echs_runtime import echo_json, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client


def _control(ctx: click.Context, call: Callable[[Client], Awaitable[dict[str, Any]]], describe: Callable[[dict[str, Any]], str]) -> None:
    options = options_of(ctx)

    async def action(client: Client) -> None:
        result = await call(client)
        click.echo(describe(result)) if not options.json else echo_json(result)

    run(ctx, action)


@click.command()
@click.argument("thread_id")
@click.option("--clear-queue", is_flag=True, help="Also drop the inputs waiting in the queue.")
@json_option
@click.pass_context
def interrupt(ctx: click.Context, thread_id: str, clear_queue: bool) -> None:
    """Interrupt the running turn (the queue then continues, unless cleared)."""

    def describe(result: dict[str, Any]) -> str:
        text = "interrupted the running turn" if result.get("interrupted") else "no turn was running"
        cleared = result.get("cleared")
        return text + (f"; dropped {cleared} queued input(s)" if cleared else "")

    _control(ctx, lambda c: c.interrupt(thread_id, clear_queue=clear_queue), describe)


@click.command()
@click.argument("thread_id")
@json_option
@click.pass_context
def pause(ctx: click.Context, thread_id: str) -> None:
    """Interrupt the running turn and take no new turn until resume."""
    _control(ctx, lambda c: c.pause(thread_id), lambda r: f"{thread_id} is {r.get('state', 'paused')}")


@click.command()
@click.argument("thread_id")
@json_option
@click.pass_context
def resume(ctx: click.Context, thread_id: str) -> None:
    """Let a paused thread take turns again (queued input starts)."""
    _control(ctx, lambda c: c.resume(thread_id), lambda r: f"{thread_id} is {r.get('state', 'idle')}")


@click.command()
@click.argument("thread_id")
@json_option
@click.pass_context
def kill(ctx: click.Context, thread_id: str) -> None:
    """Stop the thread and all its descendants for good."""
    _control(ctx, lambda c: c.kill(thread_id), lambda r: "killed " + ", ".join(r.get("killed") or [thread_id]))


@click.command()
@click.argument("thread_id")
@json_option
@click.pass_context
def compact(ctx: click.Context, thread_id: str) -> None:
    """Compact the thread's context now (between turns)."""

    def describe(result: dict[str, Any]) -> str:
        if "items_before" in result:
            return f"compacted {thread_id}: {result['items_before']} items -> {result.get('items_after')}"
        return f"compacted {thread_id}"

    _control(ctx, lambda c: c.compact(thread_id), describe)
