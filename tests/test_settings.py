"""Settings: precedence, the provider auto rule, validation with one clear line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from echsd.settings import SettingsError, load_settings


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex"), **extra}


def write_codex_auth(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    codex.mkdir(exist_ok=True)
    (codex / "auth.json").write_text(json.dumps({"tokens": {"access_token": "tok-123456789", "account_id": "acc"}}))


def test_defaults_use_xdg_state_and_mock(tmp_path: Path) -> None:
    settings = load_settings({}, env_for(tmp_path, XDG_STATE_HOME=str(tmp_path / "xdg")))
    assert settings.state_dir == tmp_path / "xdg" / "echsd"
    assert settings.provider == "mock" and settings.provider_requested == "auto"
    assert [str(a) for a in settings.listen] == [f"unix://{tmp_path / 'xdg' / 'echsd' / 'echsd.sock'}"]
    home_default = load_settings({}, env_for(tmp_path))
    assert home_default.state_dir == tmp_path / "home" / ".local" / "state" / "echsd"


def test_auto_prefers_codex_then_openai(tmp_path: Path) -> None:
    assert load_settings({}, env_for(tmp_path, OPENAI_API_KEY="sk-x")).provider == "openai"
    write_codex_auth(tmp_path)
    settings = load_settings({}, env_for(tmp_path, OPENAI_API_KEY="sk-x"))
    assert settings.provider == "codex" and settings.base_url == "https://chatgpt.com/backend-api/codex"


def test_flags_beat_env_beat_file_beat_defaults(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('model = "from-file"\nbase_url = "http://127.0.0.1:9/v1"\nprovider = "openai"\n')
    env = env_for(tmp_path, ECHS_STATE_DIR=str(state), ECHS_MODEL="from-env")
    settings = load_settings({}, env)
    assert settings.model == "from-env" and settings.base_url == "http://127.0.0.1:9/v1"
    assert settings.provider == "openai"
    flagged = load_settings({"model": "from-flag", "provider": "mock"}, env)
    assert flagged.model == "from-flag" and flagged.provider == "mock"


@pytest.mark.parametrize(
    ("flags", "file_text", "message"),
    [
        ({"listen": ["tcp://0.0.0.0:8000"]}, "", "--allow-remote"),
        ({"listen": ["http://x"]}, "", "invalid --listen"),
        ({"listen": ["tcp://127.0.0.1:notaport"]}, "", "not a number"),
        ({"provider": "gemini"}, "", "'provider'"),
        ({"base_url": "ftp://x"}, "", "'base_url'"),
        ({"provider": "codex"}, "", "codex needs a ChatGPT login"),
        ({}, "colour = 1\n", "unknown setting 'colour'"),
        ({}, "[tuning]\nmax_depth = -1\n", "tuning.max_depth"),
        ({}, "[tuning]\nwarp = 9\n", "tuning.warp"),
        ({}, "agent_types = 5\n", "invalid setting 'agent_types' .*: expected a table of tables"),
        ({}, "[agent_types.x]\ncolour = 1\n", "unknown setting 'agent_types.x.colour' .*; known: description, model"),
        ({}, '[agent_types.x]\ntools = "read_file"\n', "invalid setting 'agent_types.x.tools' .*: expected a list of tool names"),
        ({}, '[agent_types.explorer]\nmodel = ""\n', "invalid setting 'agent_types.explorer.model' .*: expected a non-empty string"),
        ({}, '[agent_types.x]\nisolation = "branch"\n', "invalid setting 'agent_types.x.isolation' .*: expected one of none, worktree .got 'branch'"),
        ({}, "worktree_root = 5\n", "invalid setting 'worktree_root'"),
        ({}, "model = [\n", "invalid config file"),
        ({"store": "mysql://db"}, "", "invalid setting 'store': 'mysql'"),
        ({"store": "sqlite://no-third-slash.db"}, "", "expected sqlite:///PATH"),
        ({"store": "sqlite:///"}, "", "expected sqlite:///PATH"),
        ({"store": "postgresql://host:port/db"}, "", "not a valid postgresql:// URL"),
        ({}, "store = 5\n", "invalid setting 'store'"),
        ({"node_id": "two words"}, "", "invalid setting 'node_id'"),
        ({"node_id": "x" * 64}, "", "invalid setting 'node_id'"),
        ({"web": "tcp://0.0.0.0:8765"}, "", "--allow-remote"),
        ({"web": "unix:///tmp/web.sock"}, "", "invalid setting 'web': browsers and scrapers connect over HTTP"),
        ({"metrics": "tcp://127.0.0.1:1 tcp://127.0.0.1:2"}, "", "invalid setting 'metrics': give one address"),
        ({}, 'metrics = "tcp://10.0.0.1:9464"\n', "--allow-remote"),
        ({}, "[hooks]\ncommand = 5\n", "invalid setting 'hooks.command'"),
        ({}, '[hooks]\ncommand = "x"\nevents = ["turn.finished"]\n', "no event type 'turn.finished'"),
        ({}, '[hooks]\ncommand = "x"\ntimeout_s = 0\n', "'hooks.timeout_s'"),
        ({}, '[hooks]\ncolour = 1\n', "unknown setting 'hooks.colour'"),
        ({}, '[[hooks.webhook]]\nurl = "ftp://x"\n', r"'hooks.webhook\[0\].url' .*: expected an http"),
        ({}, '[[hooks.webhook]]\nurl = "https://x.example/h"\nsecret = ""\n', r"'hooks.webhook\[0\].secret'"),
    ],
)
def test_invalid_settings_name_the_setting(tmp_path: Path, flags: dict, file_text: str, message: str) -> None:
    state = tmp_path / "state"
    state.mkdir()
    if file_text:
        (state / "config.toml").write_text(file_text)
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")) as info:
        load_settings({"state_dir": str(state), **flags}, env_for(tmp_path))
    assert "\n" not in str(info.value)


def test_web_metrics_and_hooks_settings(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(
        '[hooks]\ncommand = "notify"\nargs = ["-u"]\nevents = ["turn.error"]\n'
        '[[hooks.webhook]]\nurl = "https://hooks.example/T0/B0/s3cret"\nsecret = "k"\n'
        '[[hooks.webhook]]\nurl = "http://127.0.0.1:9/x"\nevents = ["approval.requested"]\ntimeout_s = 2\n'
    )
    settings = load_settings({"state_dir": str(state), "web": "tcp://127.0.0.1:8765"}, env_for(tmp_path, ECHS_METRICS="tcp://127.0.0.1:9464"))
    assert (settings.web.host, settings.web.port, settings.metrics.port) == ("127.0.0.1", 8765, 9464)
    hooks = settings.hooks
    assert hooks.command.command == "notify" and hooks.command.args == ("-u",) and hooks.command.events == {"turn.error"}
    assert [hook.url for hook in hooks.webhooks][1] == "http://127.0.0.1:9/x" and hooks.webhooks[1].timeout_s == 2
    assert "turn.completed" in hooks.webhooks[0].events and hooks.events >= {"turn.error", "approval.requested", "thread.given_up"}
    assert "s3cret" not in repr(hooks.webhooks[0]) and hooks.webhooks[0].shown == "https://hooks.example/…"
    assert not load_settings({"state_dir": str(tmp_path / "none")}, env_for(tmp_path)).hooks


def test_remote_listen_allowed_explicitly(tmp_path: Path) -> None:
    settings = load_settings({"listen": ["tcp://0.0.0.0:8000"], "allow_remote": True}, env_for(tmp_path))
    assert not settings.listen[0].is_loopback


def test_serve_refuses_bad_setting_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "echsd.cli.echsd_main", "serve", "--state-dir", str(tmp_path), "--listen", "tcp://10.1.2.3:9"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env_for(tmp_path, PATH="/usr/bin:/bin"),
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "refusing to listen on non-loopback address" in lines[0]


def test_store_defaults_to_the_state_dirs_sqlite_file_and_node_to_the_host(tmp_path: Path) -> None:
    import socket

    settings = load_settings({"state_dir": str(tmp_path / "s")}, env_for(tmp_path))
    assert settings.store_url == f"sqlite:///{tmp_path / 's' / 'echsd.db'}"
    assert settings.node_id == socket.gethostname()[:63]


def test_store_and_node_id_from_flag_env_and_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('store = "sqlite:///db/from-file.db"\nnode_id = "file-node"\n')
    settings = load_settings({"state_dir": str(state)}, env_for(tmp_path))
    assert settings.store_url == f"sqlite:///{state / 'db' / 'from-file.db'}"  # relative: under the state dir
    assert settings.node_id == "file-node"
    env = env_for(tmp_path, ECHS_STORE="postgresql://echs:pw@db.example/echs?sslmode=require", ECHS_NODE_ID="env-node")
    settings = load_settings({"state_dir": str(state)}, env)
    assert settings.store_url == "postgresql://echs:pw@db.example/echs?sslmode=require"
    assert settings.node_id == "env-node"
    assert "pw@" not in repr(settings)  # the URL may carry a password
    flagged = load_settings({"state_dir": str(state), "store": "sqlite:////var/x.db", "node_id": "n1"}, env)
    assert (flagged.store_url, flagged.node_id) == ("sqlite:////var/x.db", "n1")


def test_store_file_and_url_precedence(tmp_path: Path) -> None:
    """A URL or a file at each level (flag, env, config file), never both at one; the
    higher level wins; a password is warned about only when it is on the command line."""
    state = tmp_path / "state"
    state.mkdir()
    private = tmp_path / "url"
    private.write_text("\n# comment\n  postgresql://u:pw@db/echs  \n")
    private.chmod(0o600)
    (state / "config.toml").write_text('store = "sqlite:///from-file.db"\n')
    env = env_for(tmp_path, ECHS_STORE_FILE=str(private))
    from_env = load_settings({"state_dir": str(state)}, env)
    assert (from_env.store_url, from_env.warnings) == ("postgresql://u:pw@db/echs", ())
    flagged = load_settings({"state_dir": str(state), "store": "postgresql://u:pw@db/echs"}, env)
    assert len(flagged.warnings) == 1 and "pw" not in flagged.warnings[0].replace("password", "")
    in_query = load_settings({"state_dir": str(state), "store": "postgresql://db/echs?password=pw"}, env_for(tmp_path))
    assert len(in_query.warnings) == 1
    assert load_settings({"state_dir": str(state), "store": "postgresql://u@db/echs"}, env).warnings == ()
    for flags, environment, message in (
        ({"store": "sqlite:///a.db", "store_file": str(private)}, {}, "give --store or --store-file, not both"),
        ({}, {"ECHS_STORE": "sqlite:///a.db", "ECHS_STORE_FILE": str(private)}, "give ECHS_STORE or ECHS_STORE_FILE, not both"),
        ({"store_file": str(tmp_path / "missing")}, {}, "cannot read the store file"),
        ({"store_file": str(tmp_path)}, {}, "cannot read the store file"),
    ):
        with pytest.raises(SettingsError, match=re.escape(message)):
            load_settings({"state_dir": str(state), **flags}, env_for(tmp_path, **environment))


def test_serve_names_an_unreachable_store_in_one_line(tmp_path: Path) -> None:
    url = f"postgresql://echs:s3cret-pass@/echs?host={tmp_path}"  # no server listens there
    result = subprocess.run(
        [sys.executable, "-m", "echsd.cli.echsd_main", "serve", "--state-dir", str(tmp_path / "state"), "--store", url],
        capture_output=True,
        text=True,
        timeout=60,
        env=env_for(tmp_path, PATH="/usr/bin:/bin", ECHS_LOG_FORMAT="json"),
    )
    assert result.returncode == 1
    assert "s3cret-pass" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("echsd: cannot use the PostgreSQL store postgresql://echs:***@/echs"), result.stderr


@pytest.mark.parametrize(
    ("file_text", "message"),
    [
        ("[tuning]\nstream_idle_timeout_s = 0\n", "'tuning.stream_idle_timeout_s' in {file}: expected a number from 1 to 86,400 (got 0)"),
        ("[tuning]\nmax_message_bytes = 10\n", "'tuning.max_message_bytes' in {file}: expected an integer from 65,536 to 268,435,456 (got 10)"),
        ("[tuning]\nmax_message_bytes = 1e9\n", "'tuning.max_message_bytes' in {file}: expected an integer"),
        ("[tuning]\ntool_timeout_s = \"10\"\n", "'tuning.tool_timeout_s' in {file}: expected a number from 1 to 604,800 (got '10')"),
        ("[tuning]\nheartbeat_s = 0.001\n", "expected 0 (off) or a number from 0.05 to 3,600 (got 0.001)"),
        ("[tuning]\nclient_queue_events = true\n", "'tuning.client_queue_events' in {file}: expected an integer"),
        ('allow_remote = "yes"\n', "'allow_remote' in {file}: expected a boolean (true or false, without quotes) (got 'yes')"),
        ("model = 42\n", "'model' in {file}: expected a non-empty string of at most 256 characters (got 42)"),
        ('model = ""\n', "'model' in {file}: expected a non-empty string"),
        ('provider = "gemini"\n', "'provider' in {file}: expected one of auto, openai, codex, mock (got 'gemini')"),
        ("listen = 5\n", "'listen' in {file}: expected a URL or a list of URLs (got 5)"),
        ('listen = "http://x"\n', "invalid setting 'listen' in {file}: 'http://x': expected unix://PATH or tcp://HOST:PORT"),
        ('unix_socket = "no"\n', "'unix_socket' in {file}: expected a boolean"),
        ("unix_socket = false\n", "without the unix socket, give a listen address"),
    ],
)
def test_file_settings_that_would_break_every_turn_name_the_file_key_and_type(tmp_path: Path, file_text: str, message: str) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(file_text)
    with pytest.raises(SettingsError) as info:
        load_settings({"state_dir": str(state)}, env_for(tmp_path))
    assert message.format(file=state / "config.toml") in str(info.value)
    assert "\n" not in str(info.value)


def test_text_from_flags_and_environment_is_parsed(tmp_path: Path) -> None:
    assert load_settings({"listen": ["tcp://0.0.0.0:8000"]}, env_for(tmp_path, ECHS_ALLOW_REMOTE="yes")).allow_remote
    with pytest.raises(SettingsError, match="'allow_remote' from ECHS_ALLOW_REMOTE: expected a boolean"):
        load_settings({}, env_for(tmp_path, ECHS_ALLOW_REMOTE="maybe"))
    with pytest.raises(SettingsError, match="'provider' from --provider: expected one of"):
        load_settings({"provider": "gemini"}, env_for(tmp_path))
    assert load_settings({}, env_for(tmp_path, ECHS_MODEL="gpt-x")).model == "gpt-x"


def test_tcp_in_the_config_keeps_the_unix_socket_unless_it_is_disabled(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('listen = "tcp://127.0.0.1:7777"\n[tuning]\nheartbeat_s = 0\n')
    settings = load_settings({"state_dir": str(state)}, env_for(tmp_path))
    assert [str(a) for a in settings.listen] == ["tcp://127.0.0.1:7777", f"unix://{state / 'echsd.sock'}"]
    assert settings.tuning.heartbeat_s == 0.0  # 0: off
    (state / "config.toml").write_text('listen = ["tcp://127.0.0.1:7777"]\nunix_socket = false\n')
    assert [str(a) for a in load_settings({"state_dir": str(state)}, env_for(tmp_path)).listen] == ["tcp://127.0.0.1:7777"]
    other = load_settings({"state_dir": str(state), "listen": [f"unix://{tmp_path / 'other.sock'}"]}, env_for(tmp_path))
    assert [str(a) for a in other.listen] == [f"unix://{tmp_path / 'other.sock'}"]  # a unix socket named: exactly that
