"""``[mcp_servers.NAME]`` tables of ``config.toml``, in the shape Codex users already write.

A server is either a command run over stdio (``command``, ``args``, ``env``, ``env_vars``,
``cwd``) or a streamable-HTTP endpoint (``url``, ``bearer_token_env_var``, ``http_headers``,
``env_http_headers``); giving both, or neither, is refused. Shared keys: ``enabled``,
``required``, ``startup_timeout_sec`` (or ``startup_timeout_ms``), ``tool_timeout_sec``,
``enabled_tools``, ``disabled_tools``, ``supports_parallel_tool_calls``. echsd's own:
``sandbox`` and ``network`` (a stdio server's sandbox, where the daemon's defaults for new
threads do not suit it, as the thread keys of the same names). echsd also reads
``startup_timeout_s``, ``tool_timeout_s`` and ``headers`` as the same settings, in the style
of its own ``[tuning]`` keys. Codex keys echsd does not act on (OAuth, per-tool approval
modes) are named by ``ignored_keys`` so the daemon can say so at start; any other key is a
mistake and stops the daemon with one line naming it.

Sans-IO: values in, a frozen ``McpServerConfig`` out (secrets are read from the
environment only when a session starts, never stored here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from echsd.sandbox_modes import MODES, NETWORK

SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
DEFAULT_STARTUP_TIMEOUT_S = 10.0  # Codex's default too
DEFAULT_TOOL_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 7 * 86_400.0

# Codex keys accepted and ignored (echsd has no OAuth login, no per-tool approval modes).
IGNORED_KEYS = ("oauth", "oauth_resource", "scopes", "default_tools_approval_mode", "tools", "experimental_environment", "name")
_STDIO_KEYS = ("command", "args", "env", "env_vars", "cwd", "sandbox", "network")
_HTTP_KEYS = ("url", "bearer_token_env_var", "http_headers", "headers", "env_http_headers")
_SHARED_KEYS = (
    "enabled", "required", "startup_timeout_sec", "startup_timeout_ms", "startup_timeout_s", "tool_timeout_sec",
    "tool_timeout_s", "enabled_tools", "disabled_tools", "supports_parallel_tool_calls",
)
KNOWN_KEYS = (*_STDIO_KEYS, *_HTTP_KEYS, *_SHARED_KEYS, *IGNORED_KEYS)


class McpConfigError(ValueError):
    """A bad ``[mcp_servers.NAME]`` table; the message (one line) names the setting."""


@dataclass(frozen=True)
class McpServerConfig:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    env_vars: tuple[str, ...] = ()  # names whose values are copied from the daemon's environment
    cwd: str | None = None
    sandbox: str | None = None  # None: the daemon's default for new threads
    network: str | None = None  # "on" | "off"; None: the daemon's default (off, but on under full-access)
    url: str | None = None
    bearer_token_env_var: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    env_headers: Mapping[str, str] = field(default_factory=dict)  # header -> environment variable
    enabled: bool = True
    required: bool = False  # started with the daemon instead of on first use
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    enabled_tools: tuple[str, ...] | None = None  # None: every tool the server lists
    disabled_tools: tuple[str, ...] = ()
    parallel: bool = False  # supports_parallel_tool_calls
    ignored: tuple[str, ...] = ()  # Codex keys given that echsd does not act on

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "streamable_http"

    def exposes(self, tool: str) -> bool:
        """Whether the server's tool ``tool`` is offered (``enabled_tools``, then ``disabled_tools``)."""
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools

    def describe(self) -> dict[str, Any]:
        """What ``echs mcp ls`` shows of the config (no header values: they may be secrets)."""
        target = " ".join([self.command or "", *self.args]).strip() if self.command is not None else self.url
        return {"transport": self.transport, "target": target, "enabled": self.enabled}


def load_mcp_servers(table: Any, where: str) -> dict[str, McpServerConfig]:
    """Every ``[mcp_servers.NAME]`` table of the config file ``where``, checked."""
    if table is None:
        return {}
    if not isinstance(table, Mapping):
        raise McpConfigError(f"invalid setting 'mcp_servers' in {where}: expected a table of tables")
    return {name: _server(str(name), fields, where) for name, fields in table.items()}


