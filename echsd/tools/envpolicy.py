"""Which of the daemon's environment variables a tool command sees (sans-IO), as Codex's
``shell_environment_policy`` decides it.

The daemon's environment is the user's: ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY`` and
the like would otherwise reach every command the model runs. ``[tools]`` in config.toml:

- ``env_exclude``: glob patterns (``fnmatch``, case-insensitive) of names left out; by
  default ``*KEY*``, ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*`` (Codex's three, and
  passwords). Setting it replaces the default (``env_exclude = []`` passes everything).
- ``env_include``: patterns of names passed even though an exclude matches them.

The daemon's own secrets (its API key, client token, store URL, PostgreSQL password) never
reach a command, whatever the patterns say.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

DEFAULT_EXCLUDE = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*")
DAEMON_SECRETS = frozenset({"OPENAI_API_KEY", "ECHS_TOKEN", "ECHS_STORE", "PGPASSWORD"})


def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in patterns), re.IGNORECASE)


@dataclass(frozen=True)
class EnvPolicy:
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    include: tuple[str, ...] = ()
    _exclude: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _include: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_exclude", _compiled(self.exclude))
        object.__setattr__(self, "_include", _compiled(self.include))

    def passes(self, name: str) -> bool:
        if name in DAEMON_SECRETS:
            return False
        if self._exclude is None or not self._exclude.match(name):
            return True
        return self._include is not None and bool(self._include.match(name))

    def apply(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The variables of ``environ`` a command gets."""
        return {name: value for name, value in environ.items() if self.passes(name)}


def env_policy_from(table: Any, where: str) -> EnvPolicy:
    """``[tools]`` of config.toml (None: the defaults); ValueError naming what is wrong."""
    if table is None:
        return EnvPolicy()
    if not isinstance(table, dict):
        raise ValueError(f"invalid setting 'tools' in {where}: expected a table (got {table!r})")
    unknown = sorted(set(table) - {"env_exclude", "env_include"})
    if unknown:
        raise ValueError(f"unknown setting 'tools.{unknown[0]}' in {where}; known: env_exclude, env_include")
    found = {}
    for key in ("env_exclude", "env_include"):
        value = table.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            raise ValueError(f"invalid setting 'tools.{key}' in {where}: expected a list of name patterns (got {value!r})")
        found[key] = tuple(value)
    return EnvPolicy(exclude=found.get("env_exclude", DEFAULT_EXCLUDE), include=found.get("env_include", ()))
