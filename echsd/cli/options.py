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
STORE = click.option(
    "--store",
    help="sqlite:///PATH (default <state>/echsd.db) or postgresql://... [ECHS_STORE]; a password here is visible to every local user: use ECHS_STORE, --store-file or ~/.pgpass.",
)
STORE_FILE = click.option(
    "--store-file",
    type=click.Path(dir_okay=False),
    help="A file holding the --store URL, readable by its owner only (chmod 600) [ECHS_STORE_FILE].",
)
NODE_ID = click.option("--node-id", help="This daemon's name among those sharing a store (default: host name) [ECHS_NODE_ID].")


def _with(*options: Decorator) -> Decorator:
    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            func = option(func)
        return func

    return apply


settings_options = _with(STATE_DIR, LISTEN, ALLOW_REMOTE, PROVIDER, BASE_URL, MODEL, STORE, STORE_FILE, NODE_ID)
"""Every settings flag of CONTRACT.md 1.1 (``serve``)."""
model_options = _with(STATE_DIR, PROVIDER, BASE_URL, click.option("--model", help="The model to ask (default: the configured one) [ECHS_MODEL]."))
"""What reaching the model endpoint needs (``probe``)."""
store_options = _with(STATE_DIR, STORE, STORE_FILE)
"""What finding the store needs (``vacuum``)."""


def settings_from_flags(**flags: Any) -> Settings:
    """Load settings or exit 2 with one line naming the bad setting; say its warnings
    (as log lines: ``serve`` has configured its log by now) and keep the store's password
    out of every log line."""
    from echsd import logs
    from echsd.settings.storage import url_password

    try:
        settings = load_settings(flags)
    except SettingsError as exc:
        click.echo(f"echsd: {exc}", err=True)
        raise SystemExit(2) from None
    logs.register_secret(url_password(settings.store_url))
    for warning in settings.warnings:
        logs.get_logger("echsd.settings").warning(warning)
    return settings
