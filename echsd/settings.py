"""Daemon settings (CONTRACT.md 1.1).

Precedence: command-line flags > environment variables > ``<state>/config.toml`` >
defaults. ``load_settings`` validates everything up front; any problem raises
``SettingsError`` whose message is one line naming the setting, which ``echsd serve``
prints before exiting.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from echsd.agent_types import AgentType
    from echsd.codex.catalog import ModelCatalog

PROVIDERS = ("auto", "openai", "codex", "mock")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "codex": "https://chatgpt.com/backend-api/codex",
}
# What Codex itself defaults to (the ChatGPT backend retired gpt-5.1-codex); see echsd models.
DEFAULT_MODELS = {"openai": "gpt-5.5", "codex": "gpt-5.5", "mock": "mock-model"}


class SettingsError(ValueError):
    """An invalid setting; the message is a single line that names it."""


@dataclass(frozen=True)
class ListenAddress:
    kind: str  # "unix" | "tcp"
    path: Path | None = None
    host: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        if self.kind == "unix":
            return f"unix://{self.path}"
        return f"tcp://{self.host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        return self.kind == "unix" or is_loopback_host(self.host or "")


@dataclass(frozen=True)
class Tuning:
    """Knobs read only from config.toml's ``[tuning]`` table (no flag or env)."""

    max_children: int = 16  # live children per thread
    max_depth: int = 4  # sub-agent nesting
    max_running_subagents: int = 50  # sub-agent turns running at once, daemon-wide (more wait their turn)
    retained_deltas: int = 20_000  # stored delta events per thread before folding
    restart_limit: int = 5  # actor restarts allowed per restart_window_s
    restart_window_s: float = 60.0
    stream_idle_timeout_s: float = 300.0
    max_retries: int = 5
    tool_timeout_s: float = 600.0
    approval_timeout_s: float = 600.0  # an unanswered approval request is denied after this
    max_message_bytes: int = 16 * 1024 * 1024
    client_queue_events: int = 10_000  # per-connection backlog before events.gap
    heartbeat_s: float = 15.0


@dataclass(frozen=True)
class Settings:
    state_dir: Path
    listen: tuple[ListenAddress, ...]
    provider: str  # resolved: openai | codex | mock
    provider_requested: str  # as given: auto | openai | codex | mock
    base_url: str | None  # None for mock until the in-process mock is listening
    model: str
    allow_remote: bool
    codex_home: Path
    openai_api_key: str | None = field(repr=False, default=None)
    openai_organization: str | None = None  # OPENAI_ORGANIZATION: the OpenAI-Organization header
    openai_project: str | None = None  # OPENAI_PROJECT: the OpenAI-Project header
    tuning: Tuning = field(default_factory=Tuning)
    catalog: ModelCatalog = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    agent_types: dict[str, AgentType] = field(default_factory=dict, repr=False, compare=False)
    store_url: str = field(repr=False, default="")  # sqlite:////abs/path or postgresql://...
    node_id: str = ""

    @property
    def db_path(self) -> Path:
        """The default SQLite file (the store is ``store_url``)."""
        return self.state_dir / "echsd.db"

    @property
    def token_path(self) -> Path:
        return self.state_dir / "token"

    @property
    def socket_path(self) -> Path:
        return self.state_dir / "echsd.sock"

    @property
    def config_path(self) -> Path:
        return self.state_dir / "config.toml"


def default_state_dir(env: Mapping[str, str]) -> Path:
    if env.get("ECHS_STATE_DIR"):
        return Path(env["ECHS_STATE_DIR"]).expanduser()
    xdg = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(xdg).expanduser() / "echsd"


def codex_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("CODEX_HOME") or Path(env.get("HOME", "~")).expanduser() / ".codex").expanduser()


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_listen(url: str, state_dir: Path) -> ListenAddress:
    url = url.strip()
    if url.startswith("unix://"):
        path = url[len("unix://") :]
        if not path:
            raise SettingsError(f"invalid --listen {url!r}: unix:// needs a socket path")
        return ListenAddress("unix", path=Path(path).expanduser())
    if url.startswith(("tcp://", "ws://")):
        rest = url.split("://", 1)[1].rstrip("/")
        if rest.endswith("/v1"):
            rest = rest[: -len("/v1")]
        host, sep, port_text = rest.rpartition(":")
        if not sep or not host:
            raise SettingsError(f"invalid --listen {url!r}: expected tcp://HOST:PORT")
        try:
            port = int(port_text)
        except ValueError:
            raise SettingsError(f"invalid --listen {url!r}: port {port_text!r} is not a number") from None
        if not 0 <= port <= 65535:
            raise SettingsError(f"invalid --listen {url!r}: port out of range")
        return ListenAddress("tcp", host=host.strip("[]"), port=port)
    raise SettingsError(f"invalid --listen {url!r}: expected unix://PATH or tcp://HOST:PORT")


