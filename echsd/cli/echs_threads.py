"""Threads: ``new``, ``ls``, ``show``, ``config``, ``rm``, ``tree``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from echsd.cli.echs_ids import THREAD_ID, resolve_thread
from echsd.cli.echs_runtime import DEFAULT_TIMEOUT_S, KILL_TIMEOUT_S, EchsOptions, echo_json, json_option, options_of, output_width, run
from echsd.cli.echs_text import UTF8, utf8_problem
from echsd.wire.params import MAX_STEPS

if TYPE_CHECKING:
    from echsd.wire.client import Client

STATES = ("idle", "running", "paused", "killed")
REASONING = ("none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra")
CHOICES = {
    "reasoning": REASONING,
    "writes": ("allow", "dry-run", "deny"),
    "approval": ("never", "on-request", "on-write", "always"),
    "chain": ("true", "false"),
    "sandbox": ("read-only", "workspace-write", "full-access"),
    "network": ("on", "off"),
    "project_docs": ("true", "false"),
}
CONFIG_KEYS = (
    "model", "reasoning", "instructions", "cwd", "tools", "writes", "approval", "chain", "steps", "mcp",
    "sandbox", "network", "writable_roots", "approval_allow", "approval_deny", "project_docs",
)  # fmt: skip


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
@click.option("--instructions", type=UTF8, help="System instructions ({{cwd}} is filled in; default: the model's base prompt).")
@click.option("--tools", type=UTF8, help="Tool names (a,b) or edits of the defaults (+name,-name).")
@click.option("--writes", type=click.Choice(CHOICES["writes"]), help="What apply_patch may do to files (default: allow).")
@click.option("--approval", type=click.Choice(CHOICES["approval"]), help="Which tool calls wait for approval (default: never).")
@click.option("--sandbox", type=click.Choice(CHOICES["sandbox"]), help="What its commands may write (default: the daemon's, workspace-write).")
@click.option("--network", type=click.Choice(CHOICES["network"]), help="Whether its commands may use the network (default: off but under full-access).")
@click.option("--writable-root", "writable_roots", multiple=True, type=click.Path(file_okay=False), help="Also writable under workspace-write (repeatable).")
@click.option("--parent", type=THREAD_ID, help="Create the thread as a child of this one (its writes, approval, sandbox and network by default).")
@click.option(
    "--loosen-policy", is_flag=True, help="With --parent: allow --writes/--approval/--sandbox/--network looser than the parent's (refused otherwise)."
)
@click.option("--no-project-docs", is_flag=True, help="Do not send the repository's AGENTS.md files to the model.")
@click.option("--worktree", is_flag=True, help="Work in a git worktree of its own, on a new branch echs/<id prefix>.")
@click.option("--base", type=UTF8, metavar="REF", help="With --worktree: start from this git ref (default: the cwd as it is now, uncommitted changes too).")
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
    sandbox: str | None,
    network: str | None,
    writable_roots: tuple[str, ...],
    parent: str | None,
    loosen_policy: bool,
    no_project_docs: bool,
    worktree: bool,
    base: str | None,
) -> None:
    """Create a thread and print its id.

    With --worktree the thread works in a git worktree of its own (under the daemon's
    state dir, or worktree_root), made from the cwd's repository; its cwd is the same
    subdirectory there. Outside a git repository it works in the cwd itself (a note says so).
    """
    options = options_of(ctx)
    if loosen_policy and parent is None:
        raise click.UsageError("--loosen-policy applies to a child: give --parent too")
    directory = _absolute_dir(cwd or os.getcwd())
    if base is not None and not worktree:
        raise click.UsageError("--base is the ref a worktree starts from: give --worktree too")

    async def action(client: Client) -> None:
        thread = await client.create_thread(
            cwd=directory,
            model=model,
            reasoning=reasoning,
            instructions=instructions,
            tools=tools,
            writes=writes,
            approval=approval,
            sandbox=sandbox,
            network=network,
            writable_roots=[_absolute_dir(root) for root in writable_roots] or None,
            parent=await resolve_thread(client, parent) if parent is not None else None,
            loosen_policy=True if loosen_policy else None,
            project_docs=False if no_project_docs else None,
            worktree=worktree or None,
            base=base,
        )
        if options.json:
            shown = {"thread_id": thread["thread_id"]}
            if worktree:
                shown.update(worktree=thread.get("worktree"), **({"note": thread["note"]} if thread.get("note") else {}))
            echo_json(shown)
        else:
            click.echo(thread["thread_id"])
            if thread.get("worktree"):
                click.echo(f"worktree {thread['worktree']['path']} on branch {thread['worktree']['branch']}", err=True)
            if thread.get("note"):
                click.echo(f"note: {thread['note']}", err=True)

    run(ctx, action, timeout=KILL_TIMEOUT_S if worktree else DEFAULT_TIMEOUT_S)


@click.command()
@click.option("--state", type=click.Choice(STATES), help="Only threads in this state.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Only the N newest (of those in --state).")
@json_option
@click.pass_context
def ls(ctx: click.Context, state: str | None, limit: int | None) -> None:
    """List threads, newest first."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        threads, total = await _newest_threads(client, state, limit)
        if options.json:
            echo_json(threads)
            return
        from echsd.cli.render import Style
        from echsd.cli.render_thread import thread_table

        style = Style(options.color)
        if not threads and state:
            click.echo(f"no {state} threads")
            return
        click.echo("\n".join(thread_table(threads, style, width=output_width())), color=options.color)
        if len(threads) < total:
            which = f" {state}" if state else ""
            click.echo(style.dim(f"… {total - len(threads)} older{which} thread(s) not shown (--limit)"), color=options.color)

    run(ctx, action)


