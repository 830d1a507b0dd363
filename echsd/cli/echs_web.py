"""``echs web``: a one-time login link for the web view (``echsd serve --web``); ``--revoke``
ends every session.

The link carries its code in the URL's fragment, which browsers never send to a server:
the page posts it once and gets a session cookie. Where a browser is at hand (a terminal,
a display) the link is also opened, through a small file that forwards to it, so the code
never appears on a command line.
"""

from __future__ import annotations

import html
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from echsd.cli.echs_runtime import echo_json, json_option, options_of, run

if TYPE_CHECKING:
    from echsd.wire.client import Client

OPENER_NAME = "echs-web-login.html"


@click.command()
@click.option("--revoke", is_flag=True, help="End every web view session and unused login link.")
@click.option("--no-open", is_flag=True, help="Print the link only; do not open a browser.")
@json_option
@click.pass_context
def web(ctx: click.Context, revoke: bool, no_open: bool) -> None:
    """Log in to the web view: print (and open) a one-time link.

    The daemon must serve one (echsd serve --web tcp://127.0.0.1:PORT). The link works
    once, for a short while ([tuning] web_login_code_s); the browser then holds a session
    until it expires or `echs web --revoke` ends every session.
    """
    options = options_of(ctx)

    async def action(client: Client) -> None:
        if revoke:
            ended = await client.web_revoke()
            if options.json:
                echo_json(ended)
            else:
                click.echo(f"ended {ended['sessions']} web session(s) and {ended['codes']} unused login link(s)")
            return
        login = await client.web_login()
        if options.json:
            echo_json(login)
            return
        minutes = float(login["expires_in_s"]) / 60
        click.echo(f"Open the web view (the link works once, within {minutes:g} min):\n  {login['url']}")
        if not no_open and browser_at_hand() and open_in_browser(login["url"]):
            click.echo("(opened in your browser)")

    run(ctx, action)


def browser_at_hand() -> bool:
    """A person at a terminal with a display (or a Mac): opening a browser helps them."""
    if not sys.stdout.isatty():
        return False
    return sys.platform == "darwin" or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def open_in_browser(url: str) -> bool:
    """Open ``url`` through a private file that forwards to it (a browser's command line is
    visible to every local user; the file is the user's alone, overwritten next time)."""
    import webbrowser

    runtime = os.environ.get("XDG_RUNTIME_DIR")
    page = f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={html.escape(url, quote=True)}"><title>echsd</title>\n'
    try:
        if runtime and Path(runtime).is_dir():
            path = Path(runtime) / OPENER_NAME
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        else:
            fd, name = tempfile.mkstemp(prefix="echs-web-", suffix=".html")
            path = Path(name)
        with os.fdopen(fd, "w") as file:
            file.write(page)
        return webbrowser.open(path.as_uri())
    except (OSError, webbrowser.Error):
        return False