SQLITE_SCHEME = "sqlite://"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
NODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def parse_store(url: str, state_dir: Path) -> str:
    """Validate ``--store`` and make an SQLite path absolute (relative to the state dir).

    ``sqlite:///PATH``: PATH is relative (``sqlite:///echsd.db``) or absolute
    (``sqlite:////var/lib/echsd.db``), ``~`` expands. ``postgresql://...`` (or
    ``postgres://``) is a libpq URL, checked here only for shape: reaching it is the store's
    job, at start-up.
    """
    url = url.strip()
    if url.startswith(SQLITE_SCHEME):
        path = url[len(SQLITE_SCHEME) :]
        if not path.startswith("/") or path in ("/", "/:memory:"):
            raise SettingsError(f"invalid setting 'store': {url!r}: expected sqlite:///PATH (a database file)")
        location = Path(path[1:]).expanduser()
        return SQLITE_SCHEME + "/" + str(location if location.is_absolute() else state_dir / location)
    if url.startswith(POSTGRES_SCHEMES):
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
        except ValueError as exc:
            raise SettingsError(f"invalid setting 'store': not a valid postgresql:// URL ({exc})") from None
        if parts.fragment:
            raise SettingsError("invalid setting 'store': a postgresql:// URL has no #fragment")
        return url
    scheme = url.split("://", 1)[0] if "://" in url else url
    raise SettingsError(f"invalid setting 'store': {scheme!r} is not sqlite:///PATH or postgresql://...")


def parse_node_id(value: str) -> str:
    if not NODE_ID.fullmatch(value):
        raise SettingsError(
            f"invalid setting 'node_id': {value!r}: use 1-63 letters, digits, '.', '_' or '-'"
        )
    return value


def default_node_id() -> str:
    """The host name, made a valid node id (a default must never refuse to start)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname()).lstrip("._-")[:63]
    return name or "localhost"


def codex_auth_has_tokens(home: Path) -> bool:
    """True when ``<CODEX_HOME>/auth.json`` holds a ChatGPT login (an access token)."""
    import json

    try:
        data = json.loads((home / "auth.json").read_text())
    except (OSError, ValueError):
        return False
    tokens = data.get("tokens") if isinstance(data, dict) else None
    return isinstance(tokens, dict) and bool(tokens.get("access_token"))


def resolve_provider(requested: str, home: Path, api_key: str | None) -> str:
    if requested != "auto":
        return requested
    if codex_auth_has_tokens(home):
        return "codex"
    if api_key:
        return "openai"
    return "mock"


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"invalid config file {path}: {exc}") from None
    return data


def _tuning_from(table: Any, path: Path) -> Tuning:
    if table is None:
        return Tuning()
    if not isinstance(table, dict):
        raise SettingsError(f"invalid setting 'tuning' in {path}: expected a table")
    defaults = Tuning()
    values: dict[str, Any] = {}
    for key, value in table.items():
        if not hasattr(defaults, key):
            raise SettingsError(f"unknown setting 'tuning.{key}' in {path}")
        expected = type(getattr(defaults, key))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or isinstance(value, bool) or value < 0:
            raise SettingsError(
                f"invalid setting 'tuning.{key}' in {path}: expected a non-negative {expected.__name__}"
            )
        values[key] = value
    return Tuning(**values)


_FILE_KEYS = {"listen", "provider", "base_url", "model", "allow_remote", "store", "node_id", "tuning", "models", "agent_types"}


def _agent_types_from(table: Any, path: Path) -> dict[str, AgentType]:
    from echsd.agent_types import AgentTypeError, load_agent_types

    try:
        return load_agent_types(table, str(path))
    except AgentTypeError as exc:
        raise SettingsError(f"invalid setting {exc}") from None


def _catalog_from(table: Any, path: Path) -> ModelCatalog:
    """The shipped model catalog with the config file's ``[models."NAME"]`` tables merged in."""
    from echsd.codex.catalog import CatalogError, load_catalog

    try:
        return load_catalog(table, where=str(path))
    except CatalogError as exc:
        raise SettingsError(f"invalid setting in {exc}") from None


