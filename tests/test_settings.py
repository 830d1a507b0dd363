"""Settings: precedence, the provider auto rule, validation with one clear line."""

from __future__ import annotations

import json
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
        ({}, "model = [\n", "invalid config file"),
        ({"store": "mysql://db"}, "", "invalid setting 'store': 'mysql'"),
        ({"store": "sqlite://no-third-slash.db"}, "", "expected sqlite:///PATH"),
        ({"store": "sqlite:///"}, "", "expected sqlite:///PATH"),
        ({"store": "postgresql://host:port/db"}, "", "not a valid postgresql:// URL"),
        ({}, "store = 5\n", "invalid setting 'store'"),
        ({"node_id": "two words"}, "", "invalid setting 'node_id'"),
        ({"node_id": "x" * 64}, "", "invalid setting 'node_id'"),
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
