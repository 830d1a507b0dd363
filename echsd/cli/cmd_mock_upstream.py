"""``echsd mock-upstream``: the scripted Responses API server, for tests, demos and benchmarks."""

from __future__ import annotations

import signal
import sys

import click
import trio

from echsd.codex.mock import MockUpstream, ScriptError, load_script


@click.command("mock-upstream")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, type=click.IntRange(0, 65535), show_default=True, help="Port (0: any free port).")
@click.option("--script", type=click.Path(dir_okay=False), help="Script file (JSON or .toml), see docs/mock-upstream.md.")
@click.option("--require-token", help="Require 'Authorization: Bearer TOKEN' on model requests.")
def mock_upstream(host: str, port: int, script: str | None, require_token: str | None) -> None:
    """Serve a scripted Responses API (tests, demos).

    Runs until SIGTERM/SIGINT; the first line out is LISTENING <port>.

    Unlike the daemon's built-in mock, this one serves /_mock/requests and /_mock/reset.
    """
    try:
        loaded = load_script(script) if script else None
    except ScriptError as exc:
        click.echo(f"echsd mock-upstream: {exc}", err=True)
        raise SystemExit(2) from None
    code = trio.run(_serve, MockUpstream(loaded, require_token=require_token, host=host, port=port, inspect=True))
    raise SystemExit(code)


async def _serve(mock: MockUpstream) -> int:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            try:
                await nursery.start(mock.serve)
            except OSError as exc:
                click.echo(f"echsd mock-upstream: cannot listen on {mock.host}:{mock.port}: {exc.strerror}", err=True)
                return 1
            click.echo(f"LISTENING {mock.port}")
            sys.stdout.flush()
            async for _ in signals:
                nursery.cancel_scope.cancel()
                break
    return 0
