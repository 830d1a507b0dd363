"""MCP servers through the real entry points: ``echsd serve`` with ``[mcp_servers]`` in its
config.toml, driven by ``echs`` subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.helpers import Serve, clean_env, echs, new_thread
from tests.helpers import mock_directive
from tests.mcp.conftest import demo_config


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    root = tmp_path_factory.mktemp("mcp-cli")
    state = root / "state"
    state.mkdir(mode=0o700)
    # (a start within a minute: the machine may be busy; the state asserted is "ready")
    (state / "config.toml").write_text(demo_config(startup_timeout_sec=60) + '\n[mcp_servers.off]\ncommand = "/nonexistent/server"\nenabled = false\n')
    daemon = Serve(state, env=clean_env(root, ECHS_LOG_LEVEL="debug", ECHS_LOG_FORMAT="json"))
    yield daemon
    try:
        daemon.terminate()
    finally:
        daemon.kill()


def echs_json(state: Path, *args: str) -> object:
    result = echs(state, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_threads_servers_are_set_with_echs_config(served: Serve) -> None:
    state = served.state_dir
    tid = new_thread(state)
    assert echs_json(state, "show", tid)["config"]["mcp"] is None  # type: ignore[index]  # every enabled server
    assert echs_json(state, "config", tid, "mcp=-demo")["config"]["mcp"] == []  # type: ignore[index]
    assert echs_json(state, "config", tid, "mcp=+off,+demo")["config"]["mcp"] == ["off", "demo"]  # type: ignore[index]
    refused = echs(state, "config", tid, "mcp=+nope")
    assert refused.returncode == 1 and "unknown MCP server(s): nope; configured: demo, off" in refused.stderr


def test_status_counts_the_servers_and_the_servers_stderr_is_logged(served: Serve) -> None:
    state = served.state_dir
    tid = new_thread(state)
    steps = [{"calls": [{"name": "mcp__demo__echo", "arguments": {"text": "from the cli"}}]}, {"text": "said it"}]
    sent = echs(state, "send", tid, f"go\n{mock_directive(steps)}", "--wait")
    assert sent.returncode == 0 and "said it" in sent.stdout, sent.stderr
    status = echs_json(state, "status")
    assert status["mcp_servers"] == {"total": 2, "up": 1, "down": 0, "starting": 0}  # type: ignore[index]
    human = echs(state, "status")
    assert "mcp        2 servers: 1 up, 0 down" in human.stdout
    logged = [json.loads(line) for line in served.lines if line.startswith("{")]
    assert any(entry.get("event") == "mcp server stderr" and entry.get("line") == "demo server starting" and entry["level"] == "debug" for entry in logged)


def test_echs_mcp_ls_and_restart(served: Serve) -> None:
    state = served.state_dir
    listed = echs_json(state, "mcp", "ls")
    servers = {server["name"]: server for server in listed}  # type: ignore[union-attr]
    assert set(servers) == {"demo", "off"}
    demo = servers["demo"]
    assert demo["state"] == "ready" and demo["transport"] == "stdio" and "echo" in demo["tools"] and demo["last_error"] is None
    assert servers["off"]["state"] == "disabled" and servers["off"]["tools"] == []
    human = echs(state, "mcp", "ls")
    assert human.returncode == 0
    assert any(line.split()[:3] == ["demo", "ready", "stdio"] for line in human.stdout.splitlines())
    assert "demo: echo, word_count" in human.stdout
    assert demo["sandbox"] == "workspace-write, network off" and "demo: sandbox workspace-write, network off" in human.stdout
    before = demo["restarts"]
    restarted = echs_json(state, "mcp", "restart", "demo")
    assert restarted["name"] == "demo" and restarted["restarts"] >= before  # type: ignore[index]
    again = {server["name"]: server for server in echs_json(state, "mcp", "ls")}  # type: ignore[union-attr]
    assert again["demo"]["state"] == "ready" and again["demo"]["restarts"] == before + 1
    missing = echs(state, "mcp", "restart", "nope")
    assert missing.returncode == 1 and "no MCP server 'nope' (known: demo, off)" in missing.stderr
    disabled = echs(state, "mcp", "restart", "off")
    assert disabled.returncode == 1 and "disabled" in disabled.stderr


def readme_example() -> tuple[str, str]:
    """The worked example of the README's MCP section: its config.toml and its commands."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("## MCP servers: tools from other programs", 1)[1].split("\n## ", 1)[0]
    config = section.split("```toml\n", 1)[1].split("```", 1)[0]
    commands = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return config, commands


def test_the_readmes_worked_example_works_as_written(tmp_path: Path) -> None:
    config, commands = readme_example()
    root = Path(__file__).parents[2]
    assert "/path/to/echsd/" in config and "mcp__demo__word_count" in commands
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text(config.replace("/path/to/echsd/.venv/bin/python", sys.executable).replace("/path/to/echsd/", f"{root}/"))
    daemon = Serve(state)
    try:
        env = clean_env(tmp_path, ECHS_STATE_DIR=str(state), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
        ran = subprocess.run(["bash", "-euc", commands], env=env, capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0 and ran.stdout.strip() == "six", ran.stderr
        (thread,) = echs_json(state, "ls")  # type: ignore[misc]
        history = echs_json(state, "history", thread["thread_id"])
        (output,) = [item["output"] for item in history if item.get("type") == "function_call_output"]  # type: ignore[union-attr,index]
        assert json.loads(output) == {"words": 6, "characters": 18}
    finally:
        try:
            daemon.terminate()
        finally:
            daemon.kill()
