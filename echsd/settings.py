"""Daemon settings (CONTRACT.md 1.1).

Precedence: command-line flags > environment variables > ``<state>/config.toml`` >
defaults. ``load_settings`` validates everything up front; any problem raises
``SettingsError`` whose message is one line naming the setting, where it came from (the
flag, the variable or the file) and what was expected, which ``echsd serve`` prints
before exiting. Values in the file must have their TOML type (``allow_remote = "yes"``
is refused); flags and environment variables are text and are parsed. Every ``[tuning]``
knob has a range outside which some part of the daemon stops working (a zero idle
timeout fails every turn, a 10-byte frame limit refuses every request).

The state dir's unix socket is always listened on unless ``unix_socket = false``
(``ECHS_UNIX_SOCKET=0``): ``echs`` finds the daemon there, so ``listen = "tcp://..."``
adds a door instead of hiding the daemon. Listing some other ``unix://`` path replaces it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from echsd.agent_types import AgentType
    from echsd.codex.catalog import ModelCatalog
    from echsd.codex.endpoint import Endpoint

PROVIDERS = ("auto", "openai", "codex", "mock")

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


DAY_S = 86_400.0
MIB = 1024 * 1024


def _knob(default: Any, low: float, high: float, *, off: bool = False) -> Any:
    """A ``[tuning]`` field with its accepted range (``off``: 0 is also accepted, meaning off)."""
    return field(default=default, metadata={"range": (low, high), "off": off})


@dataclass(frozen=True)
class Tuning:
    """Knobs read only from config.toml's ``[tuning]`` table (no flag or env).

    A knob added without ``_knob`` accepts any non-negative value of its type."""

    max_children: int = _knob(16, 0, 1000)  # live children per thread
    max_depth: int = _knob(4, 0, 100)  # sub-agent nesting
    max_running_subagents: int = _knob(50, 1, 10_000)  # sub-agent turns running at once, daemon-wide (more wait their turn)
    retained_deltas: int = _knob(20_000, 10, 10**9)  # stored delta events per thread before folding
    retained_delta_bytes: int = _knob(64 * MIB, 1 * MIB, 1024**4)  # ... and their size
    turn_output_bytes: int = _knob(8 * MIB, 64 * 1024, 1024**3)  # tool output streamed as events per turn
    restart_limit: int = _knob(5, 0, 1000)  # actor restarts allowed per restart_window_s
    restart_window_s: float = _knob(60.0, 1.0, DAY_S)
    restart_cooldown_s: float = _knob(30.0, 0.0, DAY_S)  # a given-up worker is tried again after this
    stream_idle_timeout_s: float = _knob(300.0, 1.0, DAY_S)
    max_retries: int = _knob(5, 0, 100)
    tool_timeout_s: float = _knob(600.0, 1.0, 7 * DAY_S)
    approval_timeout_s: float = _knob(600.0, 0.1, 7 * DAY_S)  # an unanswered approval request is denied after this
    max_message_bytes: int = _knob(16 * MIB, 64 * 1024, 256 * MIB)  # wire frame limit, both ways (the client takes 256 MiB)
    client_queue_events: int = _knob(10_000, 100, 10**7)  # per-connection backlog before events.gap
    client_queue_bytes: int = _knob(32 * MIB, 1 * MIB, 1024 * MIB)  # ... and its size
    heartbeat_s: float = _knob(15.0, 0.05, 3600.0, off=True)
    hello_timeout_s: float = _knob(10.0, 0.1, 300.0)  # connect to a good hello, or the connection is closed
    blackboard_max_value_bytes: int = _knob(1 * MIB, 1024, 64 * MIB)  # one blackboard value, as JSON text
    blackboard_log_keep: int = _knob(10_000, 1, 10**9)  # blackboard changes kept for replay (subscribe {blackboard, since})
    lease_s: float = _knob(10.0, 0.5, 600.0)  # PostgreSQL store: a node silent this long loses its threads to another


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
    app_server: tuple[ListenAddress, ...] = ()  # --app-server: Codex app-server protocol listeners
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

    def endpoint(self, base_url: str | None = None) -> Endpoint:
        """The provider's endpoint; ``base_url`` overrides the URL (the in-process mock's)."""
        from echsd.codex.endpoint import make_endpoint  # the codex package only where a client is made

        return make_endpoint(
            self.provider,
            base_url or self.base_url,
            codex_home=self.codex_home,
            api_key=self.openai_api_key,
            organization=self.openai_organization,
            project=self.openai_project,
        )


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


def parse_listen(url: str, state_dir: Path, where: str = "--listen") -> ListenAddress:
    """``where`` names the source in errors (``--listen``, ``setting 'listen' in FILE``)."""
    url = url.strip()
    if url.startswith("unix://"):
        path = url[len("unix://") :]
        if not path:
            raise SettingsError(f"invalid {where} {url!r}: unix:// needs a socket path")
        return ListenAddress("unix", path=Path(path).expanduser())
    if url.startswith(("tcp://", "ws://")):
        rest = url.split("://", 1)[1].rstrip("/")
        if rest.endswith("/v1"):
            rest = rest[: -len("/v1")]
        host, sep, port_text = rest.rpartition(":")
        if not sep or not host:
            raise SettingsError(f"invalid {where} {url!r}: expected tcp://HOST:PORT")
        try:
            port = int(port_text)
        except ValueError:
            raise SettingsError(f"invalid {where} {url!r}: port {port_text!r} is not a number") from None
        if not 0 <= port <= 65535:
            raise SettingsError(f"invalid {where} {url!r}: port out of range")
        return ListenAddress("tcp", host=host.strip("[]"), port=port)
    raise SettingsError(f"invalid {where} {url!r}: expected unix://PATH or tcp://HOST:PORT")


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
    """True when ``<CODEX_HOME>/auth.json`` holds a ChatGPT login (read by ``auth_file``, the
    one place that parses that file)."""
    from echsd.codex.auth_file import AuthFileError, read_tokens

    try:
        read_tokens(home / "auth.json")
    except AuthFileError:
        return False
    return True


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
        raise SettingsError(f"invalid setting 'tuning' in {path}: expected a table (got {table!r})")
    knobs = {knob.name: knob for knob in fields(Tuning)}
    values: dict[str, Any] = {}
    for key, value in table.items():
        knob = knobs.get(key)
        if knob is None:
            raise SettingsError(f"unknown setting 'tuning.{key}' in {path}; known: {', '.join(knobs)}")
        values[key] = _tuning_value(f"'tuning.{key}' in {path}", knob.type, knob.metadata, value)
    return Tuning(**values)


def _tuning_value(where: str, type_name: Any, metadata: Mapping[str, Any], value: Any) -> Any:
    """A ``[tuning]`` value of the knob's type and within its range, or ``SettingsError``."""
    is_float = type_name in (float, "float")
    kind = "a number" if is_float else "an integer"
    low, high = metadata.get("range", (0, None))
    span = f" from {_number(low)} to {_number(high)}" if high is not None else " >= 0"
    expected = f"{'0 (off) or ' if metadata.get('off') else ''}{kind}{span}"
    number = isinstance(value, int) or (is_float and isinstance(value, float))
    if isinstance(value, bool) or not number:
        raise SettingsError(f"invalid setting {where}: expected {expected} (got {value!r})")
    in_range = low <= value and (high is None or value <= high)
    if not in_range and not (metadata.get("off") and value == 0):
        raise SettingsError(f"invalid setting {where}: expected {expected} (got {value!r})")
    return float(value) if is_float else value


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


