"""The blackboard: ``bb get``, ``bb set``, ``bb ls``, ``bb rm``, ``bb watch`` (CONTRACT.md 1.2).

With ``--json`` each verb prints entry objects ``{key, value, version, writer,
updated_at}``; ``watch`` always prints JSON Lines (one change per line: the entry after it,
with its ``seq`` and ``deleted``). A request the daemon refuses exits 1 with its error code
first on stderr (``echs: conflict: ...`` for a failed compare-and-set, which changed
nothing); JSON that does not parse is a usage error (exit 2).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Awaitable, TypeVar

import click

from echsd.cli.echs_runtime import dumps, echo_json, echo_json_line, fail, json_option, options_of, run, until_signalled
from echsd.cli.echs_text import UTF8, utf8_problem

if TYPE_CHECKING:
    from echsd.wire.client import Client

T = TypeVar("T")
PAGE = 1000
CLIENT_CODES = ("unavailable", "connection_lost", "handshake_refused")  # the client's own: no daemon answer


async def answered(request: Awaitable[T]) -> T:
    """The daemon's answer; a refusal exits 1 naming its code (``echs: conflict: ...``)."""
    from echsd.wire.errors import WireError

    try:
        return await request
    except WireError as exc:
        if exc.code in CLIENT_CODES:
            raise
        fail(f"{exc.code}: {exc.message}")


def parse_value(text: str) -> Any:
    """The JSON argument of ``bb set`` (``-``: read it from stdin); bad JSON is a usage error."""
    where = "standard input: " if text == "-" else ""
    if text == "-":
        data = sys.stdin.buffer.read()
        text = data.decode("utf-8", "surrogateescape")
    problem = utf8_problem(text)
    if problem is not None:
        raise click.BadParameter(f"{where}{problem}", param_hint="JSON")

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON: {exc} (quote a string: '\"text\"')", param_hint="JSON") from None


@click.group()
def bb() -> None:
    """Read, write and watch the shared blackboard.

    One global keyspace of JSON values shared by threads and clients."""


@bb.command("get")
@click.argument("key", type=UTF8)
@json_option
@click.pass_context
def get(ctx: click.Context, key: str) -> None:
    """Print the value at KEY (with --json: the whole entry)."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        entry = await answered(client.blackboard_get(key))
        if options.json:
            echo_json(entry)
            return
        text = dumps(entry["value"], pretty=True)
        if sys.stdout.isatty():  # a value a model wrote: no control sequence reaches the terminal
            from echsd.cli.render import printable

            text = printable(text)
        click.echo(text)

    run(ctx, action)


@bb.command("set")
@click.argument("key", type=UTF8)
@click.argument("value", metavar="JSON")
@click.option("--if-version", type=click.IntRange(min=0), help="Only if KEY is at this version now (0: only if it does not exist).")
@json_option
@click.pass_context
def set_(ctx: click.Context, key: str, value: str, if_version: int | None) -> None:
    """Write the JSON value (- reads it from stdin) at KEY."""
    options = options_of(ctx)
    parsed = parse_value(value)

    async def action(client: Client) -> None:
        entry = await answered(client.blackboard_set(key, parsed, if_version=if_version))
        echo_json(entry) if options.json else click.echo(f"{entry['key']}: version {entry['version']}")

    run(ctx, action)


@bb.command("ls")
@click.argument("prefix", type=UTF8, default="")
@json_option
@click.pass_context
def ls(ctx: click.Context, prefix: str) -> None:
    """List the entries whose key starts with PREFIX (default: all), in key order."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        entries: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            page = await answered(client.blackboard_list(prefix, offset=offset, limit=PAGE))
            entries.extend(page["items"])
            offset = page["next_offset"]
        if options.json:
            echo_json(entries)
            return
        from echsd.cli.render import Style, ago, one_line, table

        if not entries:
            click.echo("no entries" + (f" under {prefix!r}" if prefix else ""))
            return
        rows = [[one_line(e["key"], 10**6), str(e["version"]), e["writer"] or "-", ago(e["updated_at"]), one_line(dumps(e["value"]), 60)] for e in entries]
        click.echo("\n".join(table(["KEY", "VERSION", "WRITER", "UPDATED", "VALUE"], rows, Style(options.color))), color=options.color)

    run(ctx, action)


@bb.command("rm")
@click.argument("key", type=UTF8)
@click.option("--if-version", type=click.IntRange(min=0), help="Only if KEY is at this version now.")
@json_option
@click.pass_context
def rm(ctx: click.Context, key: str, if_version: int | None) -> None:
    """Delete KEY (its version goes on if it is written again)."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        entry = await answered(client.blackboard_delete(key, if_version=if_version))
        echo_json(entry) if options.json else click.echo(f"deleted {entry['key']} (version {entry['version']})")

    run(ctx, action)


@bb.command("watch")
@click.argument("prefix", type=UTF8, default="")
@click.option("--since", type=click.IntRange(min=0), help="First replay the changes after this blackboard seq (default: live only).")
@json_option
@click.pass_context
def watch(ctx: click.Context, prefix: str, since: int | None) -> None:
    """Stream the changes of keys under PREFIX as JSON Lines until Ctrl-C (survives
    daemon restarts without losing or repeating a change)."""

    async def action(client: Client) -> None:
        async def follow() -> None:
            async with client.blackboard_events(prefix, since=since) as stream:
                async for event in stream:
                    data = event.get("data") or {}
                    if event["event"] == "events.gap":
                        span = f"{data.get('from_seq')}..{data.get('to_seq')}"
                        click.echo(f"echs: blackboard changes {span} are no longer in the log (see `echs bb ls`)", err=True)
                        continue
                    echo_json_line({**data, "seq": event["seq"]})

        await until_signalled(follow)

    run(ctx, action, streaming=True)
