"""``echs mcp ls`` and ``echs mcp restart NAME``: the daemon's MCP servers (``[mcp_servers]``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from echsd.cli.echs_runtime import echo_json, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client

LIST_TIMEOUT_S = 120.0  # servers never started are started to be listed (each within its startup timeout)
SHOWN_TOOLS = 8


@click.group()
def mcp() -> None:
    """The daemon's MCP servers: list them, start one again."""


def server_lines(servers: list[dict[str, Any]], color: bool) -> list[str]:
    """The servers as a table, then each one's tools, sandbox and last error on lines of their own."""
    from echsd.cli.render import Style, ago, one_line, table

    if not servers:
        return ["no MCP servers (add [mcp_servers.NAME] tables to the daemon's config.toml)"]
    style = Style(color)
    rows = []
    for server in servers:
        state = server["state"]
        shown = style(state, fg="green") if state == "ready" else style(state, fg="red") if state in ("backoff", "stopped") else state
        up = f"up {ago(server['up_since']).removesuffix(' ago')}" if server.get("up_since") else "-"
        rows.append([server["name"], shown, server["transport"], str(len(server["tools"])), str(server["restarts"]), up, one_line(str(server.get("target") or ""), 50)])
    lines = table(["NAME", "STATE", "TRANSPORT", "TOOLS", "RESTARTS", "UP", "TARGET"], rows, style)
    for server in servers:
        tools = server["tools"]
        if tools:
            more = f" and {len(tools) - SHOWN_TOOLS} more" if len(tools) > SHOWN_TOOLS else ""
            lines.append(f"{server['name']}: {', '.join(tools[:SHOWN_TOOLS])}{more}")
        if server.get("sandbox"):
            lines.append(f"{server['name']}: sandbox {server['sandbox']}")
        if server.get("last_error"):
            lines.append(f"{server['name']}: " + style(f"last error: {one_line(server['last_error'], 200)}", fg="red"))
    return lines


@mcp.command("ls")
@json_option
@click.pass_context
def ls(ctx: click.Context) -> None:
    """List the MCP servers with their state, tools and last error.

    Servers no thread has needed yet are started first, to list their tools.
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        servers = await client.mcp_servers()
        if options.json:
            echo_json(servers)
            return
        click.echo("\n".join(server_lines(servers, options.color)), color=options.color)

    run(ctx, action, timeout=LIST_TIMEOUT_S)


@mcp.command("restart")
@click.argument("name")
@json_option
@click.pass_context
def restart(ctx: click.Context, name: str) -> None:
    """Start the MCP server NAME again now (a running session is closed first)."""
    options = options_of(ctx)

    async def action(client: Client) -> None:
        server = await client.mcp_restart(name)
        echo_json(server) if options.json else click.echo(f"restarting {server['name']} ({server['state']})")

    run(ctx, action)
