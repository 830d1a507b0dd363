"""``[mcp_servers.NAME]`` as Codex users write it, checked at start; tool names made valid and unique."""

from __future__ import annotations

from pathlib import Path

import pytest

from echsd.mcp import names
from echsd.mcp.config import McpConfigError, load_mcp_servers
from echsd.mcp.transport import LineSplitter, server_env
from echsd.settings import SettingsError, load_settings


def test_a_codex_config_reads_as_is() -> None:
    servers = load_mcp_servers(
        {
            "files": {
                "command": "npx",
                "args": ["-y", "some-server"],
                "env": {"DEBUG": "1"},
                "env_vars": ["GITHUB_TOKEN"],
                "cwd": "/tmp",
                "startup_timeout_sec": 20,
                "tool_timeout_sec": 45.5,
                "enabled_tools": ["read"],
                "disabled_tools": ["write"],
                "supports_parallel_tool_calls": True,
            },
            "remote": {
                "url": "https://mcp.example.com/mcp",
                "bearer_token_env_var": "MCP_TOKEN",
                "http_headers": {"X-A": "1"},
                "env_http_headers": {"X-B": "B_VALUE"},
                "enabled": False,
                "startup_timeout_ms": 2500,
                "oauth": {"client_id": "x"},
            },
        },
        "config.toml",
    )
    files, remote = servers["files"], servers["remote"]
    assert files.transport == "stdio" and files.args == ("-y", "some-server") and files.env == {"DEBUG": "1"}
    assert files.startup_timeout_s == 20 and files.tool_timeout_s == 45.5 and files.parallel
    assert files.exposes("read") and not files.exposes("write") and not files.exposes("other")
    assert remote.transport == "streamable_http" and not remote.enabled and remote.startup_timeout_s == 2.5
    assert remote.headers == {"X-A": "1"} and remote.env_headers == {"X-B": "B_VALUE"} and remote.ignored == ("oauth",)
    echsd_style = load_mcp_servers({"s": {"command": "x", "startup_timeout_s": 3, "tool_timeout_s": 4}}, "f")["s"]
    assert (echsd_style.startup_timeout_s, echsd_style.tool_timeout_s) == (3, 4)
    assert (files.sandbox, files.network) == (None, None)  # the daemon's defaults for new threads
    own = load_mcp_servers({"a": {"command": "x", "sandbox": "read-only", "network": True}, "b": {"command": "x", "network": "off"}}, "f")
    assert (own["a"].sandbox, own["a"].network, own["b"].network) == ("read-only", "on", "off")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"s": {"args": ["x"]}}, "give either `command` (stdio) or `url`"),
        ({"s": {"command": "x", "url": "http://h/mcp"}}, "give either"),
        ({"s": {"command": "x", "bearer_token_env_var": "T"}}, "'mcp_servers.s.bearer_token_env_var' in f: not used by a stdio server"),
        ({"s": {"url": "http://h/mcp", "args": ["a"]}}, "'mcp_servers.s.args' in f: not used by a streamable-HTTP server"),
        ({"s": {"url": "ftp://h"}}, "expected an http(s) URL"),
        ({"s": {"command": "x", "tool_timeout_sec": 0}}, "'mcp_servers.s.tool_timeout_sec'"),
        ({"s": {"command": "x", "enabled": "yes"}}, "'mcp_servers.s.enabled' in f: expected true or false"),
        ({"s": {"command": "x", "comand": "y"}}, "unknown setting 'mcp_servers.s.comand'"),
        ({"bad name": {"command": "x"}}, "a server name is 1-64 letters"),
        ({"s": {"command": "x", "args": "a b"}}, "expected a list of strings"),
        ({"s": {"command": "x", "sandbox": "none"}}, "'mcp_servers.s.sandbox' in f: expected \"full-access\" or \"workspace-write\" or \"read-only\""),
        ({"s": {"command": "x", "network": "maybe"}}, "'mcp_servers.s.network' in f: expected \"on\" or \"off\""),
        ({"s": {"url": "http://h/mcp", "sandbox": "read-only"}}, "'mcp_servers.s.sandbox' in f: not used by a streamable-HTTP server"),
    ],
)
def test_bad_tables_name_the_setting(table: dict, message: str) -> None:
    with pytest.raises(McpConfigError, match=None) as caught:
        load_mcp_servers(table, "f")
    assert message in str(caught.value)


