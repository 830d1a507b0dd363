"""Options shared by ``echsd`` verbs that read the daemon settings (serve, probe)."""

from __future__ import annotations

from typing import Any, Callable

import click

from echsd.settings import PROVIDERS, Settings, SettingsError, load_settings


def settings_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The settings flags of CONTRACT.md 1.1; env and config-file fallbacks live in load_settings."""
    options = [
        click.option("--state-dir", type=click.Path(file_okay=False), help="State directory [ECHS_STATE_DIR]."),
        click.option("--listen", multiple=True, help="unix://PATH or tcp://127.0.0.1:PORT, repeatable [ECHS_LISTEN]."),
        click.option("--allow-remote", is_flag=True, default=None, help="Allow a non-loopback TCP listener."),
        click.option("--provider", type=click.Choice(PROVIDERS), help="Model provider [ECHS_PROVIDER]."),
        click.option("--base-url", help="Responses-compatible endpoint base URL [ECHS_BASE_URL]."),
        click.option("--model", help="Default model for new threads [ECHS_MODEL]."),
        click.option("--store", help="sqlite:///PATH (default <state>/echsd.db) or postgresql://... [ECHS_STORE]."),
        click.option("--node-id", help="This daemon's name among those sharing a store (default: host name) [ECHS_NODE_ID]."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def settings_from_flags(**flags: Any) -> Settings:
    """Load settings or exit 2 with one line naming the bad setting."""
    try:
        return load_settings(flags)
    except SettingsError as exc:
        click.echo(f"echsd: {exc}", err=True)
        raise SystemExit(2) from None
