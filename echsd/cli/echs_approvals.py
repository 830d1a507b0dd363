"""Tool calls waiting for a person: ``approvals``, ``approve``, ``deny``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from echsd.cli.echs_ids import APPROVAL_ID, THREAD_ID, resolve_approval, resolve_thread
from echsd.cli.echs_runtime import echo_json, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client


def describe_request(request: dict[str, Any], now: float | None = None) -> str:
    age = max(0.0, (now or time.time()) - float(request.get("requested_at") or 0))
    from echsd.cli.render import approval_text, one_line

    return f"{request['request_id']}  {request['thread_id']}  {one_line(str(request['tool']), 80)}: {approval_text(request)}  ({age:.0f}s ago)"


@click.command()
@click.argument("thread_id", type=THREAD_ID, required=False)
@json_option
@click.pass_context
def approvals(ctx: click.Context, thread_id: str | None) -> None:
    """List tool calls waiting for approval.

    Those of THREAD_ID, or of every thread. Long arguments are cut short in the list
    (with --json, "arguments_truncated" says so).
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        from echsd.cli.echs_pages import read_all

        only = await resolve_thread(client, thread_id) if thread_id is not None else None
        pending = await read_all(client.approvals, thread_id=only)
        if options.json:
            echo_json(pending)
        elif not pending:
            click.echo("no pending approvals")
        else:
            for request in pending:
                click.echo(describe_request(request))

    run(ctx, action)


def _answer(ctx: click.Context, request_id: str, decision: str, always: bool = False) -> None:
    options = options_of(ctx)

    async def action(client: Client) -> None:
        full_id = await resolve_approval(client, request_id)
        result = await client.respond_approval(full_id, decision, always=always)
        if options.json:
            echo_json(result)
        elif result.get("always"):
            click.echo(f"approved {full_id}, and from now on in {result.get('thread_id')}: {' '.join(result.get('rule') or [])}")
        else:
            click.echo(f"{'approved' if decision == 'approve' else 'denied'} {full_id}")

    run(ctx, action)


@click.command()
@click.argument("request_id", type=APPROVAL_ID)
@click.option("--always", is_flag=True, help="Approve for this thread: calls matching the request's rule run without asking from now on.")
@json_option
@click.pass_context
def approve(ctx: click.Context, request_id: str, always: bool) -> None:
    """Let a pending tool call run.

    REQUEST_ID: its id, or a unique prefix of it. With --always, the request's rule
    (`echs approvals` shows it: the command, or the prefix the model proposed) joins the
    thread's approval_allow, so that thread stops asking for it.
    """
    _answer(ctx, request_id, "approve", always)


@click.command()
@click.argument("request_id", type=APPROVAL_ID)
@json_option
@click.pass_context
def deny(ctx: click.Context, request_id: str) -> None:
    """Refuse a pending tool call (the model is told it was denied).

    REQUEST_ID: its id, or a unique prefix of it.
    """
    _answer(ctx, request_id, "deny")
