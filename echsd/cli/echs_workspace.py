"""A thread's files: ``diff``, ``undo``, ``fork``, ``merge`` (git worktrees, turn snapshots)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from echsd.cli.echs_ids import THREAD_ID, resolve_thread
from echsd.cli.echs_runtime import KILL_TIMEOUT_S, echo_json, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client

GIT_TIMEOUT_S = KILL_TIMEOUT_S * 4  # git work on a big repository takes its time


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@click.option("--turn", type=click.IntRange(min=1), metavar="N", help="This turn (its number; default: the last turn that changed files).")
@json_option
@click.pass_context
def diff(ctx: click.Context, thread_id: str, turn: int | None) -> None:
    """Show what a turn changed, as a diff.

    What the turn changed in the thread's cwd, as a unified diff. In colour on a terminal, plain in a pipe; --json gives {turn, turn_id, paths,
    diff, truncated, stat}.
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        found = await client.thread_diff(await resolve_thread(client, thread_id), turn=turn)
        if options.json:
            echo_json(found)
            return
        from echsd.cli.render import Style
        from echsd.cli.render_diff import diff_lines

        for line in diff_lines(found, Style(options.color)):
            click.echo(line, color=options.color)

    run(ctx, action)


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@click.option("--turns", type=click.IntRange(min=1), default=1, show_default=True, metavar="N", help="How many of the last turns.")
@click.option("--force", is_flag=True, help="Also overwrite files changed by someone else since.")
@json_option
@click.pass_context
def undo(ctx: click.Context, thread_id: str, turns: int, force: bool) -> None:
    """Take back the thread's last turns.

    The files they changed in the thread's cwd go back to how they were when the
    first of them started (files they created are deleted); a file someone else changed
    since is left alone and listed, unless --force. The turns leave the thread's history.
    Your branch, index and stash are not touched. Refused while a turn runs.
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        result = await client.undo(await resolve_thread(client, thread_id), turns=turns, force=force or None)
        if options.json:
            echo_json(result)
            return
        from echsd.cli.render_diff import undo_lines

        for line in undo_lines(result):
            click.echo(line)

    run(ctx, action, timeout=GIT_TIMEOUT_S)


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@click.option("--at-turn", type=click.IntRange(min=1), metavar="N", help="Keep the history up to the end of turn N (default: every finished turn).")
@click.option("--worktree", is_flag=True, help="Work in a new git worktree made from that turn's snapshot.")
@json_option
@click.pass_context
def fork(ctx: click.Context, thread_id: str, at_turn: int | None, worktree: bool) -> None:
    """Branch a thread: its history up to a turn.

    A new thread with this one's config and history up to the end of a turn. Prints the
    new thread's id; it runs on its own from then on.
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        created = await client.fork_thread(await resolve_thread(client, thread_id), at_turn=at_turn, worktree=worktree or None)
        if options.json:
            echo_json(created)
            return
        click.echo(created["thread_id"])
        _say_worktree(created)

    run(ctx, action, timeout=GIT_TIMEOUT_S)


@click.command()
@click.argument("thread_id", type=THREAD_ID)
@json_option
@click.pass_context
def merge(ctx: click.Context, thread_id: str) -> None:
    """Merge a finished thread's branch.

    Into its parent's worktree or current branch; for a thread made with `echs new --worktree` (no parent): into the work tree it
    was made from. A fast-forward if it can be, else a merge commit. A merge that
    would conflict (or overwrite your uncommitted changes) changes nothing and names
    the files (exit 1).
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        result = await client.merge_thread(await resolve_thread(client, thread_id))
        if options.json:
            echo_json(result)
            return
        how = {"fast-forward": "fast-forwarded", "merge": "merged", "up-to-date": "already contains"}.get(result["how"], result["how"])
        into = f"{result['target']} ({result['into']})" if result.get("into") else result["target"]
        if result["how"] == "up-to-date":
            click.echo(f"{into} {how} {result['branch']}")
        else:
            click.echo(f"{how} {result['branch']} into {into}: now at {str(result['commit'])[:12]}")

    run(ctx, action, timeout=GIT_TIMEOUT_S)


def _say_worktree(thread: dict[str, Any]) -> None:
    """A new thread's worktree (or why it has none) on stderr: stdout is its id alone."""
    if thread.get("worktree"):
        click.echo(f"worktree {thread['worktree']['path']} on branch {thread['worktree']['branch']}", err=True)
    if thread.get("note"):
        click.echo(f"note: {thread['note']}", err=True)
