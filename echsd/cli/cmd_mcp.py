"""``echsd mcp``: an MCP server over stdio that drives the running daemon's agents."""

from __future__ import annotations

import click


@click.command("mcp")
@click.option("--state-dir", type=click.Path(file_okay=False), help="The daemon's state directory [ECHS_STATE_DIR].")
@click.option("--socket", type=click.Path(dir_okay=False), help="The daemon's unix socket [ECHS_SOCKET].")
@click.option("--url", help="The daemon's address, ws://HOST:PORT [ECHS_URL].")
@click.option("--token-file", type=click.Path(dir_okay=False), help="File holding the client token [ECHS_TOKEN_FILE, or ECHS_TOKEN].")
def mcp(state_dir: str | None, socket: str | None, url: str | None, token_file: str | None) -> None:
    """Serve echsd's tools to an MCP client over stdio.

    The tools start threads, send them work and wait for their answers. Register it with an MCP client as a command, e.g. `codex mcp add echsd -- echsd mcp`.
    It talks to the running daemon like `echs` does; the threads it starts outlive it.
    """
    import trio

    from echsd.logs import configure
    from echsd.mcp.door.stdio import serve_stdio

    if socket and url:
        raise click.UsageError("give --socket or --url, not both")
    configure()  # logs to stderr: stdout carries the MCP messages
    connection = {"socket": socket, "url": url, "state_dir": state_dir, "token_file": token_file}
    try:
        trio.run(serve_stdio, connection)
    except KeyboardInterrupt:
        pass
