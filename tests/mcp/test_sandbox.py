"""A stdio MCP server runs in the sandbox new threads get by default (or its own ``sandbox`` and
``network``): the kernel refuses what that sandbox does not allow, whatever the server does."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import trio

from tests.mcp.conftest import STDIO_SERVER, HttpServer, daemon_with
from tests.mcp.test_client import by_name, call, run_turn


def server_table(name: str, cwd: Path, **extra: str) -> str:
    lines = [f"[mcp_servers.{name}]", f'command = "{sys.executable}"', f'args = ["{STDIO_SERVER}"]', f'cwd = "{cwd}"']
    lines += [f'{key} = "{value}"' for key, value in extra.items()]
    return "\n".join(lines) + "\n\n"


def dirs(root: Path) -> tuple[Path, Path]:
    workspace, outside = root / "workspace", root / "outside"
    workspace.mkdir()
    outside.mkdir()
    return workspace, outside


async def test_a_stdio_server_runs_in_the_default_thread_sandbox(tmp_path: Path, mock_upstream: Any, http_server: HttpServer, nursery: trio.Nursery) -> None:
    workspace, outside = dirs(tmp_path)
    config = server_table("demo", workspace) + server_table("open", workspace, sandbox="full-access")
    async with daemon_with(tmp_path, config, mock_upstream.base_url, nursery) as daemon:
        token = daemon.settings.token_path
        tid = (await daemon.ops.create_thread(cwd=str(workspace)))["thread_id"]
        steps = [
            {
                "calls": [
                    call("mcp__demo__touch", path=str(workspace / "in.txt"), text="in"),
                    call("mcp__demo__touch", path=str(outside / "out.txt"), text="out"),
                    call("mcp__demo__peek", path=str(token)),
                    call("mcp__demo__dial", port=http_server.port),
                ]
            },
            {"text": "ok"},
        ]
        watch = await run_turn(daemon, tid, steps)
        completed = [event.data for event in watch.of_type("tool.completed")]
        inside, escape, secret, dial = completed
        assert inside["ok"] is True and (workspace / "in.txt").read_text() == "in"  # its workspace is writable
        assert escape["ok"] is False and not (outside / "out.txt").exists()  # the kernel refused the rest
        assert "error: the tool reported a failure" in escape["output"]
        assert secret["ok"] is False and token.read_text() not in secret["output"]  # the daemon's state dir is hidden
        assert dial["ok"] is False and "connected" not in dial["output"]  # network off
        status = {server["name"]: server for server in daemon.mcp.status()}
        assert status["demo"]["sandbox"] == "workspace-write, network off"

        steps = [{"calls": [call("mcp__open__touch", path=str(outside / "out.txt"), text="out"), call("mcp__open__dial", port=http_server.port)]}, {"text": "ok"}]
        await run_turn(daemon, tid, steps)
        results = by_name(daemon_requests(mock_upstream)[-1])
        assert results["mcp__open__touch"] == f"wrote {outside / 'out.txt'}" and (outside / "out.txt").read_text() == "out"
        assert results["mcp__open__dial"] == f"connected to 127.0.0.1:{http_server.port}"  # full-access: network on
        status = {server["name"]: server for server in daemon.mcp.status()}
        assert status["open"]["sandbox"] == "full-access, network on"


async def test_the_daemons_defaults_decide_a_servers_sandbox(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> None:
    workspace, _ = dirs(tmp_path)
    config = 'sandbox = "read-only"\n\n' + server_table("demo", workspace) + server_table("writer", workspace, sandbox="workspace-write")
    async with daemon_with(tmp_path, config, mock_upstream.base_url, nursery) as daemon:
        tid = (await daemon.ops.create_thread(cwd=str(workspace)))["thread_id"]
        calls = [call("mcp__demo__touch", path=str(workspace / "a.txt")), call("mcp__writer__touch", path=str(workspace / "b.txt"))]
        watch = await run_turn(daemon, tid, [{"calls": calls}, {"text": "ok"}])
        refused, wrote = (event.data for event in watch.of_type("tool.completed"))
        assert refused["ok"] is False and not (workspace / "a.txt").exists()  # read-only: not even its cwd
        assert wrote["ok"] is True and (workspace / "b.txt").exists()
        status = {server["name"]: server["sandbox"] for server in daemon.mcp.status()}
        assert status == {"demo": "read-only, network off", "writer": "workspace-write, network off"}


async def test_a_sandbox_that_cannot_be_enforced_keeps_the_server_from_starting(tmp_path: Path, mock_upstream: Any, nursery: trio.Nursery) -> None:
    workspace, outside = dirs(tmp_path)
    config = 'sandbox_disable = ["landlock", "userns", "seccomp"]\n\n' + server_table("demo", workspace)
    async with daemon_with(tmp_path, config, mock_upstream.base_url, nursery) as daemon:
        tid = (await daemon.ops.create_thread(cwd=str(workspace), sandbox="full-access"))["thread_id"]  # the thread itself may run
        steps = [{"calls": [call("mcp__demo__touch", path=str(outside / "x.txt"))]}, {"text": "ok"}]
        watch = await run_turn(daemon, tid, steps)
        (failed,) = watch.of_type("tool.completed")
        assert failed.data["ok"] is False and not (outside / "x.txt").exists()
        (server,) = daemon.mcp.status()
        assert server["state"] == "backoff" and "cannot be enforced here" in server["last_error"]
        assert "workspace-write, network off" in server["last_error"]


def daemon_requests(mock_upstream: Any) -> list[dict[str, Any]]:
    return [request.body for request in mock_upstream.requests]