def _server(name: str, fields: Any, where: str) -> McpServerConfig:
    prefix = f"'mcp_servers.{name}'"
    if not SERVER_NAME.fullmatch(name):
        raise McpConfigError(f"invalid setting {prefix} in {where}: a server name is 1-64 letters, digits, '_' or '-'")
    if not isinstance(fields, Mapping):
        raise McpConfigError(f"invalid setting {prefix} in {where}: expected a table")
    unknown = sorted(str(key) for key in fields if key not in KNOWN_KEYS)
    if unknown:
        raise McpConfigError(f"unknown setting 'mcp_servers.{name}.{unknown[0]}' in {where}; known: {', '.join(KNOWN_KEYS)}")
    read = _Reader(name, fields, where)
    command, url = read.text("command"), read.text("url")
    if (command is None) == (url is None):
        raise McpConfigError(f"invalid setting {prefix} in {where}: give either `command` (stdio) or `url` (streamable HTTP)")
    wrong = [key for key in (_HTTP_KEYS if command is not None else _STDIO_KEYS) if key in fields]
    if wrong:
        transport = "a stdio server (command)" if command is not None else "a streamable-HTTP server (url)"
        raise McpConfigError(f"invalid setting 'mcp_servers.{name}.{wrong[0]}' in {where}: not used by {transport}")
    if url is not None and not url.startswith(("http://", "https://")):
        raise McpConfigError(f"invalid setting 'mcp_servers.{name}.url' in {where}: expected an http(s) URL (got {url!r})")
    enabled_tools = read.names("enabled_tools")
    headers = {**read.mapping("http_headers"), **read.mapping("headers")}
    return McpServerConfig(
        name=name,
        command=command,
        args=tuple(read.names("args") or ()),
        env=read.mapping("env"),
        env_vars=tuple(read.names("env_vars") or ()),
        cwd=read.text("cwd"),
        sandbox=read.choice("sandbox", MODES),
        network=read.network(),
        url=url,
        bearer_token_env_var=read.text("bearer_token_env_var"),
        headers=headers,
        env_headers=read.mapping("env_http_headers"),
        enabled=read.flag("enabled", True),
        required=read.flag("required", False),
        startup_timeout_s=read.startup_timeout(),
        tool_timeout_s=read.seconds(("tool_timeout_sec", "tool_timeout_s"), DEFAULT_TOOL_TIMEOUT_S),
        enabled_tools=tuple(enabled_tools) if enabled_tools is not None else None,
        disabled_tools=tuple(read.names("disabled_tools") or ()),
        parallel=read.flag("supports_parallel_tool_calls", False),
        ignored=tuple(key for key in IGNORED_KEYS if key in fields),
    )


@dataclass
class _Reader:
    """Typed reads of one server's table; each failure names the setting."""

    name: str
    fields: Mapping[str, Any]
    where: str

    def _bad(self, key: str, expected: str) -> McpConfigError:
        return McpConfigError(f"invalid setting 'mcp_servers.{self.name}.{key}' in {self.where}: expected {expected} (got {self.fields[key]!r})")

    def text(self, key: str) -> str | None:
        value = self.fields.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip() or "\0" in value:
            raise self._bad(key, "a non-empty string")
        return value

    def choice(self, key: str, choices: tuple[str, ...]) -> str | None:
        value = self.fields.get(key)
        if value is not None and value not in choices:
            raise self._bad(key, " or ".join(f'"{choice}"' for choice in choices))
        return value

    def network(self) -> str | None:
        """``network``: "on" | "off", or true | false as the daemon's own ``network`` takes it."""
        value = self.fields.get("network")
        if isinstance(value, bool):
            return "on" if value else "off"
        return self.choice("network", NETWORK)

    def flag(self, key: str, default: bool) -> bool:
        value = self.fields.get(key, default)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false")
        return value

    def names(self, key: str) -> list[str] | None:
        value = self.fields.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) and "\0" not in item for item in value):
            raise self._bad(key, "a list of strings")
        return list(value)

    def mapping(self, key: str) -> dict[str, str]:
        value = self.fields.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping) or not all(isinstance(v, str) and "\0" not in v for v in value.values()):
            raise self._bad(key, "a table of strings")
        return {str(k): v for k, v in value.items()}

    def seconds(self, keys: tuple[str, ...], default: float) -> float:
        given = [key for key in keys if key in self.fields]
        if len(given) > 1:
            raise McpConfigError(f"invalid setting 'mcp_servers.{self.name}' in {self.where}: give one of {', '.join(given)}")
        if not given:
            return default
        key = given[0]
        value = self.fields[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT_S:
            raise self._bad(key, f"a number of seconds above 0, at most {MAX_TIMEOUT_S:g}")
        return float(value)

    def startup_timeout(self) -> float:
        if "startup_timeout_ms" not in self.fields:
            return self.seconds(("startup_timeout_sec", "startup_timeout_s"), DEFAULT_STARTUP_TIMEOUT_S)
        if "startup_timeout_sec" in self.fields or "startup_timeout_s" in self.fields:
            raise McpConfigError(f"invalid setting 'mcp_servers.{self.name}' in {self.where}: give the startup timeout once")
        value = self.fields["startup_timeout_ms"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_TIMEOUT_S * 1000:
            raise self._bad("startup_timeout_ms", "a number of milliseconds above 0")
        return value / 1000
