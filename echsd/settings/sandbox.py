"""The sandbox's settings, from ``config.toml`` only: thread defaults and the fallback.

- ``sandbox``: the mode new threads get (``read-only | workspace-write | full-access``,
  default ``workspace-write``); ``network``: ``"on" | "off"`` (default: off, but on under
  full-access); ``writable_roots``: paths new threads may also write (absolute).
- ``sandbox_fallback``: ``"refuse"`` (default: a policy the kernel here cannot enforce is
  refused) or ``"unconfined"`` (such commands run with what can be enforced).
- ``sandbox_disable``: mechanisms not to use even where they work (``landlock``, ``userns``,
  ``seccomp``), to see what the daemon does without them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from echsd.settings.errors import SettingsError
from echsd.sandbox_modes import MODES

FALLBACKS = ("refuse", "unconfined")
MECHANISMS = ("landlock", "userns", "seccomp")


def _invalid(key: str, path: Path, expected: str, value: Any) -> SettingsError:
    return SettingsError(f"invalid setting {key!r} in {path}: expected {expected} (got {value!r})")


def mode_from(value: Any, path: Path) -> str:
    if value is None:
        return "workspace-write"
    if value not in MODES:
        raise _invalid("sandbox", path, " or ".join(MODES), value)
    return str(value)


def network_from(value: Any, path: Path) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "on" if value else "off"
    if value not in ("on", "off"):
        raise _invalid("network", path, '"on" or "off"', value)
    return str(value)


def writable_roots_from(value: Any, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and os.path.isabs(os.path.expanduser(item)) for item in value):
        raise _invalid("writable_roots", path, "a list of absolute paths", value)
    return tuple(os.path.normpath(os.path.expanduser(item)) for item in value)


def fallback_from(value: Any, path: Path) -> str:
    if value is None:
        return "refuse"
    if value not in FALLBACKS:
        raise _invalid("sandbox_fallback", path, " or ".join(f'"{choice}"' for choice in FALLBACKS), value)
    return str(value)


def disable_from(value: Any, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(item in MECHANISMS for item in value):
        raise _invalid("sandbox_disable", path, f"a list of {', '.join(MECHANISMS)}", value)
    return tuple(value)
