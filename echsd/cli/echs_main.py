"""``echs``: the thin client (CONTRACT.md 1.2). It never runs a model or a tool; it talks
to a running daemon over the wire protocol and exits.

Verbs are imported only when invoked (``LazyGroup``) so that ``echs status`` pays for
nothing but click, trio and the client library.
"""

from __future__ import annotations

import click

from echsd import __version__
from echsd.cli.echs_runtime import COMPACT_TIMEOUT_S, DEFAULT_TIMEOUT_S, KILL_TIMEOUT_S, EchsOptions
from echsd.cli.lazy import LazyGroup

VERBS = {
    "status": "echsd.cli.echs_status:status",
    "new": "echsd.cli.echs_threads:new",
    "ls": "echsd.cli.echs_threads:ls",
    "show": "echsd.cli.echs_threads:show",
    "config": "echsd.cli.echs_threads:config",
    "rm": "echsd.cli.echs_threads:rm",
    "tree": "echsd.cli.echs_threads:tree",
    "diff": "echsd.cli.echs_workspace:diff",
    "undo": "echsd.cli.echs_workspace:undo",
    "fork": "echsd.cli.echs_workspace:fork",
    "merge": "echsd.cli.echs_workspace:merge",
    "send": "echsd.cli.echs_send:send",
    "interrupt": "echsd.cli.echs_control:interrupt",
    "pause": "echsd.cli.echs_control:pause",
    "resume": "echsd.cli.echs_control:resume",
    "kill": "echsd.cli.echs_control:kill",
    "compact": "echsd.cli.echs_control:compact",
    "history": "echsd.cli.echs_events:history",
    "events": "echsd.cli.echs_events:events",
    "attach": "echsd.cli.attach:attach",
    "approvals": "echsd.cli.echs_approvals:approvals",
    "approve": "echsd.cli.echs_approvals:approve",
    "deny": "echsd.cli.echs_approvals:deny",
    "bb": "echsd.cli.echs_bb:bb",
    "mcp": "echsd.cli.echs_mcp:mcp",
    "why": "echsd.cli.echs_why:why",
    "web": "echsd.cli.echs_web:web",
}


@click.group(cls=LazyGroup, lazy_commands=VERBS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--state-dir", type=click.Path(file_okay=False), help="The daemon's state directory [ECHS_STATE_DIR].")
@click.option("--socket", type=click.Path(dir_okay=False), help="The daemon's unix socket [ECHS_SOCKET].")
@click.option("--url", help="The daemon's address, ws://HOST:PORT [ECHS_URL].")
@click.option("--token-file", type=click.Path(dir_okay=False), help="File holding the client token [ECHS_TOKEN_FILE, or ECHS_TOKEN].")
@click.option("--json", "as_json", is_flag=True, help="Print JSON only (one document, or JSON Lines for streams).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    envvar="ECHS_TIMEOUT",
    metavar="SECONDS",
    help=(
        f"How long to wait for the daemon's answer (default {DEFAULT_TIMEOUT_S:g} s; kill and rm "
        f"{KILL_TIMEOUT_S:g} s, compact {COMPACT_TIMEOUT_S:g} s) [ECHS_TIMEOUT]."
    ),
)
@click.version_option(__version__, prog_name="echs")
@click.pass_context
def cli(
    ctx: click.Context, state_dir: str | None, socket: str | None, url: str | None, token_file: str | None, as_json: bool, timeout: float | None
) -> None:
    """echs: drive the echsd daemon (threads, input, control, events).

    By default the socket and token are found in the state dir. Flags win over the
    environment variables shown in brackets.
    """
    if socket and url:
        raise click.UsageError("give --socket or --url, not both")
    ctx.obj = EchsOptions(state_dir=state_dir, socket=socket, url=url, token_file=token_file, json=as_json, timeout=timeout)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