async def _newest_threads(client: Client, state: str | None, limit: int | None) -> tuple[list[dict[str, Any]], int]:
    """The newest ``limit`` threads (in ``state``), newest first, and how many there are.

    ``thread.list`` pages oldest first: without a state filter only the last ``limit``
    are read (the first page says how many there are); with one, every page is.
    """
    from echsd.cli.echs_pages import read_all

    start = 0
    if limit is not None and state is None:
        start = max(0, int((await client.list_threads(offset=0, limit=1))["total"]) - limit)
    threads = await read_all(client.list_threads, offset=start)
    if state is not None:
        threads = [thread for thread in threads if thread.get("state") == state]
    threads.sort(key=lambda thread: float(thread.get("created_at") or 0), reverse=True)
    total = start + len(threads)
    return threads[:limit], total


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@json_option
@click.pass_context
def show(ctx: click.Context, thread_id: str) -> None:
    """Show a thread: config, state, parent, children, usage, queue."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        thread = await client.get_thread(await resolve_thread(client, thread_id))
        kinds = {} if options.json else await _agent_types(client, thread.get("children") or [])
        _print_thread(options, thread, kinds)

    run(ctx, action)


SHOWN_CHILD_TYPES = 50  # children looked up for their agent type (the rest are listed by id)


async def _agent_types(client: Client, children: list[str]) -> dict[str, str]:
    """Each (of the first few) children's agent type, for ``show``'s list of children."""
    from echsd.wire.errors import WireError

    kinds: dict[str, str] = {}
    for child in children[:SHOWN_CHILD_TYPES]:
        try:
            kind = (await client.get_thread(child)).get("agent_type")
        except WireError as exc:
            if exc.code != "not_found":  # (deleted meanwhile)
                raise
            continue
        if kind:
            kinds[child] = str(kind)
    return kinds


def _print_thread(options: EchsOptions, thread: dict[str, Any], agent_types: dict[str, str] | None = None) -> None:
    if options.json:
        echo_json(thread)
        return
    from echsd.cli.render import Style
    from echsd.cli.render_thread import thread_lines

    lines = thread_lines(thread, Style(options.color), width=output_width(), agent_types=agent_types)
    click.echo("\n".join(lines), color=options.color)


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
        changes[key] = _config_value(key, value)
    return changes


def _config_value(key: str, value: str) -> Any:
    """The value as the daemon takes it: a path made absolute, a boolean, an integer."""
    if key == "cwd" and value:
        return _absolute_dir(value)
    if key in ("chain", "project_docs"):
        return value == "true"
    if key == "writable_roots":
        return [_absolute_dir(root) for root in value.split(",") if root.strip()]
    if key == "steps":
        if not value.strip().isdigit() or not 1 <= int(value) <= MAX_STEPS:
            raise click.BadParameter(f"steps must be an integer from 1 to {MAX_STEPS} (got {value!r})", param_hint="KEY=VALUE")
        return int(value)
    return value


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@click.argument("settings", nargs=-1, required=True, metavar="KEY=VALUE...")
@json_option
@click.pass_context
def config(ctx: click.Context, thread_id: str, settings: tuple[str, ...]) -> None:
    """Change a thread's config, also while it runs.

    Keys: model, reasoning, instructions, cwd, tools (+name,-name), writes
    (allow|dry-run|deny), approval (never|on-request|on-write|always), sandbox
    (read-only|workspace-write|full-access), network (on|off), writable_roots
    (comma-separated paths, empty for none), approval_allow and approval_deny
    (command prefixes, comma-separated: "git status,pytest -q"), chain (true|false:
    send only new items after previous_response_id), steps (1-100: every input
    starts an autonomous run of up to that many turns), mcp (+name,-name: the MCP
    servers of config.toml whose tools it is offered), project_docs (true|false:
    send the repository's AGENTS.md files to the model).

    A change made while a turn runs takes effect at its next model request.
    """
    options = options_of(ctx)
    changes = parse_settings(settings)

    async def action(client: Client) -> None:
        _print_thread(options, await client.configure(await resolve_thread(client, thread_id), changes))

    run(ctx, action)


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@click.option("--keep-worktree", is_flag=True, help="Keep the threads' git worktrees on disk (their branches always stay).")
@json_option
@click.pass_context
def rm(ctx: click.Context, thread_id: str, keep_worktree: bool) -> None:
    """Delete a thread and its descendants.

    With their history and events, their snapshot refs, and their git worktrees (unless
    --keep-worktree; the branches stay). A running thread is refused: interrupt or kill it first.
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        result = await client.delete_thread(await resolve_thread(client, thread_id), keep_worktree=keep_worktree or None)
        echo_json(result) if options.json else click.echo("deleted " + ", ".join(result.get("deleted") or []))

    run(ctx, action, timeout=KILL_TIMEOUT_S)


@click.command()
@click.argument("thread_id", type=THREAD_ID, required=False)
@json_option
@click.pass_context
def tree(ctx: click.Context, thread_id: str | None) -> None:
    """Show the thread tree under THREAD_ID, or every root.

    Each thread with its state.
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        top = await resolve_thread(client, thread_id) if thread_id is not None else None
        nodes = await client.thread_tree(top)
        if options.json:
            echo_json(nodes)
            return
        from echsd.cli.render import Style
        from echsd.cli.render_thread import tree_lines

        click.echo("\n".join(tree_lines(nodes, Style(options.color))), color=options.color)

    run(ctx, action)
