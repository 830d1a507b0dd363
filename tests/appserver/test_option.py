"""``--app-server URL`` [``ECHS_APP_SERVER``] and the config file's ``app_server``."""

from __future__ import annotations

from pathlib import Path

import pytest

from echsd.settings import SettingsError, load_settings


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "codex"), "ECHS_STATE_DIR": str(tmp_path / "state"), **extra}


def test_flags_env_and_file(tmp_path: Path) -> None:
    assert load_settings({}, _env(tmp_path)).app_server == ()
    flagged = load_settings({"app_server": ["ws://127.0.0.1:4500", f"unix://{tmp_path}/a.sock"]}, _env(tmp_path))
    assert [str(a) for a in flagged.app_server] == ["tcp://127.0.0.1:4500", f"unix://{tmp_path}/a.sock"]
    from_env = load_settings({}, _env(tmp_path, ECHS_APP_SERVER="ws://127.0.0.1:1, ws://[::1]:2"))
    assert [(a.host, a.port) for a in from_env.app_server] == [("127.0.0.1", 1), ("::1", 2)]
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "config.toml").write_text('app_server = ["ws://localhost:7"]\n')
    assert [str(a) for a in load_settings({}, _env(tmp_path)).app_server] == ["tcp://localhost:7"]
    assert load_settings({"app_server": ["ws://127.0.0.1:8"]}, _env(tmp_path)).app_server[0].port == 8


@pytest.mark.parametrize(
    ("urls", "message"),
    [
        (["ws://0.0.0.0:4500"], "--allow-remote"),
        (["http://127.0.0.1:1"], "invalid --app-server"),
        (["ws://127.0.0.1:x"], "invalid --app-server 'ws://127.0.0.1:x': port 'x' is not a number"),
        (["unix://"], "invalid --app-server"),
    ],
)
def test_bad_addresses_are_named(tmp_path: Path, urls: list[str], message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_settings({"app_server": urls}, _env(tmp_path))


def test_remote_needs_allow_remote(tmp_path: Path) -> None:
    settings = load_settings({"app_server": ["ws://0.0.0.0:4500"], "allow_remote": True}, _env(tmp_path))
    assert settings.app_server[0].host == "0.0.0.0"
