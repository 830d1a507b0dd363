"""The app-server answers ``mcpServerStatus/list`` (the Codex TUI's ``/mcp``) with the daemon's
MCP servers, in the protocol's shape (every answer is checked against the schema)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from tests.appserver.helpers import RpcFailed, app_client, start_daemon
from tests.mcp.conftest import demo_config


async def test_mcp_server_status_list(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text(demo_config() + '\n[mcp_servers.off]\ncommand = "/nonexistent"\nenabled = false\n')
    daemon = await start_daemon(nursery, state, mock_upstream.base_url)
    try:
        async with app_client(daemon) as client:
            await client.initialize()
            listed = await client.call("mcpServerStatus/list", {})
            servers = {server["name"]: server for server in listed["data"]}
            assert set(servers) == {"demo", "off"} and listed["nextCursor"] is None
            demo = servers["demo"]
            assert demo["runtimeStatus"] == "connected" and demo["serverInfo"]["name"] == "demo"  # started to be listed
            assert demo["tools"]["echo"]["inputSchema"]["required"] == ["text"] and demo["tools"]["echo"]["description"] == "Says the text back."
            assert demo["authStatus"] == "unsupported" and demo["httpOrigin"] is None and demo["toolsError"] is None
            assert servers["off"]["runtimeStatus"] == "disabled" and servers["off"]["tools"] == {}
            one = await client.call("mcpServerStatus/list", {"serverName": "off"})
            assert [server["name"] for server in one["data"]] == ["off"]
            paged = await client.call("mcpServerStatus/list", {"limit": 1})
            assert len(paged["data"]) == 1 and paged["nextCursor"] == "1"
            with pytest.raises(RpcFailed, match="no MCP server 'nope'"):
                await client.call("mcpServerStatus/list", {"serverName": "nope"})
    finally:
        daemon.request_stop()
        with trio.fail_after(15):
            await daemon.wait_stopped()
