"""Turn and thread control: ``interrupt``, ``pause``, ``resume``, ``kill``, ``compact``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

import click

from echsd.cli.echs_ids import THREAD_ID, resolve_thread
from echsd.cli.echs_runtime import COMPACT_TIMEOUT_S, DEFAULT_TIMEOUT_S, KILL_TIMEOUT_S, echo_json, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client


def _control(
    ctx: click.Context,
    given: str,
    call: Callable[[Client, str], Awaitable[dict[str, Any]]],
    describe: Callable[[str, dict[str, Any]], str],
    timeout: float = DEFAULT_TIMEOUT_S,
) -> None:
    options = options_of(ctx)

    async def action(client: Client) -> None:
        thread_id = await resolve_thread(client, given)
        result = await call(client, thread_id)
        click.echo(describe(thread_id, result)) if not options.json else echo_json(result)

    run(ctx, action, timeout=timeout)


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@click.option("--clear-queue", is_flag=True, help="Also drop the inputs waiting in the queue.")
@json_option
@click.pass_context
def interrupt(ctx: click.Context, thread_id: str, clear_queue: bool) -> None:
    """Interrupt the running turn; the queue goes on.

    Queued input then runs, unless --clear-queue drops it.
    """

    def describe(_tid: str, result: dict[str, Any]) -> str:
        text = "interrupted the running turn" if result.get("interrupted") else "no turn was running"
        cleared = result.get("cleared")
        return text + (f"; dropped {cleared} queued input(s)" if cleared else "")

    _control(ctx, thread_id, lambda c, tid: c.interrupt(tid, clear_queue=clear_queue), describe)


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@json_option
@click.pass_context
def pause(ctx: click.Context, thread_id: str) -> None:
    """Interrupt the running turn and take no new turn until resume."""
    _control(ctx, thread_id, lambda c, tid: c.pause(tid), lambda tid, r: f"{tid} is {r.get('state', 'paused')}")


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@json_option
@click.pass_context
def resume(ctx: click.Context, thread_id: str) -> None:
    """Let a paused thread take turns again (queued input starts)."""
    _control(ctx, thread_id, lambda c, tid: c.resume(tid), lambda tid, r: f"{tid} is {r.get('state', 'idle')}")


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@json_option
@click.pass_context
def kill(ctx: click.Context, thread_id: str) -> None:
    """Stop the thread and all its descendants for good.

    Killing a killed thread succeeds and changes nothing ("already killed", exit 0), as
    pausing a paused one does; any other control of a killed thread fails (exit 1).
    """

    def describe(tid: str, result: dict[str, Any]) -> str:
        if not result.get("killed"):
            return f"{tid} is already killed"
        return "killed " + ", ".join(result["killed"])

    _control(ctx, thread_id, _kill, describe, timeout=KILL_TIMEOUT_S)


async def _kill(client: Client, thread_id: str) -> dict[str, Any]:
    """``thread.kill``, idempotent: the daemon refuses a killed thread (``invalid_state``),
    which for kill means the wish is already true."""
    from echsd.wire.errors import WireError

    try:
        result: dict[str, Any] = await client.kill(thread_id)
        return result
    except WireError as exc:
        if exc.code != "invalid_state" or (await client.get_thread(thread_id)).get("state") != "killed":
            raise
    return {"thread_id": thread_id, "state": "killed", "killed": []}


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@json_option
@click.pass_context
def compact(ctx: click.Context, thread_id: str) -> None:
    """Compact the thread's context now (between turns)."""

    def describe(tid: str, result: dict[str, Any]) -> str:
        if "items_before" in result:
            return f"compacted {tid}: {result['items_before']} items -> {result.get('items_after')}"
        return f"compacted {tid}"

    _control(ctx, thread_id, lambda c, tid: c.compact(tid), describe, timeout=COMPACT_TIMEOUT_S)
