"""``echs status``: daemon version, uptime, provider, model, thread counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from echsd.cli.echs_runtime import echo_json, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client


@click.command()
@json_option
@click.pass_context
def status(ctx: click.Context) -> None:
    """Show the daemon: version, provider, model, threads.

    Also its uptime, usage, rate limits and how tool processes are contained.
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        result = await client.request("status")  # by name: spares loading the op table (~45 ms)
        if options.json:
            echo_json(result)
            return
        from echsd.cli.render import Style
        from echsd.cli.render_thread import status_lines

        click.echo("\n".join(status_lines(result, Style(options.color))), color=options.color)

    run(ctx, action)
