"""``load_settings``: flags > environment variables > ``<state>/config.toml`` > defaults.

Everything is validated up front; any problem raises ``SettingsError`` whose message is one
line naming the setting, where it came from (the flag, the variable or the file) and what
was expected, which ``echsd serve`` prints before exiting.

The state dir's unix socket is always listened on unless ``unix_socket = false``
(``ECHS_UNIX_SOCKET=0``): ``echs`` finds the daemon there, so ``listen = "tcp://..."``
adds a door instead of hiding the daemon. Listing some other ``unix://`` path replaces it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from echsd.settings.addresses import ListenAddress
from echsd.settings.errors import SettingsError
from echsd.settings.model import Settings
from echsd.settings.provider import (
    DEFAULT_BASE_URLS,
    MAX_MODEL_CHARS,
    PROVIDERS,
    codex_auth_has_tokens,
    codex_home,
    resolve_provider,
    url_problem,
)
from echsd.settings.sections import SECTIONS, catalog_from, check_sections
from echsd.settings.sources import Sources, bool_setting, listen_setting, read_config_file, user_agents_md
from echsd.settings.state_dir import default_state_dir
from echsd.settings.storage import default_node_id, parse_node_id, store_setting

# Top-level keys that a flag or an environment variable may also set (see ``load_settings``).
OPTION_KEYS = (
    "listen", "provider", "base_url", "model", "allow_remote", "unix_socket", "store", "store_file", "node_id", "app_server", "mcp",
    "web", "metrics",
)  # fmt: skip


def _sources(flags: Mapping[str, Any] | None, env: Mapping[str, str] | None) -> tuple[Sources, Path]:
    given = {k: v for k, v in (flags or {}).items() if v not in (None, (), [])}
    environ = dict(os.environ if env is None else env)
    state_dir = Path(given["state_dir"]).expanduser() if "state_dir" in given else default_state_dir(environ)
    config_path = state_dir / "config.toml"
    return Sources(given, environ, read_config_file(config_path), config_path), state_dir


def load_catalog_setting(flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> Any:
    """Only the model catalog (``echsd models``): the state dir's config file, nothing else checked."""
    sources, _state_dir = _sources(flags, env)
    return catalog_from(sources.file.get("models"), sources.config_path)


def load_settings(flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Merge flags, env, config file and defaults into validated ``Settings``.

    ``flags`` holds only options given on the command line (None means not given):
    ``state_dir``, ``listen`` (list), ``provider``, ``base_url``, ``model``, ``allow_remote``,
    ``unix_socket``, ``store``, ``store_file``, ``node_id``, ``app_server`` (list), ``mcp`` (list),
    ``web``, ``metrics``.
    """
    sources, state_dir = _sources(flags, env)
    env = sources.env
    known = sorted({*OPTION_KEYS, *(section.key for section in SECTIONS)})
    for key in sources.file:
        if key not in known:
            raise SettingsError(f"unknown setting {key!r} in {sources.config_path}; known: {', '.join(known)}")
    pick = sources.pick

    allow_remote = bool_setting(pick("allow_remote", "ECHS_ALLOW_REMOTE"), "allow_remote", default=False)
    listen = listen_setting(pick("listen", "ECHS_LISTEN"), state_dir)
    if not any(address.kind == "unix" for address in listen) and bool_setting(pick("unix_socket", "ECHS_UNIX_SOCKET"), "unix_socket", default=True):
        listen = (*listen, ListenAddress("unix", path=state_dir / "echsd.sock"))
    if not listen:
        raise SettingsError("invalid setting 'unix_socket': without the unix socket, give a listen address (tcp://127.0.0.1:PORT)")
    app_server = listen_setting(pick("app_server", "ECHS_APP_SERVER"), state_dir, "app_server")
    mcp = listen_setting(pick("mcp", "ECHS_MCP"), state_dir, "mcp")
    if any(address.kind != "tcp" for address in mcp):
        raise SettingsError("invalid setting 'mcp': MCP clients connect over streamable HTTP, so give tcp://HOST:PORT")
    web = listen_setting(pick("web", "ECHS_WEB"), state_dir, "web")
    metrics = listen_setting(pick("metrics", "ECHS_METRICS"), state_dir, "metrics")
    for name, addresses in (("web", web), ("metrics", metrics)):
        if any(address.kind != "tcp" for address in addresses):
            raise SettingsError(f"invalid setting {name!r}: browsers and scrapers connect over HTTP, so give tcp://HOST:PORT")
        if len(addresses) > 1:
            raise SettingsError(f"invalid setting {name!r}: give one address (tcp://HOST:PORT)")
    for address in (*listen, *app_server, *mcp, *web, *metrics):
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
        problem = url_problem(given.value)
        if problem is not None:
            raise given.invalid("base_url", f"an http(s) URL ({problem})")
        base_url = given.value.rstrip("/")
    else:
        base_url = DEFAULT_BASE_URLS.get(provider)

    if provider == "openai" and not api_key and base_url == DEFAULT_BASE_URLS["openai"]:
        raise SettingsError("invalid setting 'provider': openai needs OPENAI_API_KEY (or --base-url for a local endpoint)")

    tables = {section.field: section.parse(sources.file.get(section.key), sources.config_path) for section in SECTIONS}
    given = pick("model", "ECHS_MODEL")
    if given is None:  # the catalog's recommendation for the provider
        model = tables["catalog"].recommended(provider) or ""
        if not model:
            raise SettingsError(f"invalid setting 'model': the model catalog recommends none for provider {provider}; give --model")
    else:
        model = given.value
        if not isinstance(model, str) or not model.strip() or len(model) > MAX_MODEL_CHARS:
            raise given.invalid("model", f"a non-empty string of at most {MAX_MODEL_CHARS} characters")
    tables["catalog"].get(model)  # an unknown default model is announced once, at start
    check_sections(tables, sources.config_path)

    store_url, warnings = store_setting(sources, state_dir)
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
        user_agents_md=user_agents_md(env),
        openai_api_key=api_key,
        openai_organization=env.get("OPENAI_ORGANIZATION") or None,
        openai_project=env.get("OPENAI_PROJECT") or None,
        app_server=app_server,
        mcp=mcp,
        web=web[0] if web else None,
        metrics=metrics[0] if metrics else None,
        store_url=store_url,
        node_id=node_id,
        warnings=warnings,
        **tables,
    )
