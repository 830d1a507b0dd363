"""Options shared by ``echsd`` verbs that read the daemon settings (serve, probe, vacuum).

Each verb shows only the flags that mean something to it (``probe`` listens on nothing,
``vacuum`` asks no model); env and config-file fallbacks live in ``load_settings``.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from echsd.settings import PROVIDERS, Settings, SettingsError, load_settings

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

STATE_DIR = click.option("--state-dir", type=click.Path(file_okay=False), help="State directory [ECHS_STATE_DIR].")
LISTEN = click.option("--listen", multiple=True, help="unix://PATH or tcp://127.0.0.1:PORT, repeatable [ECHS_LISTEN].")
ALLOW_REMOTE = click.option("--allow-remote", is_flag=True, default=None, help="Allow a non-loopback TCP listener.")
PROVIDER = click.option("--provider", type=click.Choice(PROVIDERS), help="Model provider [ECHS_PROVIDER].")
BASE_URL = click.option("--base-url", help="Responses-compatible endpoint base URL [ECHS_BASE_URL].")
MODEL = click.option("--model", help="Default model for new threads [ECHS_MODEL].")
STORE = click.option("--store", help="sqlite:///PATH (default <state>/echsd.db) or postgresql://... [ECHS_STORE].")
NODE_ID = click.option("--node-id", help="This daemon's name among those sharing a store (default: host name) [ECHS_NODE_ID].")


def _with(*options: Decorator) -> Decorator:
    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            func = option(func)
        return func

    return apply


settings_options = _with(STATE_DIR, LISTEN, ALLOW_REMOTE, PROVIDER, BASE_URL, MODEL, STORE, NODE_ID)
"""Every settings flag of CONTRACT.md 1.1 (``serve``)."""
model_options = _with(STATE_DIR, PROVIDER, BASE_URL, click.option("--model", help="The model to ask (default: the configured one) [ECHS_MODEL]."))
"""What reaching the model endpoint needs (``probe``)."""
store_options = _with(STATE_DIR, STORE)
"""What finding the store needs (``vacuum``)."""


def settings_from_flags(**flags: Any) -> Settings:
    """Load settings or exit 2 with one line naming the bad setting."""
    try:
        return load_settings(flags)
    except SettingsError as exc:
        click.echo(f"echsd: {exc}", err=True)
        raise SystemExit(2) from None
