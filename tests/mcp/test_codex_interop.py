"""The real Codex CLI as an MCP client of echsd: ``codex mcp add echsd -- echsd mcp``, then
Codex's own app-server (``codex app-server`` over stdio, the engine of its TUI) lists
echsd's tools and calls one, which makes a thread ``echs ls`` shows. Skipped unless the
Codex CLI is installed; ``make interop`` installs it (``bin/install-codex-cli``)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.appserver.test_tui import CODEX
from tests.cli.helpers import ECHSD, Serve, clean_env, echs

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(CODEX is None, reason="the Codex CLI is not installed (make interop installs it)"),
    pytest.mark.timeout(180),
]
TOOLS = {"echs_new", "echs_send", "echs_status", "echs_list", "echs_show", "echs_interrupt", "echs_kill", "echs_wait", "blackboard_get", "blackboard_set"}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Serve]:
    served = Serve(tmp_path / "state")
    yield served
    try:
        served.terminate()
    finally:
        served.kill()


class CodexAppServer:
    """``codex app-server``: JSON-RPC, one JSON object per line, over its stdin/stdout."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        assert CODEX is not None
        self.process = subprocess.Popen([CODEX, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=cwd)
        self.ids = 0

    def request(self, method: str, params: dict[str, Any], timeout: float = 60) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.ids += 1
        self.process.stdin.write(json.dumps({"id": self.ids, "method": method, "params": params}) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], deadline - time.monotonic())
            if not ready:
                break
            line = self.process.stdout.readline()
            assert line, "codex app-server exited"
            message = json.loads(line)
            if message.get("id") == self.ids:
                assert "error" not in message, message
                return message["result"]
        raise AssertionError(f"codex app-server did not answer {method} within {timeout:g} s")

    def notify(self, method: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"method": method}) + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def test_codex_lists_and_calls_echsds_tools(daemon: Serve, tmp_path: Path) -> None:
    assert CODEX is not None
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text("check_for_update_on_startup = false\n")
    env = clean_env(tmp_path, CODEX_HOME=str(home))
    added = subprocess.run(
        [CODEX, "mcp", "add", "echsd", "--env", f"ECHS_STATE_DIR={daemon.state_dir}", "--", ECHSD, "mcp"], env=env, capture_output=True, text=True, timeout=60
    )
    assert added.returncode == 0, added.stderr
    listed = subprocess.run([CODEX, "mcp", "list"], env=env, capture_output=True, text=True, timeout=60)
    assert "echsd" in listed.stdout and "mcp" in listed.stdout

    codex = CodexAppServer({**env, "PATH": os.environ["PATH"]}, tmp_path)
    try:
        codex.request("initialize", {"clientInfo": {"name": "echsd-interop", "version": "1"}})
        codex.notify("initialized")
        servers = {server["name"]: server for server in codex.request("mcpServerStatus/list", {})["data"]}
        echsd = servers["echsd"]
        assert echsd["serverInfo"]["name"] == "echsd"
        assert TOOLS <= set(echsd["tools"])
        assert echsd["tools"]["echs_send"]["inputSchema"]["required"] == ["thread_id", "text"]

        thread = codex.request("thread/start", {"cwd": str(tmp_path)})["thread"]["id"]
        called = codex.request("mcpServer/tool/call", {"server": "echsd", "threadId": thread, "tool": "echs_new", "arguments": {"cwd": str(tmp_path)}})
        assert not called.get("isError")
        made = called["structuredContent"]["thread_id"]
        sent = codex.request(
            "mcpServer/tool/call", {"server": "echsd", "threadId": thread, "tool": "echs_send", "arguments": {"thread_id": made, "text": "from codex"}}
        )
        assert sent["structuredContent"]["final_answer"] == "mock reply to: from codex"
    finally:
        codex.close()
    shown = json.loads(echs(daemon.state_dir, "show", made, "--json").stdout)
    assert shown["config"]["cwd"] == str(tmp_path)
    assert shown["last_turn"]["final_text"] == "mock reply to: from codex"
