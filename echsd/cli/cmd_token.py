"""``echsd token [--state-dir DIR] [--rotate]``: print (or replace) the client token."""

from __future__ import annotations

import os

import click


@click.command()
@click.option("--state-dir", type=click.Path(file_okay=False), help="State directory [ECHS_STATE_DIR].")
@click.option("--rotate", is_flag=True, help="Write a new token; new connections must use it, open ones keep working.")
def token(state_dir: str | None, rotate: bool) -> None:
    """Print (or rotate) the client token.

    It is created when missing, with its state directory; a new directory is said on
    stderr, so a mistyped --state-dir does not go unnoticed.
    """
    from pathlib import Path

    from echsd.settings import default_state_dir
    from echsd.wire.token import TokenError, ensure_token, read_token, rotate_token

    directory = Path(state_dir).expanduser() if state_dir else default_state_dir(os.environ)
    new = not directory.exists()
    path = directory / "token"
    try:
        if rotate:
            value = rotate_token(path)
        else:
            ensure_token(path)
            value = read_token(path)
    except TokenError as exc:
        click.echo(f"echsd: {exc}", err=True)
        raise SystemExit(1) from None
    if new:  # a typo would otherwise make a second, unused state dir without a word
        click.echo(f"echsd token: created {directory}: no daemon has used it yet (is this the --state-dir you meant?)", err=True)
    click.echo(value)