def test_settings_read_the_tables_and_check_agent_types(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('[mcp_servers.demo]\ncommand = "demo"\n\n[agent_types.helper]\nmcp_servers = ["demo"]\n')
    settings = load_settings({"state_dir": str(state), "provider": "mock"}, {})
    assert list(settings.mcp_servers) == ["demo"] and settings.agent_types["helper"].mcp_servers == ("demo",)
    (state / "config.toml").write_text('[agent_types.helper]\nmcp_servers = ["nope"]\n')
    with pytest.raises(SettingsError, match=r"agent_types.helper.mcp_servers.*no \[mcp_servers.nope\]"):
        load_settings({"state_dir": str(state), "provider": "mock"}, {})
    (state / "config.toml").write_text('[mcp_servers.demo]\nurl = "nowhere"\n')
    with pytest.raises(SettingsError, match="mcp_servers.demo.url"):
        load_settings({"state_dir": str(state), "provider": "mock"}, {})


def test_tool_names_are_valid_unique_and_stable() -> None:
    assert names.model_name("demo", "echo") == "mcp__demo__echo"
    assert names.model_name("demo", "read.file v2") == "mcp__demo__read_file_v2"
    long = names.model_name("server", "t" * 100)
    assert len(long) == 64 and long == names.model_name("server", "t" * 100)
    assert long != names.model_name("server", "t" * 99 + "u")
    clash = names.model_names("s", ["a.b", "a_b"])
    assert clash["a_b"] == "mcp__s__a_b" and clash["a.b"].startswith("mcp__s__a_b_") and len(set(clash.values())) == 2
    taken = names.model_names("a", ["b__c"])
    other = names.model_names("a__b", ["c"], set(taken.values()))
    assert taken["b__c"] == "mcp__a__b__c" and other["c"] != "mcp__a__b__c"


def test_descriptions_are_capped_and_schemas_made_objects() -> None:
    text = names.description("x" * 10_000, "s", "t")
    assert len(text) == names.MAX_DESCRIPTION_CHARS and text.endswith("…")
    assert names.description("", "s", "t") == "The t tool of the s MCP server."
    assert names.parameters({"type": "array"}) == {"type": "object", "properties": {}}
    assert names.parameters({"$schema": "x", "type": "object", "required": ["a"]}) == {"type": "object", "required": ["a"], "properties": {}}
    assert names.parameters({"type": "object", "properties": {str(i): {"type": "string"} for i in range(5000)}}) is None


def test_server_environment_leaves_the_daemons_secrets_out() -> None:
    config = load_mcp_servers({"s": {"command": "x", "env_vars": ["WANTED"], "env": {"SET": "1"}}}, "f")["s"]
    environ = {"PATH": "/bin", "HOME": "/h", "OPENAI_API_KEY": "sk-secret", "ECHS_TOKEN": "t", "WANTED": "w", "OTHER": "o"}
    assert server_env(config, environ) == {"PATH": "/bin", "HOME": "/h", "WANTED": "w", "SET": "1"}


def test_lines_are_split_and_bounded() -> None:
    lines = LineSplitter(10)
    assert lines.feed(b"ab") == [] and lines.feed(b"c\nde\nf") == [b"abc", b"de"] and lines.rest() == b"f"
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        lines.feed(b"x" * 20)


def test_the_mcp_door_addresses(tmp_path: Path) -> None:
    base = {"state_dir": str(tmp_path / "s"), "provider": "mock"}
    settings = load_settings({**base, "mcp": ["tcp://127.0.0.1:4600"]}, {})
    assert [str(address) for address in settings.mcp] == ["tcp://127.0.0.1:4600"]
    from_env = load_settings(base, {"ECHS_MCP": "tcp://localhost:4601"})
    assert [str(address) for address in from_env.mcp] == ["tcp://localhost:4601"]
    with pytest.raises(SettingsError, match="--allow-remote"):
        load_settings({**base, "mcp": ["tcp://0.0.0.0:4600"]}, {})
    assert load_settings({**base, "mcp": ["tcp://0.0.0.0:4600"], "allow_remote": True}, {}).mcp[0].host == "0.0.0.0"
    with pytest.raises(SettingsError, match="streamable HTTP"):
        load_settings({**base, "mcp": ["unix:///tmp/x"]}, {})
