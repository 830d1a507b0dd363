"""Where the state dir is when no flag names it: read by the daemon's settings and by every
client (``echs``), so this module imports nothing else of the settings (no TOML parser, no
address parsing) and keeps the thin client's start short."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping


def default_state_dir(env: Mapping[str, str]) -> Path:
    if env.get("ECHS_STATE_DIR"):
        return Path(env["ECHS_STATE_DIR"]).expanduser()
    xdg = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(xdg).expanduser() / "echsd"