def load_catalog_setting(flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> ModelCatalog:
    """Only the model catalog (``echsd models``): the state dir's config file, nothing else checked."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    env = dict(os.environ if env is None else env)
    state_dir = Path(flags["state_dir"]).expanduser() if "state_dir" in flags else default_state_dir(env)
    config_path = state_dir / "config.toml"
    return _catalog_from(_read_config_file(config_path).get("models"), config_path)


def load_settings(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Merge flags, env, config file and defaults into validated ``Settings``.

    ``flags`` holds only options given on the command line (None means not given):
    ``state_dir``, ``listen`` (list), ``provider``, ``base_url``, ``model``, ``allow_remote``,
    ``store``, ``node_id``.
    """
    flags = {k: v for k, v in (flags or {}).items() if v not in (None, (), [])}
    env = dict(os.environ if env is None else env)

    state_dir = Path(flags["state_dir"]).expanduser() if "state_dir" in flags else default_state_dir(env)
    config_path = state_dir / "config.toml"
    file_values = _read_config_file(config_path)
    for key in file_values:
        if key not in _FILE_KEYS:
            raise SettingsError(f"unknown setting {key!r} in {config_path}")

    def pick(name: str, env_name: str) -> Any:
        if name in flags:
            return flags[name]
        if env.get(env_name):
            return env[env_name]
        return file_values.get(name)

    listen_raw = pick("listen", "ECHS_LISTEN")
    if listen_raw is None:
        listen_urls: list[str] = [f"unix://{state_dir / 'echsd.sock'}"]
    elif isinstance(listen_raw, str):
        listen_urls = [part for part in listen_raw.replace(",", " ").split() if part]
    elif isinstance(listen_raw, (list, tuple)) and all(isinstance(u, str) for u in listen_raw):
        listen_urls = list(listen_raw)
    else:
        raise SettingsError("invalid setting 'listen': expected a URL or a list of URLs")
    if not listen_urls:
        raise SettingsError("invalid setting 'listen': no address given")

    allow_remote_raw = pick("allow_remote", "ECHS_ALLOW_REMOTE")
    allow_remote = _parse_bool(allow_remote_raw, "allow_remote") if allow_remote_raw is not None else False

    listen = tuple(parse_listen(url, state_dir) for url in listen_urls)
    for address in listen:
        if not address.is_loopback and not allow_remote:
            raise SettingsError(
                f"refusing to listen on non-loopback address {address}: pass --allow-remote to allow it"
            )

    requested = pick("provider", "ECHS_PROVIDER") or "auto"
    if not isinstance(requested, str) or requested not in PROVIDERS:
        raise SettingsError(f"invalid setting 'provider': {requested!r} is not one of {', '.join(PROVIDERS)}")

    api_key = env.get("OPENAI_API_KEY") or None
    home = codex_home(env)
    provider = resolve_provider(requested, home, api_key)
    if provider == "codex" and not codex_auth_has_tokens(home):
        raise SettingsError(
            f"invalid setting 'provider': codex needs a ChatGPT login in {home / 'auth.json'} (run `codex login`)"
        )

    base_url = pick("base_url", "ECHS_BASE_URL")
    if base_url is not None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise SettingsError(f"invalid setting 'base_url': {base_url!r} is not an http(s) URL")
        base_url = base_url.rstrip("/")
    elif provider in DEFAULT_BASE_URLS:
        base_url = DEFAULT_BASE_URLS[provider]

    if provider == "openai" and not api_key and base_url == DEFAULT_BASE_URLS["openai"]:
        raise SettingsError("invalid setting 'provider': openai needs OPENAI_API_KEY (or --base-url for a local endpoint)")

    model = pick("model", "ECHS_MODEL") or DEFAULT_MODELS[provider]
    if not isinstance(model, str) or not model.strip():
        raise SettingsError(f"invalid setting 'model': {model!r}")
    catalog = _catalog_from(file_values.get("models"), config_path)
    catalog.get(model)  # an unknown default model is announced once, at start

    store = pick("store", "ECHS_STORE")
    if store is not None and not isinstance(store, str):
        raise SettingsError("invalid setting 'store': expected a URL")
    store_url = parse_store(store or f"{SQLITE_SCHEME}/{state_dir / 'echsd.db'}", state_dir)
    node_id = pick("node_id", "ECHS_NODE_ID")
    if node_id is not None and not isinstance(node_id, str):
        raise SettingsError("invalid setting 'node_id': expected a name")
    node_id = parse_node_id(node_id) if node_id else default_node_id()

    return Settings(
        state_dir=state_dir,
        listen=listen,
        provider=provider,
        provider_requested=requested,
        base_url=base_url,
        model=model,
        allow_remote=allow_remote,
        codex_home=home,
        openai_api_key=api_key,
        openai_organization=env.get("OPENAI_ORGANIZATION") or None,
        openai_project=env.get("OPENAI_PROJECT") or None,
        tuning=_tuning_from(file_values.get("tuning"), config_path),
        catalog=catalog,
        agent_types=_agent_types_from(file_values.get("agent_types"), config_path),
        store_url=store_url,
        node_id=node_id,
    )


def _parse_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.lower() in ("0", "false", "no", "off", ""):
        return False
    raise SettingsError(f"invalid setting {name!r}: {value!r} is not a boolean")
