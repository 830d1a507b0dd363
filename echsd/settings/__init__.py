"""Daemon settings (CONTRACT.md 1.1): flags > environment > ``<state>/config.toml`` > defaults.

One module per job: ``load`` merges and validates (``load_settings``), ``sources`` says where
a value came from, ``model`` is the ``Settings`` value, ``sections`` lists the file's tables
(``[tuning]``, ``[models]``, ``[agent_types]``; adding one is a small local edit, see there),
and ``addresses``, ``storage``, ``provider``, ``tuning`` parse one kind of value each.
"""

from echsd.settings.addresses import ListenAddress, is_loopback_host, parse_listen
from echsd.settings.errors import SettingsError
from echsd.settings.load import load_catalog_setting, load_settings
from echsd.settings.model import Settings
from echsd.settings.provider import (
    DEFAULT_BASE_URLS,
    MAX_MODEL_CHARS,
    PROVIDERS,
    codex_auth_has_tokens,
    codex_home,
    resolve_provider,
)
from echsd.settings.sources import default_state_dir
from echsd.settings.storage import POSTGRES_SCHEMES, SQLITE_SCHEME, default_node_id, parse_node_id, parse_store
from echsd.settings.tuning import DAY_S, MIB, Tuning

__all__ = [
    "DAY_S",
    "DEFAULT_BASE_URLS",
    "MAX_MODEL_CHARS",
    "MIB",
    "POSTGRES_SCHEMES",
    "PROVIDERS",
    "SQLITE_SCHEME",
    "ListenAddress",
    "Settings",
    "SettingsError",
    "Tuning",
    "codex_auth_has_tokens",
    "codex_home",
    "default_node_id",
    "default_state_dir",
    "is_loopback_host",
    "load_catalog_setting",
    "load_settings",
    "parse_listen",
    "parse_node_id",
    "parse_store",
    "resolve_provider",
]
