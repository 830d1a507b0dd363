"""Which environment variables a tool command sees: ``[tools] env_exclude`` / ``env_include``
(``echsd.tools.envpolicy``), checked through a real ``exec_command`` of a real daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from echsd.settings import SettingsError, load_settings
from echsd.tools.envpolicy import EnvPolicy
from tests.cli.helpers import Serve, clean_env, echs, new_thread
from tests.helpers import mock_directive

USER_ENV = {
    "GITHUB_TOKEN": "ghp-secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "my_api_key": "lower-case-key",
    "DB_PASSWORD": "hunter2",
    "PLAIN_SETTING": "visible",
    "ECHS_TOKEN": "the-daemon's-own",
}


def test_the_default_leaves_out_keys_secrets_tokens_and_passwords() -> None:
    policy = EnvPolicy()
    assert policy.apply(USER_ENV) == {"PLAIN_SETTING": "visible"}


def test_include_passes_names_back_but_never_the_daemon_s_secrets() -> None:
    policy = EnvPolicy(include=("github_*", "ECHS_TOKEN"))
    assert policy.apply(USER_ENV) == {"GITHUB_TOKEN": "ghp-secret", "PLAIN_SETTING": "visible"}
    assert EnvPolicy(exclude=()).apply(USER_ENV) == {k: v for k, v in USER_ENV.items() if k != "ECHS_TOKEN"}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('env_exclude = "KEY"', "'tools.env_exclude'"),
        ("env_include = [1]", "'tools.env_include'"),
        ("env_keep = []", "unknown setting 'tools.env_keep'"),
    ],
)
def test_a_bad_tools_table_stops_the_daemon_with_one_line(tmp_path: Path, table: str, message: str) -> None:
    (tmp_path / "config.toml").write_text(f"[tools]\n{table}\n")
    with pytest.raises(SettingsError, match=message):
        load_settings({"state_dir": str(tmp_path), "provider": "mock"}, {})


def command_env_of(state: Path, cwd: Path) -> dict[str, str]:
    """The environment an ``exec_command`` of a new thread ran with (``env -0``)."""
    thread = new_thread(state, "--cwd", str(cwd))
    call = {"name": "exec_command", "arguments": {"cmd": "env -0 | base64 -w0"}}
    sent = echs(state, "send", thread, mock_directive([{"calls": [call]}, {"text": "done"}]), "--wait", "--json")
    assert sent.returncode == 0, sent.stderr
    [completed] = [event for event in map(json.loads, sent.stdout.splitlines()) if event["event"] == "tool.completed"]
    import base64

    encoded = completed["data"]["output"].rsplit("Output:\n", 1)[1].strip()
    pairs = [entry.split("=", 1) for entry in base64.b64decode(encoded).decode().split("\0") if "=" in entry]
    return dict(pairs)


@pytest.mark.parametrize(
    ("config", "seen"),
    [
        ("", {"PLAIN_SETTING"}),
        ('[tools]\nenv_include = ["GITHUB_TOKEN"]\n', {"PLAIN_SETTING", "GITHUB_TOKEN"}),
        ('[tools]\nenv_exclude = ["*SECRET*"]\n', {"PLAIN_SETTING", "GITHUB_TOKEN", "my_api_key", "DB_PASSWORD"}),
    ],
)
def test_exec_command_sees_what_the_policy_passes(tmp_path: Path, config: str, seen: set[str]) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text(config)
    daemon = Serve(state, env=clean_env(tmp_path, **USER_ENV))
    try:
        work = tmp_path / "work"
        work.mkdir()
        env = command_env_of(state, work)
    finally:
        daemon.kill()
    assert {name for name in USER_ENV if name in env} == seen
    assert all(env[name] == USER_ENV[name] for name in seen)