_FILE_KEYS = {"listen", "provider", "base_url", "model", "allow_remote", "unix_socket", "store", "node_id", "tuning", "models", "agent_types", "app_server"}


def _agent_types_from(table: Any, path: Path) -> dict[str, AgentType]:
    from echsd.agent_types import AgentTypeError, load_agent_types

    try:
        return load_agent_types(table, str(path))
    except AgentTypeError as exc:
        raise SettingsError(str(exc)) from None


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


@dataclass(frozen=True)
class _Given:
    """A setting's value and where it came from (for errors)."""

    value: Any
    where: str  # "from --model", "from ECHS_MODEL", "in /state/config.toml"
    typed: bool  # True for the config file, whose values keep their TOML type

    def invalid(self, name: str, expected: str) -> SettingsError:
        return SettingsError(f"invalid setting {name!r} {self.where}: expected {expected} (got {self.value!r})")


def load_settings(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Merge flags, env, config file and defaults into validated ``Settings``.

    ``flags`` holds only options given on the command line (None means not given):
    ``state_dir``, ``listen`` (list), ``provider``, ``base_url``, ``model``, ``allow_remote``,
    ``unix_socket``, ``store``, ``node_id``, ``app_server`` (list).
    """
    flags = {k: v for k, v in (flags or {}).items() if v not in (None, (), [])}
    env = dict(os.environ if env is None else env)

    state_dir = Path(flags["state_dir"]).expanduser() if "state_dir" in flags else default_state_dir(env)
    config_path = state_dir / "config.toml"
    file_values = _read_config_file(config_path)
    for key in file_values:
        if key not in _FILE_KEYS:
            raise SettingsError(f"unknown setting {key!r} in {config_path}; known: {', '.join(sorted(_FILE_KEYS))}")

    def pick(name: str, env_name: str) -> _Given | None:
        if name in flags:
            return _Given(flags[name], f"from --{name.replace('_', '-')}", typed=False)
        if env.get(env_name):
            return _Given(env[env_name], f"from {env_name}", typed=False)
        if name in file_values:
            return _Given(file_values[name], f"in {config_path}", typed=True)
        return None

    allow_remote = _bool_setting(pick("allow_remote", "ECHS_ALLOW_REMOTE"), "allow_remote", default=False)
    listen = _listen_setting(pick("listen", "ECHS_LISTEN"), state_dir)
    if not any(address.kind == "unix" for address in listen) and _bool_setting(pick("unix_socket", "ECHS_UNIX_SOCKET"), "unix_socket", default=True):
        listen = (*listen, ListenAddress("unix", path=state_dir / "echsd.sock"))
    if not listen:
        raise SettingsError("invalid setting 'unix_socket': without the unix socket, give a listen address (tcp://127.0.0.1:PORT)")
    app_server = _listen_setting(pick("app_server", "ECHS_APP_SERVER"), state_dir, "app_server")
    for address in (*listen, *app_server):
        if not address.is_loopback and not allow_remote:
            raise SettingsError(
                f"refusing to listen on non-loopback address {address}: pass --allow-remote to allow it"
            )

    given = pick("provider", "ECHS_PROVIDER")
    requested = "auto" if given is None else given.value
    if given is not None and (not isinstance(requested, str) or requested not in PROVIDERS):
        raise given.invalid("provider", f"one of {', '.join(PROVIDERS)}")

    api_key = env.get("OPENAI_API_KEY") or None
    home = codex_home(env)
    provider = resolve_provider(requested, home, api_key)
    if provider == "codex" and not codex_auth_has_tokens(home):
        raise SettingsError(
            f"invalid setting 'provider': codex needs a ChatGPT login in {home / 'auth.json'} (run `codex login`)"
        )

    given = pick("base_url", "ECHS_BASE_URL")
    base_url: str | None
    if given is not None:
        if not isinstance(given.value, str) or not given.value.startswith(("http://", "https://")):
            raise given.invalid("base_url", "an http(s) URL")
        base_url = given.value.rstrip("/")
    else:
        base_url = DEFAULT_BASE_URLS.get(provider)

    if provider == "openai" and not api_key and base_url == DEFAULT_BASE_URLS["openai"]:
        raise SettingsError("invalid setting 'provider': openai needs OPENAI_API_KEY (or --base-url for a local endpoint)")

    given = pick("model", "ECHS_MODEL")
    model = DEFAULT_MODELS[provider] if given is None else given.value
    if given is not None and (not isinstance(model, str) or not model.strip() or len(model) > MAX_MODEL_CHARS):
        raise given.invalid("model", f"a non-empty string of at most {MAX_MODEL_CHARS} characters")
    catalog = _catalog_from(file_values.get("models"), config_path)
    catalog.get(model)  # an unknown default model is announced once, at start

    given = pick("store", "ECHS_STORE")
    if given is not None and not isinstance(given.value, str):
        raise given.invalid("store", "a URL (sqlite:///PATH or postgresql://...)")
    store_url = parse_store(given.value if given is not None else f"{SQLITE_SCHEME}/{state_dir / 'echsd.db'}", state_dir)
    given = pick("node_id", "ECHS_NODE_ID")
    if given is not None and not isinstance(given.value, str):
        raise given.invalid("node_id", "a name")
    node_id = parse_node_id(given.value) if given is not None and given.value else default_node_id()

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
        app_server=app_server,
        tuning=_tuning_from(file_values.get("tuning"), config_path),
        catalog=catalog,
        agent_types=_agent_types_from(file_values.get("agent_types"), config_path),
        store_url=store_url,
        node_id=node_id,
    )


MAX_MODEL_CHARS = 256


def _listen_setting(given: _Given | None, state_dir: Path, name: str = "listen") -> tuple[ListenAddress, ...]:
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


def _bool_setting(given: _Given | None, name: str, *, default: bool) -> bool:
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
