"""Threads: ``new``, ``ls``, ``show``, ``config``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from echsd.cli.echs_runtime import echo_json, json_option, options_of, run
from echsd.cli.echs_text import UTF8, utf8_problem

if TYPE_CHECKING:
    from echsd.wire.client import Client

REASONING = ("none", "minimal", "low", "medium", "high", "xhigh")
CHOICES = {"reasoning": REASONING, "writes": ("allow", "dry-run", "deny"), "approval": ("never", "on-write", "always")}
CONFIG_KEYS = ("model", "reasoning", "instructions", "cwd", "tools", "writes", "approval")


def _absolute_dir(path: str) -> str:
    """The daemon resolves paths in its own cwd, so send ours resolved."""
    absolute = os.path.abspath(os.path.expanduser(path))
    problem = utf8_problem(absolute)
    if problem is not None:
        raise click.UsageError(f"the directory {absolute!r} cannot be sent to the daemon: {problem}")
    return absolute


@click.command()
@click.option("--cwd", type=click.Path(exists=True, file_okay=False), help="Working directory for tools (default: here).")
@click.option("--model", type=UTF8, help="Model name (default: the daemon's).")
@click.option("--reasoning", type=click.Choice(REASONING), help="Reasoning effort (default: medium).")
@click.option("--instructions", type=UTF8, help="System instructions ({{cwd}} is filled in).")
@click.option("--tools", type=UTF8, help="Tool names (a,b) or edits of the defaults (+name,-name).")
@click.option("--writes", type=click.Choice(CHOICES["writes"]), help="What apply_patch may do to files (default: allow).")
@click.option("--approval", type=click.Choice(CHOICES["approval"]), help="Which tool calls wait for approval (default: never).")
@click.option("--parent", help="Create the thread as a child of this one.")
@json_option
@click.pass_context
def new(
    ctx: click.Context,
    cwd: str | None,
    model: str | None,
    reasoning: str | None,
    instructions: str | None,
    tools: str | None,
    writes: str | None,
    approval: str | None,
    parent: str | None,
) -> None:
    """Create a thread and print its id."""
    options = options_of(ctx)
    directory = _absolute_dir(cwd or os.getcwd())

    async def action(client: Client) -> None:
        thread = await client.create_thread(
            cwd=directory,
            model=model,
            reasoning=reasoning,
            instructions=instructions,
            tools=tools,
            writes=writes,
            approval=approval,
            parent=parent,
        )
        if options.json:
            echo_json({"thread_id": thread["thread_id"]})
        else:
            click.echo(thread["thread_id"])

    run(ctx, action)


@click.command()
@json_option
@click.pass_context
def ls(ctx: click.Context) -> None:
    """List threads."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        threads = await client.list_threads()
        if options.json:
            echo_json(threads)
            return
        from echsd.cli.render import Style
        from echsd.cli.render_thread import thread_table

        click.echo("\n".join(thread_table(threads, Style(options.color))), color=options.color)

    run(ctx, action)


@click.command()
@click.argument("thread_id")
@json_option
@click.pass_context
def show(ctx: click.Context, thread_id: str) -> None:
    """Show a thread: config, state, parent, children, usage, queue."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        thread = await client.get_thread(thread_id)
        if options.json:
            echo_json(thread)
            return
        from echsd.cli.render import Style
        from echsd.cli.render_thread import thread_lines

        click.echo("\n".join(thread_lines(thread, Style(options.color))), color=options.color)

    run(ctx, action)


def parse_settings(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs into a config change set; bad input is a usage error (exit 2)."""
    changes: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        problem = utf8_problem(pair)
        if problem is not None:
            raise click.BadParameter(f"{key or pair!r}: {problem}", param_hint="KEY=VALUE")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="KEY=VALUE")
        if key not in CONFIG_KEYS:
            raise click.BadParameter(f"unknown key {key!r}; use one of {', '.join(CONFIG_KEYS)}", param_hint="KEY=VALUE")
        if key in CHOICES and value not in CHOICES[key]:
            raise click.BadParameter(f"{key} must be one of {', '.join(CHOICES[key])}", param_hint="KEY=VALUE")
        changes[key] = _absolute_dir(value) if key == "cwd" and value else value
    return changes


@click.command()
@click.argument("thread_id")
@click.argument("settings", nargs=-1, required=True, metavar="KEY=VALUE...")
@json_option
@click.pass_context
def config(ctx: click.Context, thread_id: str, settings: tuple[str, ...]) -> None:
    """Hot-swap config: model, reasoning, instructions, cwd, tools (+name,-name), writes
    (allow|dry-run|deny), approval (never|on-write|always).

    A change made while a turn runs takes effect at its next model request.
    """
    options = options_of(ctx)
    changes = parse_settings(settings)

    async def action(client: Client) -> None:
        thread = await client.configure(thread_id, changes)
        if options.json:
            echo_json(thread)
            return
        from echsd.cli.render import Style
        from echsd.cli.render_thread import thread_lines

        click.echo("\n".join(thread_lines(thread, Style(options.color))), color=options.color)

    run(ctx, action)
