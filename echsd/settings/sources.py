"""Where a setting comes from: a flag, an environment variable, the config file, or nothing.

Values in the file keep their TOML type (``allow_remote = "yes"`` is refused); flags and
environment variables are text and are parsed. Every error names the source.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from echsd.settings.addresses import ListenAddress, parse_listen
from echsd.settings.errors import SettingsError


def user_agents_md(env: Mapping[str, str]) -> Path:
    """The user's own AGENTS.md, read before any project's: ``$XDG_CONFIG_HOME/echsd/AGENTS.md``."""
    xdg = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(xdg).expanduser() / "echsd" / "AGENTS.md"


def read_config_file(path: Path) -> dict[str, Any]:
    """The parsed ``config.toml`` (empty when there is none)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"invalid config file {path}: {exc}") from None


@dataclass(frozen=True)
class Given:
    """A setting's value and where it came from (for errors)."""

    value: Any
    where: str  # "from --model", "from ECHS_MODEL", "in /state/config.toml"
    typed: bool  # True for the config file, whose values keep their TOML type

    def invalid(self, name: str, expected: str) -> SettingsError:
        return SettingsError(f"invalid setting {name!r} {self.where}: expected {expected} (got {self.value!r})")


@dataclass(frozen=True)
class Sources:
    """Flags (only those given), the environment and the config file, in that precedence."""

    flags: Mapping[str, Any]
    env: Mapping[str, str]
    file: Mapping[str, Any]
    config_path: Path

    def pick(self, name: str, env_name: str | None = None) -> Given | None:
        """The winning source of setting ``name`` (its flag ``--name``, ``env_name``, the file)."""
        if name in self.flags:
            return Given(self.flags[name], f"from --{name.replace('_', '-')}", typed=False)
        if env_name is not None and self.env.get(env_name):
            return Given(self.env[env_name], f"from {env_name}", typed=False)
        if name in self.file:
            return Given(self.file[name], f"in {self.config_path}", typed=True)
        return None


def listen_setting(given: Given | None, state_dir: Path, name: str = "listen") -> tuple[ListenAddress, ...]:
    """``listen`` or ``app_server``: one URL, several (space or comma separated), or a list."""
    if given is None:
        return ()
    raw = given.value
    if isinstance(raw, str) and not given.typed:
        urls = [part for part in raw.replace(",", " ").split() if part]
    elif isinstance(raw, str):
        urls = [raw]
    elif isinstance(raw, (list, tuple)) and all(isinstance(url, str) for url in raw):
        urls = list(raw)
    else:
        raise given.invalid(name, "a URL or a list of URLs")
    if not urls:
        raise given.invalid(name, "at least one address")
    option = "--" + name.replace("_", "-")
    where = option if given.where == f"from {option}" else f"setting {name!r} {given.where}:"
    return tuple(parse_listen(url, state_dir, where) for url in urls)


def bool_setting(given: Given | None, name: str, *, default: bool) -> bool:
    if given is None:
        return default
    value = given.value
    if isinstance(value, bool):
        return value
    if not given.typed and isinstance(value, str):
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off", ""):
            return False
        raise given.invalid(name, "a boolean (1/0, true/false, yes/no, on/off)")
    raise given.invalid(name, "a boolean (true or false, without quotes)")
