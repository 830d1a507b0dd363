"""Daemon settings (CONTRACT.md 1.1): flags > environment > ``<state>/config.toml`` > defaults.

One module per job: ``load`` merges and validates (``load_settings``), ``sources`` says where
a value came from, ``model`` is the ``Settings`` value, ``sections`` lists the file's tables
(``[tuning]``, ``[models]``, ``[agent_types]``, ...; adding one is a small local edit, see
there), and ``addresses``, ``storage``, ``provider``, ``tuning`` parse one kind of value each;
``state_dir`` finds the default state dir (clients read it too, so it imports nothing else).

The names below are loaded on first use (PEP 562): the thin client reads
``default_state_dir`` and must not load what the daemon's settings need (the tools' env
policy, the MCP config, the model catalog).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from echsd.settings.state_dir import default_state_dir
    from echsd.settings.storage import POSTGRES_SCHEMES, SQLITE_SCHEME, default_node_id, parse_node_id, parse_store
    from echsd.settings.tuning import DAY_S, MIB, Tuning

_WHERE = {
    "ListenAddress": "addresses",
    "is_loopback_host": "addresses",
    "parse_listen": "addresses",
    "SettingsError": "errors",
    "load_catalog_setting": "load",
    "load_settings": "load",
    "Settings": "model",
    "DEFAULT_BASE_URLS": "provider",
    "MAX_MODEL_CHARS": "provider",
    "PROVIDERS": "provider",
    "codex_auth_has_tokens": "provider",
    "codex_home": "provider",
    "resolve_provider": "provider",
    "default_state_dir": "state_dir",
    "POSTGRES_SCHEMES": "storage",
    "SQLITE_SCHEME": "storage",
    "default_node_id": "storage",
    "parse_node_id": "storage",
    "parse_store": "storage",
    "DAY_S": "tuning",
    "MIB": "tuning",
    "Tuning": "tuning",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'echsd.settings' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"echsd.settings.{module}"), name)
    globals()[name] = value
    return value
