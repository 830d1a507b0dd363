"""``echsd serve``: run the daemon in the foreground until SIGTERM, SIGINT or SIGHUP."""

from __future__ import annotations

from typing import Any

import click

from echsd.cli.options import settings_from_flags, settings_options


@click.command()
@settings_options
@click.option(
    "--app-server",
    multiple=True,
    help="Also speak the Codex app-server protocol at ws://127.0.0.1:PORT or unix://PATH, repeatable [ECHS_APP_SERVER].",
)
@click.option(
    "--mcp",
    multiple=True,
    help="Also serve echsd's MCP tools over streamable HTTP at tcp://127.0.0.1:PORT (path /mcp; the token as bearer), repeatable [ECHS_MCP].",
)
@click.option(
    "--web",
    help="Also serve the web view (and /metrics) at tcp://127.0.0.1:PORT; log in with `echs web` [ECHS_WEB].",
)
@click.option("--metrics", help="Also serve Prometheus metrics alone at tcp://127.0.0.1:PORT/metrics [ECHS_METRICS].")
@click.option("--log-level", default=None, help="debug, info, warning or error [ECHS_LOG_LEVEL].")
@click.option("--log-format", type=click.Choice(["auto", "console", "json"]), default=None, help="Log format [ECHS_LOG_FORMAT].")
def serve(log_level: str | None, log_format: str | None, **flags: Any) -> None:
    """Run the daemon in the foreground.

    SIGTERM, SIGINT or SIGHUP stops it gracefully: running turns are interrupted and saved.
    """
    import faulthandler

    from echsd import logs

    faulthandler.enable()  # a fatal signal (SIGBUS from a mapped file, SIGSEGV) leaves a traceback on stderr, not silence
    logs.configure(level=log_level, fmt=log_format)
    settings = settings_from_flags(**flags)
    logs.register_secret(settings.openai_api_key)

    import trio

    from echsd.daemon import Daemon
    from echsd.errors import EchsError
    from echsd.service import gc_policy, malloc_policy
    from echsd.threads.mailbox import first_leaf

    gc_policy.tune()
    malloc_policy.tune()
    try:
        trio.run(lambda: Daemon(settings, settle_gc=True).run(handle_signals=True))
    except BaseException as exc:  # one clear line for start-up failures we understand
        cause = first_leaf(exc)
        if isinstance(cause, EchsError):  # another daemon running, store unusable, token file...
            click.echo(f"echsd: {cause.message}", err=True)
            raise SystemExit(1) from None
        raise
